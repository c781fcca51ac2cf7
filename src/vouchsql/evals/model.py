"""The model seam of the harnesses: ``vouchsql.llm``'s :class:`~vouchsql.llm.Model` protocol.

``--model`` takes

- ``provider:model`` (``openai:…``, ``anthropic:…``, ``replay:CASSETTE``), resolved by
  :func:`vouchsql.llm.get_model` with the response cache and retries of :class:`vouchsql.llm.LLM`;
- ``py:package.module:attribute``: a Model object of your own, or a plain function
  ``fn(request) -> str`` wrapped in :class:`vouchsql.llm.FakeModel` (``request.messages`` holds the
  ``(role, content)`` pairs). Tests use the same function-backed fake.

The confidence and execution harnesses answer each question with ``vouch ask``
(:func:`sample_candidates`, over :func:`vouchsql.api.ask`) and score what it returns.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UserInputError

if TYPE_CHECKING:
    from ..db import Database
    from ..llm import Model


def resolve_model(spec: str | Model) -> str | Model:
    """A Model object, or the provider spec string for :func:`vouchsql.llm.llm_from_config`."""
    if not isinstance(spec, str):
        return spec
    spec = spec.strip()
    if not spec:
        raise UserInputError("--model is empty")
    if not spec.startswith("py:"):
        return spec
    target = spec[3:]
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise UserInputError(f"--model {spec}: expected py:package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserInputError(f"--model {spec}: cannot import {module_name} ({exc})") from None
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise UserInputError(f"--model {spec}: {module_name} has no {attr}")
    from ..llm import FakeModel, Model

    if isinstance(obj, Model):
        return obj
    if callable(obj):
        return FakeModel(obj, name=spec)
    raise UserInputError(f"--model {spec}: neither a Model nor a function of the request")


def sample_candidates(model: Any, *, k: int | None = None,
                      assess: bool = True) -> Callable[[Database, dict[str, Any]], dict[str, Any]]:
    """A function ``(db, item) -> {"candidates", "answer_text", "note"}`` that answers the item's
    question with ``vouch ask`` (assess, K generate samples, write; under the database's
    settings, which say the shown sample — ``shown`` — and whether a judge measures COMPLETE —
    ``judge_complete``) and returns its K candidates, shown answer first (an empty string for
    a sample that gave no SQL), with the judge's parts. A question the assess step refuses, or
    a model failure, gives no candidates and a note.

    ``assess=False`` is the IES protocol (§3.1): the question answered as asked with K samples —
    no premise step that refuses it, no interpretations answered apart. With the assess step
    (Vouch's own pipeline), a question with an open choice is scored on its first
    interpretation's K samples and the record says how many interpretations there were."""
    from ..api import ask

    model = resolve_model(model)

    def draw(db: Database, item: dict[str, Any]) -> dict[str, Any]:
        # prose: IES scores a model-written answer (its uncited-number check reads the text).
        answer = ask(db, item["question"], model=model, k=k, hint=item.get("hint"), prose=True, assess=assess)
        # A sample that gave no SQL stays a candidate (an empty query that returns nothing and
        # agrees with nobody): K does not shrink, as A's definition (IES §3.1) counts all K, and
        # an empty sample 0 shown under ``shown = first`` is withheld, not replaced by sample 1.
        sqls = [c.sql or "" for c in answer.candidates]
        note = None
        if not any(sqls):
            sqls = []
            premise = answer.premise
            note = (f"vouch ask gave no SQL: the question was judged flawed ({premise.flaw_code})"
                    if premise is not None and not premise.is_valid
                    else "vouch ask gave no SQL: " + "; ".join(answer.verdict.reasons or ["no candidates"]))
        judged = next((c.evidence.get("parts") for c in answer.checks if c.name == "complete_judge"
                       and c.evidence.get("parts")), None)
        claims = next((c.evidence.get("claims") for c in answer.checks if c.name == "claim_judge"
                       and "claims" in c.evidence), None)
        return {"candidates": sqls, "answer_text": answer.text or answer.answer_text, "note": note,
                "interpretations": len(answer.interpretations),
                "judged_claims": [[c["claim"], c["about_answer"]] for c in claims] if claims is not None else None,
                "judged_parts": [[p["part"], p["covered"]] for p in judged] if judged else None}

    return draw

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
from typing import Any

from ..errors import UserInputError


def resolve_model(spec: Any):
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


def sample_candidates(model, *, k: int | None = None):
    """A function ``(db, item) -> {"candidates", "answer_text", "note"}`` that answers the item's
    question with ``vouch ask`` (assess, K generate samples, write; under the database's
    settings, which say the shown sample — ``shown`` — and whether a judge measures COMPLETE —
    ``judge_complete``) and returns its candidates, shown answer first, with the judge's parts.
    A question the assess step refuses, or a model failure, gives no candidates and a note."""
    from ..api import ask

    model = resolve_model(model)

    def draw(db, item: dict) -> dict:
        # prose: IES scores a model-written answer (its uncited-number check reads the text).
        answer = ask(db, item["question"], model=model, k=k, hint=item.get("hint"), prose=True)
        sqls = [c.sql for c in answer.candidates if c.sql]
        note = None
        if not sqls:
            premise = answer.premise
            note = (f"vouch ask gave no SQL: the question was judged flawed ({premise.flaw_code})"
                    if premise is not None and not premise.is_valid
                    else "vouch ask gave no SQL: " + "; ".join(answer.verdict.reasons or ["no candidates"]))
        judged = next((c.evidence.get("parts") for c in answer.checks if c.name == "complete_judge"
                       and c.evidence.get("parts")), None)
        return {"candidates": sqls, "answer_text": answer.text or answer.answer_text, "note": note,
                "judged_parts": [[p["part"], p["covered"]] for p in judged] if judged else None}

    return draw

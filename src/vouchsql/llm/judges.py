"""Judge calls a rule may use (IES §3.2): COMPLETE, the share of the question's parts an answer
covers, as a judge model lists them; and the unsupported claims of TDD-H's checklist, each
classed as about the answer or commentary. ``vouch ask`` calls them with the
``judge_complete`` and ``judge_claims`` settings (``eval confidence --model`` by default); the
``complete_judge`` and ``claim_judge`` checks carry them to the rules."""

from __future__ import annotations

from typing import Any

from ..answer import Result
from . import LLM, BadOutput, Request, load_prompt
from ..prompting import data_text as data
from .jsonparse import require


def validate_parts(data: dict[str, Any]) -> list[tuple[str, bool]]:
    parts = require(data, "parts", list)
    out = []
    for item in parts:
        if not isinstance(item, dict) or not isinstance(item.get("covered"), bool):
            raise BadOutput("each part must be an object with 'part' and a true/false 'covered'")
        out.append((str(item.get("part") or "").strip(), item["covered"]))
    if not out:
        raise BadOutput("'parts' is empty: list at least one part of the question")
    return out


def judge_completeness(llm: LLM, question: str, text: str, result: Result,
                       dialect: str = "sqlite") -> tuple[float, list[tuple[str, bool]]]:
    """COMPLETE (IES §3.2): the share of the question's parts the answer covers, as a judge
    model lists them, with the parts. One call (stage ``judge``); the ``complete_judge``
    check caps COMPLETE < 0.5. ``dialect`` quotes the result's column names."""
    columns = ", ".join(data.identifier(c, dialect) for c in result.columns) or "(none)"
    messages = load_prompt("judge_complete").messages(question=question, text=data.string(text, data.LONG_LIMIT),
                                                      columns=columns)
    parts: list[tuple[str, bool]] = llm.complete_json(Request.of(messages, temperature=0.0, max_tokens=1024),
                                                      stage="judge", validate=validate_parts)
    return sum(covered for _, covered in parts) / len(parts), parts


def validate_claims(data: dict[str, Any]) -> list[tuple[str, bool]]:
    claims = require(data, "claims", list)
    out = []
    for item in claims:
        if not isinstance(item, dict) or not isinstance(item.get("about_answer"), bool):
            raise BadOutput("each claim must be an object with 'claim' and a true/false 'about_answer'")
        out.append((str(item.get("claim") or "").strip(), item["about_answer"]))
    return out


def judge_claims(llm: LLM, question: str, text: str, result: Result,
                 dialect: str = "sqlite") -> list[tuple[str, bool]]:
    """The answer text's claims its result does not support, each with whether it is about
    the answer (True) or commentary (False); empty when the rows support every claim. One call
    (stage ``judge``); the ``claim_judge`` check carries them to the rules."""
    from ..prompting.context import result_text, rows_caption

    messages = load_prompt("judge_claims").messages(question=question, text=data.string(text, data.LONG_LIMIT),
                                                    row_count=rows_caption(result),
                                                    result=result_text(result, dialect))
    claims: list[tuple[str, bool]] = llm.complete_json(Request.of(messages, temperature=0.0, max_tokens=1024),
                                                       stage="judge", validate=validate_claims)
    return claims


__all__ = ["judge_claims", "judge_completeness", "validate_claims", "validate_parts"]

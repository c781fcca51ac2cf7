"""The premise taxonomy (PremiseSQL Table 1) and the assess step.

One model call decides whether the question is valid for this schema and data; if not, it
names one of nine typed flaws, the reason and a clarifying question, and no SQL runs. The
same call lists the interpretations of an open calculation choice (SpecBridge's decide step):
each the full request with exactly one interpretation, at most four.

Critique must follow evidence (PremiseSQL §4.2: prompts that assert a flaw made models reject
valid questions). The prompt therefore presumes validity and asks for the evidence of a flaw,
and one rule here keeps ambiguity answerable: an E1.1 verdict that comes with two or more
interpretations is answered, each interpretation on its own, instead of refused — answering
every interpretation beats refusing (DESIGN §3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .answer import Premise
from .flaws import CATEGORIES, TAXONOMY, category_name, flaw_name, normalise_code  # noqa: F401  (re-exported)
from .llm import LLM, BadOutput, Request, load_prompt
from .llm.jsonparse import require

MAX_INTERPRETATIONS = 4
ASSESS_MAX_TOKENS = 2048


@dataclass
class Reading:
    """One interpretation the assess step listed."""

    request: str  # the full request with exactly one interpretation
    clause: str  # the one clause that settles it (phase 2 appends this)


@dataclass
class Assessment:
    premise: Premise
    interpretations: list[Reading] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return len(self.interpretations) >= 2


def validate_assessment(data: dict[str, Any]) -> Assessment:
    is_valid = require(data, "is_valid", bool)
    reason = str(data.get("reason") or "").strip()
    readings: list[Reading] = []
    raw = data.get("interpretations") or []
    if not isinstance(raw, list):
        raise BadOutput("field 'interpretations' must be a list")
    seen: set[str] = set()
    for item in raw:
        if isinstance(item, str):
            request, clause = item.strip(), item.strip()
        elif isinstance(item, dict):
            request = str(item.get("request") or item.get("text") or "").strip()
            clause = str(item.get("clause") or "").strip() or request
        else:
            raise BadOutput("each interpretation must be an object with 'request' and 'clause'")
        if request and request.lower() not in seen:
            seen.add(request.lower())
            readings.append(Reading(request=request, clause=clause))
    readings = readings[:MAX_INTERPRETATIONS]
    if is_valid:
        return Assessment(Premise(is_valid=True, reason=reason), readings if len(readings) >= 2 else [])
    code = normalise_code(data.get("flaw_code"))
    if code not in TAXONOMY:
        raise BadOutput(f"'flaw_code' must be one of {', '.join(TAXONOMY)} when 'is_valid' is false, got {code!r}")
    if code == "E1.1" and len(readings) >= 2:
        # Ambiguity the model could spell out as interpretations: answer each, do not refuse.
        return Assessment(Premise(is_valid=True, reason=reason), readings)
    clarification = data.get("clarification")
    clarification = str(clarification).strip() if clarification else None
    return Assessment(Premise(is_valid=False, flaw_code=code, reason=reason, clarification=clarification), [])


def assess(llm: LLM, question: str, *, schema: str, dialect: str, definitions: str, hint: str) -> Assessment:
    messages = load_prompt("assess").messages(question=question, schema=schema, dialect=dialect,
                                              definitions=definitions, hint=hint)
    request = Request.of(messages, temperature=0.0, max_tokens=ASSESS_MAX_TOKENS)
    assessment: Assessment = llm.complete_json(request, stage="assess", validate=validate_assessment)
    return assessment


__all__ = ["TAXONOMY", "CATEGORIES", "category_name", "Assessment", "Reading", "assess", "flaw_name", "normalise_code", "validate_assessment"]

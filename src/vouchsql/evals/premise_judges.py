"""The judges of ``vouch eval premise``: PremiseSQL's two evaluators of a response to a flawed
question (§3.5, §4.2.3, App. B.2–B.3) and its two failure-mechanism annotators (§4.4, App. C).

Evaluators. Each judge reads the question, the schema the model saw, the model's whole reply
and the ground-truth flaw type with its Table 1 definition, and returns SQL Behavior (0/1/2),
Detection (0/1) and Type Identification (0/1). The reported score of a response is the mean of
the two judges' labels (App. B.2: "we average their judgments"); their agreement is Cohen's κ
per label. TYPE is forced to 0 where a judge says DET = 0 (App. B.2) and the forcing is counted.

Mechanisms. An output is eligible for attribution under App. C.2's rules: both evaluators'
labels valid, both regard it as a failure (TYPE = 0 or SQL ≠ 2), they agree on all three
labels, the response carries a usable reason or SQL, it does not identify the flaw correctly
and still answer (TYPE = 1 with SQL ≠ 2), and its paired valid question is known. Two
attribution judges give each of M01–M04 a verdict; deterministic post-processing keeps a
``supported`` only with its required evidence (exact quotes, control fields, same-target
exclusivity, App. C.1); a mechanism enters the label set only when both judges support it
(strict agreement). Replies are stored raw and re-read here, so a replay needs no model.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ..llm.prompts import Prompt
from ..premise import TAXONOMY, category_name

SETTING_PROMPTS = {"base": "premise_base", "implicit": "premise_implicit", "explicit": "premise_explicit"}
JUDGE_PROMPT = "premise_judge"
MECHANISM_PROMPT = "premise_mechanism"
MECHANISMS = {
    "M01": "Assumption Injection",
    "M02": "Contradiction Reinterpretation",
    "M03": "Context/Evidence Misuse",
    "M04": "Explicit Constraint Omission",
}
VERDICTS = ("supported", "not_supported", "uncertain")
JUDGE_MAX_TOKENS = 512
MECHANISM_MAX_TOKENS = 2048
# App. C.2's exclusion stages, in the order they are applied.
STAGES = ("judge_invalid", "judge_disagreement", "not_a_failure", "no_usable_evidence",
          "identifies_flaw_but_answers", "no_paired_valid", "eligible")


@lru_cache(maxsize=None)
def load(name: str) -> Prompt:
    """A premise prompt file. ``vouchsql.llm.load_prompt`` knows only the ``vouch ask`` prompts,
    so the harness reads its own files (same format, same content hash)."""
    ref = resources.files("vouchsql").joinpath("prompts", f"{name}.md")
    data = ref.read_bytes()
    return Prompt(name=name, text=data.decode("utf-8"), hash=hashlib.sha256(data).hexdigest()[:12], path=str(ref))


def block(text: str | None) -> str:
    """Text for a data block: only ``\\`` and ``<`` are escaped, so a schema keeps its lines and
    a quote the judge copies maps back to the original exactly (:func:`unblock`)."""
    return (text or "").replace("\\", "\\\\").replace("<", "\\u003c")


def unblock(text: str) -> str:
    return text.replace("\\u003c", "<").replace("\\\\", "\\")


def _flaw_slots(code: str) -> dict[str, str]:
    name, definition = TAXONOMY[code]
    return {"flaw_code": code, "flaw_name": name, "flaw_category": category_name(code), "flaw_definition": definition}


def judge_messages(*, question: str, schema: str, response: str, flaw: str) -> list[dict[str, str]]:
    return load(JUDGE_PROMPT).messages(question=block(question), schema=block(schema), response=block(response),
                                       **_flaw_slots(flaw))


def _label(data: dict[str, Any], key: str, allowed: tuple[int, ...]) -> int | None:
    v = data.get(key)
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v.strip())
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and v in allowed else None


def read_judgement(text: str | None) -> dict[str, Any]:
    """``{"sql", "det", "type", "type_forced"}`` from one evaluator's reply, or ``{"malformed"}``
    when a label is missing or outside its scale (App. C.2 requires all three valid)."""
    from ..llm import BadOutput, parse_json_object

    if text is None:
        return {"malformed": "no reply"}
    try:
        data = parse_json_object(text)
    except BadOutput as exc:
        return {"malformed": str(exc)}
    sql = _label(data, "sql_behavior", (0, 1, 2))
    det = _label(data, "detection", (0, 1))
    typ = _label(data, "type_identification", (0, 1))
    bad = [k for k, v in (("sql_behavior", sql), ("detection", det), ("type_identification", typ)) if v is None]
    if bad:
        return {"malformed": f"{', '.join(bad)} missing or off the scale"}
    forced = det == 0 and typ == 1
    return {"sql": sql, "det": det, "type": 0 if forced else typ, "type_forced": forced}


def eligibility(labels: list[dict[str, Any]], *, reason: str, sql: str | None, has_pair: bool) -> str:
    """The App. C.2 stage at which an output leaves the mechanism pool, or ``"eligible"``."""
    if len(labels) != 2 or any("malformed" in j for j in labels):
        return "judge_invalid"
    a, b = labels
    if any(a[k] != b[k] for k in ("sql", "det", "type")):
        return "judge_disagreement"
    if not (a["type"] == 0 or a["sql"] != 2):
        return "not_a_failure"
    if not (reason or "").strip() and not sql:
        return "no_usable_evidence"
    if a["type"] == 1 and a["sql"] != 2:
        # "outputs that correctly identify the flaw but still answer it" (C.2)
        return "identifies_flaw_but_answers"
    if not has_pair:
        return "no_paired_valid"
    return "eligible"


def mechanism_messages(*, question: str, flaw: str, labels: dict[str, Any], reason: str, sql: str | None,
                       shown_schema: str, reference_schema: str, valid_question: str, valid_sql: str | None) -> list[dict[str, str]]:
    return load(MECHANISM_PROMPT).messages(
        question=block(question), reason=block(reason), sql=block(sql or "(no SQL)"),
        shown_schema=block(shown_schema), reference_schema=block(reference_schema),
        valid_question=block(valid_question), valid_sql=block(valid_sql or "(none)"),
        sql_behavior=str(labels["sql"]), detection=str(labels["det"]), type_identification=str(labels["type"]),
        **_flaw_slots(flaw))


_SPACE = re.compile(r"\s+")


def _found(quote: object, *texts: str | None) -> bool:
    """An exact quote (whitespace runs compared as one space; block escapes undone)."""
    if not isinstance(quote, str) or not quote.strip():
        return False
    q = _SPACE.sub(" ", unblock(quote)).strip()
    return any(q in _SPACE.sub(" ", t) for t in texts if t)


def read_attribution(text: str | None, *, question: str, reason: str, sql: str | None,
                     shown_schema: str) -> dict[str, Any]:
    """``{"labels": {M: 0/1}, "claimed": [M…], "dropped": {M: why}}`` from one attribution
    judge's reply, or ``{"malformed"}``. Supported is 1; not_supported and uncertain are 0
    (App. C.1's binary coding); a ``supported`` whose evidence fails validation is 0 and is
    listed under ``dropped``."""
    from ..llm import BadOutput, parse_json_object

    if text is None:
        return {"malformed": "no reply"}
    try:
        data = parse_json_object(text)
    except BadOutput as exc:
        return {"malformed": str(exc)}
    entries = {}
    for m in MECHANISMS:
        e = data.get(m)
        if not isinstance(e, dict) or e.get("verdict") not in VERDICTS:
            return {"malformed": f"{m} needs an object with a verdict ({', '.join(VERDICTS)})"}
        entries[m] = e
    claimed = [m for m, e in entries.items() if e["verdict"] == "supported"]
    dropped: dict[str, str] = {}
    for m in claimed:
        e = entries[m]
        if m == "M03":
            if not _found(e.get("response_quote"), reason, sql):
                dropped[m] = "response_quote is not in the response"
            elif not _found(e.get("context_quote"), shown_schema):
                dropped[m] = "context_quote is not in the schema shown to the model"
            elif not str(e.get("context_basis") or "").strip():
                dropped[m] = "no context_basis"
            continue
        if not _found(e.get("question_quote"), question):
            dropped[m] = "question_quote is not in the flawed question"
        elif not _found(e.get("response_quote"), reason, sql):
            dropped[m] = "response_quote is not in the response's reason or SQL"
        elif m == "M01" and e.get("concrete_replacement") is not True:
            dropped[m] = "M01 needs a concrete replacement"
        elif m == "M04" and not (e.get("target_complete_explicit") is True
                                 and e.get("partial_implementation_remains") is False
                                 and e.get("concrete_replacement") is False):
            dropped[m] = "M04 needs a complete, explicit target dropped with no partial implementation or replacement"
        elif m == "M04" and not sql:
            dropped[m] = "complete abstention alone is not M04"
    # M01, M02 and M04 exclude one another on the same requirement (App. C.1).
    by_target: dict[str, list[str]] = {}
    for m in ("M01", "M02", "M04"):
        if m in claimed and m not in dropped:
            by_target.setdefault(_SPACE.sub(" ", str(entries[m].get("target") or "")).strip().lower(), []).append(m)
    for target, ms in by_target.items():
        if len(ms) > 1:
            for m in ms:
                dropped[m] = f"{' and '.join(ms)} claim the same requirement ({target or 'unnamed'})"
    labels = {m: int(m in claimed and m not in dropped) for m in MECHANISMS}
    return {"labels": labels, "claimed": claimed, "dropped": dropped}


__all__ = ["MECHANISMS", "SETTING_PROMPTS", "STAGES", "load", "read_judgement", "read_attribution", "eligibility",
           "judge_messages", "mechanism_messages"]

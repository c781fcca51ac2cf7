"""Severity earned by measurement (issue 26, part 3; DESIGN.md "Evidence that earns its place").

A check is written as a veto or a cap, but it may withhold an answer only while it is measured
precise as an error detector on real model output. ``measured.json`` beside this file holds,
per alarm (a check's name, and ``check:finding`` for each kind of finding it reports), how often
it fired on published text-to-SQL systems' predictions and how often those answers were wrong,
overall and where every sample agreed (A = 1). It is written by::

    vouch eval predictions --questions ../shared/cases/spider_predictions_dev.jsonl \
        --db-dir ../shared/datasets/spider --show-gold --write-measured src/vouchsql/checks/measured.json

A fired veto or cap is demoted to a signal (named in the reasons, never capping the score under
``agreement_first``) when every finding it reports is measured imprecise: fewer than
:data:`MIN_PRECISION` of its firings wrong, over at least :data:`MIN_FIRINGS` firings at A = 1
(or, with fewer there, over at least that many overall). A finding fired too rarely to measure
is judged by its check's figure; a check fired too rarely keeps the kind it was written with
(the docs list it as not measured). Only the ``vouch`` check set reads this: the papers' check
sets keep the papers' kinds.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from ..answer import CheckResult

MIN_FIRINGS = 10
MIN_PRECISION = 0.60
MEASURED = Path(__file__).with_name("measured.json")


@lru_cache(maxsize=1)
def measured() -> dict[str, dict[str, Any]]:
    """The alarms' measurements (``fires``, ``wrong``, ``fires_a1``, ``wrong_a1``) by key; empty
    when the file is absent (a check then keeps its written kind)."""
    try:
        alarms: dict[str, dict[str, Any]] = json.loads(MEASURED.read_text(encoding="utf-8")).get("alarms", {})
        return alarms
    except FileNotFoundError:
        return {}


def finding_keys(result: CheckResult) -> list[str]:
    """``check:finding`` for each kind of finding the result reports (question_filters'
    ``kind``, question_shape's ``part``, unmatched_literal's and asked_columns' ``finding``/``kind``)."""
    keys = []
    ev = result.evidence or {}
    for f in list(ev.get("findings") or []) + list(ev.get("literals") or []):
        if isinstance(f, dict):
            sub = f.get("kind") or f.get("part") or f.get("finding")
            if sub:
                keys.append(f"{result.name}:{sub}")
    return list(dict.fromkeys(keys))


def precision(key: str) -> tuple[float, int, str] | None:
    """(precision as an error detector, firings, where measured: "A = 1" or "overall") for an
    alarm measured on enough firings, else None."""
    m = measured().get(key)
    if not m:
        return None
    if m.get("fires_a1", 0) >= MIN_FIRINGS:
        return m["wrong_a1"] / m["fires_a1"], m["fires_a1"], "A = 1"
    if m.get("fires", 0) >= MIN_FIRINGS:
        return m["wrong"] / m["fires"], m["fires"], "overall"
    return None


def _judged(result: CheckResult, key: str) -> tuple[float, int, str] | None:
    return precision(key) or precision(result.name)


def earned(result: CheckResult) -> CheckResult:
    """``result`` with the kind its measurement earns: a fired veto or cap whose every finding
    is measured imprecise becomes a signal, its detail saying so; anything else unchanged."""
    if not result.fired or result.kind == "signal":
        return result
    keys = finding_keys(result) or [result.name]
    judged = [_judged(result, k) for k in keys]
    if any(j is None or j[0] >= MIN_PRECISION for j in judged):
        return result
    p, n, where = min(cast("list[tuple[float, int, str]]", judged))  # none is None past the test above
    note = (f" [a signal here, not a {result.kind}: measured {p:.0%} precise as an error detector on real model "
            f"output ({n} firings, {where}), below the {MIN_PRECISION:.0%} a {result.kind} needs]")
    return result.model_copy(update={"kind": "signal", "detail": result.detail + note})

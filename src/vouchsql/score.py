"""Scoring rules and the pass / flag / abstain gate (IES §3.2, §3.4).

Every rule returns a score in [0, 1] and the reasons that moved it. The score is not a
probability and is never presented as one.

- ``agreement_first`` (default): s = A, capped at .59 if a veto fires, .79 if a cap fires.
- ``v3``: agreement_first, and firing signals cap too: one at .79, two or more at .59.
- ``designed`` (bench-1.0): weighted mean over the terms measurable without a model —
  GROUNDED .30, SCHEMA .20, SAFETY .20 (RETRIEVE and COMPLETE need a judge and are left out;
  the weights renormalise) — with the hard cap at .59 and the thin-evidence cap at .79
  (fewer than three measured terms, or GROUNDED unmeasured).
- ``v2``: designed with the entropy layer L2 replaced by the agreement A.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from .answer import CheckResult, Reason, Verdict
from .errors import UserInputError
from .rules import RULE_NAMES

PASS_AT, FLAG_AT = 0.80, 0.60
VETO_CAP, CAP_CAP = 0.59, 0.79
WEIGHTS = {"grounded": 0.30, "schema": 0.20, "safety": 0.20}


@dataclass
class ScoreInput:
    agreement: float  # A, in [0, 1]; 0 when the shown answer has no result
    k: int
    checks: list[CheckResult]
    strict_clusters: list[int]  # strict-match cluster ids of the K results (entropy variant)


def gate(score: float) -> str:
    return "pass" if score >= PASS_AT else "flag" if score >= FLAG_AT else "abstain"


def _fired(checks: list[CheckResult], kind: str) -> list[CheckResult]:
    return [c for c in checks if c.fired and c.kind == kind]


class Reasons(list):
    """The reasons a rule names, each with a stable code; ``strings()`` gives the short
    strings of ``Verdict.reasons`` (a check's name, ``agreement 0.50 (…)``, ``grounded 0.50``…)."""

    def add(self, code: str, text: str, detail: str | None = None) -> None:
        self.append((Reason(code=code, detail=detail or text), text))

    def checks(self, fired: list[CheckResult]) -> None:
        for c in fired:
            self.add(c.name, c.name, c.detail)


def _agreement_reason(inp: ScoreInput, reasons: Reasons) -> None:
    if inp.agreement < PASS_AT:
        agree = round(inp.agreement * inp.k)
        reasons.add("agreement", f"agreement {inp.agreement:.2f} ({agree} of {inp.k} candidates agree with the "
                                 f"shown answer)")


def _capped(score: float, cap: float, fired: list[CheckResult], reasons: Reasons) -> float:
    if fired:
        reasons.checks(fired)
        return min(score, cap)
    return score


def agreement_first(inp: ScoreInput, signals_cap: bool = False) -> tuple[float, Reasons]:
    reasons = Reasons()
    _agreement_reason(inp, reasons)
    s = inp.agreement
    s = _capped(s, VETO_CAP, _fired(inp.checks, "veto"), reasons)
    s = _capped(s, CAP_CAP, _fired(inp.checks, "cap"), reasons)
    if signals_cap:
        signals = _fired(inp.checks, "signal")
        s = _capped(s, VETO_CAP if len(signals) >= 2 else CAP_CAP, signals, reasons)
    return s, reasons


def v3(inp: ScoreInput) -> tuple[float, Reasons]:
    return agreement_first(inp, signals_cap=True)


def _entropy_layer(inp: ScoreInput) -> float | None:
    """L2 = 1 − H(π)/log K over strict-result clusters (a failed sample is its own cluster)."""
    if inp.k < 2:
        return None
    sizes = Counter(inp.strict_clusters).values()
    h = -sum((n / inp.k) * math.log(n / inp.k) for n in sizes)
    # Clamped: with every sample in its own cluster, 1 − H/log K is −2e-16, shown as "-0.00".
    return max(0.0, 1 - h / math.log(inp.k))


def measured_term(checks: list[CheckResult], term: str) -> float | None:
    """A score term from the checks that feed it: the mean of the parts they measured
    (GROUNDED: tables exist, joins overlap, stand-in columns return none), or ``None``."""
    parts = [c.terms[term] for c in checks if term in c.terms]
    return sum(parts) / len(parts) if parts else None


def designed(inp: ScoreInput, use_agreement: bool = False) -> tuple[float, Reasons]:
    reasons = Reasons()
    terms: dict[str, float] = {}
    for term in ("grounded", "schema"):
        value = measured_term(inp.checks, term)
        if value is not None:
            terms[term] = value
    # L1, the checklist layer: 1 when a deterministic check (a veto) fires, ½ for a signal.
    r1 = 1.0 if _fired(inp.checks, "veto") else 0.5 if _fired(inp.checks, "signal") else 0.0
    l2 = inp.agreement if use_agreement else _entropy_layer(inp)
    terms["safety"] = min(1 - r1, l2) if l2 is not None else 1 - r1
    score = sum(WEIGHTS[t] * v for t, v in terms.items()) / sum(WEIGHTS[t] for t in terms)
    for name, value in terms.items():
        if value < PASS_AT:
            reasons.add(name, f"{name} {value:.2f}")
    if r1 == 0.5:  # the signals set L1: name them, as every check that lowers the score is named
        reasons.checks(_fired(inp.checks, "signal"))
    # Hard caps: every veto, and the uncited-number cap (the text states what the result lacks).
    hard = _fired(inp.checks, "veto") + [c for c in inp.checks if c.fired and c.name == "uncited_number"]
    score = _capped(score, VETO_CAP, hard, reasons)
    if len(terms) < 3 or "grounded" not in terms:
        reasons.add("thin_evidence", f"thin_evidence (only {', '.join(terms)} measured)")
        score = min(score, CAP_CAP)
    elif l2 is None:
        # One sample: the SAFETY term lacks its agreement/entropy layer, so evidence is thin too.
        reasons.add("thin_evidence", "thin_evidence (one sample: no agreement layer)")
        score = min(score, CAP_CAP)
    return score, reasons


def v2(inp: ScoreInput) -> tuple[float, Reasons]:
    return designed(inp, use_agreement=True)


_RULE_FUNCTIONS = {"agreement_first": agreement_first, "v3": v3, "designed": designed, "v2": v2}
RULES = {name: _RULE_FUNCTIONS[name] for name in RULE_NAMES}  # every named rule has a function


def score(rule: str, inp: ScoreInput) -> Verdict:
    if rule not in RULES:
        raise UserInputError(f"unknown scoring rule {rule!r}; choose one of {', '.join(RULES)}")
    value, reasons = RULES[rule](inp)
    value = round(max(0.0, min(1.0, value)), 4)
    return Verdict(rule=rule, score=value, gate=gate(value), reasons=[text for _, text in reasons],
                   reason_codes=[reason for reason, _ in reasons])


__all__ = ["RULES", "ScoreInput", "measured_term", "score", "gate", "PASS_AT", "FLAG_AT"]

"""Scoring rules and the pass / flag / abstain gate (IES §3.2, §3.4).

Every rule returns a score in [0, 1] and the reasons that moved it. The score is not a
probability and is never presented as one.

- ``agreement_alone``: s = A, nothing else (the paper's comparison rule, Tables 4 and 8).
- ``agreement_first`` (default): s = A, capped at .59 if a veto fires, .79 if a cap fires.
- ``v3``: agreement_first, and the frozen signal — only ``empty_result`` (IES §3.4) — caps
  at .79 (two or more firing signals at .59; with one frozen signal that cannot happen).
- ``v3_extended``: Vouch's v3: every signal caps (empty, truncated result, join fan-out and
  drop…), one at .79, two or more at .59.
- ``designed`` (bench-1.0): weighted mean over the measured terms — GROUNDED .30, SCHEMA,
  SAFETY and RETRIEVE .20 each, COMPLETE .10, renormalised over those measured — with the
  hard cap at .59 and the thin-evidence cap at .79 (fewer than three measured terms, or
  GROUNDED unmeasured). COMPLETE comes from the judge when one ran (``complete_judge``),
  else from the deterministic question–SQL alignment (``question_shape``,
  ``question_filters``); RETRIEVE from the alignment's link of the question to tables.
- ``v2``: designed with the entropy layer L2 replaced by the agreement A, and COMPLETE < .5
  capped at .79.

The check set (:data:`vouchsql.rules.CHECK_SETS`) says which checks the vetoes and caps read:
``vouch`` every check by its kind; ``paper`` only the paper's, with its thin-evidence cap on
agreement_first and RETRIEVE unmeasured (IES §3.2: "not measured on these benchmarks").
:data:`DESIGNED_OPTIONS` are the one-change ablations of IES Tables 2 and 7.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .answer import CheckResult, Reason, Verdict
from .errors import UserInputError
from .rules import CHECK_SETS, RULE_NAMES

PASS_AT, FLAG_AT = 0.80, 0.60
VETO_CAP, CAP_CAP = 0.59, 0.79
COMPLETE_MIN = 0.5  # IES §3.4: an answer covering less than half the question is capped
WEIGHTS = {"grounded": 0.30, "schema": 0.20, "safety": 0.20, "retrieve": 0.20, "complete": 0.10}

# The paper's checks (IES §3.2, §3.4): its three vetoes, its uncited-number cap, its one
# frozen signal. Everything else is Vouch's, read only under the ``vouch`` check set.
PAPER_VETOES = frozenset({"missing_table", "bad_join", "stand_in_value"})
JUDGE_COMPLETE = "complete_judge"  # the check that carries a judge model's COMPLETE
JUDGE_CLAIMS = "claim_judge"  # the check that carries a judge model's unsupported claims
PAPER_CAPS = frozenset({"uncited_number", JUDGE_CLAIMS})
FROZEN_SIGNALS = frozenset({"empty_result"})

# The one-change variants of ``designed`` that IES Tables 2 and 7 recompute (``options``).
DESIGNED_OPTIONS = {
    "drop": "terms left out of the weighted mean (grounded, schema, complete, safety, retrieve)",
    "safety": "min (the design), mean (of L1 and L2), l1 (SAFETY without L2), l2 (L2 alone)",
    "thin_cap": "the thin-evidence cap (default on)",
    "hard_caps": "the hard caps (default on)",
    "use_agreement": "L2 replaced by the agreement A (the v2 change)",
    "claims": "the judge's unsupported claims L1 and the hard cap count: all (the design), answer (only "
              "claims about the answer: the v2 change), ignore",
}


@dataclass
class ScoreInput:
    agreement: float  # A, in [0, 1]; 0 when the shown answer has no result
    k: int
    checks: list[CheckResult]
    strict_clusters: list[int]  # strict-match cluster ids of the K results (entropy variant)
    check_set: str = "vouch"
    options: dict[str, Any] = field(default_factory=dict)  # DESIGNED_OPTIONS, for ablations

    @property
    def paper(self) -> bool:
        return self.check_set == "paper"


def gate(score: float) -> str:
    return "pass" if score >= PASS_AT else "flag" if score >= FLAG_AT else "abstain"


def _fired(checks: list[CheckResult], kind: str) -> list[CheckResult]:
    return [c for c in checks if c.fired and c.kind == kind]


def _paper_fired(c: CheckResult) -> bool:
    """Fired under the paper's definitions: the stand-in veto only for a nonzero code returned
    as a value (IES §3.2; Vouch's check also fires on codes averaged or summed in, and on 0)."""
    if c.name == "stand_in_value":
        return bool(c.evidence.get("paper_fired", c.fired))
    return c.fired


def vetoes(inp: ScoreInput) -> list[CheckResult]:
    if inp.paper:
        return [c for c in inp.checks if c.name in PAPER_VETOES and _paper_fired(c)]
    return _fired(inp.checks, "veto")


def caps(inp: ScoreInput) -> list[CheckResult]:
    if inp.paper:
        return [c for c in inp.checks if c.fired and c.name in PAPER_CAPS]
    return _fired(inp.checks, "cap")


def signals(inp: ScoreInput, frozen: bool) -> list[CheckResult]:
    fired = _fired(inp.checks, "signal")
    return [c for c in fired if c.name in FROZEN_SIGNALS] if frozen else fired


class Reasons(list[tuple[Reason, str]]):
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


def measured_term(checks: list[CheckResult], term: str, paper: bool = False) -> float | None:
    """A score term from the checks that feed it: the mean of the parts they measured
    (GROUNDED: tables exist, joins overlap, stand-in columns return none), or ``None``.
    COMPLETE is the judge's when a judge ran, else the alignment checks' mean."""
    if term == "complete":
        judged = [c.terms[term] for c in checks if c.name == JUDGE_COMPLETE and term in c.terms]
        if judged:
            return judged[0]
    parts = []
    for c in checks:
        if paper and term == "grounded" and c.name == "stand_in_value" and "paper_grounded" in c.evidence:
            value = c.evidence["paper_grounded"]  # the paper's g_val (None: no part)
        else:
            value = c.terms.get(term)
        if value is not None:
            parts.append(value)
    return sum(parts) / len(parts) if parts else None


def complete_source(checks: list[CheckResult]) -> str | None:
    """Where COMPLETE came from: ``judge``, ``alignment`` (deterministic), or None (unmeasured)."""
    if any(c.name == JUDGE_COMPLETE and "complete" in c.terms for c in checks):
        return "judge"
    return "alignment" if any("complete" in c.terms for c in checks) else None


def _terms(inp: ScoreInput) -> dict[str, float]:
    """The measured terms among GROUNDED, SCHEMA, COMPLETE, RETRIEVE (SAFETY is the rule's)."""
    names = ("grounded", "schema", "complete") if inp.paper else ("grounded", "schema", "complete", "retrieve")
    terms = {}
    for term in names:
        value = measured_term(inp.checks, term, paper=inp.paper)
        if value is not None:
            terms[term] = value
    return terms


def _incomplete(inp: ScoreInput, reasons: Reasons) -> bool:
    """COMPLETE < 0.5 (IES §3.4), named with where COMPLETE came from."""
    value = measured_term(inp.checks, "complete")
    if value is None or value >= COMPLETE_MIN:
        return False
    reasons.add("incomplete", f"incomplete (COMPLETE {value:.2f} by {complete_source(inp.checks)})")
    return True


def _thin(terms: dict[str, float], reasons: Reasons) -> bool:
    """IES §3.2: evidence is thin when fewer than three terms are measured or GROUNDED is not."""
    if len(terms) < 3 or "grounded" not in terms:
        reasons.add("thin_evidence", f"thin_evidence (only {', '.join(terms) or 'no term'} measured)")
        return True
    return False


def agreement_alone(inp: ScoreInput) -> tuple[float, Reasons]:
    reasons = Reasons()
    _agreement_reason(inp, reasons)
    return inp.agreement, reasons


def agreement_first(inp: ScoreInput, signal_caps: str | None = None) -> tuple[float, Reasons]:
    """IES eq. 5. ``signal_caps``: None (agreement-first), ``frozen`` (v3), ``all`` (v3_extended)."""
    s, reasons = agreement_alone(inp)
    s = _capped(s, VETO_CAP, vetoes(inp), reasons)
    s = _capped(s, CAP_CAP, caps(inp), reasons)
    if inp.paper:
        # The paper's remaining caps: COMPLETE < 0.5 and thin evidence (a judge issue about
        # the answer is not measured: Vouch has no claim judge).
        terms = {**_terms(inp), "safety": 1.0}  # SAFETY is always measured (its L1 at least)
        if _incomplete(inp, reasons) | _thin(terms, reasons):
            s = min(s, CAP_CAP)
    if signal_caps:
        fired = signals(inp, frozen=signal_caps == "frozen")
        s = _capped(s, VETO_CAP if len(fired) >= 2 else CAP_CAP, fired, reasons)
    return s, reasons


def v3(inp: ScoreInput) -> tuple[float, Reasons]:
    return agreement_first(inp, signal_caps="frozen")


def v3_extended(inp: ScoreInput) -> tuple[float, Reasons]:
    return agreement_first(inp, signal_caps="all")


def _entropy_layer(inp: ScoreInput) -> float | None:
    """L2 = 1 − H(π)/log K over strict-result clusters (a failed sample is its own cluster)."""
    if inp.k < 2:
        return None
    sizes = Counter(inp.strict_clusters).values()
    h = -sum((n / inp.k) * math.log(n / inp.k) for n in sizes)
    # Clamped: with every sample in its own cluster, 1 − H/log K is −2e-16, shown as "-0.00".
    return max(0.0, 1 - h / math.log(inp.k))


def _claims(inp: ScoreInput, mode: str) -> list[CheckResult]:
    """The claim judge's result when it counts under ``mode``: ``all`` — any unsupported claim
    (the designed score, IES §3.2), ``answer`` — a claim about the answer (v2, §3.4), ``ignore``."""
    if mode == "ignore":
        return []
    out = []
    for c in inp.checks:
        if c.name == JUDGE_CLAIMS:
            claims = c.evidence.get("claims") or []
            if (claims if mode == "all" else c.evidence.get("about_answer", 0)):
                out.append(c)
    return out


def _checklist_layer(inp: ScoreInput, claims: str = "all") -> float:
    """L1 = 1 − r1: r1 = 1 when a deterministic check (a veto) fires or the judge reports an
    unsupported claim (``claims``: which count), ½ for another tag (a signal; none under the
    paper's checks, whose heuristic tags Vouch does not run)."""
    if vetoes(inp) or _claims(inp, claims):
        return 0.0
    return 0.5 if not inp.paper and _fired(inp.checks, "signal") else 1.0


def designed(inp: ScoreInput, use_agreement: bool = False) -> tuple[float, Reasons]:
    opts = inp.options
    use_agreement = opts.get("use_agreement", use_agreement)
    # The v2 change: L1 and the claim cap count only claims about the answer (IES §3.4).
    claims = opts.get("claims", "answer" if use_agreement else "all")
    reasons = Reasons()
    terms = _terms(inp)
    l1 = _checklist_layer(inp, claims)
    l2 = inp.agreement if use_agreement else _entropy_layer(inp)
    mode = opts.get("safety", "min")
    if mode == "l1" or l2 is None:
        terms["safety"] = l1
    elif mode == "l2":
        terms["safety"] = l2
    elif mode == "mean":
        terms["safety"] = (l1 + l2) / 2
    else:
        terms["safety"] = min(l1, l2)
    # Thin evidence is about what was measured (IES §3.2): a term an ablation leaves out of
    # the mean (Table 2's "Drop …" rows) was still measured, so it still counts here.
    measured = dict(terms)
    for term in opts.get("drop", ()):
        terms.pop(term, None)
    if not terms:  # every term dropped: nothing is measured, so nothing can pass
        reasons.add("thin_evidence", "thin_evidence (no term measured)")
        return 0.0, reasons
    score = sum(WEIGHTS[t] * v for t, v in terms.items()) / sum(WEIGHTS[t] for t in terms)
    for name, value in terms.items():
        if value < PASS_AT:
            reasons.add(name, f"{name} {value:.2f}")
    if l1 == 0.5 and "safety" in terms:  # the signals set L1: name them, as every check that lowers the score is named
        reasons.checks(_fired(inp.checks, "signal"))
    if opts.get("hard_caps", True):
        # Hard caps: every veto, and the uncited-number cap (the text states what the result lacks).
        # and an unsupported claim (of any kind in the design; about the answer under v2).
        hard = vetoes(inp) + [c for c in inp.checks if c.fired and c.name == "uncited_number"] + _claims(inp, claims)
        score = _capped(score, VETO_CAP, hard, reasons)
    if use_agreement and _incomplete(inp, reasons):  # the v2 change (IES §3.4)
        score = min(score, CAP_CAP)
    if opts.get("thin_cap", True):
        if _thin(measured, reasons):
            score = min(score, CAP_CAP)
        elif l2 is None and not inp.paper:
            # One sample: the SAFETY term lacks its agreement/entropy layer, so evidence is thin too.
            reasons.add("thin_evidence", "thin_evidence (one sample: no agreement layer)")
            score = min(score, CAP_CAP)
    return score, reasons


def v2(inp: ScoreInput) -> tuple[float, Reasons]:
    return designed(inp, use_agreement=True)


def components(inp: ScoreInput) -> dict[str, float | None]:
    """The pieces every rule is built from, for ablations and the fitted variant (IES §4.4,
    Tables 2 and 7): A, L1, L2 (None with one sample), the measured terms (None when
    unmeasured), and 0/1 for a veto, a cap and the frozen signal having fired."""
    terms = _terms(inp)
    return {"agreement": inp.agreement, "l1": _checklist_layer(inp), "l2": _entropy_layer(inp),
            **{t: terms.get(t) for t in ("grounded", "schema", "complete", "retrieve")},
            "veto": float(bool(vetoes(inp))), "cap": float(bool(caps(inp))),
            "empty_result": float(bool(signals(inp, frozen=True)))}


_RULE_FUNCTIONS = {"designed": designed, "v2": v2, "agreement_alone": agreement_alone,
                   "agreement_first": agreement_first, "v3": v3, "v3_extended": v3_extended}
RULES = {name: _RULE_FUNCTIONS[name] for name in RULE_NAMES}  # every named rule has a function


def score(rule: str, inp: ScoreInput) -> Verdict:
    if rule not in RULES:
        raise UserInputError(f"unknown scoring rule {rule!r}; choose one of {', '.join(RULES)}")
    if inp.check_set not in CHECK_SETS:
        raise UserInputError(f"unknown check set {inp.check_set!r}; choose one of {', '.join(CHECK_SETS)}")
    value, reasons = RULES[rule](inp)
    value = round(max(0.0, min(1.0, value)), 4)
    return Verdict(rule=rule, score=value, gate=gate(value), reasons=[text for _, text in reasons],
                   reason_codes=[reason for reason, _ in reasons])


__all__ = ["RULES", "ScoreInput", "measured_term", "complete_source", "components", "score", "gate", "PASS_AT",
           "FLAG_AT", "DESIGNED_OPTIONS"]

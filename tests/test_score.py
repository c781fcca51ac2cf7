"""The scoring rules and the gate (IES §3.2, §3.4) on constructed evidence: exact scores,
gates at their boundaries, the caps, the designed rule's renormalised weights and its
entropy layer, and the reasons each verdict names."""

from __future__ import annotations

import math

import pytest

from vouchsql.answer import CheckResult
from vouchsql.errors import UserInputError
from vouchsql.score import FLAG_AT, PASS_AT, RULES, ScoreInput, _entropy_layer, gate, score
from vouchsql.settings import RULES as SETTING_RULES

# ---------------------------------------------------------------------------------------
# Building evidence
# ---------------------------------------------------------------------------------------
KINDS = {"no_result": "veto", "missing_table": "veto", "bad_join": "veto", "stand_in_value": "veto",
         "uncited_number": "cap", "thin_evidence": "cap", "empty_result": "signal",
         "truncated_result": "signal", "join_fanout": "signal", "join_drop": "signal"}

def clean(**terms) -> list[CheckResult]:
    """A full, unfired set of checks whose terms let every designed term be measured: tables
    exist (GROUNDED part 1), one good join (part 1), no stand-in carrier (no part), and one
    cited number (SCHEMA 1). A keyword replaces one check's terms. The rules read only
    ``terms``; that each check reports them as here is pinned by the checks' own tests
    (tests/test_checks.py::test_terms_*)."""
    base = {name: {} for name in KINDS}
    base.update({"missing_table": {"grounded": 1.0}, "bad_join": {"grounded": 1.0},
                 "uncited_number": {"schema": 1.0}})
    base.update(terms)
    return [CheckResult(name=n, kind=KINDS[n], fired=False, detail="ok", terms=t) for n, t in base.items()]


def fire(checks: list[CheckResult], *names: str, **terms) -> list[CheckResult]:
    """The same checks with ``names`` fired (and, optionally, new terms for one of them)."""
    out = []
    for c in checks:
        if c.name in names:
            c = c.model_copy(update={"fired": True, "detail": "fired", "terms": terms.get(c.name, c.terms)})
        out.append(c)
    return out


def inp(agreement: float = 1.0, checks: list[CheckResult] | None = None, k: int = 5,
        clusters: list[int] | None = None) -> ScoreInput:
    return ScoreInput(agreement=agreement, k=k, checks=clean() if checks is None else checks,
                      strict_clusters=[0] * k if clusters is None else clusters)


# ---------------------------------------------------------------------------------------
# The gate
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    (1.0, "pass"), (0.80, "pass"), (0.7999, "flag"), (0.79, "flag"), (0.60, "flag"),
    (0.5999, "abstain"), (0.59, "abstain"), (0.0, "abstain"),
])
def test_gate_boundaries(value, expected):
    assert (PASS_AT, FLAG_AT) == (0.80, 0.60)
    assert gate(value) == expected


@pytest.mark.parametrize("agreement, expected", [
    (1.0, "pass"), (0.80, "pass"), (0.7999, "flag"), (0.60, "flag"), (0.5999, "abstain"), (0.0, "abstain"),
])
def test_agreement_first_score_is_the_agreement_and_gates_at_the_boundaries(agreement, expected):
    v = score("agreement_first", inp(agreement))
    assert (v.rule, v.score, v.gate) == ("agreement_first", agreement, expected)


def test_rules_match_the_setting_choices():
    assert set(RULES) == set(SETTING_RULES) == {"agreement_alone", "agreement_first", "v3", "v3_extended", "designed", "v2"}


def test_unknown_rule_is_a_user_input_error():
    with pytest.raises(UserInputError) as info:
        score("bogus", inp())
    assert "bogus" in info.value.message
    assert all(name in info.value.message for name in RULES)
    assert info.value.exit_code == 2


# ---------------------------------------------------------------------------------------
# agreement_first
# ---------------------------------------------------------------------------------------
def test_agreement_first_clean_full_agreement_passes_with_no_reasons():
    v = score("agreement_first", inp(1.0))
    assert (v.score, v.gate, v.reasons) == (1.0, "pass", [])


def test_agreement_first_names_the_agreement_below_080():
    v = score("agreement_first", inp(0.6))
    assert (v.score, v.gate) == (0.6, "flag")
    assert v.reasons == ["agreement 0.60 (3 of 5 candidates agree with the shown answer)"]
    assert score("agreement_first", inp(0.8)).reasons == []


@pytest.mark.parametrize("veto", ["no_result", "missing_table", "bad_join", "stand_in_value"])
def test_agreement_first_veto_caps_at_059(veto):
    v = score("agreement_first", inp(1.0, fire(clean(), veto)))
    assert (v.score, v.gate, v.reasons) == (0.59, "abstain", [veto])


@pytest.mark.parametrize("cap", ["uncited_number", "thin_evidence"])
def test_agreement_first_cap_caps_at_079(cap):
    v = score("agreement_first", inp(1.0, fire(clean(), cap)))
    assert (v.score, v.gate, v.reasons) == (0.79, "flag", [cap])


def test_agreement_first_a_cap_never_raises_a_lower_agreement():
    v = score("agreement_first", inp(0.4, fire(clean(), "thin_evidence")))
    assert (v.score, v.gate) == (0.4, "abstain")
    assert v.reasons == ["agreement 0.40 (2 of 5 candidates agree with the shown answer)", "thin_evidence"]


def test_agreement_first_veto_and_cap_together():
    v = score("agreement_first", inp(0.8, fire(clean(), "bad_join", "uncited_number")))
    assert (v.score, v.gate, v.reasons) == (0.59, "abstain", ["bad_join", "uncited_number"])


def test_agreement_first_two_vetoes_are_both_named():
    v = score("agreement_first", inp(1.0, fire(clean(), "no_result", "missing_table")))
    assert v.reasons == ["no_result", "missing_table"]
    assert v.score == 0.59


def test_agreement_first_ignores_signals():
    v = score("agreement_first", inp(1.0, fire(clean(), "empty_result", "join_fanout", "join_drop")))
    assert (v.score, v.gate, v.reasons) == (1.0, "pass", [])


def test_agreement_first_unfired_checks_do_not_count():
    assert score("agreement_first", inp(0.9, clean())).score == 0.9


# ---------------------------------------------------------------------------------------
# v3: signals cap too
# ---------------------------------------------------------------------------------------
def test_v3_without_signals_equals_agreement_first():
    for checks in (clean(), fire(clean(), "thin_evidence"), fire(clean(), "missing_table")):
        a, b = score("agreement_first", inp(0.8, checks)), score("v3", inp(0.8, checks))
        assert (a.score, a.gate, a.reasons) == (b.score, b.gate, b.reasons)


def test_v3_one_signal_caps_at_079():
    v = score("v3", inp(1.0, fire(clean(), "empty_result")))
    assert (v.rule, v.score, v.gate, v.reasons) == ("v3", 0.79, "flag", ["empty_result"])


@pytest.mark.parametrize("signals", [("empty_result", "join_drop"), ("truncated_result", "join_fanout", "join_drop")])
def test_v3_extended_two_or_more_signals_cap_at_059(signals):
    v = score("v3_extended", inp(1.0, fire(clean(), *signals)))
    assert (v.score, v.gate) == (0.59, "abstain")
    assert v.reasons == list(signals)


@pytest.mark.parametrize("signal", ["join_fanout", "join_drop", "truncated_result"])
def test_v3_as_frozen_does_not_cap_on_a_signal_other_than_the_empty_result(signal):
    # IES §3.4: "Only the empty-result signal … was frozen for test"; v3_extended caps on it.
    v = score("v3", inp(1.0, fire(clean(), signal)))
    assert (v.score, v.gate, v.reasons) == (1.0, "pass", [])
    assert score("v3_extended", inp(1.0, fire(clean(), signal))).score == 0.79


def test_v3_as_frozen_caps_the_empty_result_with_other_signals_beside_it_at_079():
    v = score("v3", inp(1.0, fire(clean(), "empty_result", "join_drop", "join_fanout")))
    assert (v.score, v.gate, v.reasons) == (0.79, "flag", ["empty_result"])


def test_agreement_alone_is_the_agreement_whatever_fires():
    every = fire(clean(), *KINDS)
    for a in (0.0, 0.6, 0.8, 1.0):
        v = score("agreement_alone", inp(a, every))
        assert v.score == a and v.gate == gate(a)
    v = score("agreement_alone", inp(1.0, fire(clean(), "missing_table", "bad_join")))
    assert (v.score, v.gate, v.reasons) == (1.0, "pass", [])  # a veto that agreement_first obeys
    assert score("agreement_first", inp(1.0, fire(clean(), "missing_table"))).gate == "abstain"
    v = score("agreement_alone", inp(0.6))
    assert v.reasons == ["agreement 0.60 (3 of 5 candidates agree with the shown answer)"]


def test_v3_extended_signal_below_the_cap_keeps_the_agreement():
    v = score("v3_extended", inp(0.5, fire(clean(), "join_fanout")))
    assert (v.score, v.gate) == (0.5, "abstain")
    assert v.reasons == ["agreement 0.50 (2 of 5 candidates agree with the shown answer)", "join_fanout"]


def test_v3_signal_and_veto():
    v = score("v3", inp(1.0, fire(clean(), "missing_table", "empty_result")))
    assert (v.score, v.gate, v.reasons) == (0.59, "abstain", ["missing_table", "empty_result"])


# ---------------------------------------------------------------------------------------
# The entropy layer L2 = 1 − H/log K
# ---------------------------------------------------------------------------------------
def _l2(sizes: list[int]) -> float:
    k = sum(sizes)
    h = -sum(n / k * math.log(n / k) for n in sizes)
    return 1 - h / math.log(k)


@pytest.mark.parametrize("clusters, expected", [
    ([0, 0, 0, 0, 0], 1.0),
    ([0, 0, 0, 0, 1], 0.6891),  # 4+1
    ([0, 0, 0, 1, 1], 0.5818),  # 3+2
    ([0, 0, 1, 1, 2], 0.3445),  # 2+2+1
    ([0, 1, 2, 3, 4], 0.0),  # every sample alone
    ([0, 1], 0.0),
    ([3, 3], 1.0),
])
def test_entropy_layer(clusters, expected):
    value = _entropy_layer(inp(k=len(clusters), clusters=clusters))
    assert value == pytest.approx(expected, abs=5e-5)
    assert 0.0 <= value <= 1.0
    if 0 < expected < 1:
        assert value == pytest.approx(_l2([clusters.count(c) for c in set(clusters)]), abs=1e-12)


def test_entropy_layer_needs_two_samples():
    assert _entropy_layer(inp(k=1, clusters=[0])) is None


# ---------------------------------------------------------------------------------------
# designed: weighted mean of GROUNDED .30, SCHEMA .20, SAFETY .20 over the measured terms
# ---------------------------------------------------------------------------------------
def test_designed_clean_full_agreement():
    v = score("designed", inp(1.0))
    assert (v.rule, v.score, v.gate, v.reasons) == ("designed", 1.0, "pass", [])


def test_designed_uses_the_entropy_layer_not_the_agreement():
    # A 4+1 strict split: SAFETY = L2 = 0.6891; (0.30 + 0.20 + 0.20·0.6891) / 0.70 = 0.9112.
    v = score("designed", inp(0.8, clusters=[0, 0, 0, 0, 1]))
    assert (v.score, v.gate) == (0.9112, "pass")
    assert v.reasons == ["safety 0.69"]
    # The same split scored with the agreement does not move designed.
    assert score("designed", inp(0.2, clusters=[0, 0, 0, 0, 1])).score == 0.9112


def test_designed_every_sample_alone():
    # SAFETY = 0: 0.50 / 0.70 = 0.7143, a flag, and the layer is named at 0.00 (not -0.00).
    v = score("designed", inp(0.2, clusters=[0, 1, 2, 3, 4]))
    assert (v.score, v.gate, v.reasons) == (0.7143, "flag", ["safety 0.00"])


def test_designed_signal_halves_safety_and_is_named():
    # L1 = 1 − 0.5: (0.30 + 0.20 + 0.20·0.5) / 0.70 = 0.8571.
    v = score("designed", inp(1.0, fire(clean(), "join_drop")))
    assert (v.score, v.gate) == (0.8571, "pass")
    assert v.reasons == ["safety 0.50", "join_drop"]


def test_designed_signal_and_weaker_entropy_takes_the_minimum():
    # 3+2 split: min(0.5, 0.5818) = 0.5.
    v = score("designed", inp(0.6, fire(clean(), "empty_result"), clusters=[0, 0, 0, 1, 1]))
    assert v.score == 0.8571


def test_designed_missing_table_zeroes_grounded_and_safety():
    checks = fire(clean(bad_join={}), "missing_table", missing_table={"grounded": 0.0})
    # GROUNDED 0 (tables), SCHEMA 1, SAFETY 0: 0.20 / 0.70 = 0.2857, under the .59 cap.
    v = score("designed", inp(1.0, checks))
    assert (v.score, v.gate) == (0.2857, "abstain")
    assert v.reasons == ["grounded 0.00", "safety 0.00", "missing_table"]


def test_designed_veto_hard_cap_at_059():
    # GROUNDED = mean(tables 1, joins ½) = 0.75; SAFETY 0: (0.225 + 0.20) / 0.70 = 0.6071 → .59.
    checks = fire(clean(bad_join={"grounded": 0.5}), "bad_join")
    v = score("designed", inp(1.0, checks))
    assert (v.score, v.gate) == (0.59, "abstain")
    assert v.reasons == ["grounded 0.75", "safety 0.00", "bad_join"]


def test_designed_uncited_number_is_a_hard_cap():
    checks = fire(clean(), "uncited_number")
    v = score("designed", inp(1.0, checks))
    assert (v.score, v.gate, v.reasons) == (0.59, "abstain", ["uncited_number"])


def test_designed_renormalises_over_the_measured_terms():
    # No answer text, so SCHEMA is unmeasured; GROUNDED = mean(tables 1, stand-in columns ½) = 0.75;
    # SAFETY 0 (a veto). Renormalised: 0.30·0.75 / 0.50 = 0.45 (0.225 if the weights were not).
    checks = fire(clean(uncited_number={}, bad_join={}, stand_in_value={"grounded": 1.0}), "stand_in_value",
                  stand_in_value={"grounded": 0.5})
    v = score("designed", inp(1.0, checks))
    assert (v.score, v.gate) == (0.45, "abstain")
    assert v.reasons == ["grounded 0.75", "safety 0.00", "stand_in_value",
                         "thin_evidence (only grounded, safety measured)"]


def test_designed_thin_evidence_cap_with_two_terms():
    # GROUNDED 1 and SAFETY 1 only (no answer text): 1.0, capped at .79.
    v = score("designed", inp(1.0, clean(uncited_number={})))
    assert (v.score, v.gate) == (0.79, "flag")
    assert v.reasons == ["thin_evidence (only grounded, safety measured)"]


def test_designed_thin_evidence_cap_without_grounded():
    # The SQL could not be read: no tables, joins or carriers to rate.
    checks = clean(missing_table={}, bad_join={}, stand_in_value={})
    v = score("designed", inp(1.0, checks))
    assert (v.score, v.gate) == (0.79, "flag")
    assert v.reasons == ["thin_evidence (only schema, safety measured)"]


def test_designed_thin_cap_does_not_raise_a_lower_score():
    # SCHEMA unmeasured, GROUNDED 1, SAFETY 0.5 (a signal): (0.30 + 0.10) / 0.50 = 0.80 → .79.
    v = score("designed", inp(1.0, fire(clean(uncited_number={}), "empty_result")))
    assert v.score == 0.79
    assert v.reasons == ["safety 0.50", "empty_result", "thin_evidence (only grounded, safety measured)"]


def test_designed_single_candidate_is_thin_evidence():
    # K = 1: L2 is unmeasured, so SAFETY = L1 alone and the evidence is thin: capped at .79.
    v = score("designed", inp(1.0, fire(clean(), "thin_evidence"), k=1, clusters=[0]))
    assert v.score == 0.79 and v.gate == "flag"
    assert v.reasons == ["thin_evidence (one sample: no agreement layer)"]
    # SAFETY 0.5 from the signal: (0.30 + 0.20 + 0.10) / 0.70 = 0.8571 → capped at .79 too.
    v = score("designed", inp(1.0, fire(clean(), "thin_evidence", "empty_result"), k=1, clusters=[0]))
    assert v.score == 0.79


def test_designed_grounded_joins_share():
    # Two joins, one below ρ .85, reported but not fired (constructed): GROUNDED = mean(1, ½).
    checks = clean(bad_join={"grounded": 0.5})
    v = score("designed", inp(1.0, checks))
    assert v.score == round((0.30 * 0.75 + 0.20 + 0.20) / 0.70, 4) == 0.8929
    assert v.reasons == ["grounded 0.75"]


# ---------------------------------------------------------------------------------------
# v2: designed with L2 replaced by the agreement A
# ---------------------------------------------------------------------------------------
def test_v2_uses_the_agreement():
    # (0.30 + 0.20 + 0.20·0.6) / 0.70 = 0.8857, whatever the strict clusters say.
    for clusters in ([0, 0, 0, 0, 0], [0, 1, 2, 3, 4]):
        v = score("v2", inp(0.6, clusters=clusters))
        assert (v.rule, v.score, v.gate, v.reasons) == ("v2", 0.8857, "pass", ["safety 0.60"])


def test_v2_and_designed_differ_on_the_same_evidence():
    evidence = inp(0.8, clusters=[0, 0, 0, 0, 1])
    assert score("designed", evidence).score == 0.9112
    assert score("v2", evidence).score == round((0.5 + 0.2 * 0.8) / 0.7, 4) == 0.9429


def test_v2_zero_agreement_flags():
    v = score("v2", inp(0.0))
    assert (v.score, v.gate, v.reasons) == (0.7143, "flag", ["safety 0.00"])


def test_v2_single_candidate_measures_safety_from_the_agreement():
    v = score("v2", inp(1.0, k=1, clusters=[0]))
    assert (v.score, v.gate) == (1.0, "pass")


def test_v2_keeps_the_caps():
    # GROUNDED = mean(tables 0, joins 1) = 0.5, SAFETY 0: (0.15 + 0.20) / 0.70 = 0.5, under .59.
    v = score("v2", inp(1.0, fire(clean(), "missing_table", missing_table={"grounded": 0.0})))
    assert (v.score, v.reasons) == (0.5, ["grounded 0.50", "safety 0.00", "missing_table"])
    v = score("v2", inp(1.0, fire(clean(), "uncited_number")))
    assert (v.score, v.reasons) == (0.59, ["uncited_number"])
    v = score("v2", inp(1.0, clean(uncited_number={})))
    assert v.score == 0.79 and v.reasons[-1].startswith("thin_evidence")


# ---------------------------------------------------------------------------------------
# Every rule
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_stays_in_range_and_names_every_veto(rule):
    for agreement in (0.0, 0.37, 1.0):
        for names in ((), ("missing_table",), ("bad_join", "empty_result"), ("thin_evidence",)):
            v = score(rule, inp(agreement, fire(clean(), *names)))
            assert 0.0 <= v.score <= 1.0
            assert v.score == round(v.score, 4)
            assert v.gate == gate(v.score)
            for veto in (n for n in names if KINDS[n] == "veto" and rule != "agreement_alone"):
                assert veto in v.reasons
                assert v.score <= 0.59
            if v.gate != "pass":
                assert v.reasons, f"{rule}: a {v.gate} must name its reasons"


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_rule_reports_its_own_name(rule):
    assert score(rule, inp()).rule == rule

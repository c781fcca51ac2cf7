"""The scoring rules' newer parts pinned at and beside their cutoffs (issue 11, part 5; the
rules as IES froze them, issue 13): where COMPLETE comes from (the judge over the
question–SQL alignment), COMPLETE < 0.5, the paper's check set (its vetoes, caps, thin
evidence and unmeasured RETRIEVE), RETRIEVE's and COMPLETE's weights, and the designed rule's
one-change options. Exact scores, gates and reasons on constructed evidence; a mutation run
(``python bench/mutation.py --modules score``) is their measure.

Scores, gates, terms and which reasons a verdict names (each reason's code, and the values its
text states) are compared in code; the wording of each reason and message is the snapshot's
(tests/__snapshots__/test_boundaries_score.ambr): after rewording one,
``pytest tests/test_boundaries_score.py --snapshot-update`` and review the diff.
"""

from __future__ import annotations

import math

import pytest

from vouchsql.answer import CheckResult, Verdict
from vouchsql.errors import UserInputError
from vouchsql.score import (CAP_CAP, COMPLETE_MIN, VETO_CAP, WEIGHTS, ScoreInput, complete_source, components,
                            measured_term, score)

from wording import Prose


def check(name: str, kind: str = "signal", fired: bool = False, **terms: float) -> CheckResult:
    return CheckResult(name=name, kind=kind, fired=fired, detail="fired" if fired else "ok", terms=terms)


def judge(complete: float) -> CheckResult:
    return check("complete_judge", complete=complete)


def alignment(complete: float, name: str = "question_shape", **terms: float) -> CheckResult:
    return check(name, complete=complete, **terms)


GROUNDED = check("missing_table", "veto", grounded=1.0)
SCHEMA = check("uncited_number", "cap", schema=1.0)


def verdict(rule: str, checks: list[CheckResult], agreement: float = 1.0, k: int = 5, clusters=None,
            check_set: str = "vouch", **options):
    return score(rule, ScoreInput(agreement=agreement, k=k, checks=checks,
                                  strict_clusters=[0] * k if clusters is None else clusters,
                                  check_set=check_set, options=options))


def named(v: Verdict) -> list[tuple[str, str]]:
    """The reasons a verdict names, in order: each one's code (which reason) beside its text. A test
    compares the code in code and the text with a Prose naming the values it states (a term's
    value, where COMPLETE came from, the terms measured); the text's wording is the snapshot's."""
    return list(zip([r.code for r in v.reason_codes], v.reasons, strict=True))


def codes(v: Verdict) -> list[str]:
    """Which reasons a verdict names: their codes, in order."""
    return [code for code, _ in named(v)]


# ---------------------------------------------------------------------------------------
# COMPLETE: the judge's when one ran, else the alignment checks' mean
# ---------------------------------------------------------------------------------------
def test_the_cutoff_and_weights_are_the_papers():
    assert COMPLETE_MIN == 0.5
    assert WEIGHTS == {"grounded": 0.30, "schema": 0.20, "safety": 0.20, "retrieve": 0.20, "complete": 0.10}


def test_complete_is_the_judges_over_the_alignment(snapshot):
    checks = [GROUNDED, SCHEMA, alignment(1.0), judge(0.4)]
    assert measured_term(checks, "complete") == 0.4
    assert complete_source(checks) == "judge"
    assert components(ScoreInput(1.0, 5, checks, [0] * 5))["complete"] == 0.4
    # The judge listed first or last: the same COMPLETE.
    assert measured_term([judge(0.4), alignment(1.0)], "complete") == 0.4
    v = verdict("v2", checks)
    assert (v.score, v.gate) == (CAP_CAP, "flag")
    assert ("incomplete", Prose("0.40", "judge")) in named(v) and "incomplete" in [r.code for r in v.reason_codes]
    assert v.reasons == snapshot


def test_complete_without_a_judge_is_the_alignment_mean(snapshot):
    checks = [GROUNDED, SCHEMA, alignment(0.2), alignment(0.6, name="question_filters")]
    assert measured_term(checks, "complete") == pytest.approx(0.4)
    assert complete_source(checks) == "alignment"
    v = verdict("v2", checks)
    assert ("incomplete", Prose("0.40", "alignment")) in named(v)
    assert v.reasons == snapshot
    # A judge check that measured nothing leaves the alignment's COMPLETE.
    silent = check("complete_judge", grounded=1.0)
    assert measured_term(checks + [silent], "complete") == pytest.approx(0.4)
    assert complete_source(checks + [silent]) == "alignment"
    # Only the judge carries COMPLETE: the judge's, whatever another check measured.
    assert measured_term([GROUNDED, judge(0.7)], "complete") == 0.7
    assert complete_source([GROUNDED, judge(0.7)]) == "judge"


def test_complete_unmeasured():
    checks = [GROUNDED, SCHEMA]
    assert measured_term(checks, "complete") is None
    assert complete_source(checks) is None
    assert complete_source([]) is None
    v = verdict("v2", checks)
    assert "incomplete" not in codes(v)


@pytest.mark.parametrize("value, capped", [
    (COMPLETE_MIN, False), (math.nextafter(COMPLETE_MIN, 0), True), (math.nextafter(COMPLETE_MIN, 1), False),
    (0.0, True), (1.0, False),
])
def test_v2_caps_complete_below_one_half_only(value, capped, snapshot):
    # Every other term at 1: the designed mean alone would pass.
    checks = [GROUNDED, SCHEMA, judge(value), check("question_shape", retrieve=1.0)]
    v = verdict("v2", checks)
    uncapped = (0.3 + 0.2 + 0.1 * value + 0.2 + 0.2) / 1.0
    assert v.score == (CAP_CAP if capped else round(uncapped, 4))
    assert ("incomplete" in codes(v)) is capped
    assert v.reasons == snapshot
    # designed (no v2 change) never caps on COMPLETE.
    assert verdict("designed", checks).score == round(uncapped, 4)


# ---------------------------------------------------------------------------------------
# RETRIEVE and COMPLETE in the designed mean; the paper leaves RETRIEVE unmeasured
# ---------------------------------------------------------------------------------------
def test_designed_weighs_retrieve_020_and_complete_010(snapshot):
    checks = [GROUNDED, SCHEMA, alignment(0.5, retrieve=0.25)]
    v = verdict("designed", checks)
    # (0.30·1 + 0.20·1 + 0.10·0.5 + 0.20·0.25 + 0.20·1) / 1.00
    assert v.score == round(0.3 + 0.2 + 0.05 + 0.05 + 0.2, 4)
    assert named(v) == [("complete", Prose("0.50")), ("retrieve", Prose("0.25"))]
    assert v.reasons == snapshot
    assert components(ScoreInput(1.0, 5, checks, [0] * 5))["retrieve"] == 0.25


def test_the_paper_leaves_retrieve_unmeasured(snapshot):
    checks = [GROUNDED, SCHEMA, alignment(1.0, retrieve=0.0)]
    vouch = verdict("designed", checks)
    paper = verdict("designed", checks, check_set="paper")
    assert vouch.score == 0.8 and ("retrieve", Prose("0.00")) in named(vouch)
    assert vouch.reasons == snapshot
    # (0.30 + 0.20 + 0.10 + 0.20) / 0.80: RETRIEVE is not in the paper's mean.
    assert paper.score == 1.0 and paper.reasons == []
    assert components(ScoreInput(1.0, 5, checks, [0] * 5, check_set="paper"))["retrieve"] is None
    assert components(ScoreInput(1.0, 5, checks, [0] * 5, check_set="paper"))["complete"] == 1.0


@pytest.mark.parametrize("term", ["grounded", "schema", "complete"])
def test_the_paper_measures_grounded_schema_and_complete(term, snapshot):
    # Each of the paper's three terms at 0 lowers the paper's designed score.
    values = {"grounded": 1.0, "schema": 1.0, "complete": 1.0, term: 0.0}
    checks = [check("missing_table", "veto", grounded=values["grounded"]),
              check("uncited_number", "cap", schema=values["schema"]), judge(values["complete"])]
    v = verdict("designed", checks, check_set="paper")
    assert v.score == round(1.0 - WEIGHTS[term] / 0.8, 4)
    assert (term, Prose("0.00")) in named(v)
    assert v.reasons == snapshot


def test_an_unknown_check_set_is_named(snapshot):
    with pytest.raises(UserInputError) as raised:
        verdict("designed", [GROUNDED], check_set="ies")
    # The set asked for and the sets to choose from, in order; the wording is the snapshot's.
    assert str(raised.value) == Prose("'ies'", "vouch, paper")
    assert str(raised.value) == snapshot


# ---------------------------------------------------------------------------------------
# The paper's check set: its vetoes, its cap, its thin evidence and COMPLETE < 0.5
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kind, paper_cap", [
    ("missing_table", "veto", VETO_CAP), ("bad_join", "veto", VETO_CAP), ("stand_in_value", "veto", VETO_CAP),
    ("join_key_meaning", "veto", 1.0), ("uncited_number", "cap", CAP_CAP), ("question_filters", "cap", 1.0),
])
def test_the_paper_reads_only_its_own_vetoes_and_cap(name, kind, paper_cap, snapshot):
    fired = check(name, kind, fired=True)
    checks = [GROUNDED, SCHEMA, judge(1.0), fired]
    vouch_cap = VETO_CAP if kind == "veto" else CAP_CAP
    assert verdict("agreement_first", checks).score == vouch_cap
    v = verdict("agreement_first", checks, check_set="paper")
    assert v.score == paper_cap
    assert (name in codes(v)) is (paper_cap < 1.0)
    assert v.reasons == snapshot


@pytest.mark.parametrize("checks, thin", [
    ([GROUNDED, SCHEMA], False),  # with SAFETY: three terms
    ([GROUNDED], True),  # two
    ([SCHEMA, judge(1.0)], True),  # three, but no GROUNDED
    ([GROUNDED, judge(1.0)], False),
])
def test_the_papers_agreement_first_caps_thin_evidence(checks, thin, snapshot):
    v = verdict("agreement_first", checks, check_set="paper")
    assert v.score == (CAP_CAP if thin else 1.0)
    assert ("thin_evidence" in codes(v)) is thin
    assert v.reasons == snapshot
    # The product's check set has no thin-evidence cap on agreement_first.
    assert verdict("agreement_first", checks).score == 1.0


def test_the_papers_thin_evidence_names_what_was_measured(snapshot):
    grounded = verdict("agreement_first", [GROUNDED], check_set="paper")
    assert named(grounded) == [("thin_evidence", Prose("grounded, safety"))]
    schema = verdict("agreement_first", [SCHEMA], check_set="paper")
    assert named(schema) == [("thin_evidence", Prose("schema, safety"))]
    assert {"grounded": grounded.reasons, "schema": schema.reasons} == snapshot


@pytest.mark.parametrize("value, capped", [(COMPLETE_MIN, False), (math.nextafter(COMPLETE_MIN, 0), True)])
def test_the_papers_agreement_first_caps_complete_below_one_half(value, capped, snapshot):
    v = verdict("agreement_first", [GROUNDED, SCHEMA, judge(value)], check_set="paper")
    assert v.score == (CAP_CAP if capped else 1.0)
    assert named(v) == ([("incomplete", Prose("0.50", "judge"))] if capped else [])
    assert v.reasons == snapshot
    assert verdict("agreement_first", [GROUNDED, SCHEMA, judge(value)]).score == 1.0, "the product's does not"


def test_the_paper_names_both_incomplete_and_thin_evidence(snapshot):
    v = verdict("agreement_first", [GROUNDED, alignment(0.2)], check_set="paper", agreement=0.9)
    assert v.score == CAP_CAP
    assert named(v) == [("incomplete", Prose("0.20", "alignment"))] and v.gate == "flag"
    both = verdict("agreement_first", [alignment(0.2)], check_set="paper", agreement=0.9)
    assert named(both) == [("incomplete", Prose("0.20", "alignment")),
                           ("thin_evidence", Prose("complete, safety"))]
    assert {"incomplete": v.reasons, "both": both.reasons} == snapshot


def test_the_papers_safety_ignores_signals(snapshot):
    signal = check("join_drop", "signal", fired=True)
    checks = [GROUNDED, SCHEMA, judge(1.0), signal]
    assert components(ScoreInput(1.0, 5, checks, [0] * 5))["l1"] == 0.5
    assert components(ScoreInput(1.0, 5, checks, [0] * 5, check_set="paper"))["l1"] == 1.0
    paper = verdict("designed", checks, check_set="paper")
    assert (paper.score, paper.reasons) == (1.0, []), "a signal lowers nothing there, so it is not named"
    vouch = verdict("designed", checks)
    assert vouch.score == round((0.3 + 0.2 + 0.1 + 0.2 * 0.5) / 0.8, 4)
    assert named(vouch) == [("safety", Prose("0.50")), ("join_drop", Prose("join_drop"))]
    assert vouch.reasons == snapshot


# ---------------------------------------------------------------------------------------
# The designed rule's one-change options (IES Tables 2 and 7)
# ---------------------------------------------------------------------------------------
# A fired signal (L1 = ½) and four of five samples alike: L2 = 1 − H/log 5.
_H = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2))
L2 = 1 - _H / math.log(5)
SIGNALLED = [GROUNDED, SCHEMA, judge(1.0), check("join_drop", "signal", fired=True)]


# Each case named by its mode alone (and so its snapshot): L2's last digits rest on the platform's log.
@pytest.mark.parametrize("mode, safety", [("min", min(0.5, L2)), ("l1", 0.5), ("l2", L2), ("mean", (0.5 + L2) / 2)],
                         ids=["min", "l1", "l2", "mean"])
def test_designed_safety_modes(mode, safety, snapshot):
    assert 0.5 < L2 < 0.8
    v = verdict("designed", SIGNALLED, clusters=[0, 0, 0, 0, 1], safety=mode)
    assert v.score == round((0.3 + 0.2 + 0.1 + 0.2 * safety) / 0.8, 4)
    assert ("safety", Prose(f"{safety:.2f}")) in named(v)
    assert v.reasons == snapshot


@pytest.mark.parametrize("mode, safety", [("min", L2), ("l1", 1.0), ("l2", L2), ("mean", (1.0 + L2) / 2)])
def test_designed_safety_modes_without_a_signal(mode, safety):
    # L1 = 1 (nothing fired) above L2: the modes part ways the other way round.
    v = verdict("designed", [GROUNDED, SCHEMA, judge(1.0)], clusters=[0, 0, 0, 0, 1], safety=mode)
    assert v.score == round((0.3 + 0.2 + 0.1 + 0.2 * safety) / 0.8, 4)


def test_designed_drops_terms(snapshot):
    checks = [GROUNDED, SCHEMA, judge(0.0)]
    assert verdict("designed", checks).score == round((0.3 + 0.2 + 0.2) / 0.8, 4)
    v = verdict("designed", checks, drop=["complete"])
    assert v.score == 1.0 and v.reasons == []
    # Dropping GROUNDED leaves it out of the mean, but it was measured: evidence is not thin
    # (IES Table 2's "Drop GROUNDED" row passes answers; issue 29, deviation 3).
    v = verdict("designed", [GROUNDED, SCHEMA, judge(1.0)], drop=["grounded"])
    assert v.score == 1.0 and v.reasons == []
    # Unmeasured, it is thin whether dropped or not.
    unmeasured = verdict("designed", [SCHEMA, judge(1.0)], drop=["grounded"])
    assert unmeasured.score == CAP_CAP
    assert named(unmeasured) == [("thin_evidence", Prose("schema, complete, safety"))]
    # Every term dropped: nothing measured, nothing passes.
    v = verdict("designed", checks, drop=["grounded", "schema", "complete", "safety", "retrieve"])
    assert (v.score, v.gate) == (0.0, "abstain") and named(v) == [("thin_evidence", Prose())]
    assert [r.code for r in v.reason_codes] == ["thin_evidence"]
    assert {"unmeasured": unmeasured.reasons, "all_dropped": v.reasons} == snapshot


def test_designed_without_the_thin_cap_or_the_hard_caps(snapshot):
    assert verdict("designed", [GROUNDED]).score == CAP_CAP
    v = verdict("designed", [GROUNDED], thin_cap=False)
    assert v.score == 1.0 and v.reasons == []
    vetoed = [check("missing_table", "veto", fired=True, grounded=1.0), SCHEMA, judge(1.0)]
    assert verdict("designed", vetoed).score == VETO_CAP
    uncapped = verdict("designed", vetoed, hard_caps=False)
    # SAFETY = L1 = 0 under a veto: (0.30 + 0.20 + 0.10) / 0.80, no cap.
    assert uncapped.score == round(0.6 / 0.8, 4) and named(uncapped) == [("safety", Prose("0.00"))]
    # A signal beside the veto: SAFETY is the veto's 0, and the signal, which lowers nothing, is not named.
    signalled = verdict("designed", vetoed + [check("join_drop", "signal", fired=True)], hard_caps=False)
    assert signalled.score == round(0.6 / 0.8, 4) and named(signalled) == [("safety", Prose("0.00"))]
    assert {"uncapped": uncapped.reasons, "signalled": signalled.reasons} == snapshot
    # Without the thin cap one sample is not thin either.
    assert verdict("designed", [GROUNDED, SCHEMA, judge(1.0)], k=1, clusters=[0]).score == CAP_CAP
    assert verdict("designed", [GROUNDED, SCHEMA, judge(1.0)], k=1, clusters=[0], thin_cap=False).score == 1.0


def test_designed_with_one_sample_under_the_paper_is_not_thin_for_that_alone():
    v = verdict("designed", [GROUNDED, SCHEMA, judge(1.0)], k=1, clusters=[0], check_set="paper")
    assert v.score == 1.0 and v.reasons == []


def test_designed_use_agreement_option_is_v2(snapshot):
    checks = [GROUNDED, SCHEMA, judge(0.4)]
    a = verdict("designed", checks, agreement=0.6, use_agreement=True)
    b = verdict("v2", checks, agreement=0.6)
    assert (a.score, a.reasons) == (b.score, b.reasons)
    # SAFETY = min(L1 = 1, A = 0.6): (0.30 + 0.20 + 0.04 + 0.12) / 0.80, then COMPLETE < ½ caps.
    assert a.score == round(min(CAP_CAP, (0.3 + 0.2 + 0.04 + 0.12) / 0.8), 4)
    assert ("incomplete", Prose("0.40", "judge")) in named(a)
    assert a.reasons == snapshot
    assert verdict("designed", checks, agreement=0.6).score == round((0.3 + 0.2 + 0.04 + 0.2) / 0.8, 4)


def test_components_name_every_piece():
    checks = [GROUNDED, SCHEMA, alignment(0.5, retrieve=0.25), check("empty_result", "signal", fired=True),
              check("bad_join", "veto", fired=True), check("question_filters", "cap", fired=True)]
    got = components(ScoreInput(0.6, 5, checks, [0, 0, 0, 0, 1]))
    assert got == {"agreement": 0.6, "l1": 0.0, "l2": pytest.approx(L2), "grounded": 1.0, "schema": 1.0,
                   "complete": 0.5, "retrieve": 0.25, "veto": 1.0, "cap": 1.0, "empty_result": 1.0}
    bare = components(ScoreInput(1.0, 1, [], [0]))
    assert bare == {"agreement": 1.0, "l1": 1.0, "l2": None, "grounded": None, "schema": None, "complete": None,
                    "retrieve": None, "veto": 0.0, "cap": 0.0, "empty_result": 0.0}
    other_signal = components(ScoreInput(1.0, 5, [check("join_drop", "signal", fired=True)], [0] * 5))
    assert (other_signal["empty_result"], other_signal["l1"]) == (0.0, 0.5)

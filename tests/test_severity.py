"""Severity earned by measurement: a fired veto or cap whose findings are measured imprecise on
real model output is a signal; precise, rarely fired or unmeasured ones keep their kind; the
papers' check set keeps the papers' kinds. The shipped table names only real checks."""

from __future__ import annotations

import json

import pytest

import vouchsql
from vouchsql.answer import CheckResult
from vouchsql.checks import CHECKS, severity
from vouchsql.pipeline.checking import rescore
from test_boundaries import make_db


def _fired(name="question_filters", kind="cap", findings=()):
    return CheckResult(name=name, kind=kind, fired=True, detail="it fired",
                       evidence={"findings": [{"kind": k} for k in findings]} if findings else {})


@pytest.fixture
def table(monkeypatch):
    def use(alarms):
        monkeypatch.setattr(severity, "measured", lambda: alarms)
    return use


def test_an_imprecise_cap_becomes_a_signal_saying_why(table):
    table({"question_filters": {"fires": 40, "wrong": 30, "fires_a1": 20, "wrong_a1": 2}})
    got = severity.earned(_fired())
    assert got.kind == "signal"
    assert got.detail == ("it fired [a signal here, not a cap: measured 10% precise as an error detector on real "
                          "model output (20 firings, A = 1), below the 60% a cap needs]")


@pytest.mark.parametrize("alarms, kind", [
    ({"question_filters": {"fires": 40, "wrong": 30, "fires_a1": 20, "wrong_a1": 12}}, "cap"),  # 60%: earned
    ({"question_filters": {"fires": 40, "wrong": 30, "fires_a1": 9, "wrong_a1": 0}}, "cap"),  # A = 1 too rare: overall 75%
    ({"question_filters": {"fires": 12, "wrong": 3, "fires_a1": 9, "wrong_a1": 0}}, "signal"),  # overall 25%
    ({"question_filters": {"fires": 9, "wrong": 0, "fires_a1": 9, "wrong_a1": 0}}, "cap"),  # too rare to judge
    ({}, "cap"),  # not in the table
])
def test_the_threshold_and_the_fallback_to_overall(table, alarms, kind):
    table(alarms)
    assert severity.earned(_fired()).kind == kind


def test_a_finding_is_judged_by_its_own_figure_then_its_checks(table):
    table({"question_filters": {"fires": 50, "wrong": 5, "fires_a1": 50, "wrong_a1": 5},
           "question_filters:value": {"fires": 20, "wrong": 18, "fires_a1": 20, "wrong_a1": 18},
           "question_filters:year": {"fires": 3, "wrong": 3, "fires_a1": 3, "wrong_a1": 3}})
    # a precise finding keeps the cap, whatever the check's overall figure
    assert severity.earned(_fired(findings=["value"])).kind == "cap"
    # a finding too rare to measure falls back to the check's figure (10%): a signal
    assert severity.earned(_fired(findings=["year"])).kind == "signal"
    # one precise finding among several is enough to keep the cap
    assert severity.earned(_fired(findings=["year", "value"])).kind == "cap"


def test_silent_checks_and_signals_are_left_as_they_are(table):
    table({"empty_result": {"fires": 100, "wrong": 1, "fires_a1": 100, "wrong_a1": 1}})
    quiet = CheckResult(name="bad_join", kind="veto", fired=False, detail="ok")
    assert severity.earned(quiet) is quiet
    sig = _fired("empty_result", "signal")
    assert severity.earned(sig) is sig


def test_a_demoted_veto_no_longer_withholds_but_the_papers_set_still_does(table, tmp_path):
    # two tables whose keys barely overlap: bad_join fires and vetoes
    path = make_db(tmp_path / "j.sqlite", {
        "a": ("id INTEGER PRIMARY KEY, b_id INTEGER", [(i, 100 + i) for i in range(1, 21)]),
        "b": ("id INTEGER PRIMARY KEY, name TEXT", [(i, f"n{i}") for i in range(1, 21)]),
    })
    sql = "SELECT COUNT(*) FROM a JOIN b ON a.b_id = b.id"
    vetoed = vouchsql.check(path, "How many?", [sql] * 5, cache_dir=str(tmp_path / "c1"))
    assert vetoed.verdict.gate == "abstain" and "bad_join" in vetoed.verdict.reasons
    table({"bad_join": {"fires": 30, "wrong": 3, "fires_a1": 30, "wrong_a1": 3}})
    demoted = vouchsql.check(path, "How many?", [sql] * 5, cache_dir=str(tmp_path / "c2"))
    bad = {c.name: c for c in demoted.checks}["bad_join"]
    assert bad.fired and bad.kind == "signal" and "10% precise" in bad.detail
    assert demoted.verdict.gate == "pass"
    assert rescore(demoted, "agreement_first", check_set="paper").gate == "abstain"


def test_the_shipped_table_names_real_checks_and_has_its_source():
    doc = json.loads(severity.MEASURED.read_text(encoding="utf-8"))
    assert doc["command"].startswith("vouch eval predictions ") and "--write-measured" in doc["command"]
    names = {c.name for c in CHECKS}
    for key, m in doc["alarms"].items():
        if key.startswith("choice:"):
            continue
        assert key.split(":")[0] in names, key
        assert 0 <= m["wrong"] <= m["fires"] and 0 <= m["wrong_a1"] <= m["fires_a1"] <= m["fires"], key


def test_every_shipped_veto_or_cap_that_fires_enough_is_precise_or_demoted():
    """The rule of issue 26: every veto or cap measured on 10 or more firings is 60% precise,
    or it no longer vetoes or caps."""
    for key in severity.measured():
        got = severity.precision(key)
        if got is None or key.startswith("choice:"):
            continue
        p, n, _ = got
        result = CheckResult(name=key.split(":")[0], kind="cap", fired=True, detail="x",
                             evidence={"findings": [{"kind": key.split(":")[1]}]} if ":" in key else {})
        assert p >= severity.MIN_PRECISION or severity.earned(result).kind == "signal", key

"""The contract between the checks and the scoring rules: each check declares its evidence
model and the score terms it feeds; what it reports is validated against both; the terms
real checks report on real databases are pinned here, so a rule that reads terms reads
what the checks measure. The verdict names every reason with a stable code."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import vouchsql
from vouchsql.checks import CHECKS
from vouchsql.checks.base import TERMS, report
from vouchsql.checks.bad_join import BadJoin, RHO_MIN
from vouchsql.checks.evidence import Evidence
from vouchsql.pipeline import rescore

ORDERS_LOYALTY = ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
                  "JOIN loyalty_accounts l ON l.customer_id = c.customer_id")


def by_name(answer):
    return {c.name: c for c in answer.checks}


def test_every_check_declares_its_evidence_and_terms():
    for check in CHECKS:
        assert issubclass(check.Evidence, Evidence), check.name
        assert set(getattr(check, "feeds", ())) <= set(TERMS), check.name
    feeders = {c.name: tuple(c.feeds) for c in CHECKS if getattr(c, "feeds", ())}
    assert feeders == {"missing_table": ("grounded",), "bad_join": ("grounded",),
                       "stand_in_value": ("grounded",), "uncited_number": ("schema",),
                       "question_shape": ("complete", "retrieve"), "question_filters": ("complete",),
                       "complete_judge": ("complete",)}


def test_report_refuses_evidence_and_terms_the_check_does_not_declare():
    with pytest.raises(ValidationError, match="pairs"):
        report(BadJoin(), False, "renamed key", pairs=[])
    with pytest.raises(ValueError, match="does not feed"):
        report(BadJoin(), False, "ok", joins=[], terms={"schema": 1.0})
    ok = report(BadJoin(), False, "ok", joins=[], terms={"grounded": 2 / 3})
    assert ok.evidence == {"joins": []} and ok.terms == {"grounded": 0.666667}


def test_grounded_parts_from_real_checks(demo_db, tmp_path):
    cache = str(tmp_path / "cache")
    # Tables exist; one join pair good, one below the cutoff: the join share is ½, and the veto fires.
    checks = by_name(vouchsql.check(demo_db, "How many orders have a loyalty account?", [ORDERS_LOYALTY],
                                    cache_dir=cache))
    assert checks["missing_table"].terms == {"grounded": 1.0} and not checks["missing_table"].fired
    bad = checks["bad_join"]
    assert bad.fired and bad.terms == {"grounded": 0.5}
    assert [j["rho"] < RHO_MIN for j in bad.evidence["joins"]] == [True]
    # A table the database lacks: its part is 0.
    checks = by_name(vouchsql.check(demo_db, "How many?", ["SELECT COUNT(*) FROM customer_archive"],
                                    cache_dir=cache))
    assert checks["missing_table"].fired and checks["missing_table"].terms == {"grounded": 0.0}
    # The stand-in code -1 reaches the average: the one carrying column is bad.
    checks = by_name(vouchsql.check(demo_db, "What is the average age of our customers?",
                                    ["SELECT ROUND(AVG(age), 1) FROM customers"], cache_dir=cache))
    assert checks["stand_in_value"].fired and checks["stand_in_value"].terms == {"grounded": 0.0}
    # Filtered out: the column still carries the code, none reaches the answer.
    checks = by_name(vouchsql.check(demo_db, "What is the average age of our customers?",
                                    ["SELECT ROUND(AVG(age), 1) FROM customers WHERE age >= 0"], cache_dir=cache))
    assert not checks["stand_in_value"].fired and checks["stand_in_value"].terms == {"grounded": 1.0}
    # Nothing to rate: no join, no carrier, no term.
    checks = by_name(vouchsql.check(demo_db, "How many orders?", ["SELECT COUNT(*) FROM orders"], cache_dir=cache))
    assert checks["bad_join"].terms == {} and checks["stand_in_value"].terms == {}


def test_schema_is_measured_once_the_text_cites_a_number(demo_db, tmp_path):
    cache = str(tmp_path / "cache")
    sql = ["SELECT COUNT(*) FROM orders"]
    n = vouchsql.connect(demo_db, cache_dir=cache).execute(sql[0]).rows[0][0]
    cited = by_name(vouchsql.check(demo_db, "How many orders?", sql, answer_text=f"There are {n} orders.",
                                   cache_dir=cache))["uncited_number"]
    assert not cited.fired and cited.terms == {"schema": 1.0}
    none = by_name(vouchsql.check(demo_db, "How many orders?", sql, cache_dir=cache))["uncited_number"]
    assert none.terms == {}


def test_reason_codes_parallel_the_reasons(demo_db, tmp_path):
    cache = str(tmp_path / "cache")
    answer = vouchsql.check(demo_db, "What is the average age of our customers?",
                            ["SELECT ROUND(AVG(age), 1) FROM customers",
                             "SELECT ROUND(AVG(age), 1) FROM customers WHERE age >= 0"], cache_dir=cache)
    v = answer.verdict
    assert [r.code for r in v.reason_codes][:2] == ["agreement", "stand_in_value"]
    assert len(v.reason_codes) == len(v.reasons)
    assert v.reason_codes[1].detail == by_name(answer)["stand_in_value"].detail
    for rule in ("designed", "v2", "v3"):
        answer = vouchsql.check(demo_db, "How many orders have a loyalty account?", [ORDERS_LOYALTY] * 2,
                                cache_dir=cache, rule=rule)
        codes = [r.code for r in answer.verdict.reason_codes]
        assert "bad_join" in codes and len(codes) == len(answer.verdict.reasons), (rule, codes)


@pytest.mark.parametrize("sql", ["WITH t AS (SELECT AVG(age) AS a FROM customers) SELECT a FROM t",
                                 "SELECT AVG(age) FROM customers UNION SELECT 1"])
def test_stand_in_is_not_measured_where_its_probe_cannot_reach(demo_db, tmp_path, sql):
    """An average over a column with a stand-in code, computed where the code-row probe cannot
    reach (a CTE, a UNION): not measured, and no GROUNDED part — never 'no code reaches'."""
    check = by_name(vouchsql.check(demo_db, "What is the average age?", [sql], cache_dir=str(tmp_path)))["stand_in_value"]
    assert not check.fired and check.terms == {} and check.detail.startswith("not measured")


# IES §3.2's stand-in veto is narrower than Vouch's (issue 29, deviation 7): only a nonzero code
# returned as a value. Vouch's also fires on a code averaged or summed in, and on a 0 code.
@pytest.mark.parametrize("sql, vouch_fires, paper_fires, paper_grounded", [
    ("SELECT name, age FROM people", True, True, 0.0),             # -1 returned as a value
    ("SELECT AVG(age) FROM people", True, False, 1.0),             # -1 averaged in: Vouch's only
    ("SELECT name, fee_code FROM people WHERE fee_code = 0", True, False, None),  # a 0 code: Vouch's only
    ("SELECT AVG(age) FROM people WHERE age >= 0", False, False, 1.0),
])
def test_the_paper_check_set_reads_the_papers_own_stand_in_rule(tmp_path, sql, vouch_fires, paper_fires,
                                                                 paper_grounded):
    from test_boundaries import make_db

    rows = [(i, f"p{i}", 20 + i % 40, 0 if i % 10 == 0 else 50 + i) for i in range(1, 201)]
    rows += [(300 + i, f"q{i}", -1, 60) for i in range(5)]  # 5 of 205 ages unknown, written -1
    path = make_db(tmp_path / "people.sqlite",
                   {"people": ("id INTEGER, name TEXT, age INTEGER, fee_code INTEGER", rows)})
    answer = vouchsql.check(path, "What does the query return?", [sql] * 5, cache_dir=str(tmp_path / "c"))
    check = by_name(answer)["stand_in_value"]
    assert check.fired is vouch_fires
    assert check.evidence["paper_fired"] is paper_fires and check.evidence["paper_grounded"] == paper_grounded
    paper = rescore(answer, "agreement_first", check_set="paper")
    assert ("stand_in_value" in paper.reasons) is paper_fires
    assert (rescore(answer, "agreement_first").gate == "abstain") is vouch_fires

"""The other checks pinned at their boundaries (issue 11, part 5): what each one reports —
fired, detail, evidence and score terms — exactly at and beside the edges that decide it,
on real SQLite files built here. ``python bench/mutation.py --modules missing_table,…`` is
the measure of these tests: a moved cutoff, a flipped comparison or a deleted guard in a
check must fail one of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

import vouchsql
from vouchsql.checks.complete_judge import from_parts
from vouchsql.checks.reads_no_table import reads_something
from vouchsql.errors import UserInputError

from test_boundaries import make_db, run_check


def tables_db(path: Path, n: int) -> Path:
    return make_db(path, {f"t{i:02d}": ("id INTEGER PRIMARY KEY, v INTEGER", [(1, 2)]) for i in range(1, n + 1)})


# ---------------------------------------------------------------------------------------
# missing_table: the tables named in its detail, twelve at most
# ---------------------------------------------------------------------------------------
MISSING = "SELECT COUNT(*) FROM nope n JOIN t01 ON n.id = t01.id JOIN gone g ON g.id = t01.id"


@pytest.mark.parametrize("n, known", [
    (12, "t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12"),
    (13, "t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12…"),
])
def test_missing_table_names_at_most_twelve_known_tables(tmp_path, n, known):
    check = run_check(tables_db(tmp_path / "t.sqlite", n), "missing_table", MISSING)
    assert check.fired is True and check.kind == "veto"
    assert check.detail == f"the SQL reads nope, gone, which the database does not have (its tables: {known})"
    assert check.evidence == {"tables": ["nope", "gone"]} and check.terms == {"grounded": 0.0}


def test_missing_table_every_table_exists(tmp_path):
    check = run_check(tables_db(tmp_path / "t.sqlite", 2), "missing_table", "SELECT * FROM t01, t02")
    assert check.fired is False
    assert (check.detail, check.evidence, check.terms) == ("all 2 tables exist", {"tables": ["t01", "t02"]},
                                                           {"grounded": 1.0})


def test_missing_table_not_measured_without_a_parse(tmp_path):
    check = run_check(tables_db(tmp_path / "t.sqlite", 1), "missing_table", "SELEC 1")
    assert (check.fired, check.detail, check.evidence, check.terms) == \
        (False, "not measured: the SQL could not be parsed", {}, {})


# ---------------------------------------------------------------------------------------
# reads_no_table: CTE names, table functions that only make rows, and what counts as reading
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sql, reads", [
    ("SELECT 42", False),
    ("WITH T AS (SELECT 1 AS x) SELECT x FROM t", False),  # CTE names in any letter case
    ("WITH t AS (SELECT 1 AS x) SELECT x FROM T", False),
    ("WITH t AS (SELECT 1 AS x) SELECT x FROM main.t", True),  # qualified: the real table, not the CTE
    ("WITH c AS (SELECT 1 AS x) SELECT x FROM c JOIN t ON 1 = 1", True),  # a table after a CTE name
    ("SELECT * FROM generate_series(1, 3)", False),  # a GenerateSeries node
    ("SELECT * FROM GENERATE_SERIES(1, 3)", False),
    ("SELECT * FROM range(3)", False),  # an Anonymous function named in _GENERATORS (SQLite)
    ("SELECT 1 FROM generate_series(1, 2), t", True),  # a table after a generator
    ("SELECT value FROM json_each('[1, 2]')", True),  # a table function that is not a generator
    ("SELECT * FROM read_csv('range')", True),  # its argument's name is not the function's
    ("SELECT name FROM sqlite_master", True),
])
def test_reads_something(sql, reads):
    assert reads_something(sqlglot.parse_one(sql, read="sqlite")) is reads


def test_reads_no_table_details(tmp_path):
    db = tables_db(tmp_path / "t.sqlite", 1)
    fired = run_check(db, "reads_no_table", "SELECT * FROM generate_series(1, 3)")
    assert (fired.fired, fired.evidence, fired.terms) == (True, {"tables": []}, {})
    assert fired.detail == ("the SQL reads no table: its answer is computed from constants alone and would be "
                            "the same whatever the database holds")
    table = run_check(db, "reads_no_table", "SELECT v FROM t01, json_each('[1]')")
    assert (table.fired, table.detail, table.evidence) == (False, "the SQL reads 1 table(s)", {"tables": ["t01"]})
    function = run_check(db, "reads_no_table", "SELECT value FROM json_each('[1, 2]')")
    assert (function.fired, function.detail, function.evidence) == \
        (False, "the SQL reads the catalogue or a table function", {"tables": []})
    unparsed = run_check(db, "reads_no_table", "SELEC 1")
    assert (unparsed.fired, unparsed.detail, unparsed.evidence) == \
        (False, "not measured: the SQL could not be parsed", {})


# ---------------------------------------------------------------------------------------
# complete_judge: COMPLETE < 0.5 caps; the parts it names
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("parts, fired, detail", [
    ([["a", True], ["b", False], ["c", False]], True,
     "the judge found 2 of 3 parts of the question not covered: b; c"),
    ([["a", True], ["b", False]], False, "the judge found 1 of 2 parts of the question covered (not: b)"),
    ([["a", True], ["b", True], ["c", False]], False,
     "the judge found 2 of 3 parts of the question covered (not: c)"),
    ([["a", True], ["b", True]], False, "the judge found 2 of 2 parts of the question covered"),
    ([["a", False]], True, "the judge found 1 of 1 parts of the question not covered: a"),
])
def test_complete_judge_caps_below_half(tmp_path, parts, fired, detail):
    check = run_check(tables_db(tmp_path / "t.sqlite", 1), "complete_judge", "SELECT COUNT(*) FROM t01",
                      judged_parts=parts)
    assert (check.fired, check.kind, check.detail) == (fired, "cap", detail)
    assert check.evidence == {"parts": [{"part": p, "covered": c} for p, c in parts]}
    assert check.terms == {"complete": round(sum(c for _, c in parts) / len(parts), 6)}


def test_complete_judge_without_a_judge(tmp_path):
    check = run_check(tables_db(tmp_path / "t.sqlite", 1), "complete_judge", "SELECT COUNT(*) FROM t01")
    assert (check.fired, check.detail, check.evidence, check.terms) == \
        (False, "not measured: no judge model was asked", {}, {})


def test_judged_parts_from_a_caller():
    assert from_parts(None) is None
    assert from_parts([("x", True), [3, False]]) == (0.5, [("x", True), ("3", False)])
    assert from_parts([["x", False]]) == (0.0, [("x", False)])
    for bad in (5, [["x"]], [["x", True, 1]]):
        with pytest.raises(UserInputError, match=r"^judged_parts must be a list of \[part, covered\] pairs$"):
            from_parts(bad)
    for bad in ([], [["x", 1]], [["x", True], ["y", "no"]]):
        with pytest.raises(UserInputError, match=r"^judged_parts must list at least one \[part, covered\] pair, "
                                                 r"covered true or false$"):
            from_parts(bad)


# ---------------------------------------------------------------------------------------
# result_shape: no_result, thin_evidence (K < 2), empty_result (0 rows), truncated_result
# ---------------------------------------------------------------------------------------
def _result_checks(db: Path, sqls: list[str], **settings) -> dict:
    answer = vouchsql.check(db, "What does the query return?", sqls, cache_dir=str(db.parent / "cache"), **settings)
    by_name = {c.name: c for c in answer.checks}
    return {n: (by_name[n].fired, by_name[n].detail, by_name[n].evidence, by_name[n].terms)
            for n in ("no_result", "thin_evidence", "empty_result", "truncated_result")}


def test_result_shape_at_its_edges(tmp_path):
    db = make_db(tmp_path / "big.sqlite", {"big": ("id INTEGER PRIMARY KEY", [(i,) for i in range(1500)])})
    one = "only 1 candidate answer, so agreement is unmeasured; pass more --sql samples to measure it"
    assert _result_checks(db, ["SELECT id FROM big"], max_rows=1200) == {
        "no_result": (False, "the shown SQL ran", {}, {}),
        "thin_evidence": (True, one, {"candidates": 1}, {}),
        "empty_result": (False, "1200 rows", {"row_count": 1200}, {}),
        "truncated_result": (True, "the result was cut off at 1,200 rows (the row cap); agreement on it is a bound",
                             {"row_count": 1200}, {})}
    assert _result_checks(db, ["SELECT nosuch FROM big", "SELECT 1"]) == {
        "no_result": (True, "the shown SQL did not run: SQLite error: no such column: nosuch",
                      {"error_kind": "execution"}, {}),
        "thin_evidence": (False, "2 candidates", {"candidates": 2}, {}),
        "empty_result": (False, "0 rows", {"row_count": 0}, {}),  # a failed query is not an empty one
        "truncated_result": (False, "the result is complete", {"row_count": 0}, {})}
    assert _result_checks(db, ["SELECT id FROM big WHERE id < 0", "SELECT 1"]) == {
        "no_result": (False, "the shown SQL ran", {}, {}),
        "thin_evidence": (False, "2 candidates", {"candidates": 2}, {}),
        "empty_result": (True, "the shown query returned no rows", {"row_count": 0}, {}),
        "truncated_result": (False, "the result is complete", {"row_count": 0}, {})}
    assert _result_checks(db, ["SELECT id FROM big WHERE id < 1", "SELECT 1", "SELECT 2"]) == {
        "no_result": (False, "the shown SQL ran", {}, {}),
        "thin_evidence": (False, "3 candidates", {"candidates": 3}, {}),
        "empty_result": (False, "1 rows", {"row_count": 1}, {}),
        "truncated_result": (False, "the result is complete", {"row_count": 1}, {})}

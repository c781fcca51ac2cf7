"""The other checks pinned at their boundaries (issue 11, part 5): what each one reports —
fired, detail, evidence and score terms — exactly at and beside the edges that decide it,
on real SQLite files built here. ``python bench/mutation.py --modules missing_table,…`` is
the measure of these tests: a moved cutoff, a flipped comparison or a deleted guard in a
check must fail one of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

import vouchsql
from vouchsql.answer import Candidate
from vouchsql.checks._joins import (alias_for, driving_alias, group_keys, grouped_columns, grouped_entities,
                                    inner_equalities, outer_select, run_counts, tables_by_alias)
from vouchsql.checks.base import CheckContext, report
from vouchsql.checks.complete_judge import from_parts
from vouchsql.checks.definition_rule import DefinitionRule
from vouchsql.checks.evidence import Evidence
from vouchsql.checks.merged_entities import _label_asked
from vouchsql.checks.reads_no_table import reads_something
from vouchsql.counting import repetition_query
from vouchsql.sql.edit import column
from vouchsql.errors import UserInputError
from vouchsql.sql.inspect import inspect_sql

from test_boundaries import make_db, run_check


def tables_db(path: Path, n: int) -> Path:
    return make_db(path, {f"t{i:02d}": ("id INTEGER PRIMARY KEY, v INTEGER", [(1, 2)]) for i in range(1, n + 1)})


def _shared(tmp_path_factory, name: str, build) -> Path:
    """One database for every case of a parametrized test (Vouch never writes to it), so it is
    profiled once, not once per case."""
    return build(tmp_path_factory.mktemp(name) / f"{name}.sqlite")


@pytest.fixture(scope="module")
def one_table(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "one", lambda p: tables_db(p, 1))


# ---------------------------------------------------------------------------------------
# missing_table: the tables named in its detail, twelve at most
# ---------------------------------------------------------------------------------------
MISSING = "SELECT COUNT(*) FROM nope n JOIN t01 ON n.id = t01.id JOIN gone g ON g.id = t01.id"


@pytest.mark.parametrize("n, known", [
    (12, "t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12"),
    (13, "t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12…"),
])
def test_missing_table_names_at_most_twelve_known_tables(tmp_path, n, known, snapshot):
    check = run_check(tables_db(tmp_path / "t.sqlite", n), "missing_table", MISSING)
    assert check.fired is True and check.kind == "veto"
    # The twelve known tables named, and the ellipsis only past twelve; the wording is the snapshot's.
    assert known in check.detail and ("…" in check.detail) is (n > 12)
    assert check.detail == snapshot
    assert check.evidence == {"tables": ["nope", "gone"]} and check.terms == {"grounded": 0.0}


def test_missing_table_every_table_exists(tmp_path, snapshot):
    check = run_check(tables_db(tmp_path / "t.sqlite", 2), "missing_table", "SELECT * FROM t01, t02")
    assert check.fired is False
    assert (check.evidence, check.terms) == ({"tables": ["t01", "t02"]}, {"grounded": 1.0})
    assert check.detail == snapshot


def test_missing_table_not_measured_without_a_parse(tmp_path, snapshot):
    check = run_check(tables_db(tmp_path / "t.sqlite", 1), "missing_table", "SELEC 1")
    assert (check.fired, check.evidence, check.terms) == (False, {}, {})
    assert check.detail.startswith("not measured") and check.detail == snapshot


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


def test_reads_no_table_details(tmp_path, snapshot):
    db = tables_db(tmp_path / "t.sqlite", 1)
    fired = run_check(db, "reads_no_table", "SELECT * FROM generate_series(1, 3)")
    assert (fired.fired, fired.evidence, fired.terms) == (True, {"tables": []}, {})
    assert fired.detail == snapshot(name="fired")
    table = run_check(db, "reads_no_table", "SELECT v FROM t01, json_each('[1]')")
    assert (table.fired, table.evidence) == (False, {"tables": ["t01"]})
    assert table.detail == snapshot(name="table")
    function = run_check(db, "reads_no_table", "SELECT value FROM json_each('[1, 2]')")
    assert (function.fired, function.evidence) == (False, {"tables": []})
    assert function.detail == snapshot(name="function")
    unparsed = run_check(db, "reads_no_table", "SELEC 1")
    assert (unparsed.fired, unparsed.evidence) == (False, {})
    assert unparsed.detail.startswith("not measured") and unparsed.detail == snapshot(name="unparsed")


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
    ([["a", True], ["b", True], ["c", True], ["d", False], ["e", False]], False,
     "the judge found 3 of 5 parts of the question covered (not: d; e)"),
    ([["a", False]], True, "the judge found 1 of 1 parts of the question not covered: a"),
])
def test_complete_judge_caps_below_half(one_table, parts, fired, detail, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = run_check(one_table, "complete_judge", "SELECT COUNT(*) FROM t01", judged_parts=parts)
    assert (check.fired, check.kind) == (fired, "cap")
    assert "; ".join(p for p, c in parts if not c) in check.detail  # the parts not covered, named in order
    assert check.detail == snapshot
    assert check.evidence == {"parts": [{"part": p, "covered": c} for p, c in parts]}
    assert check.terms == {"complete": round(sum(c for _, c in parts) / len(parts), 6)}


def test_complete_judge_without_a_judge(tmp_path, snapshot):
    check = run_check(tables_db(tmp_path / "t.sqlite", 1), "complete_judge", "SELECT COUNT(*) FROM t01")
    assert (check.fired, check.evidence, check.terms) == (False, {}, {})
    assert check.detail.startswith("not measured") and check.detail == snapshot


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
def _result_checks(db: Path, sqls: list[str], **settings) -> tuple[dict, dict]:
    """``({check: (fired, evidence, terms)}, {check: detail})``: what the checks decided, and their wording."""
    answer = vouchsql.check(db, "What does the query return?", sqls, cache_dir=str(db.parent / "cache"), **settings)
    by_name = {c.name: c for c in answer.checks}
    names = ("no_result", "thin_evidence", "empty_result", "truncated_result")
    return ({n: (by_name[n].fired, by_name[n].evidence, by_name[n].terms) for n in names},
            {n: by_name[n].detail for n in names})


def test_result_shape_at_its_edges(tmp_path, snapshot):
    db = make_db(tmp_path / "big.sqlite", {"big": ("id INTEGER PRIMARY KEY", [(i,) for i in range(1500)])})
    checks, details = _result_checks(db, ["SELECT id FROM big"], max_rows=1200)
    assert checks == {
        "no_result": (False, {}, {}),
        "thin_evidence": (True, {"candidates": 1}, {}),
        "empty_result": (False, {"row_count": 1200}, {}),
        "truncated_result": (True, {"row_count": 1200}, {})}
    assert "1,200" in details["truncated_result"]  # the row cap it was cut off at
    assert details == snapshot(name="truncated")
    checks, details = _result_checks(db, ["SELECT nosuch FROM big", "SELECT 1"])
    assert checks == {
        "no_result": (True, {"error_kind": "execution"}, {}),
        "thin_evidence": (False, {"candidates": 2}, {}),
        "empty_result": (False, {"row_count": 0}, {}),  # a failed query is not an empty one
        "truncated_result": (False, {"row_count": 0}, {})}
    assert details["no_result"].endswith("SQLite error: no such column: nosuch")  # the engine's own error
    assert details == snapshot(name="failed")
    checks, details = _result_checks(db, ["SELECT id FROM big WHERE id < 0", "SELECT 1"])
    assert checks == {
        "no_result": (False, {}, {}),
        "thin_evidence": (False, {"candidates": 2}, {}),
        "empty_result": (True, {"row_count": 0}, {}),
        "truncated_result": (False, {"row_count": 0}, {})}
    assert details == snapshot(name="empty")
    checks, details = _result_checks(db, ["SELECT id FROM big WHERE id < 1", "SELECT 1", "SELECT 2"])
    assert checks == {
        "no_result": (False, {}, {}),
        "thin_evidence": (False, {"candidates": 3}, {}),
        "empty_result": (False, {"row_count": 1}, {}),
        "truncated_result": (False, {"row_count": 1}, {})}
    assert details == snapshot(name="one_row")


# ---------------------------------------------------------------------------------------
# definition_rule: each broken rule named, with what it reads and does not, and its note
# ---------------------------------------------------------------------------------------
RULES = '''
[[rules]]
name = "revenue_from_lines"
when = ["revenue"]
must_read = ["order_items", "orders"]
must_not_read = ["report_*"]
note = "revenue comes from the order lines"

[[rules]]
name = "reports_only_for_reports"
unless = ["report"]
must_not_read = ["report_*"]

[[rules]]
name = "zebras_read_orders"
when = ["zebra"]
must_read = ["orders"]
'''


def rules_db(tmp_path: Path) -> Path:
    return make_db(tmp_path / "rules.sqlite", {
        "orders": ("id INTEGER PRIMARY KEY, total REAL", [(1, 2.0)]),
        "order_items": ("id INTEGER PRIMARY KEY, order_id INTEGER", [(1, 1)]),
        "report_a": ("id INTEGER", [(1,)]), "report_b": ("id INTEGER", [(1,)])})


def _rules(tmp_path: Path, text: str = RULES) -> str:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_definition_rule_names_every_broken_rule(tmp_path, snapshot):
    db = rules_db(tmp_path)
    check = run_check(db, "definition_rule", "SELECT SUM(a.id) FROM report_a a JOIN report_b b ON a.id = b.id",
                      question="What was the revenue?", definitions=_rules(tmp_path))
    assert check.fired is True and check.kind == "veto"
    assert check.detail == snapshot(name="two_rules")
    assert check.evidence == {
        "rules": ["revenue_from_lines", "reports_only_for_reports"],
        "broken": [{"rule": "revenue_from_lines", "note": "revenue comes from the order lines",
                    "read": ["report_a", "report_b"], "not_read": ["order_items", "orders"]},
                   {"rule": "reports_only_for_reports", "note": "", "read": ["report_a", "report_b"],
                    "not_read": []}],
        "tables": ["report_a", "report_b"]}
    only_missing = run_check(db, "definition_rule", "SELECT COUNT(*) FROM report_a",
                             question="How many zebra rows in the report?", definitions=_rules(tmp_path))
    assert only_missing.fired is True and only_missing.detail == snapshot(name="only_missing")
    assert only_missing.evidence["rules"] == ["zebras_read_orders"]


@pytest.mark.parametrize("question, sql, detail, applicable, tables", [
    ("What was the revenue?", "SELECT SUM(o.total) FROM orders o JOIN order_items i ON i.order_id = o.id",
     "the SQL keeps 2 applicable rule(s): revenue_from_lines, reports_only_for_reports",
     ["revenue_from_lines", "reports_only_for_reports"], ["orders", "order_items"]),
    ("How many rows in the report?", "SELECT COUNT(*) FROM report_a",
     "none of the 3 rule(s) applies to this question", [], ["report_a"]),
])
def test_definition_rule_kept_or_not_applicable(tmp_path, question, sql, detail, applicable, tables, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = run_check(rules_db(tmp_path), "definition_rule", sql, question=question, definitions=_rules(tmp_path))
    assert (check.fired, check.terms) == (False, {})
    assert check.detail == snapshot
    assert check.evidence == {"rules": [], "applicable": applicable, "tables": tables}


def test_definition_rule_not_measured(tmp_path, snapshot):
    db = rules_db(tmp_path)
    unparsed = run_check(db, "definition_rule", "SELEC 1", definitions=_rules(tmp_path))
    assert (unparsed.fired, unparsed.evidence) == (False, {"rules": []})
    assert unparsed.detail.startswith("not measured") and unparsed.detail == snapshot(name="unparsed")
    none = run_check(db, "definition_rule", "SELECT 1 FROM orders", definitions=_rules(tmp_path, 'notes = ["n"]\n'))
    assert (none.fired, none.evidence) == (False, {"rules": []})
    assert none.detail.startswith("not measured") and none.detail == snapshot(name="no_rules")
    # A definitions file that became unreadable after the run began: reported, not raised.
    bad = _rules(tmp_path, '[[rules]]\nname = "x"\nshape = 1\n')
    with vouchsql.connect(db, cache_dir=str(tmp_path / "cache"), definitions=bad) as conn:
        sql = "SELECT 1 FROM orders"
        tree = conn.parse(sql)
        profile = conn.profile()
        shown = Candidate(sql=sql, result=conn.execute(sql), cluster=0)
        ctx = CheckContext(question="q", db=conn, profile=profile, shown=shown, candidates=[shown], tree=tree,
                           inspection=inspect_sql(tree, profile, conn.dialect))
        check = DefinitionRule().run(ctx)
    assert (check.fired, check.evidence, check.terms) == (False, {}, {})
    # It names the file and the key it does not know; the file's path (a temporary one) is left out of the snapshot.
    assert check.detail.startswith(f"not measured: {bad}: ") and "shape" in check.detail
    assert check.detail.replace(bad, "<definitions>") == snapshot(name="unreadable")


# ---------------------------------------------------------------------------------------
# base.report: evidence as JSON, only what the check set; terms rounded to six places
# ---------------------------------------------------------------------------------------
class _ProbeEvidence(Evidence):
    value: Any = None
    count: int = 0


class _Probe:
    name = "probe"
    kind = "signal"
    Evidence = _ProbeEvidence
    feeds = ("schema",)


def test_report_dumps_the_evidence_set_as_json_and_rounds_terms():
    result = report(_Probe(), True, "seen", value=(1, 2), terms={"schema": 2 / 3})
    assert (result.name, result.kind, result.fired, result.detail) == ("probe", "signal", True, "seen")
    assert result.evidence == {"value": [1, 2]} and type(result.evidence["value"]) is list
    assert result.terms == {"schema": 0.666667}
    assert report(_Probe(), False, "nothing").evidence == {}  # defaults left out
    with pytest.raises(ValueError, match=r"^check probe reports terms it does not feed: \['complete', 'grounded'\]$"):
        report(_Probe(), False, "x", terms={"grounded": 1.0, "complete": 1.0})


# ---------------------------------------------------------------------------------------
# merged_entities: a label (name/title column, ≥ 75 % of its rows distinct, not unique)
# grouped without its table's key, and the groups the query's own rows merge
# ---------------------------------------------------------------------------------------
ASKED_Q = "What does the query return?"


def labels_db(path: Path) -> Path:
    """tracks: 16 names, 12 distinct (share 0.75), A–D held by two ids each; D's plays are
    the most, A's second. items: short_title 74 of 100 distinct, long_title 75."""
    names, plays, seen, rows = list("AABBCCDDEFGHIJKL"), {"A": (50, 40), "D": (100, 100)}, {}, []
    for i, n in enumerate(names):
        k = seen[n] = seen.get(n, -1) + 1
        rows.append((i + 1, n, 1 + i % 2, plays[n][k] if n in plays else 1))
    short = [f"t{i}" for i in range(74)] + [f"t{i}" for i in range(26)]
    long_ = [f"t{i}" for i in range(75)] + [f"t{i}" for i in range(25)]
    return make_db(path, {
        "tracks": ("id INTEGER PRIMARY KEY, name TEXT, album_id INTEGER, plays INTEGER", rows),
        "albums": ("id INTEGER PRIMARY KEY, title TEXT", [(1, "One"), (2, "Two")]),
        "items": ("id INTEGER PRIMARY KEY, short_title TEXT, long_title TEXT",
                  [(i, short[i], long_[i]) for i in range(100)]),
        "tags": ("name TEXT, v INTEGER", [("A", 1), ("A", 1), ("B", 2), ("C", 3)]),  # no key
        "nobody": ("id INTEGER PRIMARY KEY, name TEXT", []),
        "people": ("id INTEGER PRIMARY KEY, name_ TEXT", [(1, "x"), (2, "x"), (3, "y"), (4, "z")])})


@pytest.fixture(scope="module")
def labels(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "labels", labels_db)


@pytest.mark.parametrize("sql, label, n, examples", [
    ("SELECT t.name, SUM(t.plays) FROM tracks t GROUP BY t.name", "name", 4, ["A", "B", "C"]),
    ("SELECT T.Name, COUNT(*) FROM Tracks T GROUP BY T.Name", "name", 4, ["A", "B", "C"]),
    # The key column is ambiguous in a join: the probe counts the label's own table's key.
    ("SELECT t.name, COUNT(*) FROM tracks t JOIN albums a ON a.id = t.album_id GROUP BY t.name", "name", 4,
     ["A", "B", "C"]),
    # With a LIMIT, only the merged groups shown count; the probe drops ORDER BY (here by an
    # alias it no longer has), LIMIT and OFFSET.
    ("SELECT t.name, SUM(t.plays) AS total FROM tracks t GROUP BY t.name ORDER BY total DESC LIMIT 1",
     "name", 1, ["D"]),
    ("SELECT t.name, SUM(t.plays) AS total FROM tracks t GROUP BY t.name ORDER BY total DESC LIMIT 1 OFFSET 1",
     "name", 1, ["A"]),
    # The query's own HAVING stays in the probe.
    ("SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name HAVING SUM(t.plays) > 50", "name", 2, ["A", "D"]),
    ("SELECT i.long_title, COUNT(*) FROM items i GROUP BY i.long_title", "long_title", 25, ["t0", "t1", "t10"]),
    ("SELECT p.name_, COUNT(*) FROM people p GROUP BY p.name_", "name_", 1, ["x"]),  # a label named name_
    # The query's own HAVING is kept beside the probe's, not instead of it.
    ("SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name HAVING COUNT(*) > 0", "name", 4, ["A", "B", "C"]),
    # The probe shows the label, wherever the query's SELECT puts it.
    ("SELECT COUNT(*), t.name FROM tracks t GROUP BY t.name", "name", 4, ["A", "B", "C"]),
    # Grouped expressions that are no column, and columns before the label that are no label
    # (plays) or whose table has no key (tags), are passed over.
    ("SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name, UPPER(t.name)", "name", 4, ["A", "B", "C"]),
    ("SELECT t.plays, t.name, COUNT(*) FROM tracks t GROUP BY t.plays, t.name", "name", 3, ["B", "C", "D"]),
    ("SELECT g.name, t.name, COUNT(*) FROM tags g JOIN tracks t ON t.name = g.name GROUP BY g.name, t.name", "name",
     3, ["A", "B", "C"]),
])
def test_merged_entities_fires(labels, sql, label, n, examples, snapshot):
    check = run_check(labels, "merged_entities", sql)
    table = {"name": "tracks", "long_title": "items", "name_": "people"}[label]
    assert (check.fired, check.kind) == (True, "cap")
    assert check.evidence == {"column": f"{table}.{label}", "key": f"{table}.id", "merged": n, "examples": examples}
    # The detail names the label, the key to group by as well and the examples (the count: evidence["merged"]).
    assert f"{table}.{label}" in check.detail and f"{table}.id" in check.detail
    assert ", ".join(repr(e) for e in examples) in check.detail
    assert check.detail == snapshot


@pytest.mark.parametrize("sql, question, detail", [
    ("SELECT t.name, t.id FROM tracks t GROUP BY t.name, t.id", None, "no grouped label without its table's key"),
    # A grouped column named as the key, of another table, counts as the key too.
    ("SELECT t.name, a.id, COUNT(*) FROM tracks t JOIN albums a ON a.id = t.album_id GROUP BY t.name, a.id", None,
     "no grouped label without its table's key"),
    ("SELECT a.title, COUNT(*) FROM albums a JOIN tracks t ON t.album_id = a.id GROUP BY a.title", None,
     "no grouped label without its table's key"),  # unique: share 1
    ("SELECT i.short_title, COUNT(*) FROM items i GROUP BY i.short_title", None,
     "no grouped label without its table's key"),  # share 0.74: a category, not a label
    ("SELECT g.name, SUM(g.v) FROM tags g GROUP BY g.name", None, "no grouped label without its table's key"),
    ("SELECT n.name, COUNT(*) FROM nobody n GROUP BY n.name", None, "no grouped label without its table's key"),
    ("SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name", "Which track names are shared by more than one track?",
     "no grouped label without its table's key"),
    # A label of a derived table: no table of the profile, so no key to keep apart.
    ("SELECT s.name, COUNT(*) FROM (SELECT t.name FROM tracks t) s GROUP BY s.name", None,
     "no grouped label without its table's key"),
    # Labels that merge rows, but not in the rows this query keeps (its WHERE) or shows (its LIMIT).
    ("SELECT t.name, COUNT(*) FROM tracks t WHERE t.name >= 'E' GROUP BY t.name", None,
     "each grouped label names one row of its table in this result"),
    ("SELECT t.name, SUM(t.plays) AS total FROM tracks t GROUP BY t.name ORDER BY total LIMIT 1", None,
     "each grouped label names one row of its table in this result"),
    ("SELECT t.name FROM tracks t UNION SELECT a.title FROM albums a", None, "not measured: not a plain SELECT"),
    ("SELEC 1", None, "not measured: no result or the SQL could not be read"),
    # It parses and reads, but fails as it runs (malformed JSON): no result to judge.
    ("SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name HAVING MAX(t.plays) > json('x')", None,
     "not measured: no result or the SQL could not be read"),
])
def test_merged_entities_does_not_fire(labels, sql, question, detail, snapshot):
    # ``detail`` stays in the parameters for the test ids (the snapshot names) and for whether the case is
    # "not measured" (a prefix the pipeline reads); the wording is the snapshot's.
    check = run_check(labels, "merged_entities", sql,
                      **({"question": question} if question else {}))
    assert (check.fired, check.evidence) == (False, {})
    assert check.detail.startswith("not measured") is detail.startswith("not measured")
    assert check.detail == snapshot


def test_merged_entities_a_probe_that_fails_is_not_measured(labels, monkeypatch, snapshot):
    # Every probe refused (on SQLite only a time limit or an engine quirk gets there since
    # stored names are quoted): "not measured", never "each grouped label names one row".
    import vouchsql.checks.merged_entities as me

    monkeypatch.setattr(me, "_merged", lambda *a, **k: None)
    check = run_check(labels, "merged_entities", "SELECT t.name, SUM(t.plays) FROM tracks t GROUP BY t.name")
    assert check.fired is False and check.detail.startswith("not measured")
    assert check.detail == snapshot


def test_merged_entities_counts_at_most_1000_merged_groups(tmp_path):
    # 1,001 names held by two ids each and 2,002 unique ones: share (1001 + 2002) / 4004 ≥ 0.75.
    names = [f"n{i:04d}" for i in range(1001)] * 2 + [f"u{i:04d}" for i in range(2002)]
    db = make_db(tmp_path / "many.sqlite", {"tracks": ("id INTEGER PRIMARY KEY, name TEXT",
                                                       list(enumerate(names)))})
    check = run_check(db, "merged_entities", "SELECT t.name, COUNT(*) FROM tracks t GROUP BY t.name")
    assert check.fired and check.evidence["merged"] == 1000
    assert check.evidence["examples"] == ["n0000", "n0001", "n0002"]


def songs_db(path: Path) -> Path:
    """artists keyed by artist_id; songs: 8 rows, 7 names (share 0.875), the two A's by artist 1;
    listens: one of each song, and two more of B."""
    songs = [(i + 1, n, 1 if n == "A" else 1 + i % 2) for i, n in enumerate("AABCDEFG")]
    return make_db(path, {
        "artists": ("artist_id INTEGER PRIMARY KEY, name TEXT", [(1, "x"), (2, "y")]),
        "songs": ("id INTEGER PRIMARY KEY, name TEXT, artist_id INTEGER", songs),
        "listens": ("id INTEGER PRIMARY KEY, song_id INTEGER", [(i, i) for i in range(1, 9)] + [(9, 3), (10, 3)])})


def test_merged_entities_each_label_its_own_key(tmp_path):
    db = songs_db(tmp_path / "songs.sqlite")
    # artists.name is grouped with its key, artist_id: passed over; songs.name is not (its key is id).
    check = run_check(db, "merged_entities", "SELECT a.name, s.name, COUNT(*) FROM artists a JOIN songs s "
                                             "ON s.artist_id = a.artist_id GROUP BY a.artist_id, a.name, s.name")
    assert check.fired and check.evidence == {"column": "songs.name", "key": "songs.id", "merged": 1,
                                              "examples": ["A"]}
    # A group of several rows of one song (B, listened to three times) merges nothing: the
    # probe counts distinct keys, not rows.
    check = run_check(db, "merged_entities",
                      "SELECT s.name, COUNT(*) FROM songs s JOIN listens l ON l.song_id = s.id GROUP BY s.name")
    assert check.fired and check.evidence == {"column": "songs.name", "key": "songs.id", "merged": 1,
                                              "examples": ["A"]}


def _camel_tracks(raw, schema: str) -> None:
    """"Track" ("TrackId" key, "Name": 16 rows, 12 names, A–D twice) on PostgreSQL, which
    folds an unquoted TrackId to trackid."""
    raw.execute(f'CREATE TABLE {schema}."Track" ("TrackId" INTEGER PRIMARY KEY, "Name" TEXT, "Credit" INTEGER)')
    for i, n in enumerate("AABBCCDDEFGHIJKL"):
        raw.execute(f'INSERT INTO {schema}."Track" VALUES (%s, %s, %s)', (i + 1, n, 10 * (i + 1)))


def _pg_check(pg, tmp_path, name: str, sql: str, question: str = ASKED_Q):
    url, raw, schema = pg
    _camel_tracks(raw, schema)
    answer = vouchsql.check(url, question, [sql], cache_dir=str(tmp_path / "cache"))
    return {c.name: c for c in answer.checks}[name]


@pytest.mark.parametrize("sql, fired, detail, tables", [
    # PostgreSQL reads an unquoted Track as track, which it does not hold: the engine's error,
    # and the check says why instead of "all tables exist"
    ('SELECT COUNT(*) FROM Track', True,
     'PostgreSQL folds an unquoted table name to lower case: Track is read as track, and the table is '
     '"Track"; write the name in double quotes as the database spells it', ["Track"]),
    ('SELECT COUNT(*) FROM "Track" t JOIN owners o ON o.id = t."TrackId"', False, "all 2 tables exist",
     ["Track", "owners"]),
    # owners is stored in lower case: any spelling of it, unquoted, reads it
    ('SELECT COUNT(*) FROM OWNERS', False, "all 1 tables exist", ["OWNERS"]),
])
def test_missing_table_an_unquoted_name_postgres_folds(pg, tmp_path, sql, fired, detail, tables, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = _pg_check(pg, tmp_path, "missing_table", sql)
    assert (check.fired, check.evidence["tables"]) == (fired, tables)
    if fired:  # it says why: the name read (track) and the name to write, quoted
        assert " track" in check.detail and '"Track"' in check.detail
    assert check.detail == snapshot


def test_missing_table_both_spellings_on_postgres(pg, tmp_path, snapshot):
    # "Track" and track both exist: the unquoted name reads track, which is there
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.track (id INTEGER)")
    check = _pg_check(pg, tmp_path, "missing_table", "SELECT COUNT(*) FROM Track")
    assert (check.fired, check.evidence["tables"]) == (False, ["Track"])
    assert check.detail == snapshot


def test_merged_entities_probe_quotes_a_camel_case_key_on_postgres(pg, tmp_path):
    check = _pg_check(pg, tmp_path, "merged_entities", 'SELECT t."Name", COUNT(*) FROM "Track" t GROUP BY t."Name"')
    assert check.fired and (check.evidence["column"], check.evidence["key"], check.evidence["merged"]) == \
        ("Track.Name", "Track.TrackId", 4)
    assert len(check.evidence["examples"]) == 3 and set(check.evidence["examples"]) < {"A", "B", "C", "D"}


@pytest.mark.parametrize("question, label, asked", [
    ("Names that appear more than once", "Name", True),  # the word first
    ("List the tracks for each title", "title", True),  # the word last
    ("How many tracks share a name?", "Name", True),
    ("Plays per track name", "name", True),
    ("Total plays by name", "Name_", True),
    ("Which first names are shared by two actors?", "first_name", True),
    ("Which tracks have the same composer?", "Name", False),  # shared, but not the label
    ("Track names and their plays", "Name", False),  # the label, but nothing merged asked
    ("The title of every track", "Title", False),
])
def test_a_label_asked_by_the_question(question, label, asked):
    assert _label_asked(question, label) is asked


# ---------------------------------------------------------------------------------------
# _joins: the shared reading of the join checks, on parsed trees and a real profile
# ---------------------------------------------------------------------------------------
def _select(sql: str) -> exp.Select:
    return sqlglot.parse_one(sql, read="sqlite")


def _context(conn, sql: str, question: str = "q") -> CheckContext:
    tree = conn.parse(sql)
    profile = conn.profile()
    shown = Candidate(sql=sql, result=conn.execute(sql), cluster=0)
    return CheckContext(question=question, db=conn, profile=profile, shown=shown, candidates=[shown], tree=tree,
                        inspection=inspect_sql(tree, profile, conn.dialect))


def shop_db(path: Path) -> Path:
    """a: a key, a unique email and a repeated x; b and c refer to a."""
    return make_db(path, {
        "a": ("id INTEGER PRIMARY KEY, x INTEGER, email TEXT", [(i, i % 2, f"e{i}") for i in range(4)]),
        "b": ("id INTEGER PRIMARY KEY, y INTEGER, a_id INTEGER", [(i, i, i % 4) for i in range(8)]),
        "c": ("id INTEGER PRIMARY KEY, z INTEGER", [(i, i) for i in range(3)])})


@pytest.mark.parametrize("sql, table, alias", [
    ("SELECT 1 FROM a x JOIN b ON b.a_id = x.id", "a", "x"),
    ("SELECT 1 FROM A JOIN b ON b.a_id = A.id", "a", "A"),  # names compare in any case
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id", "B", "b"),
    ("SELECT 1 FROM a p JOIN a q ON p.x = q.x", "a", None),  # twice: no one alias
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id", "c", None),
])
def test_alias_for(sql, table, alias):
    assert alias_for(_select(sql), table) == alias


def test_tables_by_alias_spells_tables_as_the_profile_does(tmp_path):
    select = _select("SELECT 1 FROM A p JOIN (SELECT 1 AS k) s ON 1 = 1 JOIN nope n ON 1 = 1 JOIN B ON 1 = 1")
    assert tables_by_alias(select) == {"p": "A", "n": "nope", "b": "B"}
    with vouchsql.connect(shop_db(tmp_path / "shop.sqlite"), cache_dir=str(tmp_path / "cache")) as conn:
        assert tables_by_alias(select, conn.profile()) == {"p": "a", "n": "nope", "b": "b"}


@pytest.mark.parametrize("sql, pairs", [
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id AND b.y > 1 AND b.y = 1", [(("b", "a_id"), ("a", "id"))]),
    ("SELECT 1 FROM A JOIN B ON B.A_ID = A.ID", [(("b", "a_id"), ("a", "id"))]),
    # Outer joins make nothing equal; the joins after one still do.
    ("SELECT 1 FROM a LEFT JOIN b ON b.a_id = a.id JOIN c ON c.id = a.x", [(("c", "id"), ("a", "x"))]),
    ("SELECT 1 FROM a RIGHT JOIN b ON b.a_id = a.id", []),
    ("SELECT 1 FROM a FULL JOIN b ON b.a_id = a.id", []),
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id JOIN c ON c.id = b.y",
     [(("b", "a_id"), ("a", "id")), (("c", "id"), ("b", "y"))]),
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id WHERE c.id = a.x AND a.x = a.id AND a.x = 1",
     [(("b", "a_id"), ("a", "id")), (("c", "id"), ("a", "x"))]),
    ("SELECT 1 FROM a CROSS JOIN b WHERE b.a_id = a.id", [(("b", "a_id"), ("a", "id"))]),
    ("SELECT 1 FROM a, b WHERE b.a_id = a.id AND y = a.x", [(("b", "a_id"), ("a", "id"))]),  # y: no table
])
def test_inner_equalities(sql, pairs):
    assert inner_equalities(_select(sql)) == pairs


@pytest.mark.parametrize("sql, keys", [
    ("SELECT 1 FROM a", []),
    ("SELECT 1 FROM a GROUP BY a.x, UPPER(a.email), x", [{("a", "x")}, None, None]),
    ("SELECT 1 FROM A GROUP BY A.X", [{("a", "x")}]),
    ("SELECT 1 FROM a JOIN b USING (id) GROUP BY COALESCE(a.id, b.id)", [{("a", "id"), ("b", "id")}]),
    # Equal by a chain of inner-join equalities, found in whatever order they come; an
    # unrelated equality adds nothing.
    ("SELECT 1 FROM a, b, c, d, e WHERE b.y = c.z AND a.x = b.y AND d.p = e.q GROUP BY a.x",
     [{("a", "x"), ("b", "y"), ("c", "z")}]),
    ("SELECT 1 FROM a LEFT JOIN b ON b.y = a.x GROUP BY a.x", [{("a", "x")}]),
])
def test_group_keys(sql, keys):
    select = _select(sql)
    assert group_keys(select) == keys
    assert grouped_columns(select) == set().union(*[k for k in keys if k])


@pytest.mark.parametrize("sql, alias", [
    ("SELECT 1 FROM a p JOIN b ON b.a_id = p.id", "p"),
    ("SELECT 1 FROM a JOIN b ON b.a_id = a.id", "a"),
    ("SELECT 1 FROM (SELECT 1 AS k) s JOIN b ON 1 = 1", None),
    ("SELECT 1 FROM generate_series(1, 3) g JOIN b ON 1 = 1", None),
    ("SELECT 1", None),
])
def test_driving_alias(sql, alias):
    assert driving_alias(_select(sql)) == alias


def test_outer_select_grouped_entities_and_run_counts(tmp_path):
    with vouchsql.connect(shop_db(tmp_path / "shop.sqlite"), cache_dir=str(tmp_path / "cache")) as conn:
        joined = _context(conn, "SELECT p.x, COUNT(*) FROM a p JOIN b ON b.a_id = p.id GROUP BY p.x")
        assert outer_select(joined) is joined.inspection.qualified
        for sql in ("SELECT x FROM a", "SELECT x FROM a UNION SELECT y FROM b"):
            assert outer_select(_context(conn, sql)) is None
        # The qualifier could not read it (an unknown column): not the query's own tree.
        unread = _context(conn, "SELECT a.nosuch FROM a JOIN b ON b.a_id = a.id")
        assert unread.inspection.qualified_ok is False and outer_select(unread) is None
        unread.inspection = None
        assert outer_select(unread) is None

        def entities(sql):
            ctx = _context(conn, sql)
            return grouped_entities(ctx, ctx.inspection.qualified)

        assert entities("SELECT COUNT(*) FROM a p JOIN b ON b.a_id = p.id GROUP BY p.id") == {"p"}  # b.a_id is equal, not unique
        assert entities("SELECT COUNT(*) FROM a JOIN b ON b.a_id = a.id GROUP BY a.email") == {"a"}  # unique
        assert entities("SELECT COUNT(*) FROM a JOIN b ON b.a_id = a.id GROUP BY a.x, b.y") == {"b"}
        assert entities("SELECT COUNT(*) FROM a JOIN b ON b.a_id = a.id GROUP BY a.x") == set()
        assert entities("SELECT COUNT(*) FROM (SELECT id AS k FROM c) s JOIN a ON a.id = s.k JOIN b ON b.a_id = a.id "
                        "GROUP BY s.k, a.email, b.id") == {"a", "b"}
        # Grouped columns of aliases that are no table of the profile are passed over, in
        # whatever order the set of grouped columns comes.
        subqueries = " ".join(f"JOIN (SELECT 1 AS k) s{i} ON 1 = 1" for i in range(1, 7))
        assert entities(f"SELECT COUNT(*) FROM a {subqueries} GROUP BY "
                        + ", ".join(f"s{i}.k" for i in range(1, 7)) + ", a.email") == {"a"}
        ctx = _context(conn, "SELECT 1")
        assert run_counts(ctx, _select("SELECT COUNT(*), SUM(y) FROM b")) == (8, 28)
        assert run_counts(ctx, _select("SELECT y FROM b WHERE y > 100")) is None
        assert run_counts(ctx, _select("SELECT nosuch FROM b")) is None


# ---------------------------------------------------------------------------------------
# Probes are written in the engine's dialect: sqlglot's default dialect would write SQLite's
# strftime as TIME_TO_STR, which SQLite does not have, and every probe would fail.
# ---------------------------------------------------------------------------------------
YEAR = "strftime('%Y', '2024-05-01') = '2024'"


def test_probes_run_in_the_engines_dialect(tmp_path):
    rows = [(i, f"p{i}", -1 if i < 5 else 20 + i % 50, f"{1990 + i % 3}-01-01") for i in range(1000)]
    db = make_db(tmp_path / "born.sqlite", {"people": ("id INTEGER PRIMARY KEY, name TEXT, age INTEGER, born TEXT",
                                                       rows)})
    stand_in = run_check(db, "stand_in_value", "SELECT AVG(age) FROM people WHERE strftime('%Y', born) = '1990'")
    assert stand_in.fired and [h["how"] for h in stand_in.evidence["hits"]] == ["avg over 2 rows holding the code"]
    merged = run_check(labels_db(tmp_path / "labels.sqlite"), "merged_entities",
                       f"SELECT t.name, COUNT(*) FROM tracks t WHERE {YEAR} GROUP BY t.name")
    assert merged.fired and merged.evidence["merged"] == 4
    with vouchsql.connect(shop_db(tmp_path / "shop.sqlite"), cache_dir=str(tmp_path / "cache")) as conn:
        assert run_counts(_context(conn, "SELECT 1"), _select(f"SELECT COUNT(*) FROM b WHERE {YEAR}")) == (8,)


# ---------------------------------------------------------------------------------------
# join_fanout: which entity an aggregate is over, what is skipped, and the probe's counts
# ---------------------------------------------------------------------------------------
def fanout_db(path: Path) -> Path:
    """customers 1–5 in cities X, Y, Z, Y, W; orders: 3 of customer 1, 2 of 2, 1 of 3, none
    of 4, 2 of 5 (8 in all); notes has no key."""
    return make_db(path, {
        "customers": ("id INTEGER PRIMARY KEY, name TEXT, city TEXT, credit INTEGER",
                      [(1, "ann", "X", 10), (2, "bob", "Y", 20), (3, "cy", "Z", 30), (4, "di", "Y", 40),
                       (5, "ed", "W", 50)]),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL",
                   [(1, 1, 5.0), (2, 1, 15.0), (3, 1, 25.0), (4, 2, 5.0), (5, 2, 30.0), (6, 3, 12.0), (7, 5, 1.0),
                    (8, 5, 2.0)]),
        "notes": ("customer_id INTEGER, txt TEXT", [(1, "a"), (1, "b"), (2, "c")])})


FAN = "FROM customers c JOIN orders o ON o.customer_id = c.id"
ASKED = "What does the query return?"


def _fan(output, aggregate, rows=8, entities=4, entity="customers", within=False):
    return {"output": output, "aggregate": aggregate, "entity": entity, "key": "id", "rows": rows,
            "entities": entities, "factor": round(rows / entities, 3), "within_groups": within}


@pytest.fixture(scope="module")
def fanout(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "fan", fanout_db)


@pytest.mark.parametrize("question, sql, fanouts", [
    ("How many customers have orders?", f"SELECT COUNT(*) {FAN}", [_fan("COUNT(*)", "count")]),
    (ASKED, f"SELECT COUNT(*) {FAN}", [_fan("COUNT(*)", "count")]),  # the driving table's
    (ASKED, "SELECT COUNT(*) FROM customers C JOIN orders O ON O.customer_id = C.id", [_fan("COUNT(*)", "count")]),
    (ASKED, f"SELECT COUNT(1) {FAN}", [_fan("COUNT(1)", "count")]),
    (ASKED, f"SELECT SUM(c.credit), AVG(c.credit) {FAN}", [_fan("SUM(c.credit)", "sum"),
                                                           _fan("AVG(c.credit)", "avg")]),
    (ASKED, f"SELECT c.id, SUM(c.credit) {FAN} GROUP BY c.id", [_fan("SUM(c.credit)", "sum", within=True)]),
    ("How many customers per city have orders?", f"SELECT c.city, COUNT(*) {FAN} GROUP BY c.city",
     [_fan("COUNT(*)", "count", within=True)]),
    # The probe drops the query's HAVING, ORDER BY (by an alias it no longer has), LIMIT,
    # OFFSET and DISTINCT, and keeps its WITH.
    (ASKED, f"SELECT c.city, SUM(c.credit) {FAN} GROUP BY c.city HAVING COUNT(*) > 1",
     [_fan("SUM(c.credit)", "sum", within=True)]),
    (ASKED, f"SELECT c.city, SUM(c.credit) AS credit_sum {FAN} GROUP BY c.city ORDER BY credit_sum DESC",
     [_fan("credit_sum", "sum", within=True)]),
    (ASKED, f"SELECT c.id, SUM(c.credit) AS s {FAN} GROUP BY c.id ORDER BY c.id LIMIT 1",
     [_fan("s", "sum", within=True)]),
    (ASKED, f"SELECT c.id, SUM(c.credit) AS s {FAN} GROUP BY c.id ORDER BY c.id LIMIT 1 OFFSET 1",
     [_fan("s", "sum", within=True)]),
    (ASKED, f"SELECT DISTINCT c.city, SUM(c.credit) {FAN} GROUP BY c.city", [_fan("SUM(c.credit)", "sum", within=True)]),
    (ASKED, "WITH big AS (SELECT * FROM orders WHERE total > 10) SELECT SUM(c.credit) FROM customers c "
            "JOIN big b ON b.customer_id = c.id", [_fan("SUM(c.credit)", "sum", rows=4, entities=3)]),
    # It fails as it runs (malformed JSON in its HAVING), which the probe drops: the output's name.
    (ASKED, f"SELECT SUM(c.credit) {FAN} HAVING MAX(o.total) > json('x')", [_fan("_col_0", "sum")]),
    # The entity named as the profile spells its table, whatever the SQL's case.
    (ASKED, "SELECT COUNT(*) FROM Customers C JOIN Orders O ON O.customer_id = C.id", [_fan("COUNT(*)", "count")]),
    ("How many customers have orders?", "SELECT COUNT(*) FROM CUSTOMERS C JOIN ORDERS O ON O.customer_id = C.id",
     [_fan("COUNT(*)", "count")]),
    # An output passed over (DISTINCT, SUM of a constant, COUNT(*) grouped by the counted
    # table, two tables, a table read twice, AVG grouped by its entity, a table without a key)
    # leaves the outputs after it measured.
    (ASKED, f"SELECT COUNT(DISTINCT c.id), SUM(c.credit) {FAN}", [_fan("SUM(c.credit)", "sum")]),
    (ASKED, f"SELECT SUM(1), SUM(c.credit) {FAN}", [_fan("SUM(c.credit)", "sum")]),
    (ASKED, f"SELECT c.city, COUNT(*), SUM(c.credit) {FAN} GROUP BY c.city", [_fan("SUM(c.credit)", "sum", within=True)]),
    (ASKED, f"SELECT SUM(c.credit + o.total), SUM(c.credit) {FAN}", [_fan("SUM(c.credit)", "sum")]),
    (ASKED, "SELECT SUM(a.credit), SUM(o.total) FROM customers a JOIN customers b ON a.city = b.city "
            "JOIN orders o ON o.customer_id = b.id", [_fan("SUM(o.total)", "sum", rows=10, entities=8, entity="orders")]),
    (ASKED, f"SELECT c.id, AVG(c.credit), SUM(c.credit) {FAN} GROUP BY c.id", [_fan("SUM(c.credit)", "sum", within=True)]),
    (ASKED, "SELECT SUM(n.customer_id), SUM(c.credit) FROM notes n JOIN customers c ON c.id = n.customer_id",
     [_fan("SUM(c.credit)", "sum", rows=3, entities=2)]),
    ("How many customers have orders?", f"SELECT c.id, COUNT(*), SUM(c.credit) {FAN} GROUP BY c.id",
     [_fan("SUM(c.credit)", "sum", within=True)]),
])
def test_join_fanout_fires(fanout, question, sql, fanouts, snapshot):
    check = run_check(fanout, "join_fanout", sql, question=question)
    assert (check.fired, check.kind) == (True, "signal")
    assert check.evidence == {"fanouts": fanouts}
    assert all(f"'{f['output']}'" in check.detail for f in fanouts)  # each output measured is named
    assert check.detail == snapshot


@pytest.mark.parametrize("question, sql, detail, fanouts", [
    ("How many orders are there?", f"SELECT COUNT(*) {FAN}", "the joins do not repeat the aggregated entity",
     [_fan("COUNT(*)", "count", rows=8, entities=8, entity="orders")]),
    (ASKED, f"SELECT c.id, SUM(o.total) {FAN} GROUP BY c.id", "the joins do not repeat the aggregated entity",
     [_fan("SUM(o.total)", "sum", rows=8, entities=8, entity="orders", within=True)]),
    (ASKED, f"SELECT COUNT('x') {FAN}", "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT COUNT(DISTINCT c.id) {FAN}", "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT MAX(c.credit) {FAN}", "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT c.id, AVG(c.credit) {FAN} GROUP BY c.id", "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT c.id, COUNT(c.id) {FAN} GROUP BY c.id", "no aggregate over joined rows to measure", None),
    ("How many customers have orders?", f"SELECT c.id, COUNT(*) {FAN} GROUP BY c.id",
     "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT c.city, COUNT(*) {FAN} GROUP BY c.city", "no aggregate over joined rows to measure", None),
    (ASKED, "SELECT SUM(n.customer_id) FROM notes n JOIN customers c ON c.id = n.customer_id",
     "no aggregate over joined rows to measure", None),  # notes has no key
    (ASKED, "SELECT SUM(a.credit) FROM customers a JOIN customers b ON a.city = b.city",
     "no aggregate over joined rows to measure", None),  # a table twice
    (ASKED, f"SELECT SUM(c.credit + o.total) {FAN}", "no aggregate over joined rows to measure", None),
    (ASKED, f"SELECT SUM(c.credit) {FAN} WHERE c.id > 100", "no aggregate over joined rows to measure", None),
    # An output whose entity no row carries (the NULL side of a LEFT JOIN) leaves the next measured.
    (ASKED, "SELECT SUM(o.total), SUM(c.credit) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
            "WHERE o.id IS NULL", "the joins do not repeat the aggregated entity",
     [_fan("SUM(c.credit)", "sum", rows=1, entities=1)]),
    (ASKED, "SELECT COUNT(*) FROM (SELECT * FROM customers) s JOIN orders o ON o.customer_id = s.id",
     "no aggregate over joined rows to measure", None),
    (ASKED, "SELECT SUM(credit) FROM customers", "no join in the outer query", None),
])
def test_join_fanout_does_not_fire(fanout, question, sql, detail, fanouts, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = run_check(fanout, "join_fanout", sql, question=question)
    assert check.fired is False and check.detail == snapshot
    assert check.evidence == ({"fanouts": fanouts} if fanouts else {})


def test_join_fanout_probe_drops_what_would_change_the_counts():
    select = sqlglot.parse_one("WITH w AS (SELECT 1 AS k) SELECT DISTINCT c.city, SUM(c.credit) AS s FROM customers c "
                               "JOIN orders o ON o.customer_id = c.id GROUP BY c.city HAVING COUNT(*) > 1 "
                               "QUALIFY ROW_NUMBER() OVER (ORDER BY c.city) = 1 ORDER BY s LIMIT 2 OFFSET 1",
                               read="duckdb")
    probe = repetition_query(select, column("c", "id", "duckdb"))
    inner = probe.find(exp.Subquery).this
    assert [k for k in ("having", "order", "limit", "offset", "distinct", "qualify", "with") if inner.args.get(k)] == []
    assert inner.args["group"].sql() == "GROUP BY c.city"
    assert probe.find(exp.With).sql() == "WITH w AS (SELECT 1 AS k)" and probe.find(exp.With).parent is probe
    assert probe.sql(dialect="duckdb") == (
        "WITH w AS (SELECT 1 AS k) SELECT SUM(vouch_n), SUM(vouch_d) FROM (SELECT COUNT(c.id) AS vouch_n, "
        "COUNT(DISTINCT c.id) AS vouch_d FROM customers AS c JOIN orders AS o ON o.customer_id = c.id "
        "GROUP BY c.city) AS vouch_groups")


def test_join_fanout_names_the_entity_as_the_schema_does(tmp_path):
    db = make_db(tmp_path / "camel.sqlite", {
        "Customer": ("CustomerId INTEGER PRIMARY KEY, Credit INTEGER", [(1, 10), (2, 20), (3, 30)]),
        "Invoice": ("InvoiceId INTEGER PRIMARY KEY, CustomerId INTEGER", [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)])})
    check = run_check(db, "join_fanout", "SELECT COUNT(*) FROM customer c JOIN invoice i ON i.customerid = c.customerid")
    assert check.fired and check.evidence == {"fanouts": [
        {"output": "COUNT(*)", "aggregate": "count", "entity": "Customer", "key": "CustomerId", "rows": 5,
         "entities": 3, "factor": 1.667, "within_groups": False}]}


def test_join_fanout_probe_quotes_a_camel_case_key_on_postgres(pg, tmp_path):
    # Each of the 16 tracks meets the 8 pets whose owner_id is its TrackId.
    check = _pg_check(pg, tmp_path, "join_fanout",
                      'SELECT SUM(t."Credit") FROM "Track" t JOIN pets p ON p.owner_id = t."TrackId"')
    assert check.fired
    assert [{k: f[k] for k in ("entity", "key", "rows", "entities")} for f in check.evidence["fanouts"]] == \
        [{"entity": "Track", "key": "TrackId", "rows": 128, "entities": 16}]


# ---------------------------------------------------------------------------------------
# join_drop: the share of driving rows the inner joins drop (30 % fires, 29 % does not),
# and the scopes that explain a drop
# ---------------------------------------------------------------------------------------
def drop_db(path: Path) -> Path:
    """100 customers (even ids north, the first 70 titled Sales Agent); orders for customers
    0–69, visits for 0–70; empty has no rows, keyless no key."""
    return make_db(path, {
        "customers": ("id INTEGER PRIMARY KEY, name TEXT, region TEXT, title TEXT, credit INTEGER",
                      [(i, f"c{i}", "north" if i % 2 == 0 else "south", "Sales Agent" if i < 70 else "Manager", i)
                       for i in range(100)]),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL", [(i, i, 10.0 + i) for i in range(70)]),
        "visits": ("id INTEGER PRIMARY KEY, customer_id INTEGER", [(i, i) for i in range(71)]),
        "empty": ("id INTEGER PRIMARY KEY, customer_id INTEGER", []),
        "keyless": ("customer_id INTEGER, note TEXT", [(1, "x"), (2, "y")])})


DROP = "FROM customers c JOIN orders o ON o.customer_id = c.id"
DROPPED = "the joins keep 70 of 100 customers rows; 30% are dropped before any filter on the joined tables"
SCOPE = "the joins keep 70 of 100 customers rows; the dropped rows are outside the question's scope: "
RANKS = SCOPE + "the query ranks customers by its joined rows, highest first; an unmatched row ranks last"


def _dropped(rows=100, kept=70, share=0.3):
    return {"table": "customers", "rows": rows, "kept": kept, "dropped_share": share}


@pytest.fixture(scope="module")
def dropping(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "drop", drop_db)


@pytest.mark.parametrize("question, sql, fired, detail, evidence", [
    (ASKED, f"SELECT COUNT(*) {DROP}", True, DROPPED, _dropped()),
    (ASKED, "SELECT COUNT(*) FROM customers c, orders o WHERE o.customer_id = c.id", True, DROPPED, _dropped()),
    (ASKED, "SELECT COUNT(*) FROM customers c JOIN visits v ON v.customer_id = c.id", False,
     "the joins keep 71 of 100 customers rows", _dropped(kept=71, share=0.29)),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE c.region = 'north'", True,
     "the joins keep 35 of 50 customers rows that pass its filters on them; 30% are dropped before any filter on "
     "the joined tables", _dropped(rows=50, kept=35)),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE credit > 5", True,
     "the joins keep 64 of 94 customers rows that pass its filters on them; 32% are dropped before any filter on "
     "the joined tables", _dropped(rows=94, kept=64, share=0.3191)),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE o.total > 0", False,
     SCOPE + "the WHERE filters on the joined rows (o.total > 0), so only customers rows with matching rows can "
             "answer", _dropped()),
    # A filter that may keep NULLs of the joined side (OR, IS NULL) or reads a subquery scopes
    # nothing; IS NOT NULL rejects them as plainly as a comparison (a LEFT JOIN would drop
    # the same rows), in either spelling.
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE o.total > 0 OR c.credit > 5", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE o.total IS NOT NULL", False,
     SCOPE + "the WHERE filters on the joined rows (NOT o.total IS NULL), so only customers rows with matching rows "
             "can answer", _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE NOT o.total IS NULL", False,
     SCOPE + "the WHERE filters on the joined rows (NOT o.total IS NULL), so only customers rows with matching rows "
             "can answer", _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE o.total IS NULL", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE NOT o.total IS NOT NULL", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE COALESCE(o.total, 0) IS NOT NULL", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE c.id IN (SELECT customer_id FROM visits)", True, DROPPED, _dropped()),
    # A ranking of the driving rows by their joined rows, highest first, for its top: the
    # LIMIT filled, or "most" in the question.
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC LIMIT 5", False, RANKS, _dropped()),
    (ASKED, f"SELECT c.name, SUM(o.total) {DROP} GROUP BY c.id ORDER BY SUM(o.total) DESC LIMIT 5", False, RANKS,
     _dropped()),
    (ASKED, f"SELECT o.customer_id, COUNT(*) AS n {DROP} GROUP BY o.customer_id ORDER BY n DESC LIMIT 5", False,
     RANKS, _dropped()),
    ("Which customers have the most orders?", f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC",
     False, RANKS, _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC", True, DROPPED, _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC LIMIT 200", True, DROPPED, _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n LIMIT 5", True, DROPPED, _dropped()),
    (ASKED, f"SELECT c.name, MAX(o.total) AS m {DROP} GROUP BY c.id ORDER BY m DESC LIMIT 5", True, DROPPED,
     _dropped()),
    (ASKED, f"SELECT c.name, SUM(c.credit) AS m {DROP} GROUP BY c.id ORDER BY m DESC LIMIT 5", True, DROPPED,
     _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY c.name DESC LIMIT 5", True, DROPPED,
     _dropped()),
    # The question names a value of a driving column, and the joins keep exactly its rows.
    ("How many orders per sales agent?", f"SELECT c.name, COUNT(*) {DROP} GROUP BY c.id", False,
     SCOPE + "the question names title 'Sales Agent', and the joins keep 70 of the 70 customers rows with it and "
             "no other", _dropped()),
    ("How many orders per manager?", f"SELECT c.name, COUNT(*) {DROP} GROUP BY c.id", True, DROPPED, _dropped()),
    # Every row dropped: no scope explains an empty answer.
    (ASKED, "SELECT COUNT(*) FROM customers c JOIN empty e ON e.customer_id = c.id WHERE e.id > 0", True,
     "the joins keep 0 of 100 customers rows; 100% are dropped before any filter on the joined tables",
     _dropped(kept=0, share=1.0)),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE c.region = 'nowhere'", False,
     "no customers rows pass the query's own filters", {}),
    (ASKED, "SELECT COUNT(*) FROM keyless k JOIN customers c ON c.id = k.customer_id", False,
     "not measured: the driving table has no single-column key", {}),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE c.region = json('x')", False, "not measured: the probe query failed", {}),
    (ASKED, "SELECT COUNT(*) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id", False,
     "no inner join in the outer query", {}),
    (ASKED, "SELECT COUNT(*) FROM customers", False, "no inner join in the outer query", {}),
    (ASKED, "SELECT COUNT(*) FROM customers c RIGHT JOIN orders o ON o.customer_id = c.id", False,
     "no inner join in the outer query", {}),
    (ASKED, "SELECT COUNT(*) FROM customers c FULL JOIN orders o ON o.customer_id = c.id", False,
     "no inner join in the outer query", {}),
    (ASKED, "SELECT COUNT(*) FROM customers c JOIN orders o USING (id)", True, DROPPED, _dropped()),
    (ASKED, "SELECT COUNT(*) FROM (SELECT * FROM customers) s JOIN orders o ON o.customer_id = s.id", False,
     "not measured: the driving table has no single-column key", {}),
    (ASKED, "SELECT COUNT(*) FROM empty e JOIN customers c ON c.id = e.customer_id", False,
     "not measured: the driving table has no single-column key", {}),  # a key, but no rows
    # The join's own condition fails as it runs (malformed JSON): the drop probe fails with it.
    (ASKED, "SELECT COUNT(*) FROM customers c JOIN orders o ON o.customer_id = c.id AND o.total > json('x')", False,
     "not measured: the probe query failed", {}),
    # Every WHERE conjunct is read: a driving-table filter after a join equality or after a
    # subquery still scopes the rows.
    (ASKED, "SELECT COUNT(*) FROM customers c, orders o WHERE o.customer_id = c.id AND c.region = 'north'", True,
     "the joins keep 35 of 50 customers rows that pass its filters on them; 30% are dropped before any filter on "
     "the joined tables", _dropped(rows=50, kept=35)),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE c.id IN (SELECT customer_id FROM visits) AND c.region = 'north'", True,
     "the joins keep 35 of 50 customers rows that pass its filters on them; 30% are dropped before any filter on "
     "the joined tables", _dropped(rows=50, kept=35)),
    # A joined filter under IS, COALESCE or NOT (which may keep the joined side's NULLs) scopes
    # nothing; another is shown in the engine's dialect (STRFTIME, not TIME_TO_STR).
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE (o.total > 0) IS TRUE", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE COALESCE(o.total, 0) > 0", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE NOT o.total > 40", True, DROPPED, _dropped()),
    (ASKED, f"SELECT COUNT(*) {DROP} WHERE strftime('%Y', o.total) <> ''", False,
     SCOPE + "the WHERE filters on the joined rows (STRFTIME('%Y', o.total) <> ''), so only customers rows with "
             "matching rows can answer", _dropped()),
    # A ranking by an aggregate the SELECT does not show; an ORDER BY name that is no output
    # (SQLite reads "nosuch" as a string), and LIMITs that are no integer, rank nothing.
    (ASKED, f"SELECT c.name {DROP} GROUP BY c.id ORDER BY COUNT(*) DESC LIMIT 5", False, RANKS, _dropped()),
    (ASKED, f'SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY "nosuch" DESC LIMIT 5', True, DROPPED,
     _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC LIMIT 2 + 3", True, DROPPED, _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC LIMIT '5'", True, DROPPED, _dropped()),
    (ASKED, f"SELECT c.name, COUNT(*) AS n {DROP} GROUP BY c.id ORDER BY n DESC LIMIT 5.0", True, DROPPED, _dropped()),
    # A named value's rows counted among those that pass the query's own filters: 35 north
    # sales agents, not all 70.
    ("How many orders per sales agent?", f"SELECT c.name, COUNT(*) {DROP} WHERE c.region = 'north' GROUP BY c.id",
     False, "the joins keep 35 of 50 customers rows that pass its filters on them; the dropped rows are outside the "
            "question's scope: the question names title 'Sales Agent', and the joins keep 35 of the 35 customers rows "
            "with it and no other", _dropped(rows=50, kept=35)),
])
def test_join_drop_at_its_edges(dropping, question, sql, fired, detail, evidence, snapshot):
    # ``detail`` stays in the parameters for the test ids (the snapshot names) and for whether the case is
    # "not measured" (a prefix the pipeline reads); the wording is the snapshot's.
    check = run_check(dropping, "join_drop", sql, question=question)
    assert (check.fired, check.kind, check.evidence) == (fired, "signal", evidence)
    assert check.detail.startswith("not measured") is detail.startswith("not measured")
    assert "TIME_TO_STR" not in check.detail  # a filter it shows is written in the engine's dialect
    assert check.detail == snapshot


def scoped_db(path: Path) -> Path:
    """200 customers (even ids north; ids < 60 gold, < 86 retail, < 85 web; plan pro for ids
    < 80, trial to 99, basic after); orders for
    customers 0–59, which have a channel column of their own."""
    rows = [(i, "north" if i % 2 == 0 else "south", "gold" if i < 60 else "grey", "retail" if i < 86 else "online",
             "web" if i < 85 else "shop", "pro" if i < 80 else "trial" if i < 100 else "basic") for i in range(200)]
    return make_db(path, {
        "customers": ("id INTEGER PRIMARY KEY, region TEXT, tier TEXT, kind TEXT, channel TEXT, plan TEXT", rows),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER, channel TEXT", [(i, i, "post") for i in range(60)])})


@pytest.fixture(scope="module")
def scoped(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "scoped", scoped_db)


@pytest.mark.parametrize("question, sql, fired, detail", [
    # The named value's rows, 30 % of them dropped, fire (60 of the 86 retail ones: 30.2 %);
    # 29.4 % (60 of the 85 web ones) is a scope. The value's column is read as the driving
    # table's (orders has a channel too).
    ("How many orders per retail customer?", f"SELECT COUNT(*) {DROP}", True,
     "the joins keep 60 of 200 customers rows; 70% are dropped before any filter on the joined tables"),
    ("How many orders per web customer?", f"SELECT COUNT(*) {DROP}", False,
     "the joins keep 60 of 200 customers rows; the dropped rows are outside the question's scope: the question names "
     "channel 'web', and the joins keep 60 of the 85 customers rows with it and no other"),
    # 'south' has no row that passes the query's own filter: the next named value (gold) is tried.
    ("How many orders per south gold customer?", f"SELECT COUNT(*) {DROP} WHERE c.region = 'north'", False,
     "the joins keep 30 of 100 customers rows that pass its filters on them; the dropped rows are outside the "
     "question's scope: the question names tier 'gold', and the joins keep 30 of the 30 customers rows with it and "
     "no other"),
    # Nor has 'basic' (the plan most rows have, tried first): the column's next named value is.
    ("How many orders per basic pro customer?", f"SELECT COUNT(*) {DROP} WHERE c.id < 100", False,
     "the joins keep 60 of 100 customers rows that pass its filters on them; the dropped rows are outside the "
     "question's scope: the question names plan 'pro', and the joins keep 60 of the 80 customers rows with it and "
     "no other"),
])
def test_join_drop_a_named_values_share_at_its_cutoff(scoped, question, sql, fired, detail, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = run_check(scoped, "join_drop", sql, question=question)
    assert check.fired is fired
    # The driving rows counted (of those that pass the query's own filters), and the named value whose rows
    # explain the drop when it is a scope: the value tried, not one passed over.
    rows, kept, named = {"How many orders per retail customer?": (200, 60, None),
                         "How many orders per web customer?": (200, 60, "web"),
                         "How many orders per south gold customer?": (100, 30, "gold"),
                         "How many orders per basic pro customer?": (100, 60, "pro")}[question]
    assert (check.evidence["table"], check.evidence["rows"], check.evidence["kept"]) == ("customers", rows, kept)
    for value in ("retail", "web", "south", "gold", "basic", "pro"):
        assert (f"'{value}'" in check.detail) is (value == named), value
    assert check.detail == snapshot


def test_join_drop_probes_quote_camel_case_names_on_postgres(pg, tmp_path, snapshot):
    url, raw, schema = pg
    # "Track" rows 1–8 are Rock, 9–16 Jazz; "Play" holds plays of tracks 1–8.
    check = _pg_check(pg, tmp_path, "join_drop", 'SELECT COUNT(*) FROM "Track" t JOIN pets p ON p.id = t."TrackId" '
                                                 'WHERE t."Credit" > 50')
    assert check.fired is False
    assert (check.evidence["table"], check.evidence["rows"], check.evidence["kept"]) == ("Track", 11, 11)
    assert check.detail == snapshot(name="filtered")
    raw.execute(f'ALTER TABLE {schema}."Track" ADD COLUMN "Genre" TEXT')
    raw.execute(f'UPDATE {schema}."Track" SET "Genre" = CASE WHEN "TrackId" <= 8 THEN \'Rock\' ELSE \'Jazz\' END')
    raw.execute(f'CREATE TABLE {schema}."Play" ("PlayId" INTEGER PRIMARY KEY, "TrackId" INTEGER)')
    raw.execute(f'INSERT INTO {schema}."Play" SELECT i, 1 + i % 8 FROM generate_series(1, 40) i')
    answer = vouchsql.check(url, "How many plays per rock track?",
                            ['SELECT t."Name", COUNT(*) FROM "Track" t JOIN "Play" p ON p."TrackId" = t."TrackId" '
                             'GROUP BY t."TrackId", t."Name"'], cache_dir=str(tmp_path / "cache2"))
    check = {c.name: c for c in answer.checks}["join_drop"]
    assert check.fired is False
    assert (check.evidence["table"], check.evidence["rows"], check.evidence["kept"]) == ("Track", 16, 8)
    assert "Genre" in check.detail and "'Rock'" in check.detail  # the camel-case column and the value named
    assert check.detail == snapshot(name="scoped")


@pytest.mark.parametrize("where, fired", [("", True), (" WHERE p.* IS NOT NULL", False),
                                          (" WHERE p.nick IS NOT NULL", False), (" WHERE p.* IS NULL", True)])
def test_join_drop_reads_a_whole_row_test_on_postgres(pg, tmp_path, where, fired):
    # owners 1–25 of 50 have pets: half are dropped; ``p.*`` names the joined table.
    url, _, _ = pg
    answer = vouchsql.check(url, ASKED, [f"SELECT COUNT(*) FROM owners o JOIN pets p ON p.owner_id = o.id{where}"],
                            cache_dir=str(tmp_path / "cache"))
    check = {c.name: c for c in answer.checks}["join_drop"]
    assert check.fired is fired, check.detail
    assert (check.evidence["table"], check.evidence["rows"], check.evidence["kept"]) == ("owners", 50, 25), check.detail


# ---------------------------------------------------------------------------------------
# join_key_meaning: each verdict's words and evidence, the links it names (which first, how
# many), the table between two unlinked tables, and the size past which no path is searched
# ---------------------------------------------------------------------------------------
_SCHOOL = """
CREATE TABLE students (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE courses (id INTEGER PRIMARY KEY, title TEXT);
CREATE TABLE enrollments (id INTEGER PRIMARY KEY, student_id INTEGER REFERENCES students(id),
                          course_id INTEGER REFERENCES courses(id));
"""
LEAGUE = """
CREATE TABLE Country (CountryId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE Team (TeamId INTEGER PRIMARY KEY, Name TEXT, CountryId INTEGER);
CREATE TABLE Match (MatchId INTEGER PRIMARY KEY, HomeTeamId INTEGER, AwayTeamId INTEGER, WinnerTeamId INTEGER,
                    RefereeTeamId INTEGER, CountryId INTEGER);
CREATE TABLE Invoice (InvoiceId INTEGER PRIMARY KEY, CountryId INTEGER);
CREATE TABLE Payment (PaymentId INTEGER PRIMARY KEY, CountryId INTEGER);
""" + _SCHOOL + """
CREATE TABLE labs (id INTEGER PRIMARY KEY);
CREATE TABLE lab_courses (id INTEGER PRIMARY KEY, course_id INTEGER REFERENCES courses(id),
                          lab_id INTEGER REFERENCES labs(id));
CREATE TABLE profiles (student_id INTEGER PRIMARY KEY REFERENCES students(id), bio TEXT);
CREATE TABLE reviews (id INTEGER PRIMARY KEY, profile_id INTEGER REFERENCES profiles(student_id));
CREATE TABLE depots (id INTEGER PRIMARY KEY);
CREATE TABLE warehouses (id INTEGER PRIMARY KEY);
CREATE TABLE shipments (id INTEGER PRIMARY KEY, warehouse_id INTEGER REFERENCES depots(id));
CREATE TABLE returns (id INTEGER PRIMARY KEY, warehouse_id INTEGER REFERENCES warehouses(id));
CREATE TABLE book (isbn TEXT PRIMARY KEY, title TEXT);
CREATE TABLE book_detail (isbn TEXT PRIMARY KEY, pages INTEGER);
CREATE TABLE memos (memo TEXT, other TEXT);
CREATE TABLE notes (memo TEXT);
"""


def league_db(path: Path) -> Path:
    """Names place the Team and Country keys (Match has four columns naming Team); the school
    (students to labs three tables apart), stock and review tables declare theirs; book and book_detail are both keyed by isbn; memos
    and notes hold no key. Five rows each."""
    import sqlite3

    con = sqlite3.connect(path)
    con.executescript(LEAGUE)
    for i in range(1, 6):
        for table, row in (("Country", (i, f"c{i}")), ("Team", (i, f"t{i}", i)), ("Match", (i, i, 6 - i, i, 1, i)),
                           ("Invoice", (i, i)), ("Payment", (i, i)), ("students", (i, f"s{i}")),
                           ("courses", (i, f"k{i}")), ("enrollments", (i, i, i)), ("labs", (i,)),
                           ("lab_courses", (i, i, i)), ("profiles", (i, "b")),
                           ("reviews", (i, i)), ("depots", (i,)), ("warehouses", (i,)), ("shipments", (i, i)),
                           ("returns", (i, i)), ("book", (f"i{i}", "t")), ("book_detail", (f"i{i}", 1)),
                           ("memos", (f"m{i}", f"m{i}")), ("notes", (f"m{i}",))):
            con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def league(tmp_path_factory) -> Path:
    return _shared(tmp_path_factory, "league", league_db)


def _pair(left, right, verdict, reason, left_key, right_key, should_take=()):
    return {"left": left, "right": right, "form": "on", "verdict": verdict, "reason": reason, "left_key": left_key,
            "right_key": right_key, "should_take": list(should_take)}


_BY_NAME = ", by its name"
_HOME, _AWAY, _WINNER = (f"Match.{c}TeamId references Team.TeamId{_BY_NAME}" for c in ("Home", "Away", "Winner"))
_THROUGH = ("through enrollments: enrollments.course_id references courses.id; enrollments.student_id references "
            "students.id")
_LABS = ("through lab_courses, courses, enrollments: lab_courses.lab_id references labs.id; lab_courses.course_id "
         "references courses.id; enrollments.course_id references courses.id; enrollments.student_id references "
         "students.id")
_STUDENTS_COURSES = "SELECT COUNT(*) FROM students s JOIN courses c ON c.id = s.id"
_WRONG = "the join keys belong to different entities: "


@pytest.mark.parametrize("sql, fired, detail, pairs", [
    # Two tables linked only through a third: the table between and both its links.
    (_STUDENTS_COURSES, True,
     f"{_WRONG}courses.id = students.id joins the key of courses to the key of students; the tables link {_THROUGH}",
     [_pair("courses.id", "students.id", "different_entities",
            "courses.id = students.id joins the key of courses to the key of students", "courses.id", "students.id",
            [_THROUGH])]),
    # Three tables between, each named once, the pair's own tables not among them.
    ("SELECT COUNT(*) FROM students s JOIN labs l ON l.id = s.id", True,
     f"{_WRONG}labs.id = students.id joins the key of labs to the key of students; the tables link {_LABS}",
     [_pair("labs.id", "students.id", "different_entities",
            "labs.id = students.id joins the key of labs to the key of students", "labs.id", "students.id", [_LABS])]),
    # Three links at most, the one that keeps a column of the pair first: the left one …
    ("SELECT COUNT(*) FROM Match m JOIN Team t ON m.AwayTeamId = t.CountryId", True,
     f"{_WRONG}Match.AwayTeamId = Team.CountryId joins keys of Team (Match.AwayTeamId references Team.TeamId{_BY_NAME}) "
     f"to keys of Country (Team.CountryId references Country.CountryId{_BY_NAME}); the join should follow {_AWAY} or "
     f"{_HOME} or {_WINNER}",
     [_pair("Match.AwayTeamId", "Team.CountryId", "different_entities",
            f"Match.AwayTeamId = Team.CountryId joins keys of Team (Match.AwayTeamId references Team.TeamId{_BY_NAME}) "
            f"to keys of Country (Team.CountryId references Country.CountryId{_BY_NAME})", "Team.TeamId",
            "Country.CountryId", [_AWAY, _HOME, _WINNER])]),
    # … or the right one; otherwise the schema's order (RefereeTeamId, the fourth, left out).
    ("SELECT COUNT(*) FROM Team t JOIN Match m ON t.CountryId = m.AwayTeamId", True,
     f"{_WRONG}Team.CountryId = Match.AwayTeamId joins keys of Country (Team.CountryId references Country.CountryId"
     f"{_BY_NAME}) to keys of Team (Match.AwayTeamId references Team.TeamId{_BY_NAME}); the join should follow "
     f"{_AWAY} or {_HOME} or {_WINNER}",
     [_pair("Team.CountryId", "Match.AwayTeamId", "different_entities",
            f"Team.CountryId = Match.AwayTeamId joins keys of Country (Team.CountryId references Country.CountryId"
            f"{_BY_NAME}) to keys of Team (Match.AwayTeamId references Team.TeamId{_BY_NAME})", "Country.CountryId",
            "Team.TeamId", [_AWAY, _HOME, _WINNER])]),
    ("SELECT COUNT(*) FROM Team t JOIN Match m ON t.TeamId = m.MatchId", True,
     f"{_WRONG}Team.TeamId = Match.MatchId joins the key of Team to the key of Match; the join should follow {_HOME} or "
     f"{_AWAY} or {_WINNER}",
     [_pair("Team.TeamId", "Match.MatchId", "different_entities",
            "Team.TeamId = Match.MatchId joins the key of Team to the key of Match", "Team.TeamId", "Match.MatchId",
            [_HOME, _AWAY, _WINNER])]),
    # Match and Team both hold Country keys too, which their direct links (above) hide; with
    # no direct link, two columns holding one table's keys are the link.
    ("SELECT COUNT(*) FROM Invoice i JOIN Payment p ON p.PaymentId = i.InvoiceId", True,
     f"{_WRONG}Payment.PaymentId = Invoice.InvoiceId joins the key of Payment to the key of Invoice; the join should "
     "follow Payment.CountryId = Invoice.CountryId (both hold Country.CountryId keys)",
     [_pair("Payment.PaymentId", "Invoice.InvoiceId", "different_entities",
            "Payment.PaymentId = Invoice.InvoiceId joins the key of Payment to the key of Invoice", "Payment.PaymentId",
            "Invoice.InvoiceId", ["Payment.CountryId = Invoice.CountryId (both hold Country.CountryId keys)"])]),
    # One name, two declared targets: different entities, and no link to name.
    ("SELECT COUNT(*) FROM shipments s JOIN returns r ON r.warehouse_id = s.warehouse_id", True,
     f"{_WRONG}returns.warehouse_id = shipments.warehouse_id joins keys of warehouses (returns.warehouse_id references "
     "warehouses.id) to keys of depots (shipments.warehouse_id references depots.id)",
     [_pair("returns.warehouse_id", "shipments.warehouse_id", "different_entities",
            "returns.warehouse_id = shipments.warehouse_id joins keys of warehouses (returns.warehouse_id references "
            "warehouses.id) to keys of depots (shipments.warehouse_id references depots.id)", "warehouses.id",
            "depots.id")]),
    # One table's two columns: no link within it, and no path is searched.
    ("SELECT COUNT(*) FROM enrollments a JOIN enrollments b ON a.student_id = b.course_id", True,
     f"{_WRONG}enrollments.student_id = enrollments.course_id joins keys of students (enrollments.student_id references "
     "students.id) to keys of courses (enrollments.course_id references courses.id)",
     [_pair("enrollments.student_id", "enrollments.course_id", "different_entities",
            "enrollments.student_id = enrollments.course_id joins keys of students (enrollments.student_id references "
            "students.id) to keys of courses (enrollments.course_id references courses.id)", "students.id",
            "courses.id")]),
    # Two wrong pairs, each with its own advice.
    ("SELECT COUNT(*) FROM enrollments e JOIN students s ON s.id = e.course_id JOIN courses c ON c.id = e.student_id",
     True, f"{_WRONG}students.id = enrollments.course_id joins the key of students to keys of courses "
           "(enrollments.course_id references courses.id); the join should follow enrollments.student_id references "
           "students.id; courses.id = enrollments.student_id joins the key of courses to keys of students "
           "(enrollments.student_id references students.id); the join should follow enrollments.course_id references "
           "courses.id",
     [_pair("students.id", "enrollments.course_id", "different_entities",
            "students.id = enrollments.course_id joins the key of students to keys of courses (enrollments.course_id "
            "references courses.id)", "students.id", "courses.id", ["enrollments.student_id references students.id"]),
      _pair("courses.id", "enrollments.student_id", "different_entities",
            "courses.id = enrollments.student_id joins the key of courses to keys of students (enrollments.student_id "
            "references students.id)", "courses.id", "students.id", ["enrollments.course_id references courses.id"])]),
    # Both sides follow references (one of them two) to one key.
    ("SELECT COUNT(*) FROM reviews r JOIN enrollments e ON e.student_id = r.profile_id", False,
     "1 of 1 join pair(s) follow their keys' meaning",
     [_pair("enrollments.student_id", "reviews.profile_id", "follows",
            "enrollments.student_id references students.id; reviews.profile_id references profiles.student_id; "
            "profiles.student_id references students.id: both hold students.id keys", "students.id", "students.id")]),
    # Two keys of one non-generic name, none declared: one key domain.
    ("SELECT COUNT(*) FROM book b JOIN book_detail d ON d.isbn = b.isbn", False,
     "1 of 1 join pair(s) follow their keys' meaning",
     [_pair("book_detail.isbn", "book.isbn", "follows", "both columns are named isbn", "book_detail.isbn",
            "book.isbn")]),
    ("SELECT COUNT(*) FROM memos a JOIN notes b ON b.memo = a.memo", False,
     "1 of 1 join pair(s) follow their keys' meaning",
     [_pair("notes.memo", "memos.memo", "follows", "both columns are named memo (not a key the schema places)", None,
            None)]),
    # A pair written twice (either way round) is judged once; the unplaced ones are listed.
    ("SELECT COUNT(*) FROM enrollments e JOIN students s ON e.student_id = s.id AND s.id = e.student_id "
     "JOIN courses c ON c.id = e.course_id", False, "2 of 2 join pair(s) follow their keys' meaning",
     [_pair("enrollments.student_id", "students.id", "follows", "enrollments.student_id references students.id",
            "students.id", "students.id"),
      _pair("courses.id", "enrollments.course_id", "follows", "enrollments.course_id references courses.id",
            "courses.id", "courses.id")]),
    ("SELECT COUNT(*) FROM enrollments e JOIN students s ON s.id = e.student_id JOIN memos m ON m.memo = e.id "
     "JOIN notes n ON n.memo = m.other", False,
     "1 of 3 join pair(s) follow their keys' meaning; not measured (no key the catalogue or the names place): "
     "memos.memo = enrollments.id, notes.memo = memos.other",
     [_pair("students.id", "enrollments.student_id", "follows", "enrollments.student_id references students.id",
            "students.id", "students.id"),
      _pair("memos.memo", "enrollments.id", "not_measured",
            "not measured: no declared foreign key or name says what memos.memo identifies", None, "enrollments.id"),
      _pair("notes.memo", "memos.other", "not_measured",
            "not measured: no declared foreign key or name says what notes.memo and memos.other identify", None,
            None)]),
    ("SELECT COUNT(*) FROM students", False, "no equi-join column pairs", []),
])
def test_join_key_meaning_words_and_links(league, sql, fired, detail, pairs, snapshot):
    # ``detail`` stays in the parameters only for the test ids (the snapshot names); the wording is the snapshot's.
    check = run_check(league, "join_key_meaning", sql)
    assert (check.fired, check.kind, check.evidence) == (fired, "veto", {"pairs": pairs})
    # A fired detail gives each wrong pair's reason and the links it should follow, as the evidence has them.
    for pair in pairs:
        if pair["verdict"] == "different_entities":
            assert pair["reason"] in check.detail and all(link in check.detail for link in pair["should_take"])
    assert check.detail == snapshot


def test_join_key_meaning_not_measured_without_a_parse(league, snapshot):
    check = run_check(league, "join_key_meaning", "SELEC 1")
    assert (check.name, check.kind, check.fired, check.evidence) == ("join_key_meaning", "veto", False, {})
    assert check.detail.startswith("not measured") and check.detail == snapshot


@pytest.mark.parametrize("tables, should_take", [(500, [_THROUGH]), (501, [])])
def test_join_key_meaning_searches_a_path_up_to_500_tables(tmp_path, tables, should_take):
    import sqlite3

    path = tmp_path / "wide.sqlite"
    con = sqlite3.connect(path)
    con.executescript(_SCHOOL)
    for i in range(tables - 3):
        con.execute(f"CREATE TABLE filler{i:03d} (v INTEGER)")
    con.commit()
    con.close()
    check = run_check(path, "join_key_meaning", _STUDENTS_COURSES)
    assert check.fired and check.evidence["pairs"][0]["should_take"] == should_take


# ---------------------------------------------------------------------------------------
# stand_in_value: every column whose code rows could not be counted is named
# ---------------------------------------------------------------------------------------
def test_stand_in_names_every_output_it_could_not_measure(tmp_path, snapshot):
    rows = [(i, -1 if i < 5 else 30, -1 if i % 100 == 7 else 1000 + i) for i in range(1000)]
    db = make_db(tmp_path / "people.sqlite", {"people": ("id INTEGER PRIMARY KEY, age INTEGER, income INTEGER", rows)})
    check = run_check(db, "stand_in_value",
                      "WITH t AS (SELECT AVG(age) AS a, AVG(income) AS b FROM people) SELECT a, b FROM t")
    assert (check.fired, check.terms, check.evidence) == (False, {}, {"carriers": 2, "paper_grounded": 1.0, "paper_fired": False})
    assert check.detail.startswith("not measured") and "'a', 'b'" in check.detail  # both outputs named
    assert check.detail == snapshot(name="cte")
    # An aggregate the probe cannot rewrite (a UNION): named too.
    union = run_check(db, "stand_in_value", "SELECT AVG(age) FROM people UNION SELECT 1")
    assert (union.fired, union.terms, union.evidence) == (False, {}, {"carriers": 1, "paper_grounded": 1.0, "paper_fired": False})
    assert union.detail.startswith("not measured") and "'AVG(age)'" in union.detail
    assert union.detail == snapshot(name="union")


@pytest.mark.parametrize("question, fired", [
    ("How many orders per red green gold customer?", False),  # gold, the third value tried, explains the drop
    ("How many orders per red green pink gold customer?", True),  # gold would be the fourth: not tried
])
def test_join_drop_tries_at_most_three_named_values(tmp_path, question, fired, snapshot):
    rows = [(i, "red" if i < 50 else "blue", "green" if i < 60 else "pink", "gold" if i < 70 else "grey")
            for i in range(100)]
    db = make_db(tmp_path / "scopes.sqlite", {
        "customers": ("id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT", rows),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER", [(i, i) for i in range(70)])})
    check = run_check(db, "join_drop", f"SELECT COUNT(*) {DROP}", question=question)
    assert check.fired is fired
    assert ("'gold'" in check.detail) is not fired  # the third value tried explains the drop; a fourth is not tried
    assert check.detail == snapshot

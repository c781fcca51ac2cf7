"""The probe (issue 28, item 1): the one path from the checks and the choice detectors to the
engine, with one time limit and one deterministic budget. On real SQLite files built here."""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

import pytest
from sqlglot import exp

import vouchsql
from vouchsql.answer import Candidate
from vouchsql.checks.base import CHECK_BUDGET, CheckContext
from vouchsql.checks.null_comparison import NullComparison
from vouchsql.errors import ProbeSkipped, VouchError
from vouchsql.probe import MIN_BUDGET_ROWS, Budget, Probe
from vouchsql.settings import load_config
from vouchsql.sql.inspect import inspect_sql

SRC = Path(__file__).resolve().parents[1] / "src" / "vouchsql"

# A check or a detector reads nothing from ``ctx.db`` itself (the dialect, the engine, the
# settings and table names come from the probe too); the database is handed only to the probe.
ALLOWED_DB_ATTRIBUTES: set[str] = set()
ALLOWED_DB_PASSES = {("checks/base.py", "Probe"), ("choices/base.py", "Probe")}
ENGINE_METHODS = {"query", "execute", "_run", "profile_for"}  # of a Database
ENGINE_FUNCTIONS = {"key_overlap", "value_index", "connect"}  # that take one


def engine_paths(name: str, source: str) -> list[str]:
    """Every way ``source`` (a module of checks/ or choices/) reaches the engine but the probe."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in (ENGINE_METHODS if isinstance(func, ast.Attribute) else ENGINE_FUNCTIONS):
                found.append(f"{name}:{node.lineno}: calls {called}()")
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if ast.unparse(arg) in ("ctx.db", "self.db") and (name, called) not in ALLOWED_DB_PASSES:
                    found.append(f"{name}:{node.lineno}: hands the database to {called}()")
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) in ("ctx.db", "self.db"):
            if node.attr not in ALLOWED_DB_ATTRIBUTES:
                found.append(f"{name}:{node.lineno}: reads {ast.unparse(node)}")
    return found


def test_checks_and_detectors_reach_the_engine_only_through_the_probe():
    found = []
    for folder in ("checks", "choices"):
        for path in sorted((SRC / folder).glob("*.py")):
            found += engine_paths(f"{folder}/{path.name}", path.read_text(encoding="utf-8"))
    assert found == []


def test_the_source_test_finds_each_other_path():
    snippet = ("def f(ctx):\n    ctx.db.query('SELECT 1')\n    key_overlap(ctx.db, 1)\n"
               "    ctx.db._profile_store\n    value_index(ctx.db, None)\n    ctx.probe.rows(x)\n"
               "    _run(ctx)\n    self.db._run('x', 1, 1)\n")
    found = engine_paths("checks/x.py", snippet)
    assert sorted(re.sub(r"^\S+:\d+: ", "", f) for f in found) == [
        "calls _run()", "calls key_overlap()", "calls query()", "calls value_index()",
        "hands the database to key_overlap()", "hands the database to value_index()",
        "reads ctx.db._profile_store", "reads ctx.db.query", "reads self.db._run"]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """a: 100 rows; b: 10 rows, one of them NULL."""
    path = tmp_path_factory.mktemp("probe") / "small.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE a (id INTEGER PRIMARY KEY, v INTEGER)")
    con.executemany("INSERT INTO a VALUES (?, ?)", [(i, i % 7) for i in range(100)])
    con.execute("CREATE TABLE b (c INTEGER)")
    con.executemany("INSERT INTO b VALUES (?)", [(i,) for i in range(9)] + [(None,)])
    con.commit()
    con.close()
    return path


def _count(sql_from: str) -> exp.Select:
    return exp.select("COUNT(*)").from_(sql_from)


def test_the_budget_counts_queries_and_stops_starting_them(small):
    with vouchsql.connect(small) as db:
        probe = Probe(db, db.profile(), budget=Budget(queries=2))
        assert probe.rows(_count("a")) == [(100,)]
        assert probe.count(_count("b")) == 10
        assert (probe.queries, probe.skipped, probe.over_budget) == (2, 0, True)
        with pytest.raises(ProbeSkipped) as info:
            probe.rows(exp.select("MAX(1)").from_("a"))
        assert info.value.kind == "not_measured" and "2 queries" in info.value.message
        assert probe.count(exp.select("MIN(1)").from_("a")) is None
        refused = probe.run(exp.select("*").from_("a"))
        assert refused.error is not None and refused.error.kind == "not_measured" and refused.rows == []
        assert (probe.queries, probe.skipped) == (2, 3)
        # a fact already read for this answer is read again without a query or a charge
        assert probe.rows(_count("a")) == [(100,)] and probe.count(_count("b")) == 10
        assert (probe.queries, probe.skipped) == (2, 3)


def test_the_budget_counts_rows_read_from_the_profile(small):
    with vouchsql.connect(small) as db:
        profile = db.profile()
        probe = Probe(db, profile, budget=Budget(rows=250))
        twice = exp.select("COUNT(*)").from_("a").join("a AS a2", on="a.id = a2.id")
        assert probe.rows(twice) == [(100,)]  # 200 rows read
        assert probe.spent_rows == 200
        with pytest.raises(ProbeSkipped):
            probe.rows(twice.where("a.id > 0"))  # 400 > 250: not started
        assert probe.rows(_count("b")) == [(10,)]  # 210
        assert (probe.queries, probe.spent_rows, probe.skipped) == (2, 210, 1)
        # Without a row budget: 8 × what the shown query reads, at least a million.
        assert Probe(db, profile, shown=twice).budget_rows == MIN_BUDGET_ROWS


def test_every_probe_runs_under_the_query_time_limit(small, tmp_path):
    """One limit: ``timeout``. The profile's (120 s here) was the limit of some checks' probes."""
    config = load_config(env={}, cache_dir=str(tmp_path), timeout=0.3, profile_timeout=120)
    endless = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
               "SELECT COUNT(*) FROM (SELECT i FROM n LIMIT 1000000000)")
    with vouchsql.connect(small, config=config) as db:
        probe = Probe(db, db.profile())
        with pytest.raises(VouchError) as info:
            probe.rows(db.parse(endless))
        assert info.value.kind in ("timeout", "cancelled")


def test_facts_without_a_database_and_recorded_from_one(small):
    with vouchsql.connect(small) as db:
        live = Probe(db, db.profile(), record=True)
        assert live.count(_count("b").where("c IS NULL"), "nulls") == 1
        got = live.result(exp.select("c").from_("b").where("c < 2").order_by("c"), "low")
        assert got is not None and got.rows == [[0], [1]]
        assert {k: live.recorded[k] for k in ("nulls", "low", "dialect", "engine")} == {
            "nulls": 1, "low": [[0], [1]], "dialect": "sqlite", "engine": "sqlite"}
        assert live.recorded["rows:SELECT COUNT(*) FROM b WHERE c IS NULL"] == [[1]]
        replay = Probe(None, db.profile(), dialect="duckdb", facts=live.recorded)
        assert replay.dialect == "duckdb"
        assert replay.count(_count("b"), "nulls") == 1
        assert replay.result(exp.select("c").from_("b"), "low").rows == [[0], [1]]
        assert replay.count(_count("b"), "unknown") is None and replay.queries == 0
        with pytest.raises(ProbeSkipped):
            replay.rows(_count("b"), fact="unknown")
        assert replay.run(exp.select("1")).error.kind == "not_measured"


def _context(db, sql: str, budget: Budget = CHECK_BUDGET) -> CheckContext:
    tree = db.parse(sql)
    profile = db.profile()
    shown = Candidate(sql=sql, result=db.execute(sql), cluster=0)
    return CheckContext(question="Which ids are not in b?", db=db, profile=profile, shown=shown, candidates=[shown],
                        tree=tree, inspection=inspect_sql(tree, profile, db.dialect), budget=budget)


def test_a_check_whose_probe_the_budget_cannot_cover_is_not_measured(small):
    sql = "SELECT id FROM a WHERE v NOT IN (SELECT c FROM b)"
    with vouchsql.connect(small) as db:
        ctx = _context(db, sql)
        fired = NullComparison().run(ctx)
        assert fired.fired and "returns NULL" in fired.detail
        assert ctx.probe.queries == 1
        spent = _context(db, sql, Budget(queries=0))
        skipped = NullComparison().run(spent)
        assert not skipped.fired and skipped.detail.startswith("not measured")
        assert (spent.probe.queries, spent.probe.skipped) == (0, 1)
        # The same input, the same budget: the same finding.
        assert NullComparison().run(_context(db, sql, Budget(queries=0))).model_dump() == skipped.model_dump()

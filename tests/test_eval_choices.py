"""``vouch eval choices``: the request-set harness end to end on a small file (exact counts),
the tie-aware matching, and the shipped request sets (they load, every SQL runs, A and B
differ, and the detectors meet the issue's targets on them)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from rich.console import Console

import vouchsql
from vouchsql import cli
from vouchsql.answer import Result
from vouchsql.choices import CHOICES
from vouchsql.errors import UserInputError
from vouchsql.evals.choices_eval import (DEFAULT_SETS, RECORDS, analyse, finish, load_choice_file, match_reference,
                                         replay, run_choices, tie_context)
from vouchsql.evals.cli import register_choices
from vouchsql.settings import load_config



@pytest.fixture
def config(tmp_path):
    return load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


PRICIEST_A = "SELECT name, price FROM products ORDER BY price DESC LIMIT 3"
PRICIEST_B = "SELECT name, price FROM products WHERE price >= (SELECT price FROM products ORDER BY price DESC LIMIT 1 OFFSET 2)"
LARGE_A = "SELECT COUNT(*) FROM orders WHERE total > 100"
LARGE_B = "SELECT COUNT(*) FROM orders WHERE total >= 100"


def _small_sets(demo_db: Path) -> list[dict]:
    db = str(demo_db)
    return [
        # found: LIMIT 3 cuts through the five products tied at the top price
        {"id": "found", "db": db, "type": "ties", "open": "What are the three most expensive products?",
         "specific_a": "List exactly three products from the top of the price list, picking any if prices tie.",
         "specific_b": "List every product priced at or above the third-highest price.",
         "sql_a": PRICIEST_A, "sql_b": PRICIEST_B},
        # missed: the open request says "all", which settles ties, so nothing is reported
        {"id": "missed", "db": db, "type": "ties", "open": "What are all of the three most expensive products?",
         "specific_a": "List exactly three products from the top of the price list, picking any if prices tie.",
         "specific_b": "List every product priced at or above the third-highest price.",
         "sql_a": PRICIEST_A, "sql_b": PRICIEST_B},
        # found, with a false alarm: specific_a repeats the open wording, which settles nothing
        {"id": "alarm", "db": db, "type": "strict_cutoff", "open": "Using 100 as the cutoff, how many orders are large?",
         "specific_a": "Using 100 as the cutoff, how many orders are large?",
         "specific_b": "How many orders total 100 or more?", "sql_a": LARGE_A, "sql_b": LARGE_B},
        # invalid: no order totals exactly 500, so A and B agree and the set tests nothing
        {"id": "invalid", "db": db, "type": "strict_cutoff", "open": "Using 500 as the cutoff, how many orders are large?",
         "specific_a": "How many orders total more than 500?", "specific_b": "How many orders total 500 or more?",
         "sql_a": "SELECT COUNT(*) FROM orders WHERE total > 500",
         "sql_b": "SELECT COUNT(*) FROM orders WHERE total >= 500"},
        # no difference, no alarm: one store clearly leads
        {"id": "nd-quiet", "db": db, "type": "ties", "open": "Which store has taken the most orders?",
         "sql_a": "SELECT s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
                  "GROUP BY s.store_id ORDER BY n DESC LIMIT 1", "no_difference": True},
        # marked no difference, but orders do sit on the boundary: a false alarm
        {"id": "nd-alarm", "db": db, "type": "strict_cutoff", "open": "Using 100 as the cutoff, how many orders are large?",
         "sql_a": LARGE_A, "no_difference": True},
    ]


def test_harness_end_to_end(tmp_path, demo_db, config):
    sets = _write(tmp_path / "sets.jsonl", _small_sets(demo_db))
    out = tmp_path / "run"
    records, manifest = run_choices(sets, config, out, command="vouch eval choices --sets sets.jsonl")
    metrics = finish(out, records, manifest)

    by_id = {r["id"]: r for r in records}
    assert set(by_id) == {"found", "missed", "alarm", "invalid", "nd-quiet", "nd-alarm"}
    assert by_id["found"]["open"]["found"] and by_id["found"]["open"]["found_by"] == ["ties"]
    assert by_id["found"]["specific_a"]["settling_words"] == "tie"
    assert not by_id["missed"]["open"]["found"] and by_id["missed"]["open"]["reported"] == []
    assert by_id["alarm"]["specific_a"]["false_alarm"] and not by_id["alarm"]["specific_b"]["false_alarm"]
    assert by_id["alarm"]["specific_b"]["settling_words"] == "or more"
    assert "tests nothing" in by_id["invalid"]["invalid"]
    assert not by_id["nd-quiet"]["open"]["false_alarm"]
    assert by_id["nd-alarm"]["open"]["false_alarm"]
    found_sql = next(c for c in by_id["found"]["open"]["reported"] if c["matches_b"])
    assert found_sql["type"] == "ties" and found_sql["rows"] == 5

    assert metrics["sets"] == 3 and metrics["no_difference"] == 2 and metrics["invalid"] == 1
    ties, cutoff, overall = metrics["per_type"]["ties"], metrics["per_type"]["strict_cutoff"], metrics["overall"]
    assert (ties["sets"], ties["found"]["k"], ties["found"]["n"]) == (2, 1, 2)
    assert (ties["specific_false_alarms"]["k"], ties["specific_false_alarms"]["n"]) == (0, 4)
    assert (ties["no_difference_false_alarms"]["k"], ties["no_difference_false_alarms"]["n"]) == (0, 1)
    assert (cutoff["sets"], cutoff["found"]["k"]) == (1, 1)
    assert (cutoff["specific_false_alarms"]["k"], cutoff["specific_false_alarms"]["n"]) == (1, 2)
    assert (cutoff["no_difference_false_alarms"]["k"], cutoff["no_difference_false_alarms"]["n"]) == (1, 1)
    assert (overall["found"]["k"], overall["found"]["n"]) == (2, 3)
    assert (overall["false_alarms"]["k"], overall["false_alarms"]["n"]) == (2, 8)
    lo, hi = overall["found"]["ci"]
    assert 0 < lo < 2 / 3 < hi < 1  # a Wilson interval around 2/3
    assert metrics["cost"]["model_calls"] == 0 and metrics["cost"]["requests"] == 3 * 3 + 2
    assert not metrics["targets"]["found_met"] and not metrics["targets"]["zero_false_alarms_met"]

    for name in ("manifest.json", RECORDS, "metrics.json", "report.md", "report.html"):
        assert (out / name).is_file(), name
    manifest_json = json.loads((out / "manifest.json").read_text())
    assert manifest_json["harness"] == "choices" and "sets" in manifest_json["datasets"]
    report = (out / "report.md").read_text()
    assert "Per choice type" in report and "`missed`" in report and "`nd-alarm`" in report
    assert "<html" in (out / "report.html").read_text()

    # Rerunning into the same folder does nothing new; a replay recomputes the same numbers.
    again, manifest2 = run_choices(sets, config, out)
    assert [r["key"] for r in again] == [r["key"] for r in records]
    assert len((out / RECORDS).read_text().splitlines()) == len(records)
    assert replay(out, tmp_path / "replayed") == metrics


def test_cli_command(tmp_path, demo_db, config):
    sets = _write(tmp_path / "sets.jsonl", _small_sets(demo_db)[:1])
    parser = argparse.ArgumentParser(prog="vouch")
    evals = parser.add_subparsers(dest="command").add_parser("eval").add_subparsers(dest="eval_command")
    register_choices(evals, cli._settings_parent())
    argv = ["eval", "choices", "--sets", str(sets), "--out", str(tmp_path / "out"),
            "--cache-dir", str(tmp_path / "cache")]
    args = parser.parse_args(argv)
    args.argv = argv
    console = Console(width=200, record=True)
    assert args.handler(args, cli._config_from(args), console) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["overall"]["found"]["k"] == 1
    assert "report.html" in console.export_text()
    args = parser.parse_args(["eval", "choices", "--replay", str(tmp_path / "out")])
    args.argv = []
    assert args.handler(args, cli._config_from(args), console) == 0
    assert json.loads((tmp_path / "out" / "replay" / "replay.json").read_text())["identical"]


@pytest.mark.parametrize("args, needle", [
    (["--budget-rows", "0"], "--budget-rows must be a whole number of rows > 0"),
    (["--budget-rows", "-5"], "--budget-rows must be a whole number of rows > 0"),
    (["--types", ","], "--types names no choice type"),
])
def test_cli_bad_options_are_exit_2(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code = cli.main(["eval", "choices", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")] + args)
    assert code == 2 and needle in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_loader_rejects_bad_lines(tmp_path):
    with pytest.raises(UserInputError, match="sql_a"):
        load_choice_file(_write(tmp_path / "a.jsonl", [{"id": "x", "db": "demo", "type": "ties", "open": "q",
                                                        "no_difference": True}]))
    row = {"id": "x", "db": "demo", "type": "ties", "open": "q", "specific_a": "a", "specific_b": "b",
           "sql_a": "SELECT 1", "sql_b": "SELECT 2"}
    with pytest.raises(UserInputError, match="twice"):
        load_choice_file(_write(tmp_path / "b.jsonl", [row, {**row, "sql_b": None, "no_difference": True}]))
    with pytest.raises(UserInputError, match="request_b"):
        load_choice_file(_write(tmp_path / "c.jsonl", [{k: v for k, v in row.items() if k != "specific_b"}]))


def test_rows_tied_at_the_cutoff_are_interchangeable(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path / "cache")) as db:
        ref_sql = "SELECT name, price FROM products ORDER BY price DESC LIMIT 2"
        ref = db.execute(ref_sql)
        ties = tie_context(db, ref_sql, ref)
        assert ties is not None and ties.k == 2 and sum(ties.tied.values()) == 5 and not ties.above
        tied = db.execute("SELECT name, price FROM products WHERE price = 1299 ORDER BY name DESC").rows
        other = Result(columns=["price", "name"], rows=[[r[1], r[0]] for r in tied[:2]], row_count=2)
        if {tuple(r) for r in other.rows} == {(r[1], r[0]) for r in ref.rows}:
            other = Result(columns=["price", "name"], rows=[[r[1], r[0]] for r in tied[-2:]], row_count=2)
        assert match_reference(other, ref) is None  # other tied rows: relaxed matching alone says no
        assert match_reference(other, ref, ties) == "ties"
        below = db.execute("SELECT price, name FROM products WHERE price < 1299 ORDER BY price DESC LIMIT 1").rows
        mixed = Result(columns=["price", "name"], rows=[other.rows[0], below[0]], row_count=2)
        assert match_reference(mixed, ref, ties) is None  # a row below the cut-off is not tied
        assert match_reference(ref, ref, ties) == "exact"
        # No LIMIT, or nothing beyond the cut-off ties: no tie context.
        assert tie_context(db, "SELECT name FROM products ORDER BY price DESC", ref) is None
        top = "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"
        assert tie_context(db, top, db.execute(top)) is None


# ---------------------------------------------------------------------------------------
# The SQL forms the detectors learned for the request sets (see the reply / module docs):
# each reported with an alternative that runs, or (None) nothing reported.
# ---------------------------------------------------------------------------------------
FORMS = [
    ("ties", "Which product is the most expensive in each category?",
     "SELECT category_id, name FROM (SELECT category_id, name, ROW_NUMBER() OVER (PARTITION BY category_id "
     "ORDER BY price DESC) AS rn FROM products) WHERE rn = 1",
     "SELECT category_id, name FROM (SELECT category_id, name, RANK() OVER (PARTITION BY category_id "
     "ORDER BY price DESC) AS rn FROM products) WHERE rn = 1"),
    (None, "Number the products by price.",
     "SELECT name, ROW_NUMBER() OVER (ORDER BY price DESC) AS rn FROM products", None),
    ("ties", "Which product is the most expensive?",
     "SELECT name FROM products WHERE product_id = (SELECT product_id FROM products ORDER BY price DESC LIMIT 1)",
     "SELECT name FROM products WHERE price = (SELECT MAX(price) FROM products)"),
    ("negation", "Which categories don't have products priced above 100?",
     "SELECT c.name FROM categories c LEFT JOIN products p ON p.category_id = c.category_id AND p.price > 100 "
     "WHERE p.product_id IS NULL",
     "SELECT c.name FROM categories c WHERE c.category_id IN (SELECT category_id FROM products WHERE price <= 100)"),
    (None, "Which categories have no products?",
     "SELECT c.name FROM categories c LEFT JOIN products p ON p.category_id = c.category_id WHERE p.product_id IS NULL",
     None),
    ("negation", "Which customers did not order product 5?",
     "SELECT c.customer_id FROM customers c WHERE c.customer_id NOT IN (SELECT o.customer_id FROM orders o "
     "JOIN order_items oi ON oi.order_id = o.order_id WHERE oi.product_id = 5)",
     "SELECT DISTINCT o.customer_id FROM orders o JOIN order_items oi ON oi.order_id = o.order_id "
     "WHERE oi.product_id <> 5"),
    ("negation", "Which customers did not order in Springfield?",
     "SELECT DISTINCT c.customer_id FROM customers c JOIN orders o ON o.customer_id = c.customer_id "
     "JOIN stores s ON s.store_id = o.store_id WHERE s.city <> 'Springfield'",
     "SELECT DISTINCT o.customer_id FROM orders o WHERE o.customer_id NOT IN (SELECT o2.customer_id FROM orders o2 "
     "JOIN stores s ON s.store_id = o2.store_id WHERE s.city = 'Springfield')"),
    (None, "Which stores are not in the West region?",
     "SELECT DISTINCT o.store_id FROM orders o JOIN stores s ON s.store_id = o.store_id WHERE s.region <> 'West'", None),
    ("population_scope", "How many orders has each store taken?",
     "SELECT s.name, COUNT(*) FROM orders o JOIN stores s ON s.store_id = o.store_id "
     "JOIN customers c ON c.customer_id = o.customer_id GROUP BY s.store_id",
     "SELECT s.name, COUNT(o.order_id) FROM stores s LEFT JOIN orders o ON o.store_id = s.store_id GROUP BY s.store_id"),
    ("population_scope", "How many orders has each store taken?",
     "SELECT s.name, COUNT(*) FROM stores s, orders o WHERE o.store_id = s.store_id GROUP BY s.store_id",
     "SELECT s.name, COUNT(o.order_id) FROM stores s LEFT JOIN orders o ON o.store_id = s.store_id GROUP BY s.store_id"),
    ("counting_unit", "How many tagged products does each category have?",
     "SELECT c.name, COUNT(*) FROM categories c JOIN products p ON p.category_id = c.category_id "
     "JOIN product_tags pt ON pt.product_id = p.product_id GROUP BY c.name",
     "SELECT c.name, COUNT(DISTINCT pt.product_id) FROM categories c JOIN products p ON p.category_id = c.category_id "
     "JOIN product_tags pt ON pt.product_id = p.product_id GROUP BY c.name"),
]


@pytest.mark.parametrize("expect, question, sql, expected_alt", FORMS, ids=[f"{f[0]}: {f[1]}" for f in FORMS])
def test_detector_forms(demo_db, tmp_path, expect, question, sql, expected_alt):
    from vouchsql.choices import detect_choices

    with vouchsql.connect(demo_db, cache_dir=str(tmp_path / "cache")) as db:
        shown = db.execute(sql)
        assert shown.ok, shown.error
        choices = detect_choices(question, db, sql, shown)
        if expect is None:
            assert choices == []
            return
        assert [c.type for c in choices].count(expect) == 1, [c.type for c in choices]
        choice = next(c for c in choices if c.type == expect)
        again = db.execute(choice.sql)
        assert again.ok and choice.differs
        assert match_reference(again, db.execute(expected_alt)) == "exact", choice.sql


# ---------------------------------------------------------------------------------------
# The shipped request sets
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    return load_choice_file(DEFAULT_SETS)


def test_shipped_file_loads_and_covers_every_type(shipped):
    sets, cases = shipped
    assert len(sets) >= 40 and len(cases) >= 20
    implemented = {d.type for d in CHOICES}
    assert {s.choice_type for s in sets} == implemented
    assert {c.choice_type for c in cases} <= implemented
    assert {s.db for s in sets} | {c.db for c in cases} == {"demo", "chinook", "sakila", "northwind"}
    for s in sets:
        assert len({s.open_request, s.request_a, s.request_b}) == 3, s.id


def test_shipped_sql_runs_and_a_differs_from_b(shipped, databases):
    sets, cases = shipped
    for s in sets:
        db = databases(s.db)
        a, b = db.execute(s.sql_a), db.execute(s.sql_b)
        assert a.ok, (s.id, a.error)
        assert b.ok, (s.id, b.error)
        assert not a.truncated and not b.truncated, s.id
        assert match_reference(a, b, tie_context(db, s.sql_b, b)) is None, f"{s.id}: A and B give the same answer"
    for c in cases:
        r = databases(c.db).execute(c.sql_a)
        assert r.ok, (c.id, r.error)


def test_shipped_sets_meet_the_targets(tmp_path, config, shipped, databases, datasets_dir, cache_dir):
    """The issue's targets on the shipped sets: the other interpretation found for ≥ 90% of
    open sets, no false alarm on specific requests or no-difference cases."""
    for name in ("chinook", "sakila", "northwind"):
        databases(name)  # skips when a shared database is absent; profiles it into cache_dir
    config = config.with_overrides(cache_dir=cache_dir)
    records, manifest = run_choices(DEFAULT_SETS, config, tmp_path / "run", datasets=datasets_dir)
    metrics = analyse(records)
    assert metrics["skipped"] == 0 and metrics["invalid"] == 0
    missed = [r["id"] for r in records if r["kind"] == "set" and not r["open"]["found"]]
    alarms = [r["id"] for r in records if r["kind"] == "set" and (r["specific_a"]["false_alarm"] or r["specific_b"]["false_alarm"])]
    alarms += [r["id"] for r in records if r["kind"] == "no_difference" and r["open"]["false_alarm"]]
    assert metrics["overall"]["found"]["rate"] >= 0.90, missed
    assert alarms == []

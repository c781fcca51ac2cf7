"""``vouch eval planted`` on a small case file over the demo database: the four deterministic
plants (IES App. B) are withheld under the designed rule in both sampling modes and caught by
their own check every time; the unplanted controls pass; each plant edits what it should."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlglot import exp, parse_one

from vouchsql.cli import main
from vouchsql.errors import UserInputError
from vouchsql.evals.planted import MODES, run_planted, summarise
from vouchsql.evals.plants import DETERMINISTIC, PLANTS
from vouchsql.settings import load_config

OWN_CHECK = {"fake_table": "missing_table", "bad_join": "bad_join", "stand_in": "stand_in_value",
             "wrong_number": "uncited_number"}

TOTAL_2024 = ("SELECT ROUND(SUM(total), 2) AS total_value FROM orders "
              "WHERE order_date >= '2024-01-01' AND order_date < '2025-01-01'")
AVG_AGE = "SELECT ROUND(AVG(age), 1) AS avg_age FROM customers WHERE age >= 0"
PER_STORE = ("SELECT s.name, COUNT(*) AS n_orders FROM orders o JOIN stores s ON s.store_id = o.store_id "
             "GROUP BY s.store_id, s.name ORDER BY n_orders DESC")
TOP_SPENDERS = ("SELECT c.first_name, c.last_name, SUM(o.total) AS spent FROM orders o "
                "JOIN customers c ON c.customer_id = o.customer_id WHERE o.status = 'delivered' "
                "GROUP BY c.customer_id, c.first_name, c.last_name ORDER BY spent DESC LIMIT 5")
CATEGORY_REVENUE = ("SELECT cat.name AS category, SUM(oi.line_total) AS revenue FROM order_items oi "
                    "JOIN products p ON p.product_id = oi.product_id "
                    "JOIN categories cat ON cat.category_id = p.category_id "
                    "GROUP BY cat.category_id, cat.name ORDER BY revenue DESC")
JOIN_CASES = {"stores", "spenders", "categories"}


def _cases(demo_db: Path, db_name: str | None = None) -> list[dict]:
    conn = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    try:
        total = conn.execute(TOTAL_2024).fetchone()[0]
        age = conn.execute(AVG_AGE).fetchone()[0]
    finally:
        conn.close()
    db = db_name or str(demo_db)
    return [
        {"id": "total", "db": db, "question": "What was the total value of orders placed in 2024?",
         "sql": TOTAL_2024, "answer_text": f"Orders placed in 2024 were worth {total:,.2f} in total."},
        {"id": "age", "db": db, "question": "What is the average age of customers whose age is known?",
         "sql": AVG_AGE, "answer_text": f"Customers with a known age average {age:.1f} years."},
        # No answer_text: the harness writes one from the result (row count and first row).
        {"id": "stores", "db": db, "question": "How many orders has each store taken?", "sql": PER_STORE},
        {"id": "spenders", "db": db, "question": "Which five customers spent the most on delivered orders?",
         "sql": TOP_SPENDERS},
        {"id": "categories", "db": db, "question": "What is the revenue per product category?",
         "sql": CATEGORY_REVENUE},
    ]


def _write(path: Path, cases: list[dict]) -> Path:
    path.write_text("# correct cases for the planted-error harness\n"
                    + "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def planted(demo_db, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("planted")
    case_file = _write(tmp / "cases.jsonl", _cases(demo_db))
    config = load_config(env={}, cwd=tmp, cache_dir=str(tmp / "cache"))
    records, skipped = run_planted(case_file, config, k=5, kinds=list(PLANTS),
                                   rules=["agreement_first", "designed"])
    return records, skipped, summarise(records)


def _of(records, **where):
    return [r for r in records if all(getattr(r, k) == v for k, v in where.items())]


# ---------------------------------------------------------------------------------------
# The library
# ---------------------------------------------------------------------------------------
def test_every_case_is_used(planted):
    records, skipped, _ = planted
    assert skipped == []
    assert {r.id for r in _of(records, kind="control")} == {"total", "age", "stores", "spenders", "categories"}


def test_controls_pass_under_agreement_first(planted):
    records, _, summary = planted
    controls = _of(records, kind="control", rule="agreement_first")
    assert len(controls) == 5
    assert all(r.gate == "pass" and r.score == 1.0 and r.fired == [] for r in controls), controls
    row = summary["rules"]["agreement_first"]["control"]["consistent"]
    assert (row["n"], row["withheld"], row["not_pass"]) == (5, 0, 0)


@pytest.mark.parametrize("kind", DETERMINISTIC)
@pytest.mark.parametrize("mode", MODES)
def test_deterministic_plants_are_withheld_under_designed(planted, kind, mode):
    records, _, summary = planted
    rows = _of(records, kind=kind, mode=mode, rule="designed")
    assert rows, f"no {kind} plant was made"
    assert all(r.effective for r in rows)
    assert all(r.gate == "abstain" for r in rows), [(r.id, r.gate, r.score, r.fired) for r in rows]
    assert all(r.own_check == OWN_CHECK[kind] and r.own_fired for r in rows)
    row = summary["rules"]["designed"][kind][mode]
    assert row["n"] == len(rows)
    assert row["withheld"] == row["not_pass"] == row["n"]
    assert row["own_check"] == row["own_measured"] == row["n"], "own check fires 100%"


@pytest.mark.parametrize("kind", DETERMINISTIC)
def test_deterministic_plants_never_pass_under_agreement_first(planted, kind):
    records, _, summary = planted
    for mode in MODES:
        row = summary["rules"]["agreement_first"][kind][mode]
        assert row["not_pass"] == row["n"] > 0
        assert row["own_check"] == row["n"]
    # A veto withholds; a wrong number is a cap, so it is flagged, not withheld.
    expected = "flag" if kind == "wrong_number" else "abstain"
    assert {r.gate for r in _of(records, kind=kind, rule="agreement_first")} == {expected}


def test_bad_join_is_planted_exactly_where_the_case_has_a_join(planted):
    records, _, _ = planted
    assert {r.id for r in _of(records, kind="bad_join")} == JOIN_CASES
    assert {r.id for r in _of(records, kind="fake_table")} == {"total", "age"} | JOIN_CASES


def test_stand_in_is_planted_where_a_numeric_output_has_a_source_column(planted):
    records, _, _ = planted
    # PER_STORE's only number is COUNT(*), which has no column to record a stand-in against.
    assert {r.id for r in _of(records, kind="stand_in")} == {"total", "age", "spenders", "categories"}


def _tables(sql: str) -> list[str]:
    return sorted(t.name for t in parse_one(sql, read="sqlite").find_all(exp.Table))


def _original(records, cid: str):
    return _of(records, id=cid, kind="control", rule="designed")[0]


def test_fake_table_renames_one_table(planted):
    records, _, _ = planted
    for r in _of(records, kind="fake_table", mode="consistent", rule="designed"):
        before, after = _tables(_original(records, r.id).sql), _tables(r.sql)
        gone = set(before) - set(after)
        new = set(after) - set(before)
        assert len(gone) == 1 and new == {f"{gone.pop()}_archive"}, (before, after)
        assert len(after) == len(before)
        assert "renamed" in r.note


def _join_pairs(sql: str) -> set[frozenset]:
    pairs = set()
    for eq in parse_one(sql, read="sqlite").find_all(exp.EQ):
        if isinstance(eq.left, exp.Column) and isinstance(eq.right, exp.Column):
            pairs.add(frozenset({eq.left.name.lower(), eq.right.name.lower()}))
    return pairs


def test_bad_join_rewires_one_join_column(planted):
    records, _, _ = planted
    for r in _of(records, kind="bad_join", mode="consistent", rule="designed"):
        original = _original(records, r.id).sql
        assert _tables(r.sql) == _tables(original), "the same tables, joined on another column"
        before, after = _join_pairs(original), _join_pairs(r.sql)
        assert len(before - after) == 1 and len(after - before) == 1, (before, after)
        assert "rewired" in r.note and "ρ = " in r.note


def test_stand_in_writes_minus_one_into_a_result_column(planted):
    records, _, _ = planted
    for r in _of(records, kind="stand_in", mode="consistent", rule="designed"):
        tree = parse_one(r.sql, read="sqlite")
        cases = list(tree.find_all(exp.Case))
        assert cases, r.sql
        assert any(i.args["true"].sql() == "-1" for c in cases for i in c.args["ifs"]), r.sql
        assert not list(parse_one(_original(records, r.id).sql, read="sqlite").find_all(exp.Case))
        assert "written as -1" in r.note


def test_wrong_number_changes_the_text_not_the_sql(planted):
    from vouchsql.checks.uncited_number import numbers_in

    records, _, _ = planted
    rows = _of(records, kind="wrong_number", mode="consistent", rule="designed")
    assert {r.id for r in rows} == {"total", "age", "stores", "spenders", "categories"}
    for r in rows:
        original = _original(records, r.id)
        assert parse_one(r.sql, read="sqlite") == parse_one(original.sql, read="sqlite")
        before, after = numbers_in(original.answer_text), numbers_in(r.answer_text)
        assert len(before) == len(after)
        changed = [(a.text, b.text) for a, b in zip(before, after) if a.text != b.text]
        assert len(changed) == 1, (original.answer_text, r.answer_text)
        assert r.fired == ["uncited_number"]


def test_unknown_plant_kind_is_refused(demo_db, tmp_path):
    case_file = _write(tmp_path / "cases.jsonl", _cases(demo_db)[:1])
    with pytest.raises(UserInputError, match="unknown plant kind"):
        run_planted(case_file, load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path)), kinds=["typo"])


# ---------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------
def test_cli_writes_outputs_and_matches_the_library(demo_db, tmp_path, capsys, clean_env, planted):
    # "demo" by name: the harness builds the demo database in the cache folder.
    case_file = _write(tmp_path / "cases.jsonl", _cases(demo_db, db_name="demo"))
    out_dir = tmp_path / "out"
    code = main(["eval", "planted", "--cases", str(case_file), "--out", str(out_dir),
                 "--cache-dir", str(tmp_path / "cache"), "--k", "5"])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in ("planted.jsonl", "metrics.json", "report.md"):
        assert (out_dir / name).is_file(), name
    metrics = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    assert metrics == json.loads(json.dumps(planted[2])), "the command reports what the library measures"
    for kind in DETERMINISTIC:
        for mode in MODES:
            row = metrics["rules"]["designed"][kind][mode]
            assert row["withheld"] == row["n"] == row["own_check"] > 0
    assert all(row["not_pass"] == 0 for row in metrics["rules"]["agreement_first"]["control"].values())

    lines = (out_dir / "planted.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(planted[0])
    assert {r["kind"] for r in records} >= {"control", *DETERMINISTIC}
    report = (out_dir / "report.md").read_text(encoding="utf-8")
    assert "## Rule `designed`" in report and "| fake_table | consistent |" in report
    assert "Wrote" in out


def test_cli_kinds_and_rules_options(demo_db, tmp_path, capsys, clean_env):
    case_file = _write(tmp_path / "cases.jsonl", _cases(demo_db)[:2])
    out_dir = tmp_path / "out"
    code = main(["eval", "planted", "--cases", str(case_file), "--out", str(out_dir), "--k", "3",
                 "--cache-dir", str(tmp_path / "cache"), "--kinds", "fake_table,wrong_number",
                 "--rules", "designed"])
    capsys.readouterr()
    assert code == 0
    metrics = json.loads((out_dir / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics["rules"]) == {"designed"}
    assert set(metrics["rules"]["designed"]) == {"control", "fake_table", "wrong_number"}


@pytest.mark.parametrize("args, needle", [
    (["--k", "0"], "--k"),
    (["--kinds", "typo"], "typo"),
    (["--cases", "nowhere.jsonl"], "nowhere.jsonl"),
])
def test_cli_bad_input_is_exit_2(demo_db, tmp_path, capsys, clean_env, args, needle):
    case_file = _write(tmp_path / "cases.jsonl", _cases(demo_db)[:1])
    argv = ["eval", "planted", "--cases", str(case_file), "--cache-dir", str(tmp_path / "cache")] + args
    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 2
    assert needle in err

"""Dataset loaders (Spider/BIRD layout, PremiseSQL-style JSONL, choice request sets) and the
shared report module (Markdown and one self-contained HTML file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vouchsql.errors import UserInputError
from vouchsql.evals import datasets as D
from vouchsql.evals import report as R


def _spider(root: Path) -> Path:
    (root / "database" / "concert_singer").mkdir(parents=True)
    (root / "database" / "concert_singer" / "concert_singer.sqlite").write_bytes(b"")
    (root / "dev.json").write_text(json.dumps([
        {"db_id": "concert_singer", "question": "How many singers do we have?", "query": "SELECT count(*) FROM singer",
         "query_toks": ["SELECT"], "sql": {}},
        {"db_id": "pets_1", "question": "How many pets?", "query": "SELECT count(*) FROM pets"},
    ]), encoding="utf-8")
    (root / "tables.json").write_text(json.dumps([{
        "db_id": "concert_singer",
        "table_names_original": ["stadium", "singer"], "table_names": ["stadium", "singer"],
        "column_names_original": [[-1, "*"], [0, "Stadium_ID"], [0, "Name"], [1, "Singer_ID"], [1, "Stadium_ID"]],
        "column_names": [[-1, "*"], [0, "stadium id"], [0, "name"], [1, "singer id"], [1, "stadium id"]],
        "column_types": ["text", "number", "text", "number", "number"],
        "primary_keys": [1, 3], "foreign_keys": [[4, 1]],
    }]), encoding="utf-8")
    return root


def test_spider_layout(tmp_path):
    root = _spider(tmp_path / "spider")
    qs = D.load_spider_bird(root)
    assert [q.id for q in qs] == ["0", "1"]
    assert qs[0].gold_sql == "SELECT count(*) FROM singer" and qs[0].hint is None
    assert qs[0].db_path == root / "database" / "concert_singer" / "concert_singer.sqlite"
    assert qs[1].db_path == root / "database" / "pets_1" / "pets_1.sqlite" and not qs[1].db_path.exists()
    assert qs[0].extra == {"query_toks": ["SELECT"], "sql": {}}
    assert D.load_spider_bird(root / "dev.json") == qs
    tables = D.load_tables(root)
    t = tables["concert_singer"]
    assert t.tables == ["stadium", "singer"]
    assert ("singer", "Singer_ID", "number") in t.columns
    assert t.primary_keys == [("stadium", "Stadium_ID"), ("singer", "Singer_ID")]
    assert t.foreign_keys == [("singer", "Stadium_ID", "stadium", "Stadium_ID")]


def test_bird_layout_evidence_becomes_the_hint(tmp_path):
    root = tmp_path / "bird"
    (root / "dev_databases" / "financial").mkdir(parents=True)
    (root / "dev.json").write_text(json.dumps([
        {"question_id": 7, "db_id": "financial", "question": "How many accounts in Prague?",
         "evidence": "Prague is a district name (A2)", "SQL": "SELECT COUNT(*) FROM account", "difficulty": "simple"},
    ]), encoding="utf-8")
    (q,) = D.load_spider_bird(root)
    assert (q.id, q.hint, q.difficulty, q.gold_sql) == ("7", "Prague is a district name (A2)", "simple",
                                                         "SELECT COUNT(*) FROM account")
    assert q.db_path == root / "dev_databases" / "financial" / "financial.sqlite"
    other = tmp_path / "dbs"
    assert D.load_spider_bird(root, db_root=other)[0].db_path == other / "financial" / "financial.sqlite"


def test_spider_bird_errors(tmp_path):
    with pytest.raises(UserInputError, match="no such"):
        D.load_spider_bird(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserInputError, match="no questions file"):
        D.load_spider_bird(tmp_path / "empty")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": "no db"}]), encoding="utf-8")
    with pytest.raises(UserInputError, match="db_id"):
        D.load_spider_bird(bad)


def test_predictions_formats(tmp_path):
    txt = tmp_path / "pred.txt"
    txt.write_text("SELECT 1\tdb_a\nSELECT 2\n", encoding="utf-8")
    assert D.read_predictions(txt, 2) == ["SELECT 1", "SELECT 2"]
    js = tmp_path / "pred.json"
    js.write_text(json.dumps({"1": "SELECT 2\t----- bird -----\tdb", "0": "SELECT 1\t----- bird -----\tdb"}),
                  encoding="utf-8")
    assert D.read_predictions(js) == ["SELECT 1", "SELECT 2"]
    with pytest.raises(UserInputError, match="2 predictions for 3"):
        D.read_predictions(txt, 3)


def test_premise_jsonl(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"pair_id": "p1", "db": "demo", "question": "How many orders were placed before 2023 in 2024?",
         "label": "flawed", "flaw": "E2.1"},
        {"pair_id": "p1", "db": "demo", "question": "How many orders were placed in 2024?", "label": "original",
         "gold_sql": "SELECT COUNT(*) FROM orders", "source": "hand"},
    ]) + "\n", encoding="utf-8")
    flawed, original = D.load_premise(path)
    assert (flawed.id, flawed.flawed, flawed.flaw, flawed.gold_sql) == ("p1-flawed", True, "E2.1", None)
    assert (original.id, original.flawed, original.flaw, original.extra) == ("p1-original", False, None, {"source": "hand"})
    for bad, needle in [({"pair_id": "p", "db": "d", "question": "q", "label": "flawed", "flaw": "E9.9"}, "flaw code"),
                        ({"pair_id": "p", "db": "d", "question": "q", "label": "other"}, "label"),
                        ({"pair_id": "p", "db": "d", "label": "original"}, "question")]:
        path.write_text(json.dumps(bad) + "\n", encoding="utf-8")
        with pytest.raises(UserInputError, match=needle):
            D.load_premise(path)


def test_request_sets(tmp_path):
    path = tmp_path / "sets.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"id": "s1", "db": "sakila", "open_request": "average daily rental price per rating",
         "request_a": "average of the per-film daily prices", "request_b": "average price divided by average duration",
         "sql_a": "SELECT AVG(rental_rate / rental_duration) FROM film",
         "sql_b": "SELECT AVG(rental_rate) / AVG(rental_duration) FROM film", "choice_type": "aggregation_level",
         "notes": "Figure 1"},
        {"database": "chinook", "open": "o", "specific_a": "a", "specific_b": "b", "reference_sql_a": "SELECT 1",
         "reference_sql_b": "SELECT 2", "type": "ties"},
    ]) + "\n", encoding="utf-8")
    a, b = D.load_request_sets(path)
    assert a == D.RequestSet(id="s1", db="sakila", open_request="average daily rental price per rating",
                             request_a="average of the per-film daily prices",
                             request_b="average price divided by average duration",
                             sql_a="SELECT AVG(rental_rate / rental_duration) FROM film",
                             sql_b="SELECT AVG(rental_rate) / AVG(rental_duration) FROM film",
                             choice_type="aggregation_level", extra={"notes": "Figure 1"})
    assert (b.id, b.db, b.choice_type, b.sql_b) == ("set-2", "chinook", "ties", "SELECT 2")
    path.write_text(json.dumps({"db": "x", "open_request": "o"}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match="request_a"):
        D.load_request_sets(path)


# ---------------------------------------------------------------------------------------
# The shared report module
# ---------------------------------------------------------------------------------------
def test_report_markdown_and_self_contained_html(tmp_path):
    png = R.risk_coverage_png({"a": {"coverage": [0.5, 1.0], "accuracy": [1.0, 0.75]}})
    assert png is not None and png[:4] == b"\x89PNG"
    assert png == R.risk_coverage_png({"a": {"coverage": [0.5, 1.0], "accuracy": [1.0, 0.75]}}), "same data, same bytes"
    report = R.Report(title="T <1>", command="vouch eval x --flag",
                      intro=[R.Text("Intro with `code` and **bold**.")],
                      sections=[R.Section("Numbers", [R.Table(["a", "b | c"], [["x", 0.12345], ["y", None]], caption="Cap"),
                                                      R.Text("- one\n- two"),
                                                      R.Figure("curve", png, "The curve")])])
    written = R.write_report(tmp_path, report)
    assert {p.name for p in written} == {"curve.png", "report.md", "report.html"}
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| a | b \\| c |" in md and "| x | 0.123 |" in md and "| y | — |" in md
    assert "![The curve](figures/curve.png)" in md
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<title>T &lt;1&gt;</title>" in html and "<code>code</code>" in html and "<strong>bold</strong>" in html
    assert "<li>one</li>" in html and 'class="num">0.123' in html
    assert "data:image/png;base64," in html
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    console = R.render_markdown(report, console=True)
    assert "figures/curve.png" not in console and "Command:" not in console


def test_formatting_helpers():
    assert R.with_ci(0.5, [0.4, 0.6]) == "0.500 (0.400 to 0.600)"
    assert R.with_ci(0.1, [-0.05, 0.2], signed=True) == "+0.100 (-0.050 to +0.200)"
    assert R.with_ci(None, None) == "—"
    assert R.pct_ci(0.5, [0.25, 0.75]) == "50.0% (25.0–75.0)"
    assert R.fmt(1234) == "1,234" and R.fmt(True) == "yes"

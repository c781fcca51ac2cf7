"""``vouch eval planted`` on the shared reporting: a manifest, a self-contained HTML report, and
``--replay`` recomputing the tables from planted.jsonl with no SQL."""

from __future__ import annotations

import json

import pytest

from vouchsql.cli import main


def test_planted_run_has_manifest_html_and_replays(demo_db, tmp_path, capsys, monkeypatch, clean_env):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({
        "id": "avg", "db": str(demo_db), "question": "What is the average age of customers whose age is known?",
        "sql": "SELECT ROUND(AVG(age), 1) AS avg_age FROM customers WHERE age >= 0"}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(["eval", "planted", "--cases", str(cases), "--out", str(out), "--k", "3",
                 "--kinds", "fake_table,wrong_number", "--cache-dir", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["harness"] == "planted" and manifest["parameters"]["k"] == 3
    assert len(manifest["datasets"]["cases"]["sha256"]) == 64 and manifest["databases"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Rule <code>designed</code>" in html and "<td>fake_table</td>" in html and "<script" not in html

    from vouchsql.db.base import Database

    monkeypatch.setattr(Database, "execute", lambda *a, **k: (_ for _ in ()).throw(AssertionError("SQL in replay")))
    capsys.readouterr()
    assert main(["eval", "planted", "--replay", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
    assert json.loads((out / "replay" / "metrics.json").read_text(encoding="utf-8")) == \
        json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert (out / "replay" / "report.md").read_text(encoding="utf-8").startswith("# Planted errors")


@pytest.mark.parametrize("case, args, needle", [
    ([1, 2], [], "cases.jsonl:1: not a JSON object"),
    ({"id": "q", "db": "demo", "sql": "SELECT 1"}, [], "case 'q' has no question"),
    ({"id": "s", "db": "demo", "question": "How many?"}, [], "case 's' has no sql"),
    # Refused up front: before, an unknown rule surfaced only when a case was scored (never, here).
    ({"id": "r", "db": "missing.sqlite", "question": "How many?", "sql": "SELECT 1"}, ["--rules", "designed,best"],
     "unknown scoring rule(s) best"),
])
def test_bad_cases_and_rules_are_exit_2_before_any_check(tmp_path, capsys, monkeypatch, case, args, needle):
    monkeypatch.chdir(tmp_path)
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    code = main(["eval", "planted", "--cases", str(cases), "--cache-dir", str(tmp_path / "cache")] + args)
    assert code == 2 and needle in capsys.readouterr().err


def test_manifest_hashes_the_databases_read_from_datasets(demo_db, tmp_path, capsys, monkeypatch):
    # A shared name ("chinook") is looked up in --datasets; the manifest must hash that file,
    # not another chinook.sqlite the default search would find.
    monkeypatch.chdir(tmp_path)
    datasets = tmp_path / "datasets"
    datasets.mkdir()
    (datasets / "chinook.sqlite").write_bytes(demo_db.read_bytes())
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "n", "db": "chinook", "question": "How many stores are there?",
                                 "sql": "SELECT COUNT(*) AS n FROM stores"}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(["eval", "planted", "--cases", str(cases), "--out", str(out), "--k", "2", "--kinds", "fake_table",
                 "--datasets", str(datasets), "--cache-dir", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["databases"]["chinook"]["path"] == str((datasets / "chinook.sqlite").resolve())

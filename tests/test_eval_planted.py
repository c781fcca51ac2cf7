"""``vouch eval planted`` on the shared reporting: a manifest, a self-contained HTML report, and
``--replay`` recomputing the tables from planted.jsonl with no SQL."""

from __future__ import annotations

import json

from vouchsql.cli import main


def test_planted_run_has_manifest_html_and_replays(demo_db, tmp_path, capsys, monkeypatch):
    for name in list(__import__("os").environ):
        if name.startswith("VOUCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
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

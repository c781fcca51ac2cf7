"""``vouch eval exec``: strict (BIRD set equality) and relaxed (IES matching) execution accuracy
of a predictions file, per database, on a Spider/BIRD layout, resumed and replayed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vouchsql.answer import Result
from vouchsql.cli import main
from vouchsql.evals import execution as X
from vouchsql.settings import load_config

PER_STORE = ("SELECT s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
             "GROUP BY s.store_id, s.name")

# (prediction, strict, relaxed)
CASES = {
    "same": ("SELECT COUNT(*) FROM stores", True, True),
    "reordered-columns": ("SELECT COUNT(*) AS n, s.name FROM stores s JOIN orders o ON o.store_id = s.store_id "
                          "GROUP BY s.store_id, s.name", False, True),
    "extra-column": ("SELECT s.store_id, s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
                     "GROUP BY s.store_id, s.name", False, True),
    "duplicated-rows": ("SELECT s.name, COUNT(*) AS n FROM stores s JOIN orders o ON o.store_id = s.store_id "
                        "GROUP BY s.store_id, s.name UNION ALL SELECT s.name, COUNT(*) AS n FROM stores s "
                        "JOIN orders o ON o.store_id = s.store_id GROUP BY s.store_id, s.name", True, False),
    "wrong": ("SELECT COUNT(*) FROM orders", False, False),
    "error": ("SELECT COUNT(*) FROM nowhere", False, False),
    "empty": (None, False, False),
}
GOLD = {"same": "SELECT COUNT(*) FROM stores", "wrong": "SELECT COUNT(*) FROM stores",
        "error": "SELECT COUNT(*) FROM stores", "empty": "SELECT COUNT(*) FROM stores"}


def _predictions(path: Path, db: str) -> Path:
    lines = [json.dumps({"id": cid, "db": db, "question": cid, "sql": sql, "gold_sql": GOLD.get(cid, PER_STORE)})
             for cid, (sql, _, _) in CASES.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_strict_equal_is_bird_set_equality():
    a = Result(columns=["x"], rows=[[1], [1], [2]], row_count=3)
    b = Result(columns=["y"], rows=[[2], [1]], row_count=2)
    c = Result(columns=["x", "y"], rows=[[1, 2]], row_count=1)
    assert X.strict_equal(a, b) is True, "sets of rows: duplicates and order do not count"
    assert X.strict_equal(c, Result(columns=["y", "x"], rows=[[2, 1]], row_count=1)) is False, "column order counts"
    assert X.strict_equal(Result(rows=[[1.0]], row_count=1), Result(rows=[[1]], row_count=1)) is True


@pytest.fixture
def exec_run(demo_db, tmp_path):
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    preds = _predictions(tmp_path / "preds.jsonl", str(demo_db))
    out = tmp_path / "run"
    records, manifest = X.run_exec(config, out, input_path=preds, command="test",
                                   parameters={"bootstrap": 300, "seed": 0})
    metrics, _ = X.finish(out, records, manifest)
    return records, metrics, out, preds, config


def test_each_prediction_is_scored_both_ways(exec_run):
    records, metrics, _, _, _ = exec_run
    by_id = {r["id"]: r for r in records}
    for cid, (_, strict, relaxed) in CASES.items():
        assert (by_id[cid]["strict"], by_id[cid]["relaxed"]) == (strict, relaxed), cid
    assert by_id["error"]["pred_error"] and by_id["empty"]["pred_error"] == "no prediction"
    n = len(CASES)
    assert metrics["n"] == n
    assert metrics["strict"]["k"] == sum(s for _, s, _ in CASES.values())
    assert metrics["relaxed"]["k"] == sum(r for _, _, r in CASES.values())
    assert metrics["strict"]["rate"] == pytest.approx(2 / 7) and metrics["relaxed"]["rate"] == pytest.approx(3 / 7)
    assert metrics["agreement"] == {"both": 1, "strict_only": 1, "relaxed_only": 2, "neither": 3}
    assert metrics["prediction_errors"] == 2
    (db, d), = metrics["per_db"].items()
    assert d["n"] == n and d["strict"] == 2 and d["relaxed"] == 3
    lo, hi = metrics["strict"]["ci"]
    assert lo < 2 / 7 < hi


def test_report_and_replay(exec_run, tmp_path, monkeypatch):
    _, metrics, out, _, _ = exec_run
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "strict (BIRD: set equality of rows)" in md and "28.6%" in md and "42.9%" in md
    from vouchsql.db.base import Database

    monkeypatch.setattr(Database, "execute", lambda *a, **k: (_ for _ in ()).throw(AssertionError("SQL in replay")))
    assert main(["eval", "exec", "--replay", str(out)]) == 0
    again = json.loads((out / "replay" / "metrics.json").read_text(encoding="utf-8"))
    assert again == metrics
    assert json.loads((out / "replay" / "replay.json").read_text(encoding="utf-8"))["identical"] is True


def test_replay_takes_other_bootstrap_settings(exec_run, tmp_path):
    _, metrics, out, _, _ = exec_run
    assert main(["eval", "exec", "--replay", str(out), "--out", str(tmp_path / "r"), "--seed", "5",
                 "--bootstrap", "300"]) == 0
    again = json.loads((tmp_path / "r" / "metrics.json").read_text(encoding="utf-8"))
    assert again["bootstrap"] == {"replicates": 300, "seed": 5} != metrics["bootstrap"]
    assert again["strict"]["rate"] == metrics["strict"]["rate"]


def _bird_layout(root: Path, demo_db: Path) -> Path:
    """A two-question BIRD-style split on two copies of the demo database."""
    for db_id in ("shop_a", "shop_b"):
        (root / "dev_databases" / db_id).mkdir(parents=True)
        shutil.copy(demo_db, root / "dev_databases" / db_id / f"{db_id}.sqlite")
    questions = [
        {"question_id": 0, "db_id": "shop_a", "question": "How many stores are there?", "evidence": "store = stores row",
         "SQL": "SELECT COUNT(*) FROM stores", "difficulty": "simple"},
        {"question_id": 1, "db_id": "shop_b", "question": "How many orders?", "evidence": "",
         "SQL": "SELECT COUNT(*) FROM orders", "difficulty": "moderate"},
        {"question_id": 2, "db_id": "shop_missing", "question": "Anything?", "evidence": "", "SQL": "SELECT 1",
         "difficulty": "simple"},
    ]
    (root / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    (root / "dev_tables.json").write_text("[]", encoding="utf-8")
    return root


def test_bird_layout_with_predictions(demo_db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = _bird_layout(tmp_path / "bird", demo_db)
    preds = tmp_path / "predict_dev.json"
    preds.write_text(json.dumps({"0": "SELECT COUNT(*) FROM stores\t----- bird -----\tshop_a",
                                 "1": "SELECT COUNT(*) FROM customers\t----- bird -----\tshop_b",
                                 "2": "SELECT 1\t----- bird -----\tshop_missing"}), encoding="utf-8")
    out = tmp_path / "run"
    code = main(["eval", "exec", "--dataset", str(root), "--predictions", str(preds), "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache")])
    text, err = capsys.readouterr()
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["n"] == 2 and metrics["skipped"] == 1
    assert metrics["per_db"]["shop_a"]["strict"] == 1 and metrics["per_db"]["shop_b"]["strict"] == 0
    assert metrics["by_difficulty"]["simple"] == {"n": 1, "strict": 1, "relaxed": 1}
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert {"questions", "predictions"} <= set(man["datasets"])
    assert "Per database" in text


def test_spider_text_predictions_must_align(demo_db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = _bird_layout(tmp_path / "bird", demo_db)
    preds = tmp_path / "pred.txt"
    preds.write_text("SELECT COUNT(*) FROM stores\tshop_a\n", encoding="utf-8")
    code = main(["eval", "exec", "--dataset", str(root), "--predictions", str(preds), "--out", str(tmp_path / "o"),
                 "--cache-dir", str(tmp_path / "cache")])
    assert code == 2 and "1 predictions for 3 questions" in capsys.readouterr().err


@pytest.mark.parametrize("args, needle", [
    ([], "--input"),
    (["--dataset", "x"], "--predictions"),
    (["--input", "nowhere.jsonl"], "nowhere.jsonl"),
])
def test_cli_bad_input_is_exit_2(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code = main(["eval", "exec", "--cache-dir", str(tmp_path / "cache")] + args)
    assert code == 2 and needle in capsys.readouterr().err


@pytest.mark.parametrize("name, text, needle", [
    ("list.jsonl", "[1, 2]\n", "list.jsonl:1: not a JSON object"),
    ("pred.json", "{not json", "pred.json: not valid JSON"),
    ("pred.json", '{"first": "SELECT 1"}', "keyed by question index"),
    ("pred.json", '"SELECT 1"', "expected a JSON object of predictions"),
])
def test_malformed_input_files_are_exit_2_not_a_traceback(demo_db, tmp_path, capsys, monkeypatch, name, text, needle):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text, encoding="utf-8")
    source = (["--input", name] if name.endswith(".jsonl")
              else ["--dataset", str(_bird_layout(tmp_path / "bird", demo_db)), "--predictions", name])
    code = main(["eval", "exec", "--out", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "cache")] + source)
    assert code == 2 and needle in capsys.readouterr().err

"""``vouch eval predictions``: published predictions of several systems (or K samples of one)
read in the formats people publish, labelled by execution with Spider's rule, vouched for with
the other systems as samples, measured per rule and per alarm, resumed and replayed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from vouchsql.answer import Result
from vouchsql.cli import main
from vouchsql.errors import UserInputError
from vouchsql.evals import execution as X
from vouchsql.evals import predictions as P
from vouchsql.settings import load_config

COUNT = "SELECT count(*) FROM pets WHERE weight > 10"
WRONG = "SELECT count(*) FROM pets WHERE weight >= 10"
BY_WEIGHT = "SELECT name, weight FROM pets ORDER BY weight"
KINDS = "SELECT DISTINCT kind FROM pets"


@pytest.fixture
def pets(tmp_path) -> Path:
    """A Spider-style folder: <db>/<db>.sqlite."""
    path = tmp_path / "dbs" / "pets_x" / "pets_x.sqlite"
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, weight REAL)")
    con.executemany("INSERT INTO pets VALUES (?, ?, ?, ?)",
                    [(1, "Rex", "dog", 12.0), (2, "Tom", "cat", 4.5), (3, "Kim", "dog", 10.0), (4, "Bo", "bird", 0.3)])
    con.commit()
    con.close()
    return tmp_path / "dbs"


def _questions(tmp_path: Path) -> Path:
    """Spider's dev.json layout: a list with db_id, question and query."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([
        {"db_id": "pets_x", "question": "How many pets weigh more than 10?", "query": COUNT},
        {"db_id": "pets_x", "question": "List each pet's name and weight from light to heavy.", "query": BY_WEIGHT},
        {"db_id": "pets_x", "question": "Which kinds of pets are there?", "query": KINDS},
    ]), encoding="utf-8")
    return path


def _lines(path: Path, sqls: list[str | None]) -> Path:
    path.write_text("".join(f"{s or ''}\tpets_x\n" for s in sqls), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- Spider's rule

def _r(cols, rows):
    return Result(columns=cols, rows=rows, row_count=len(rows))


def test_spider_equal_matches_columns_in_any_order_and_rows_by_the_golds_order():
    gold = _r(["a", "b"], [[1, "x"], [2, "y"]])
    assert X.spider_equal(_r(["b", "a"], [["x", 1], ["y", 2]]), gold, ordered=False) is True
    assert X.spider_equal(_r(["a", "b"], [[2, "y"], [1, "x"]]), gold, ordered=False) is True, "a multiset"
    assert X.spider_equal(_r(["a", "b"], [[2, "y"], [1, "x"]]), gold, ordered=True) is False, "a list when sorted"
    assert X.spider_equal(_r(["a"], [[1], [2]]), gold, ordered=False) is False, "same number of columns"
    assert X.spider_equal(_r(["a", "b"], [[1, "x"], [1, "x"]]), gold, ordered=False) is False, "rows counted"
    assert X.spider_equal(_r(["a", "b"], [[1.00001, "x"], [2.0, "y"]]), gold, ordered=False) is True, "4 decimals"
    # Columns holding the same values: the pairing has to be found per row, not per column.
    same = _r(["p", "q"], [[1, 2], [2, 1]])
    assert X.spider_equal(_r(["q", "p"], [[2, 1], [1, 2]]), same, ordered=True) is True
    assert X.spider_equal(_r(["p", "q"], [[1, 2], [1, 2]]), same, ordered=False) is False
    cut = Result(columns=["a", "b"], rows=[[1, "x"]], row_count=2, truncated=True)
    assert X.spider_equal(cut, gold, ordered=False) is None, "a cut-off result leaves it open"


def test_orders_rows_reads_only_the_outermost_order():
    assert X.orders_rows("SELECT a FROM t ORDER BY a") is True
    assert X.orders_rows("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)") is False
    assert X.orders_rows("SELECT a FROM t") is False


# --------------------------------------------------------------------------- inputs

def test_spider_text_bird_json_jsonl_samples_and_csv_all_read(tmp_path):
    q = _questions(tmp_path)
    (tmp_path / "b.json").write_text(json.dumps({"0": f"{COUNT}\t----- bird -----\tpets_x", "1": BY_WEIGHT,
                                                 "2": KINDS}), encoding="utf-8")
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "0", "samples": [WRONG, COUNT, WRONG]}, {"id": "2", "sql": KINDS}]), encoding="utf-8")
    two_lines = BY_WEIGHT.replace(" FROM", "\nFROM")  # a quoted CSV cell over two lines
    (tmp_path / "d.csv").write_text(f'question_id,predicted_sql\n1,"{two_lines}"\n0,{COUNT}\n', encoding="utf-8")
    got = P.load_inputs(q, [("a", _lines(tmp_path / "a.txt", [COUNT, None, KINDS])), ("b", tmp_path / "b.json"),
                            ("c", tmp_path / "c.jsonl"), ("d", tmp_path / "d.csv")])
    assert [x.id for x in got] == ["0", "1", "2"] and got[0].gold_sql == COUNT
    assert got[0].systems == {"a": [COUNT], "b": [COUNT], "c": [WRONG, COUNT, WRONG], "d": [COUNT]}
    assert got[1].systems == {"a": [None], "b": [BY_WEIGHT], "c": [None], "d": [two_lines]}
    assert got[2].systems["d"] == [None], "a question the file does not mention has no SQL"


@pytest.mark.parametrize("body, message", [
    ("SELECT 1\tpets_x\nSELECT 2\tpets_x\n", "2 prediction lines for 3 questions"),
    ("SELECT 1\tpets_x\nSELECT 2\tother_db\nSELECT 3\tpets_x\n", "names database 'other_db'"),
])
def test_misaligned_prediction_lines_are_refused_by_line(tmp_path, body, message):
    (tmp_path / "a.txt").write_text(body, encoding="utf-8")
    with pytest.raises(UserInputError, match=message):
        P.load_inputs(_questions(tmp_path), [("a", tmp_path / "a.txt")])


def test_unknown_ids_and_bad_labels_name_the_file_and_line(tmp_path):
    q = _questions(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "9", "sql": COUNT}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"a.jsonl:1: question id '9' is not in the questions file"):
        P.load_inputs(q, [("a", tmp_path / "a.jsonl")])
    (tmp_path / "l.jsonl").write_text(json.dumps({"id": "0", "system": "a", "label": "maybe"}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"l.jsonl:1: label 'maybe' is not a correctness label"):
        P.load_inputs(q, [("a", _lines(tmp_path / "a.txt", [COUNT, BY_WEIGHT, KINDS]))], labels=tmp_path / "l.jsonl")


def test_candidates_are_the_next_systems_cyclic_or_a_systems_own_samples():
    q = P.Question(id="1", db="d", question="?", systems={"a": ["A"], "b": ["B"], "c": ["C1", "C2", "C3"], "d": [None]})
    assert P.candidates_for(q, "a", 3) == (["A", "B", "C1"], ["a", "b", "c"])
    assert P.candidates_for(q, "d", 3) == ([None, "A", "B"], ["d", "a", "b"])
    assert P.candidates_for(q, "c", 2) == (["C1", "C2"], ["c#0", "c#1"])
    assert P.candidates_for(q, "b", 9)[1] == ["b", "c", "d", "a"], "K is at most the number of systems"


# --------------------------------------------------------------------------- a run

@pytest.fixture
def run(tmp_path, pets):
    q = _questions(tmp_path)
    preds = [("good", _lines(tmp_path / "good.txt", [COUNT, BY_WEIGHT, KINDS])),
             ("twin", _lines(tmp_path / "twin.txt", [COUNT, BY_WEIGHT, KINDS])),
             ("third", _lines(tmp_path / "third.txt", [COUNT, "SELECT name, weight FROM pets ORDER BY weight DESC",
                                                        KINDS])),
             ("off", _lines(tmp_path / "off.txt", [WRONG, "SELECT weight, name FROM pets ORDER BY weight", KINDS])),
             ("none", _lines(tmp_path / "none.txt", [None, BY_WEIGHT, "SELECT kind FROM pets"]))]
    questions = P.load_inputs(q, preds)
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    out = tmp_path / "run"
    records, manifest = P.run_predictions(questions, config, out, databases=P.resolve_databases(questions, pets, {}),
                                          k=5, show_gold=True, command="test",
                                          parameters={"rules": list(P.DEFAULT_RULES), "bootstrap": 200, "seed": 0})
    return questions, config, out, records, manifest


def _answer(records, qid, system):
    rec = next(r for r in records if r["id"] == qid)
    return next(a for a in rec["answers"] if a["system"] == system)


def test_labels_come_from_execution_with_spiders_rule(run):
    *_, records, _ = run
    assert _answer(records, "0", "good")["label"] is True
    assert _answer(records, "0", "off")["label"] is False, ">= 10 also counts Kim"
    assert _answer(records, "1", "third")["label"] is False, "the gold sorts: reversed rows are wrong"
    assert _answer(records, "1", "off")["label"] is True, "columns in any order"
    assert _answer(records, "1", "off")["strict_label"] is False, "BIRD's rule keeps columns in place"
    assert _answer(records, "2", "none")["label"] is False, "'dog' twice: rows are a multiset"
    no_sql = _answer(records, "0", "none")
    assert no_sql["label"] is False and no_sql["no_sql"] and no_sql["refused"]
    assert no_sql["verdicts"]["agreement_first"]["gate"] == "abstain"


def test_a_sample_with_no_sql_still_counts_in_k(run):
    *_, records, _ = run
    # Question 0, "good" shown: good, twin, third agree; off differs; none gave no SQL → A = 3/5.
    a = _answer(records, "0", "good")
    assert a["candidates"] == ["good", "twin", "third", "off", "none"]
    assert a["k"] == 5 and a["agreement"] == pytest.approx(0.6)
    # "third" shown on question 0: third, off, none, good, twin → 3 of 5 again.
    assert _answer(records, "0", "third")["agreement"] == pytest.approx(0.6)


def test_metrics_report_and_replay(run, tmp_path):
    questions, config, out, records, manifest = run
    metrics, report = P.finish(out, records, manifest)
    assert metrics["n_answers"] == 15 and metrics["n_questions"] == 3
    assert metrics["right"] == sum(bool(a["label"]) for r in records for a in r["answers"])
    assert set(metrics["rules"]) == set(P.DEFAULT_RULES)
    assert metrics["stored_verdicts_reproduced"][0] == metrics["stored_verdicts_reproduced"][1] > 0
    assert metrics["systems"]["none"]["no_sql"] == 1
    assert metrics["gold_shown"]["n"] == 3
    for name in ("report.md", "report.html", "metrics.json", "figures/risk_coverage.png"):
        assert (out / name).is_file(), name
    assert "Confident errors (A = 1)" in (out / "report.md").read_text(encoding="utf-8")
    # Replay: every number from the records alone, identical.
    assert main(["eval", "predictions", "--replay", str(out), "--out", str(tmp_path / "again")]) == 0
    assert json.loads((tmp_path / "again" / "replay.json").read_text())["identical"] is True
    # Resume: a second run over the same folder evaluates nothing new and gives the same records.
    again, _ = P.run_predictions(questions, config, out, databases=P.resolve_databases(questions, out.parent / "dbs", {}),
                                 k=5, show_gold=True, command="test",
                                 parameters={"rules": list(P.DEFAULT_RULES), "bootstrap": 200, "seed": 0})
    assert again == records


def test_worker_processes_give_the_same_records(run, tmp_path):
    questions, config, out, records, _ = run
    other, _ = P.run_predictions(questions, config, tmp_path / "jobs", databases=P.resolve_databases(
        questions, out.parent / "dbs", {}), k=5, show_gold=True, jobs=2, command="test",
        parameters={"rules": list(P.DEFAULT_RULES), "bootstrap": 200, "seed": 0})
    assert [r["answers"] for r in other] == [r["answers"] for r in records]


def test_per_alarm_precision_counts_wrong_among_fired_overall_and_at_a1():
    check = {"name": "some_check", "kind": "cap", "fired": True, "detail": "", "evidence": {}}
    answers = [{"label": False, "agreement": 1.0, "checks": [check], "choices": []},
               {"label": False, "agreement": 0.6, "checks": [check], "choices": ["ties"]},
               {"label": True, "agreement": 1.0, "checks": [check], "choices": ["ties"]},
               {"label": True, "agreement": 1.0, "checks": [{**check, "fired": False}], "choices": []}]
    rows = {r["alarm"]: r for r in P.per_alarm(answers)}
    assert rows["some_check"]["fires"] == 3 and rows["some_check"]["precision"] == pytest.approx(2 / 3)
    assert rows["some_check"]["fires_a1"] == 2 and rows["some_check"]["precision_a1"] == pytest.approx(0.5)
    assert rows["choice:ties"]["on_wrong"] == 1 and rows["choice:ties"]["on_right_a1"] == 1


def test_the_bootstrap_resamples_whole_questions():
    # Two questions: one with only right answers, one with only wrong. A resample of answers
    # would mix them; a resample of questions either keeps both or leaves one class out.
    y = np.array([True, True, False, False])
    s = np.array([0.9, 0.8, 0.2, 0.1])
    boot = P.question_bootstrap({"s": s}, y, np.array([0, 0, 1, 1]), replicates=200, seed=0)
    defined = boot.values["s"][~np.isnan(boot.values["s"])]
    assert defined.size and np.all(defined == 1.0)
    assert np.isnan(boot.values["s"]).sum() > 0, "single-question resamples have one class: left undefined"


def test_write_measured_is_the_table_the_severity_rule_reads(run, tmp_path):
    *_, out, _, _ = run
    path = tmp_path / "measured.json"
    assert main(["eval", "predictions", "--replay", str(out), "--out", str(tmp_path / "r"),
                 "--write-measured", str(path)]) == 0
    doc = json.loads(path.read_text())
    assert doc["schema"] == "vouch-measured/1" and doc["answers"] == 15
    # the command that made the records, then the replay that wrote the table
    assert doc["command"].startswith("test; then vouch eval predictions --replay ")
    assert "--write-measured" in doc["command"]
    for m in doc["alarms"].values():
        assert 0 <= m["wrong"] <= m["fires"] and 0 <= m["wrong_a1"] <= m["fires_a1"] <= m["fires"]


def test_cli_bad_inputs_are_one_line_errors(tmp_path, capsys):
    assert main(["eval", "predictions"]) != 0
    assert "give --questions FILE" in capsys.readouterr().err
    assert main(["eval", "predictions", "--questions", str(_questions(tmp_path)), "--predictions", "nofile"]) != 0
    assert "write NAME=VALUE" in capsys.readouterr().err
    assert main(["eval", "predictions", "--questions", str(tmp_path / "missing.jsonl")]) != 0
    assert "no such file" in capsys.readouterr().err


# --------------------------------------------------------------------------- columns contract

COMMON_KIND = "SELECT kind FROM pets GROUP BY kind ORDER BY count(*) DESC LIMIT 1"
WITH_COUNT = "SELECT kind, count(*) FROM pets GROUP BY kind ORDER BY count(*) DESC LIMIT 1"


def _extra_column_run(tmp_path: Path, pets: Path, name: str, *flags: str) -> dict:
    """Five systems agree on an answer that returns the count beside the kind asked for: wrong
    by the labels (they compare columns), invisible to agreement."""
    q = tmp_path / "common.jsonl"
    q.write_text(json.dumps({"id": "q1", "db": "pets_x", "question": "Which kind of pet is the most common?",
                             "gold_sql": COMMON_KIND,
                             "predictions": {s: WITH_COUNT for s in ("a", "b", "c", "d", "e")}}) + "\n",
                 encoding="utf-8")
    out = tmp_path / name
    assert main(["eval", "predictions", "--questions", str(q), "--db-dir", str(pets), "--out", str(out),
                 "--bootstrap", "20", "--cache-dir", str(tmp_path / "cache"), "--show-gold", *flags]) == 0
    return {"metrics": json.loads((out / "metrics.json").read_text()),
            "manifest": json.loads((out / "manifest.json").read_text()),
            "report": (out / "report.md").read_text(encoding="utf-8")}


def test_predictions_take_the_labels_column_contract_and_report_the_other(tmp_path, pets, monkeypatch):
    monkeypatch.delenv("VOUCH_EXACT_COLUMNS", raising=False)
    monkeypatch.chdir(tmp_path)  # no vouch.toml
    on = _extra_column_run(tmp_path, pets, "on")
    assert on["manifest"]["parameters"]["exact_columns"] is True, "labels compare columns: the default is on"
    first = on["metrics"]["rules"]["agreement_first"]
    assert on["metrics"]["a1"] == {"answers": 5, "wrong": 5}
    assert first["a1"]["wrong_withheld"] == [5, 5]
    other = on["metrics"]["columns_contract"]["other"]
    assert other["exact_columns"] is False
    assert other["rules"]["agreement_first"]["a1"]["wrong_withheld"] == [0, 5], "a signal withholds nothing"
    assert other["rules"]["agreement_first"]["gold_withheld"] == 0
    assert "| agreement_first | off | " in on["report"] and "| agreement_first | on (this run) | " in on["report"]

    off = _extra_column_run(tmp_path, pets, "off", "--no-exact-columns")
    assert off["manifest"]["parameters"]["exact_columns"] is False
    assert off["metrics"]["rules"]["agreement_first"]["a1"]["wrong_withheld"] == [0, 5]
    assert off["metrics"]["columns_contract"]["other"]["rules"]["agreement_first"]["a1"]["wrong_withheld"] == [5, 5]

    monkeypatch.setenv("VOUCH_EXACT_COLUMNS", "0")  # a setting the user gave stands
    assert _extra_column_run(tmp_path, pets, "env")["manifest"]["parameters"]["exact_columns"] is False


def test_exact_and_no_exact_columns_together_are_refused(tmp_path, pets, capsys):
    q = _questions(tmp_path)
    assert main(["eval", "predictions", "--questions", str(q), "--predictions", f"a={_lines(tmp_path / 'a.txt', [COUNT, BY_WEIGHT, KINDS])}",
                 "--db-dir", str(pets), "--out", str(tmp_path / "x"), "--exact-columns", "--no-exact-columns"]) == 2
    assert "--exact-columns or --no-exact-columns" in capsys.readouterr().err


def test_right_answers_withheld_with_their_gold_are_counted_apart(tmp_path):
    # Codes stored with a leading space on one side: the gold's join matches nothing, every
    # system writes the same join, so each is "right" (the gold's rows) and rightly withheld.
    path = tmp_path / "dbs" / "air.sqlite"
    path.parent.mkdir()
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE airports (code TEXT PRIMARY KEY, city TEXT)")
    con.execute("CREATE TABLE flights (id INTEGER PRIMARY KEY, src TEXT REFERENCES airports(code))")
    con.executemany("INSERT INTO airports VALUES (?, ?)", [("ABZ", "Aberdeen"), ("AKO", "Akron"), ("ALB", "Albany")])
    con.executemany("INSERT INTO flights VALUES (?, ?)", [(i, " " + c) for i, c in enumerate(["ABZ", "AKO", "ALB"] * 4)])
    con.commit()
    con.close()
    join = "SELECT count(*) FROM flights JOIN airports ON airports.code = flights.src WHERE airports.city = 'Aberdeen'"
    q = tmp_path / "air.jsonl"
    q.write_text("".join(json.dumps({"id": f"q{i}", "db": "air", "question": text, "gold_sql": sql,
                                     "predictions": {s: sql for s in "abcde"}}) + "\n"
                         for i, (text, sql) in enumerate([("How many flights leave from Aberdeen?", join),
                                                          ("How many airports are there?",
                                                           "SELECT count(*) FROM airports")])), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["eval", "predictions", "--questions", str(q), "--db-dir", str(path.parent), "--out", str(out),
                 "--bootstrap", "20", "--cache-dir", str(tmp_path / "cache"), "--show-gold"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    first = metrics["rules"]["agreement_first"]
    assert metrics["gold_shown"]["rules"]["agreement_first"]["ids"] == ["q0"]
    assert first["a1"]["right_withheld"] == [5, 10]
    assert first["a1"]["right_withheld_gold_withheld"] == 5, "all five share the gold's join"
    assert "gold withheld too" in (out / "report.md").read_text(encoding="utf-8")

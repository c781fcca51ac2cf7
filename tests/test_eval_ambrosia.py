"""AMBROSIA loaders (the distributed CSV and a JSONL form) and the methods scored on AMBROSIA
as SpecBridge §3 scores it (AllFound and recall on ambiguous questions, precision on
unambiguous ones), on a tiny AMBROSIA-shaped folder with a scripted model: every number by hand."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from vouchsql.errors import UserInputError
from vouchsql.evals.ambrosia import finish, load_ambrosia, replay, run_ambrosia
from vouchsql.llm import Completion, FakeModel
from vouchsql.settings import load_config

AMBIG = "Show the banks that offer loans and mortgages."
INTERP_1 = "Show the banks that offer loans and also offer mortgages."
INTERP_2 = "Show the banks that offer loans or mortgages, each with its own list."
SQL_1 = "SELECT name FROM offers WHERE service = 'loan' INTERSECT SELECT name FROM offers WHERE service = 'mortgage'"
SQL_2 = "SELECT name FROM offers WHERE service IN ('loan', 'mortgage') GROUP BY name"
CLEAR = "How many offers are there?"
SQL_CLEAR = "SELECT COUNT(*) FROM offers"
WRONG = "SELECT COUNT(DISTINCT name) FROM offers"


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "ambrosia"
    db = root / "data" / "scope" / "banks" / "banks.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE offers(name TEXT, service TEXT);"
                      "INSERT INTO offers VALUES ('A','loan'),('A','mortgage'),('B','loan'),('C','mortgage'),('C','card');")
    con.commit()
    con.close()
    rows = [
        {"question": AMBIG, "ambig_question": AMBIG, "gold_queries": f"{SQL_1}\n\n{SQL_2}", "is_ambiguous": "True",
         "ambig_type": "scope", "split": "test"},
        {"question": INTERP_1, "ambig_question": AMBIG, "gold_queries": SQL_1, "is_ambiguous": "False",
         "ambig_type": "scope", "split": "test"},
        {"question": INTERP_2, "ambig_question": AMBIG, "gold_queries": SQL_2, "is_ambiguous": "False",
         "ambig_type": "scope", "split": "test"},
        {"question": CLEAR, "ambig_question": "", "gold_queries": SQL_CLEAR, "is_ambiguous": "False",
         "ambig_type": "", "split": "test"},
        {"question": "Another?", "ambig_question": "", "gold_queries": SQL_CLEAR, "is_ambiguous": "False",
         "ambig_type": "", "split": "few_shot_examples"},
    ]
    path = root / "data" / "ambrosia.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["question", "ambig_question", "gold_queries", "db_file", "db_dump",
                                           "is_ambiguous", "ambig_type", "split"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "db_file": "data/scope/banks/banks.sqlite", "db_dump": "CREATE TABLE offers(…);"})
    return path


def reply(request) -> Completion:
    system = request.messages[0][1]
    user = [c for r, c in request.messages if r == "user"][0]
    task = system.split("—")[0].strip()
    text = user.rsplit("Question:" if "(decide)" in task else "Request:", 1)[1].strip()
    if task in ("# Task: assess (decide)", "# Task: generate"):  # the ambiguous question as clear: reading 1
        sql = SQL_1 if text == AMBIG else SQL_CLEAR
        out = {"is_valid": True, "reason": "r", "interpretations": [], "sql": sql, "assumptions": []}
    elif task == "# Task: plain":  # both readings of the ambiguous one; a wrong extra on the clear one
        main, alt = (SQL_1, SQL_2) if text == AMBIG else (SQL_CLEAR, WRONG)
        out = {"sql": main, "interpretation": "x", "assumptions": [], "alternatives": [{"sql": alt}]}
    else:
        raise AssertionError(task)
    return Completion(text=json.dumps(out), input_tokens=5, output_tokens=5)


def test_csv_loader_pairs_each_ambiguous_question_with_its_interpretations(folder):
    items = load_ambrosia(folder)
    # the test split: the ambiguous question, its two interpretations (unambiguous rows), the clear one
    assert [i.question for i in items] == [AMBIG, INTERP_1, INTERP_2, CLEAR]
    amb = items[0]
    assert amb.ambiguous and amb.ambig_type == "scope"
    assert amb.interpretations == [{"text": INTERP_1, "sql": SQL_1}, {"text": INTERP_2, "sql": SQL_2}]
    assert amb.db.is_file() and amb.db.name == "banks.sqlite"
    assert len(load_ambrosia(folder, split=None)) == 5


def test_methods_scored_as_the_paper_scores_ambrosia(folder, tmp_path):
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    model = FakeModel(reply)
    out = tmp_path / "run"
    records, manifest = run_ambrosia(folder, config, out, model=model,
                                     methods=["decide_then_answer", "plain", "decide_then_answer_vouch"])
    m = finish(out, records, manifest)
    assert (m["ambiguous"], m["unambiguous"]) == (1, 3)
    dta, plain = m["overall"]["decide_then_answer"], m["overall"]["plain"]
    # ambiguous: DtA returns reading 1 only (recall 1/2, not AllFound); plain returns both
    assert (dta["all_found"]["k"], dta["all_found"]["n"], dta["recall"]) == (0, 1, 0.5)
    assert (plain["all_found"]["k"], plain["recall"]) == (1, 1.0)
    # unambiguous (the two interpretation rows and the clear one): the script answers the two
    # interpretation rows with the clear query (wrong) and the clear one right; DtA returns one
    # query per question (1 of 3 right), plain two (its wrong extra too: 1 of 6)
    assert (dta["precision"]["k"], dta["precision"]["n"]) == (1, 3)
    assert (plain["precision"]["k"], plain["precision"]["n"]) == (1, 6)
    # SpecBridge's Decide-then-answer: the decide call, then one answer call for a clear question;
    # Vouch's saving answers it with the decide call's SQL
    assert dta["calls_per_question"] == 2 and plain["calls_per_question"] == 1
    assert m["overall"]["decide_then_answer_vouch"]["calls_per_question"] == 1
    assert "AllFound" in (out / "report.md").read_text()
    n = len(model.requests)
    assert replay(out, tmp_path / "replayed") == m and len(model.requests) == n


def test_jsonl_form_and_bad_inputs(tmp_path, folder):
    db = folder.parent / "scope" / "banks" / "banks.sqlite"
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "x", "db": str(db), "question": AMBIG, "ambiguous": True,
                                "interpretations": [{"sql": SQL_1}, {"text": INTERP_2, "sql": SQL_2}]}) + "\n")
    (item,) = load_ambrosia(path, split=None)
    assert item.id == "x" and item.ambiguous and [i["sql"] for i in item.interpretations] == [SQL_1, SQL_2]
    path.write_text(json.dumps({"question": "q", "db": str(db)}) + "\n")
    with pytest.raises(UserInputError, match="interpretations"):
        load_ambrosia(path, split=None)
    with pytest.raises(UserInputError, match="no AMBROSIA file"):
        load_ambrosia(tmp_path / "absent.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(UserInputError, match="not an AMBROSIA CSV"):
        load_ambrosia(bad)
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(UserInputError, match="model methods only"):
        run_ambrosia(folder, config, tmp_path / "r", model=FakeModel(reply), methods=["detectors"])


def test_cli_runs_ambrosia_and_replays(folder, tmp_path, monkeypatch):
    import argparse
    import sys
    import types

    from rich.console import Console

    from vouchsql import cli
    from vouchsql.evals.cli import register_choices

    module = types.ModuleType("scripted_ambrosia_model")
    module.reply = reply
    monkeypatch.setitem(sys.modules, "scripted_ambrosia_model", module)
    parser = argparse.ArgumentParser(prog="vouch")
    evals = parser.add_subparsers(dest="command").add_parser("eval").add_subparsers(dest="eval_command")
    register_choices(evals, cli._settings_parent())
    argv = ["eval", "choices", "--ambrosia", str(folder), "--out", str(tmp_path / "out"), "--cache-dir",
            str(tmp_path / "cache"), "--model", "py:scripted_ambrosia_model:reply", "--methods", "plain"]
    args = parser.parse_args(argv)
    args.argv = argv
    console = Console(width=200, record=True)
    assert args.handler(args, cli._config_from(args), console) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["methods"] == ["plain"] and metrics["overall"]["plain"]["all_found"]["k"] == 1
    args = parser.parse_args(["eval", "choices", "--replay", str(tmp_path / "out")])
    args.argv = []
    assert args.handler(args, cli._config_from(args), console) == 0
    assert json.loads((tmp_path / "out" / "replay" / "replay.json").read_text())["identical"]


def test_attachment_questions_ask_for_one_table_as_ambrosias_loader_does(tmp_path):
    from vouchsql.evals.ambrosia import ONE_TABLE

    ambig, narrow, broad = ("Give me dogs and cats who are orange.", "Give me all dogs and orange cats.",
                            "Give me orange dogs and orange cats.")
    path = tmp_path / "ambrosia.csv"
    rows = [{"question": ambig, "ambig_question": ambig, "gold_queries": "SELECT 1\n\nSELECT 2", "is_ambiguous": "True"},
            {"question": narrow, "ambig_question": ambig, "gold_queries": "SELECT 1", "is_ambiguous": "False"},
            {"question": broad + ONE_TABLE, "ambig_question": ambig, "gold_queries": "SELECT 2",
             "is_ambiguous": "False"}]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["question", "ambig_question", "gold_queries", "db_file", "is_ambiguous",
                                           "ambig_type", "split"])
        w.writeheader()
        for r in rows:
            w.writerow({**r, "db_file": "x.sqlite", "ambig_type": "attachment", "split": "test"})
    items = load_ambrosia(path)
    assert [i.question for i in items] == [ambig + ONE_TABLE, narrow + ONE_TABLE, broad + ONE_TABLE]
    # The interpretations still pair with their question, and the sentence is never doubled.
    assert [i["text"] for i in items[0].interpretations] == [narrow + ONE_TABLE, broad + ONE_TABLE]


def test_simulated_user_on_ambrosia(folder, tmp_path):
    """SpecBridge §7.2 on AMBROSIA: a user per interpretation of the ambiguous question and one
    per clear question; a user not shown theirs states it and that question is answered again."""
    def scripted(request):
        system = request.messages[0][1]
        user = [c for r, c in request.messages if r == "user"][0]
        if system.startswith("# Task: generate") and user.rsplit("Request:", 1)[1].strip() == INTERP_2:
            return Completion(text=json.dumps({"sql": SQL_2, "interpretation": "x", "assumptions": []}),
                              input_tokens=5, output_tokens=5)
        return reply(request)

    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    out = tmp_path / "run"
    records, manifest = run_ambrosia(folder, config, out, model=FakeModel(scripted), methods=["decide_then_answer"],
                                     simulated_user=True)
    two = finish(out, records, manifest)["two_turn"]["decide_then_answer"]
    # AMBIG shows reading 1: its user 1 turn, user 2 two (the second answer, SQL_2, is right) → 1.5;
    # INTERP_1 answered wrong twice → 2; INTERP_2 and CLEAR right at once → 1. Calls: 2 a question
    # (decide + answer), + 1 per second answer: (2.5 + 3 + 2 + 2) / 4.
    assert two["users"] == 5 and (two["final_accuracy"]["k"], two["final_accuracy"]["n"]) == (4, 5)
    assert two["turns_per_100"] == pytest.approx(100 * (1.5 + 2 + 1 + 1) / 4)
    assert two["calls_per_question"] == pytest.approx((2.5 + 3 + 2 + 2) / 4)
    assert "Two turns with a simulated user" in (out / "report.md").read_text()

"""``vouch eval choices --model … --methods …``: SpecBridge's methods, measures and two-turn
experiment on two request sets over the demo database, answered by a scripted function-backed
model whose every reply is fixed, so every cell of the report is computed by hand below."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from rich.console import Console

from vouchsql import cli
from vouchsql.errors import UserInputError
from vouchsql.evals.choices_model import RECORDS, finish, parse_methods, replay, run_choices_model
from vouchsql.evals.cli import register_choices
from vouchsql.llm import Completion, FakeModel
from vouchsql.settings import load_config

PA = "SELECT name, price FROM products ORDER BY price DESC LIMIT 3"
PB = "SELECT name, price FROM products WHERE price >= (SELECT price FROM products ORDER BY price DESC LIMIT 1 OFFSET 2)"
LA = "SELECT COUNT(*) FROM orders WHERE total > 100"
LB = "SELECT COUNT(*) FROM orders WHERE total >= 100"

TO = "What are the three most expensive products?"
TA = "List exactly three products from the top of the price list, picking any if prices tie."
TB = "List every product priced at or above the third-highest price."
CO = "Using 100 as the cutoff, how many orders are large?"
CA = "How many orders total more than 100?"
CB = "How many orders total 100 or more?"
CLAUSE_A = "Count orders over 100 only."
CLAUSE_B = "Count orders of 100 or more."

# The request each generate call answers -> its SQL. The phase-2 request of set C with B's
# clause is answered wrongly (LA), so the second turn can fail.
GENERATE = {TA: PA, TB: PB, CA: LA, CB: LB, CO: LA, f"{CO} {CLAUSE_A}": LA, f"{CO} {CLAUSE_B}": LA}
# decide: open T lists both readings; open C is (wrongly) clear and answered LA; CB is answered LA (wrong)
# by the decide call itself, which only decide_then_answer_vouch uses (SpecBridge's methods answer a
# clear request in a second call, from GENERATE).
DECIDE = {TO: [TA, TB], CO: LA, TA: PA, TB: PB, CA: LA, CB: LA}
# plain, by request and sample: (main SQL, alternatives, assumptions)
PLAIN = {TO: {0: (PA, [], ["The request could mean one tied row or all."]), 1: (PA, [PB], []), 2: (PA, [], [])},
         CO: (LA, [LB], []), TA: (PA, [], []), TB: (PB, [], []), CA: (LA, [LB], []), CB: (LB, [], [])}
# DtP's list of interpretations
LISTS = {TO: [TA, TB], CO: [CA, CB]}


def _after(text: str, mark: str) -> str:
    return text.rsplit(mark, 1)[1].strip()


def reply(request) -> Completion:
    system = request.messages[0][1]
    user = [c for r, c in request.messages if r == "user"][0]
    task = system.split("—")[0].strip()
    if task == "# Task: assess (decide)":
        q = _after(user, "Question:")
        got = DECIDE[q]
        if isinstance(got, list):
            out = {"is_valid": True, "reason": "r", "interpretations": [{"request": r, "clause": r} for r in got],
                   "sql": None}
        else:
            out = {"is_valid": True, "reason": "r", "interpretations": [], "sql": got, "interpretation": "as asked"}
    elif task == "# Task: generate":
        out = {"sql": GENERATE[_after(user, "Request:")], "interpretation": "as asked", "assumptions": []}
    elif task == "# Task: plain":
        entry = PLAIN[_after(user, "Request:")]
        sql, alts, assumptions = entry[request.sample] if isinstance(entry, dict) else entry
        out = {"sql": sql, "interpretation": "as asked", "assumptions": assumptions,
               "alternatives": [{"sql": a, "interpretation": "the other reading"} for a in alts]}
    elif task == "# Task: interpretations":
        q = _after(user, "Request:")
        out = {"interpretations": [{"request": r, "clause": r} for r in LISTS.get(q, [q])]}
    elif task == "# Task: missing":
        out = {"interpretations": []}
    elif task == "# Task: judge_named":
        out = {"names_choice": "could mean" in user, "reason": "r"}
    else:
        raise AssertionError(f"unexpected prompt {task!r}")
    # Fixed token counts, so tokens per request are calls × 12.
    return Completion(text=json.dumps(out), input_tokens=10, output_tokens=2)


def _sets(demo_db: Path) -> list[dict]:
    db = str(demo_db)
    return [{"id": "T", "db": db, "type": "ties", "open": TO, "specific_a": TA, "specific_b": TB,
             "sql_a": PA, "sql_b": PB},
            {"id": "C", "db": db, "type": "strict_cutoff", "open": CO, "specific_a": CA, "specific_b": CB,
             "sql_a": LA, "sql_b": LB, "clause_a": CLAUSE_A, "clause_b": CLAUSE_B}]


@pytest.fixture
def setup(tmp_path, demo_db):
    path = tmp_path / "sets.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _sets(demo_db)), encoding="utf-8")
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    return path, config


ALL = ["decide_then_answer", "plain", "three_samples", "decide_then_pick", "single_answer", "clarifying_question",
       "decide_then_search", "detectors", "decide_then_answer_vouch"]


def _k(p):
    return (p["k"], p["n"])


def test_every_method_and_measure_by_hand(setup, tmp_path):
    sets, config = setup
    model = FakeModel(reply)
    out = tmp_path / "run"
    records, manifest = run_choices_model(sets, config, out, model=model, methods=ALL, simulated_user=True,
                                          command="vouch eval choices --model py:… --simulated-user")
    m = finish(out, records, manifest)
    assert m["sets"] == 2 and m["named_by"] == "structured"
    o = m["overall"]

    dta = o["decide_then_answer"]
    # SpecBridge's budget: the decide call, then a generate call per interpretation or for the
    # clear request. Every specific request is answered right from GENERATE (CB: LB).
    assert _k(dta["accuracy"]) == (4, 4) and _k(dta["precision"]) == (4, 4)
    assert _k(dta["coverage"]) == (1, 2) and _k(dta["coverage_computable"]) == (1, 2)
    assert _k(dta["named"]) == (1, 2) and _k(dta["false_alarms"]) == (0, 4)
    # calls: T open 1 + 2, every other request 1 + 1: ((3+2+2)/3 + 2) / 2 = 13/6; 12 tokens per call
    assert dta["calls_per_request"] == pytest.approx(13 / 6) and dta["tokens_per_request"] == pytest.approx(26)

    vouch_dta = o["decide_then_answer_vouch"]
    # Vouch's saving: the decide call's SQL answers a clear request. TA, TB, CA right, CB answered
    # LA (A's result) by the decide call: 3/4, and that is CB's false alarm.
    assert _k(vouch_dta["accuracy"]) == (3, 4) and _k(vouch_dta["precision"]) == (3, 4)
    assert _k(vouch_dta["coverage_computable"]) == (1, 1) and _k(vouch_dta["false_alarms"]) == (1, 4)
    # calls: T open 1 + 2, every other request 1: ((3+1+1)/3 + 1) / 2
    assert vouch_dta["calls_per_request"] == pytest.approx(4 / 3)

    plain = o["plain"]
    assert _k(plain["accuracy"]) == (4, 4) and _k(plain["precision"]) == (4, 5)  # CA also returned LB
    assert _k(plain["coverage"]) == (1, 2) and _k(plain["named"]) == (1, 2) and _k(plain["false_alarms"]) == (1, 4)
    assert plain["calls_per_request"] == 1 and _k(plain["coverage_computable"]) == (1, 2)

    three = o["three_samples"]  # sample 1 of T's open request adds PB
    assert _k(three["coverage"]) == (2, 2) and _k(three["named"]) == (2, 2)
    assert _k(three["precision"]) == (4, 5) and _k(three["false_alarms"]) == (1, 4) and three["calls_per_request"] == 3

    dtp = o["decide_then_pick"]
    assert _k(dtp["coverage"]) == (2, 2) and _k(dtp["accuracy"]) == (4, 4) and _k(dtp["false_alarms"]) == (0, 4)
    assert dtp["calls_per_request"] == pytest.approx(7 / 3)  # open 1 + 2, specific 1 + 1

    single = o["single_answer"]
    assert _k(single["coverage"]) == (0, 2) and _k(single["named"]) == (0, 2)
    assert _k(single["precision"]) == (4, 4) and _k(single["false_alarms"]) == (0, 4)

    clar = o["clarifying_question"]
    assert _k(clar["coverage"]) == (0, 2) and _k(clar["asked_open"]) == (1, 2) and _k(clar["named"]) == (1, 2)
    # clear requests: the decide call, then a generate call (CB: LB, right); T's open one asks (1 call)
    assert _k(clar["accuracy"]) == (4, 4) and clar["calls_per_request"] == pytest.approx(((1 + 2 + 2) / 3 + 2) / 2)

    dts = o["decide_then_search"]  # T open: decide, list, missing, 2 answers; clear requests 2 calls
    assert _k(dts["coverage"]) == (1, 2) and dts["calls_per_request"] == pytest.approx(((5 + 2 + 2) / 3 + 2) / 2)

    det = o["detectors"]  # handed A: no accuracy; both sets found, no alarm on the specific wording
    assert "accuracy" not in det and _k(det["coverage"]) == (2, 2) and det["calls_per_request"] == 0
    assert _k(det["false_alarms"]) == (0, 4)

    by_type = m["per_type"]
    assert _k(by_type["ties"]["decide_then_answer"]["coverage"]) == (1, 1)
    assert _k(by_type["strict_cutoff"]["decide_then_answer"]["coverage"]) == (0, 1)
    assert _k(by_type["strict_cutoff"]["plain"]["false_alarms"]) == (1, 2)

    diffs = m["paired"]["differences"]
    assert m["paired"]["reference"] == "decide_then_answer"
    assert diffs["plain"]["accuracy"]["diff"] == pytest.approx(0.0)
    assert diffs["plain"]["coverage"]["diff"] == pytest.approx(0.0)
    assert diffs["plain"]["calls"]["diff"] == pytest.approx(13 / 6 - 1)
    assert diffs["single_answer"]["coverage"]["diff"] == pytest.approx(0.5)
    lo, hi = diffs["single_answer"]["coverage"]["ci"]
    assert lo <= 0.5 <= hi

    two = m["two_turn"]
    # Every request has its user: the open one two (A, B), each specific one its own; the second
    # answer is the specific request (SpecBridge §7.2), here always right. Per request, averaged
    # over the open request's two users, then over a set's three requests, then over sets.
    # DtA: T shows both readings, its specific ones are right: 1 turn each. C's open answer
    # shows A only: (1 + 2) / 2 = 1.5 turns; its specific ones 1 → (1.5 + 1 + 1) / 3.
    assert two["decide_then_answer"]["turns_per_100"] == pytest.approx(100 * (1 + 3.5 / 3) / 2)
    assert two["decide_then_answer"]["users"] == 8 and _k(two["decide_then_answer"]["final_accuracy"]) == (8, 8)
    # calls: T (3 + 2 + 2) / 3; C: open (2 + (2 + 1)) / 2 = 2.5, specific 2 and 2
    assert two["decide_then_answer"]["calls_per_request"] == pytest.approx((7 / 3 + 6.5 / 3) / 2)
    # plain: T's open answer shows A only (1.5), C's both (1)
    assert two["plain"]["turns_per_100"] == pytest.approx(100 * (3.5 / 3 + 1) / 2)
    # clarifying question: T's open request asks back (2 turns for both users), C's shows A only
    assert two["clarifying_question"]["turns_per_100"] == pytest.approx(100 * (4 / 3 + 3.5 / 3) / 2)
    assert _k(two["clarifying_question"]["final_accuracy"]) == (8, 8)
    assert two["single_answer"]["turns_per_100"] == pytest.approx(100 * 3.5 / 3)
    assert two["three_samples"]["turns_per_100"] == two["decide_then_pick"]["turns_per_100"] == pytest.approx(100)
    assert two["paired"]["differences"]["clarifying_question"]["turns"]["diff"] == pytest.approx(-100 / 6)
    assert "detectors" not in two
    rec_c = next(r for r in records if r["id"] == "C")
    assert rec_c["second"]["b"]["request"] == CB and not rec_c["second"]["b"]["from_clause"]
    assert "specific_b" not in rec_c["second"], "the same request: one second answer for both users"
    rec_t = next(r for r in records if r["id"] == "T")
    assert rec_t["second"]["a"]["request"] == TA and not rec_t["second"]["a"]["from_clause"]

    report = (out / "report.md").read_text()
    assert "Table 5/6" in report and "Two turns with a simulated user" in report
    assert "from the structured output" in report and "Paired differences" in report

    # Replay: the same numbers, no model call and no SQL.
    calls = len(model.requests)
    assert replay(out, tmp_path / "replayed") == m
    assert len(model.requests) == calls
    # Rerun into the same folder: nothing new.
    again, _ = run_choices_model(sets, config, out, model=model, methods=ALL, simulated_user=True)
    assert len(model.requests) == calls and [r["key"] for r in again] == ["T", "C"]


def test_named_by_a_judge_reads_the_words(setup, tmp_path):
    sets, config = setup
    records, manifest = run_choices_model(sets, config, tmp_path / "run", model=FakeModel(reply), methods=["plain"],
                                          judge=FakeModel(reply, name="judge"))
    m = finish(tmp_path / "run", records, manifest)
    assert m["named_by"] == "judge" and manifest["parameters"]["judge"] == "fake:judge"
    by_id = {r["id"]: r["methods"]["plain"] for r in records}
    # T's open answer says "could mean" in an assumption: named, though it returned no alternative;
    # C's returned B's query but said nothing: not named by the judge.
    assert by_id["T"]["open"]["named_judge"] is True and by_id["C"]["open"]["named_judge"] is False
    assert _k(m["overall"]["plain"]["named"]) == (1, 2)
    assert "judge model `fake:judge`" in (tmp_path / "run" / "report.md").read_text()


def test_bad_inputs(setup, tmp_path):
    sets, config = setup
    with pytest.raises(UserInputError, match="unknown method"):
        parse_methods("plain,guess")
    with pytest.raises(UserInputError, match="need --model"):
        run_choices_model(sets, config, tmp_path / "x", model=None, methods=["plain"])
    with pytest.raises(UserInputError, match="--k"):
        run_choices_model(sets, config, tmp_path / "x", model=FakeModel(reply), methods=["plain"], k=0)
    assert parse_methods(None)[0] == "decide_then_answer"


def test_cli_runs_the_model_methods_and_replays(setup, tmp_path, monkeypatch):
    import sys
    import types

    sets, _ = setup
    module = types.ModuleType("scripted_choice_model")
    module.reply = reply
    monkeypatch.setitem(sys.modules, "scripted_choice_model", module)
    parser = argparse.ArgumentParser(prog="vouch")
    evals = parser.add_subparsers(dest="command").add_parser("eval").add_subparsers(dest="eval_command")
    register_choices(evals, cli._settings_parent())
    argv = ["eval", "choices", "--sets", str(sets), "--out", str(tmp_path / "out"), "--cache-dir",
            str(tmp_path / "cache"), "--model", "py:scripted_choice_model:reply", "--methods",
            "decide_then_answer,single_answer"]
    args = parser.parse_args(argv)
    args.argv = argv
    console = Console(width=200, record=True)
    assert args.handler(args, cli._config_from(args), console) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["methods"] == ["decide_then_answer", "single_answer"]
    assert metrics["overall"]["single_answer"]["coverage"]["k"] == 0
    assert (tmp_path / "out" / RECORDS).is_file()
    args = parser.parse_args(["eval", "choices", "--replay", str(tmp_path / "out")])
    args.argv = []
    assert args.handler(args, cli._config_from(args), console) == 0
    assert json.loads((tmp_path / "out" / "replay" / "replay.json").read_text())["identical"]


def test_the_clause_second_turn_is_vouchs_phase_2(setup, tmp_path):
    """``--second-turn clause``: the open request plus the interpretation's clause (Vouch's
    phase 2); the specific requests' users still get the specific request answered."""
    sets, config = setup
    out = tmp_path / "run"
    records, manifest = run_choices_model(sets, config, out, model=FakeModel(reply), methods=["decide_then_answer"],
                                          simulated_user=True, second_turn="clause")
    assert manifest["parameters"]["second_turn"] == "clause"
    rec_c = next(r for r in records if r["id"] == "C")
    assert rec_c["second"]["b"]["request"] == f"{CO} {CLAUSE_B}" and rec_c["second"]["b"]["from_clause"]
    assert rec_c["second"]["specific_b"]["request"] == CB
    two = finish(out, records, manifest)["two_turn"]["decide_then_answer"]
    # C's open user b: its second answer (the clause request, answered LA) is wrong: 7 of 8 end right.
    assert _k(two["final_accuracy"]) == (7, 8)
    with pytest.raises(UserInputError, match="--second-turn"):
        run_choices_model(sets, config, tmp_path / "x", model=FakeModel(reply), methods=["plain"],
                          simulated_user=True, second_turn="other")

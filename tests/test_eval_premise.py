"""``vouch eval premise`` with a function-backed fake model (``vouchsql.llm.FakeModel``): every
measure against counts worked out from the fake's scripted behaviour, the paired differences
and McNemar tests, the built-in set, and ``--replay`` with zero model calls."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from vouchsql.cli import main
from vouchsql.evals import premise as P
from vouchsql.evals.datasets import FLAW_CODES, load_premise
from vouchsql.llm import FakeModel
from vouchsql.settings import load_config

ALL_ITEMS = load_premise(P.BUILTIN)
BAD_ORIGINAL = "E42-09-original"  # the assess step's reply to it is unreadable, twice


def shows(schema: str, element: str) -> bool:
    """Whether a schema text (CREATE TABLE statements, or `vouch ask`'s profile) shows a table
    or ``table.column``."""
    table, _, column = element.partition(".")
    for block in re.split(r"\n(?=CREATE |TABLE )", schema):
        head = re.match(r"(?:CREATE (?:TABLE|VIEW) |TABLE )(\w+)", block.strip())
        if head and head.group(1) == table:
            return not column or bool(re.search(rf"^\s+(?:- )?{column}[: ]", block, re.M))
    return False


def item_for(question: str, user: str):
    """The item a request asks about; an E3.2 question shares its original's words, so the schema
    shown (without the withheld element, or whole) tells them apart."""
    matches = [i for i in ALL_ITEMS if i.question == question]
    if len(matches) == 1:
        return matches[0]
    flawed = next(i for i in matches if i.flawed)
    return flawed if not all(shows(user, w) for w in flawed.withhold) else next(i for i in matches if not i.flawed)


def scripted(request) -> str:
    """Scripted replies, by setting, that make every measure countable by hand:

    - base: SQL for everything; abstains (sql null) on E2.1; on E3.2 writes SQL on a column
      that does not exist (behaviour 1, invalid SQL);
    - implicit: E1.x judged valid with SQL (not detected); E2.2 judged invalid *with* SQL
      (hedged, behaviour 1); other flaws invalid with the right code and no SQL; originals valid
      with the gold SQL, except E4.2 originals, wrongly judged invalid (E4.2, no SQL);
    - explicit: every question invalid, code E3.1, no SQL;
    - vouch (assess): flawed invalid with the right code, except E1.1, answered as two
      interpretations; originals valid; one original unreadable (malformed after the repair).
    """
    system = request.messages[0][1]
    user = [c for r, c in request.messages if r == "user"][0]
    question = user.rsplit("Question:", 1)[1].strip()
    item = item_for(question, user)
    if "Task: assess" in system:
        if item.id == BAD_ORIGINAL:
            return "I think this is fine."
        if item.flawed and item.flaw == "E1.1":
            return json.dumps({"is_valid": True, "flaw_code": None, "reason": "open choice", "clarification": None,
                               "interpretations": [{"request": question + " (reading A)", "clause": "A"},
                                                   {"request": question + " (reading B)", "clause": "B"}]})
        if item.flawed:
            return json.dumps({"is_valid": False, "flaw_code": item.flaw, "reason": "flawed", "clarification": "Which?",
                               "interpretations": []})
        return json.dumps({"is_valid": True, "flaw_code": None, "reason": "fine", "clarification": None,
                           "interpretations": []})
    if "contains logically flawed" in system:
        return json.dumps({"sql": None, "is_valid": False, "flaw_code": "E3.1", "reason": "told so"})
    if "may contain errors" in system:
        if item.flawed and item.flaw.startswith("E1"):
            return json.dumps({"sql": "SELECT COUNT(*) FROM orders", "is_valid": True, "flaw_code": None, "reason": "ok"})
        if item.flawed and item.flaw == "E2.2":
            return json.dumps({"sql": "SELECT COUNT(*) FROM orders", "is_valid": False, "flaw_code": "E2.2",
                               "reason": "hedged"})
        if item.flawed:
            return json.dumps({"sql": None, "is_valid": False, "flaw_code": item.flaw, "reason": "flawed"})
        if item.pair_id.startswith("E42"):
            return json.dumps({"sql": None, "is_valid": False, "flaw_code": "E4.2", "reason": "needs knowledge"})
        return json.dumps({"sql": item.gold_sql, "is_valid": True, "flaw_code": None, "reason": "ok"})
    # base
    if item.flawed and item.flaw == "E2.1":
        return '{"sql": null, "reason": "contradiction"}'
    if item.flawed and item.flaw == "E3.2":
        return "```json\n" + json.dumps({"sql": "SELECT phone FROM customers", "reason": "r"}) + "\n```"
    return json.dumps({"sql": item.gold_sql or "SELECT COUNT(*) FROM orders", "reason": "r"})


def _config(tmp: Path):
    return load_config(env={}, cwd=tmp, cache_dir=str(tmp / "cache"), no_model_cache=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory, demo_db):
    tmp = tmp_path_factory.mktemp("premise")
    fake = FakeModel(scripted)
    out = tmp / "run"
    config = _config(tmp)
    # "demo" in the built-in set is the demo database, built into the cache folder.
    records, manifest = P.run_premise(P.BUILTIN, config, out, model=fake, model_name="fake", command="test",
                                      parameters={"settings": list(P.SETTINGS), "bootstrap": 500, "seed": 1},
                                      det_from="structured")
    metrics, _ = P.finish(out, records, manifest, list(P.SETTINGS), replicates=500, seed=1)
    return fake, records, metrics, out


def test_every_question_is_asked_once_per_setting(run):
    fake, records, metrics, _ = run
    assert len(records) == 162 * 4 and not any(r.get("skipped") for r in records)
    assert metrics["n_pairs"] == 81 and metrics["n_flawed"] == 81 and metrics["n_original"] == 81
    # One call per question and setting, plus the assess step's one repair of the unreadable reply.
    assert len(fake.requests) == 162 * 4 + 1
    assert {r.temperature for r in fake.requests} == {0.0}
    # The paper's settings see CREATE TABLE statements; the assess step sees `vouch ask`'s profile.
    users = {("Task: assess" in r.messages[0][1]): [c for role, c in r.messages if role == "user"][0]
             for r in fake.requests}
    assert "CREATE TABLE customers" in users[False] and "CREATE TABLE" not in users[True]
    assert "customers" in users[True]


def test_base_measures(run):
    _, _, metrics, _ = run
    f, o = metrics["settings"]["base"]["flawed"], metrics["settings"]["base"]["original"]
    assert f["sql_levels"] == [63, 9, 9]  # E3.2's SQL does not run: 1; E2.1 abstains: 2
    assert f["sql"] == pytest.approx((9 * 1 + 9 * 2) / (81 * 2))
    assert f["det"] == pytest.approx(9 / 81)
    assert f["type"] is None and f["type_ci"] == [None, None], "no judges: TYPE is not measured"
    assert o["gen"] == 1.0 and o["val"] is None
    assert o["ex"] == 1.0 and o["ex_given_gen"] == 1.0


def test_implicit_measures(run):
    _, _, metrics, _ = run
    f, o = metrics["settings"]["implicit"]["flawed"], metrics["settings"]["implicit"]["original"]
    assert f["sql_levels"] == [18, 9, 54]
    assert f["sql"] == pytest.approx((9 + 54 * 2) / 162)
    assert f["det"] == pytest.approx(63 / 81)
    assert f["type"] is None, "the paper's prompts ask for no flaw code; without judges TYPE is not measured"
    assert o["gen"] == pytest.approx(72 / 81) and o["val"] == pytest.approx(72 / 81)
    assert o["ex"] == pytest.approx(72 / 81) and o["ex_given_gen"] == 1.0
    assert metrics["settings"]["implicit"]["by_flaw"]["E1.1"]["det"] == 0.0
    assert metrics["settings"]["implicit"]["by_flaw"]["E2.2"]["sql"] == 0.5


def test_explicit_measures(run):
    _, _, metrics, _ = run
    f, o = metrics["settings"]["explicit"]["flawed"], metrics["settings"]["explicit"]["original"]
    assert f["det"] == 1.0 and f["sql"] == 1.0
    assert f["type"] is None and f["type_category"] is None  # its volunteered "E3.1" is not read
    assert o["gen"] == 0.0 and o["val"] == 0.0 and o["ex"] == 0.0
    by = metrics["settings"]["explicit"]["by_flaw"]
    assert by["E3.1"]["type"] is None and by["E2.1"]["det"] == 1.0


def test_vouch_measures(run):
    _, records, metrics, _ = run
    f, o = metrics["settings"]["vouch"]["flawed"], metrics["settings"]["vouch"]["original"]
    assert f["det"] == pytest.approx(72 / 81), "E1.1 answered as interpretations is not a detection"
    assert f["as_interpretations"] == 9
    assert f["type"] == pytest.approx(72 / 81)
    assert f["sql_levels"] == [9, 0, 72]
    assert o["malformed"] == 1 and o["n"] == 81
    assert o["gen"] == 1.0 and o["val"] == 1.0 and o["ex"] is None
    bad = next(r for r in records if r["key"] == f"{BAD_ORIGINAL}/vouch")
    assert "could not be read" in bad["error"]
    assert metrics["model_errors"] == 1


def test_paired_differences_and_mcnemar(run):
    _, _, metrics, _ = run
    d = metrics["paired"]["explicit-implicit"]
    assert d["det"]["diff"] == pytest.approx(18 / 81)
    assert d["det"]["ci"][0] <= 18 / 81 <= d["det"]["ci"][1]
    assert d["gen"]["diff"] == pytest.approx(-72 / 81)
    assert d["gen"]["ci"][1] < 0, "Explicit suppresses generation on originals"
    assert d["mcnemar_det"] == {"a_only": 0, "b_only": 18, "p": pytest.approx(2 * 0.5**18)}
    assert d["mcnemar_gen"]["a_only"] == 72 and d["mcnemar_gen"]["b_only"] == 0
    assert set(metrics["paired"]) == {"implicit-base", "explicit-base", "vouch-base", "explicit-implicit",
                                      "vouch-implicit", "vouch-explicit"}
    assert "type" not in metrics["paired"]["implicit-base"], "Base TYPE is not measured, so no difference"


def test_per_flaw_intervals(run):
    _, _, metrics, _ = run
    by = metrics["settings"]["implicit"]["by_flaw"]
    assert set(by) == set(FLAW_CODES) and all(e["n"] == 9 for e in by.values())
    for e in by.values():
        lo, hi = e["det_ci"]
        assert lo <= e["det"] <= hi


def test_manifest_hashes_every_prompt(run):
    _, _, _, out = run
    man = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert set(man["prompts"]) == {"base", "implicit", "explicit", "vouch(assess)"}
    assert all(len(h) == 64 for h in man["prompts"].values())
    assert man["model"] == "fake" and man["databases"]["demo"]["sha256"]


def test_report_holds_the_numbers(run):
    _, _, metrics, out = run
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    f = metrics["settings"]["implicit"]["flawed"]
    cell = f"{f['det']:.3f} ({f['det_ci'][0]:.3f} to {f['det_ci'][1]:.3f})"
    assert cell in md and cell in html
    assert "How this departs from PremiseSQL" in md
    assert "data:image/png;base64," in html and "<script" not in html
    assert (out / "figures" / "det_by_flaw.png").is_file()


def test_replay_makes_no_model_call_and_reproduces_every_number(run, tmp_path, monkeypatch):
    fake, _, metrics, out = run
    before = len(fake.requests)
    from vouchsql.llm import LLM

    def no_calls(*a, **k):
        raise AssertionError("replay called the model")

    monkeypatch.setattr(LLM, "complete", no_calls)
    monkeypatch.setattr(LLM, "complete_json", no_calls)
    code = main(["eval", "premise", "--replay", str(out), "--out", str(tmp_path / "replayed")])
    assert code == 0
    assert len(fake.requests) == before
    again = json.loads((tmp_path / "replayed" / "metrics.json").read_text(encoding="utf-8"))
    assert again == json.loads((out / "metrics.json").read_text(encoding="utf-8")) == metrics
    assert json.loads((tmp_path / "replayed" / "replay.json").read_text(encoding="utf-8"))["identical"] is True


def test_resume_asks_only_what_is_missing(tmp_path, demo_db):
    pairs = [line for line in P.BUILTIN.read_text(encoding="utf-8").splitlines()][:4]
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(pairs) + "\n", encoding="utf-8")
    config = _config(tmp_path)
    out = tmp_path / "run"
    fake = FakeModel(scripted)
    records, _ = P.run_premise(small, config, out, model=fake, settings=["implicit", "explicit"],
                               det_from="structured")
    assert len(records) == 8 and len(fake.requests) == 8
    lines = (out / P.RECORDS).read_text(encoding="utf-8").splitlines()
    (out / P.RECORDS).write_text("\n".join(lines[:5]) + "\n", encoding="utf-8")
    fake2 = FakeModel(scripted)
    records2, _ = P.run_premise(small, config, out, model=fake2, settings=["implicit", "explicit"],
                                det_from="structured")
    assert len(records2) == 8 and len(fake2.requests) == 3


def test_cli_with_a_python_model(tmp_path, capsys, monkeypatch, demo_db, clean_env):
    # A module of the user's own, named on the command line as py:my_premise_model:fn.
    (tmp_path / "my_premise_model.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('scripted_replies', {str(Path(__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "fn = module.scripted\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(P.BUILTIN.read_text(encoding="utf-8").splitlines()[:6]) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    code = main(["eval", "premise", "--input", str(small), "--model", "py:my_premise_model:fn", "--out", str(out),
                 "--settings", "base,explicit", "--det-from", "structured", "--cache-dir", str(tmp_path / "cache"), "--no-model-cache",
                 "--bootstrap", "100"])
    text, err = capsys.readouterr()
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics["settings"]) == {"base", "explicit"}
    assert metrics["settings"]["explicit"]["flawed"]["det"] == 1.0
    assert "Premise critique" in text and "structured-output reading" in text


@pytest.mark.parametrize("args, needle", [
    ([], "needs a model"),
    (["--model", "py:no_such_module_xyz:fn"], "no_such_module_xyz"),
    (["--model", "nonsense", "--det-from", "structured"], "provider:model"),
    (["--model", "py:json:loads", "--settings", "typo"], "typo"),
    (["--model", "py:json:loads"], "--det-from structured"),
    (["--model", "py:json:loads", "--judges", "py:json:loads"], "two judge models"),
])
def test_cli_bad_input_is_exit_2(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code = main(["eval", "premise", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "o")] + args)
    assert code == 2
    assert needle in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# Reading replies and the built-in set
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("setting, text, expected", [
    ("base", '{"sql": null, "reason": "no"}', {"sql": None, "reason": "no"}),
    ("base", 'Sure! ```json\n{"sql": "SELECT 1", "reason": "r",}\n```', {"sql": "SELECT 1", "reason": "r"}),
    ("implicit", '{"sql": "", "is_valid": "false", "flaw_code": "e3.1 missing", "reason": ""}',
     {"sql": None, "reason": "", "is_valid": False}),
    ("implicit", '{"sql": "SELECT 1", "reason": "r"}', {"malformed": "'is_valid' is not true or false"}),
    ("base", "no json here", None),
    ("base", '{"reason": "r"}', {"malformed": "no 'sql' field"}),
])
def test_read_reply(setting, text, expected):
    got = P.read_reply(setting, text)
    if expected is None:
        assert "malformed" in got
    else:
        assert got == expected


def test_builtin_set_pairs_nine_flawed_per_code_with_runnable_originals(demo_db):
    items = load_premise(P.BUILTIN)
    flawed = [i for i in items if i.flawed]
    originals = {i.pair_id: i for i in items if not i.flawed}
    assert Counter(i.flaw for i in flawed) == {code: 9 for code in FLAW_CODES}
    assert len(originals) == len(flawed) == 81
    assert {i.pair_id for i in flawed} == set(originals), "each flawed question has its valid original"
    assert all(i.db == "demo" for i in items)
    conn = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    try:
        for o in originals.values():
            rows = conn.execute(o.gold_sql).fetchall()
            assert rows and any(v not in (None, 0) for v in rows[0]), (o.id, o.gold_sql, rows[:2])
    finally:
        conn.close()
    # E3.2 keeps its original's words and withholds an element the gold SQL needs (PremiseSQL
    # App. C.5); every other question appears once.
    e32 = [i for i in flawed if i.flaw == "E3.2"]
    for i in e32:
        assert i.question == originals[i.pair_id].question and i.withhold
        for w in i.withhold:
            assert w.split(".")[-1] in originals[i.pair_id].gold_sql, (i.id, w)
    assert all(not i.withhold for i in items if i.flaw != "E3.2")
    questions = [i.question for i in items if i.flaw != "E3.2"]
    assert len(set(questions)) == len(questions), "no other question appears twice"


def test_measure_sql_behaviour_levels():
    base = {"setting": "implicit", "label": "flawed", "flaw": "E2.1", "gold_sql": None}
    ok = '{"sql": "SELECT 1", "is_valid": true, "flaw_code": null, "reason": ""}'
    hedged = '{"sql": "SELECT 1", "is_valid": false, "flaw_code": "E2.1", "reason": ""}'
    none = '{"sql": null, "is_valid": false, "flaw_code": "E2.1", "reason": ""}'
    assert P.measure({**base, "raw": ok})["sql"] == 0
    assert P.measure({**base, "raw": ok, "sql_error": "no such column"})["sql"] == 1
    assert P.measure({**base, "raw": hedged})["sql"] == 1
    m = P.measure({**base, "raw": none})
    assert (m["sql"], m["det"], m["type"]) == (2, 1, None)

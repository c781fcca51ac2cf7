"""``vouch eval premise --paper premisesql``: the paper's protocol end to end through the CLI, with a
scripted model, two scripted evaluator judges and two scripted mechanism judges (plain functions
named as ``py:module:function``, the same function-backed fake the other premise tests use).

Four pairs from the built-in set, one flawed question each of E1.1, E2.1, E3.2 (schema withheld)
and E4.2, asked under Base, Implicit and Explicit. Every reply, every judge label and every
mechanism verdict is scripted below; every printed cell of Tables 3 and 4, the judges' κ and the
mechanism counts are worked out by hand in the tests' comments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vouchsql.cli import main
from vouchsql.evals import premise as P
from vouchsql.evals import premise_judges as J

PAIRS = {"E11-02": "P1", "E21-01": "P2", "E32-01": "P3", "E42-01": "P4"}
ROWS = [json.loads(line) for line in P.BUILTIN.read_text(encoding="utf-8").splitlines()]
SMALL = [r for r in ROWS if r["pair_id"] in PAIRS]
BY_QUESTION: dict[str, list[dict]] = {}
for _r in SMALL:
    BY_QUESTION.setdefault(_r["question"], []).append(_r)
ORDERS_STORE_ID = "store_id INTEGER NOT NULL"  # orders.store_id as the CREATE TABLE text shows it

# -- the model under test --------------------------------------------------------------------------
# Flawed questions, per setting: (sql or None, is_valid) — the reason carries a [setting/Pn] tag the
# scripted judges read back.
WEST_SQL = "SELECT COUNT(*) FROM orders o JOIN stores s ON s.store_id = o.store_id WHERE s.region = 'West'"
FLAWED = {
    "base": {"P1": (WEST_SQL, None), "P2": ("SELECT COUNT(*) FROM orders WHERE order_date < '2023-01-01'", None),
             "P3": ("SELECT name FROM stores LIMIT 1", None), "P4": (None, None)},
    "implicit": {"P1": (WEST_SQL, True), "P2": (None, False), "P3": (None, False),
                 "P4": ("SELECT COUNT(*) FROM orders WHERE order_date = '2024-07-04'", False)},
    "explicit": {"P1": (None, False), "P2": (None, False), "P3": (None, False), "P4": (None, False)},
}
# Originals: (generates the gold SQL?, is_valid).
ORIGINAL = {
    "base": {"P1": (True, None), "P2": (True, None), "P3": (True, None), "P4": (True, None)},
    "implicit": {"P1": (True, True), "P2": (True, True), "P3": (True, True), "P4": (False, False)},
    "explicit": {"P1": (True, True), "P2": (True, False), "P3": (False, False), "P4": (False, False)},
}
REASONS = {"P1": "I took the West to mean the stores' region column.", "P2": "Counted the orders by date.",
           "P3": "The stores table lists each store.", "P4": "Holidays are not in the database."}


def _setting(system: str) -> str:
    if "contains logically flawed" in system:
        return "explicit"
    return "implicit" if "may contain errors" in system else "base"


def model(request) -> str:
    system, user = request.messages[0][1], request.messages[1][1]
    setting = _setting(system)
    question = user.rsplit("Question:", 1)[1].strip()
    rows = BY_QUESTION[question]
    # E3.2 keeps its original's words: the flawed one is asked without orders.store_id.
    if len(rows) == 1:
        flawed = rows[0]
    else:
        flawed = next(r for r in rows if (r["label"] == "flawed") == (ORDERS_STORE_ID not in user))
    pid = PAIRS[flawed["pair_id"]]
    if flawed["label"] == "flawed":
        sql, valid = FLAWED[setting][pid]
    else:
        gen, valid = ORIGINAL[setting][pid]
        sql = flawed["gold_sql"] if gen else None
    reply = {"sql": sql, "reason": f"[{setting}/{pid}] {REASONS[pid]}"}
    if setting != "base":
        reply["is_valid"] = valid
    return json.dumps(reply)


# -- the evaluator judges: (sql_behavior, detection, type_identification) -------------------------
JUDGE_A = {
    "base": {"P1": (0, 0, 0), "P2": (0, 1, 1), "P3": (0, 0, 0), "P4": (2, 1, 1)},
    "implicit": {"P1": (0, 0, 0), "P2": (2, 1, 1), "P3": (2, 1, 0), "P4": (1, 1, 1)},
    "explicit": {"P1": (2, 1, 0), "P2": (2, 1, 1), "P3": (2, 1, 1), "P4": (2, 1, 1)},
}
JUDGE_B = {
    "base": {"P1": (0, 0, 0), "P2": (0, 0, 0), "P3": (0, 0, 0), "P4": (2, 1, 0)},
    # P1: TYPE 1 with DET 0 — App. B.2 forces TYPE to 0.
    "implicit": {"P1": (0, 0, 1), "P2": (2, 1, 1), "P3": (2, 1, 1), "P4": (1, 1, 1)},
    "explicit": {"P1": (2, 1, 0), "P2": (2, 1, 1), "P3": (2, 1, 1), "P4": (2, 0, 0)},
}
TAG = re.compile(r"\[(base|implicit|explicit)/(P\d)\]")


def _judge(table):
    def judge(request) -> str:
        system, user = request.messages[0][1], request.messages[1][1]
        setting, pid = TAG.search(user).groups()
        if "Task: premise_mechanism" in system:
            return json.dumps(table(setting, pid, user))
        assert "Task: premise_judge" in system
        s, d, t = table[setting][pid]
        return json.dumps({"sql_behavior": s, "detection": d, "type_identification": t, "explanation": "scripted"})
    return judge


judge_a = _judge(JUDGE_A)
judge_b = _judge(JUDGE_B)


# -- the mechanism judges ----------------------------------------------------------------------------
def _verdict(verdict="not_supported", target="", q="", r="", c="", basis="", complete=False, partial=False,
             replacement=False) -> dict:
    return {"verdict": verdict, "target": target, "transformation": "", "context_basis": basis,
            "question_quote": q, "response_quote": r, "context_quote": c, "target_complete_explicit": complete,
            "partial_implementation_remains": partial, "concrete_replacement": replacement, "explanation": "s"}


def _none() -> dict:
    return {m: _verdict() for m in J.MECHANISMS}


M01_WEST = _verdict("supported", "the West", q="the West", r="the stores' region", replacement=True)


def mech_x(setting, pid, user):
    out = _none()
    if (setting, pid) == ("base", "P1"):
        out["M01"] = M01_WEST
    elif (setting, pid) == ("base", "P3"):
        # Counterevidence quoted from the schema the model saw (orders without store_id): valid.
        out["M03"] = _verdict("supported", "store", r="The stores table lists each store.",
                              c="CREATE TABLE stores", basis="schema shown")
    elif (setting, pid) == ("implicit", "P1"):
        # M01 and M04 on the same requirement: mutually exclusive, so post-processing drops both.
        out["M01"] = M01_WEST
        out["M04"] = _verdict("supported", "the West", q="the West", r="the stores' region", complete=True)
    return out


def mech_y(setting, pid, user):
    out = _none()
    if (setting, pid) in (("base", "P1"), ("implicit", "P1")):
        out["M01"] = M01_WEST
    elif (setting, pid) == ("base", "P3"):
        # The quote is orders.store_id, which was withheld from the model: not model-visible, dropped.
        out["M03"] = _verdict("supported", "store", r="The stores table lists each store.",
                              c=ORDERS_STORE_ID, basis="schema shown")
    elif (setting, pid) == ("explicit", "P1"):
        # Complete abstention alone is not M04: dropped.
        out["M04"] = _verdict("supported", "the West", q="the West", r="[explicit/P1]", complete=True)
    return out


mech_x_fn = _judge(mech_x)
mech_y_fn = _judge(mech_y)


# -- a second model and judge pair, for the tables over several runs ----------------------------------
def abstainer(request) -> str:
    """Judges every question invalid and writes no SQL (the tag tells the judges which reply)."""
    system, user = request.messages[0][1], request.messages[1][1]
    setting = _setting(system)
    question = user.rsplit("Question:", 1)[1].strip()
    pid = PAIRS[BY_QUESTION[question][0]["pair_id"]]
    reply = {"sql": None, "reason": f"[{setting}/{pid}] Not answerable."}
    if setting != "base":
        reply["is_valid"] = False
    return json.dumps(reply)


ALL_CAUGHT = {s: dict.fromkeys(("P1", "P2", "P3", "P4"), (2, 1, 1)) for s in FLAWED}
judge_all = _judge(ALL_CAUGHT)
judge_all_too = _judge(ALL_CAUGHT)


# -- the run ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper_run(tmp_path_factory, demo_db):
    tmp = tmp_path_factory.mktemp("paper")
    (tmp / "premise_paper_script.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('premise_paper_replies', {str(Path(__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "model, judge_a, judge_b = module.model, module.judge_a, module.judge_b\n"
        "mech_x, mech_y = module.mech_x_fn, module.mech_y_fn\n"
        "abstainer, judge_c, judge_d = module.abstainer, module.judge_all, module.judge_all_too\n",
        encoding="utf-8")
    small = tmp / "small.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in SMALL), encoding="utf-8")
    out = tmp / "run"
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(tmp))
    mp.setenv("VOUCH_CACHE_DIR", str(tmp / "cache"))
    m = "py:premise_paper_script:"
    argv = ["eval", "premise", "--paper", "premisesql", "--input", str(small), "--model", m + "model",
            "--judges", f"{m}judge_a,{m}judge_b", "--mechanism-judges", f"{m}mech_x,{m}mech_y",
            "--out", str(out), "--cache-dir", str(tmp / "cache"), "--no-model-cache", "--bootstrap", "200"]
    yield argv, out, mp, tmp, small
    mp.undo()


@pytest.fixture(scope="module")
def printed(paper_run):
    import contextlib
    import io

    argv, out, mp, _, _ = paper_run
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    return buf.getvalue(), metrics, out


def _table(text: str, title: str) -> list[list[str]]:
    """The rows (header first) of the Markdown table after the line that starts with ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return [r for r in rows if set("".join(r)) != {"-"}]


def test_table3_every_cell(printed):
    text, metrics, out = printed
    rows = _table(text, "Table 3:")
    assert rows[0] == ["Model", "Base SQL", "Base DET", "Base TYPE", "Base GEN",
                       "Implicit SQL", "Implicit DET", "Implicit TYPE", "Implicit GEN", "Implicit VAL",
                       "Explicit SQL", "Explicit DET", "Explicit TYPE", "Explicit GEN", "Explicit VAL"]
    # Each flawed reply scores the mean of the two judges' labels; SQL is normalised by 2.
    # Base:     SQL (0+0+0+2)/4/2 = 0.25; DET (0 + .5 + 0 + 1)/4 = 0.375; TYPE (0 + .5 + 0 + .5)/4 = 0.25;
    #           GEN 4/4.
    # Implicit: SQL (0+2+2+1)/4/2 = 0.625; DET (0+1+1+1)/4 = 0.75; TYPE (0 [B's 1 forced to 0] + 1 + .5 + 1)/4
    #           = 0.625; GEN 3/4 (P4's original gets no SQL); VAL 3/4.
    # Explicit: SQL 8/8 = 1; DET (1+1+1+.5)/4 = 0.875; TYPE (0+1+1+.5)/4 = 0.625; GEN 2/4 (P1, P2 answered);
    #           VAL 1/4 (only P1 judged valid).
    model_name = "py:premise_paper_script:model"
    assert rows[1] == [model_name, "0.250", "0.375", "0.250", "1.000",
                       "0.625", "0.750", "0.625", "0.750", "0.750",
                       "1.000", "0.875", "0.625", "0.500", "0.250"]
    assert len(rows) == 2
    assert (out / "paper_tables.md").read_text(encoding="utf-8") in text.replace("\r", "")


def test_table4_every_cell(printed):
    text, _, _ = printed
    rows = _table(text, "Table 4:")
    assert rows[0] == ["Code", "Error Type", "SQL", "DET", "TYPE"]
    # Implicit, one flawed question per code:
    # E1.1 P1: SQL 0/2, DET 0, TYPE 0;  E2.1 P2: 2/2, 1, 1;  E3.2 P3: 2/2, 1, (0+1)/2;  E4.2 P4: 1/2, 1, 1.
    assert rows[1:] == [["E1.1", "Ambiguity", "0.000", "0.000", "0.000"],
                        ["E2.1", "Internal Text Contrad.", "1.000", "1.000", "1.000"],
                        ["E3.2", "Missing Schema Premise", "1.000", "1.000", "0.500"],
                        ["E4.2", "External Knowledge Req.", "0.500", "1.000", "1.000"]]
    assert "labels averaged over two judges" in text


def test_judge_agreement_kappa(printed):
    text, metrics, _ = printed
    k = metrics["judges"]["kappa"]["all"]
    assert k["n"] == 12
    # SQL: the judges' SQL labels are identical on all 12 → κ = 1.
    assert k["sql"] == pytest.approx(1.0)
    # DET: A has nine 1s, B seven; they differ on base P2 and explicit P4. p_o = 10/12,
    # p_e = (9·7 + 3·5)/144 = 78/144, κ = (120 − 78)/(144 − 78) = 42/66 = 7/11.
    assert k["det"] == pytest.approx(7 / 11)
    # TYPE (B's implicit P1 forced to 0): A has seven 1s, B five; they differ on base P2, base P4,
    # implicit P3, explicit P4. p_o = 8/12, p_e = (7·5 + 5·7)/144 = 70/144, κ = 26/74 = 13/37.
    assert k["type"] == pytest.approx(13 / 37)
    assert metrics["judges"]["type_forced"] == 1
    assert metrics["judges"]["names"] == ["py:premise_paper_script:judge_a", "py:premise_paper_script:judge_b"]
    assert "1.0000 for SQL Behavior, 0.6364 for Detection, and 0.3514 for Type Identification" in text


def test_mechanisms_eligibility_and_strict_agreement(printed):
    _, metrics, _ = printed
    mech = metrics["mechanisms"]
    # App. C.2 per judged flawed reply (labels A vs B above):
    # base: P1 (0,0,0) agreed failure → eligible; P2, P4 disagree; P3 (0,0,0) → eligible.
    # implicit: P1 (0,0,0) after forcing → eligible; P2 (2,1,1) not a failure; P3 disagree;
    #           P4 (1,1,1) identifies the flaw but still answers.
    # explicit: P1 (2,1,0) → eligible; P2, P3 (2,1,1) not failures; P4 disagree.
    assert mech["stages"]["base"] == {**dict.fromkeys(J.STAGES, 0), "eligible": 2, "judge_disagreement": 2}
    assert mech["stages"]["implicit"] == {**dict.fromkeys(J.STAGES, 0), "eligible": 1, "not_a_failure": 1,
                                          "judge_disagreement": 1, "identifies_flaw_but_answers": 1}
    assert mech["stages"]["explicit"] == {**dict.fromkeys(J.STAGES, 0), "eligible": 1, "not_a_failure": 2,
                                          "judge_disagreement": 1}
    assert mech["attributed"] == 4 and mech["attribution_malformed"] == 0
    # Validated labels: X = base P1 M01, base P3 M03 (implicit P1's M01+M04 share a target: both
    # dropped); Y = base P1 M01, implicit P1 M01 (base P3's quote is not model-visible; explicit
    # P1's M04 is abstention alone: both dropped). Strict consensus: base P1 M01 only.
    assert mech["evidence_dropped"] == 4
    assert mech["all"]["M01"] == {"count": 1, "share": 0.25}
    assert all(mech["all"][m]["count"] == 0 for m in ("M02", "M03", "M04"))
    assert mech["by_setting"]["base"]["M01"] == {"count": 1, "share": 0.5}
    assert mech["by_flaw"]["E1.1"]["n"] == 3 and mech["by_flaw"]["E1.1"]["M01"]["count"] == 1
    assert mech["by_flaw"]["E3.2"]["n"] == 1
    # κ M01: X [1,0,0,0], Y [1,0,1,0] → p_o 3/4, p_e (1·2 + 3·2)/16 = 1/2, κ = 1/2.
    # κ M03: X [0,1,0,0], Y all 0 → p_o 3/4, p_e 12/16, κ = 0. M02 and M04: no positive label from
    # either judge, κ undefined (None), so no macro average.
    assert mech["kappa"]["M01"] == pytest.approx(0.5) and mech["kappa"]["M03"] == pytest.approx(0.0)
    assert mech["kappa"]["M02"] is None and mech["kappa"]["M04"] is None and mech["kappa"]["macro"] is None
    assert mech["coverage"] == {"no_consensus_label": 3, "only_first_judge": 1, "only_second_judge": 1,
                                "disjoint": 0, "jointly_none": 1}


def test_e32_withholds_the_element_from_the_schema_the_model_sees(printed):
    _, _, out = printed
    records = [json.loads(line) for line in (out / P.RECORDS).read_text(encoding="utf-8").splitlines()]
    e32 = [r for r in records if r["id"] == "E32-01-flawed"]
    assert {r["withhold"] == ["orders.store_id"] for r in e32} == {True}
    shown = next(r["shown_schema"] for r in e32 if "shown_schema" in r)
    orders = re.search(r"CREATE TABLE orders \((.*?)\);", shown, re.S).group(1)
    assert "store_id" not in orders and "REFERENCES stores" not in orders
    assert "CREATE TABLE stores" in shown and "customer_id INTEGER NOT NULL" in orders


def test_replay_reprints_the_tables_with_no_model_call(printed, tmp_path, monkeypatch, capsys):
    text, metrics, out = printed
    from vouchsql.llm import LLM

    def no_calls(*a, **k):
        raise AssertionError("replay called a model")

    monkeypatch.setattr(LLM, "complete", no_calls)
    code = main(["eval", "premise", "--replay", str(out), "--out", str(tmp_path / "re"), "--paper", "premisesql"])
    got = capsys.readouterr().out
    assert code == 0
    assert json.loads((tmp_path / "re" / "metrics.json").read_text(encoding="utf-8")) == metrics
    assert _table(got, "Table 3:") == _table(text, "Table 3:")
    assert _table(got, "Table 4:") == _table(text, "Table 4:")


def test_report_names_the_judges_and_the_mechanisms(printed):
    _, _, out = printed
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "judged from each response by `py:premise_paper_script:judge_a` and" in md
    assert "Judge agreement" in md and "Failure mechanisms (M01–M04)" in md
    assert "structured-output" not in md.split("How this departs")[0]


# -- the pieces, on their own ----------------------------------------------------------------------
def test_taxonomy_is_table_1_word_for_word():
    from vouchsql.premise import CATEGORIES, TAXONOMY, category_name

    assert {c: n for c, (n, _) in TAXONOMY.items()} == {
        "E1.1": "Ambiguity", "E1.2": "Unclear Intent", "E2.1": "Internal Text Contradiction",
        "E2.2": "Question–Schema Contradiction", "E3.1": "Missing Constraint", "E3.2": "Missing Schema Premise",
        "E3.3": "Semantic Gap", "E4.1": "Inexpressible in SQL", "E4.2": "External Knowledge Required"}
    assert CATEGORIES == {"E1": "Expression Error", "E2": "Premise Contradiction", "E3": "Missing Premise",
                          "E4": "Beyond Ability"}
    assert category_name("E3.2") == "Missing Premise"
    assert TAXONOMY["E3.2"][1] == "Required tables, columns, or relations are not provided in the schema."


@pytest.mark.parametrize("row, needle", [
    ({"label": "flawed", "flaw": "E3.2"}, "is E2.2"),
    ({"label": "flawed", "flaw": "E2.2", "withhold": ["orders.total"]}, "withhold is for E3.2"),
    ({"label": "original", "withhold": ["orders.total"]}, "whole schema"),
    ({"label": "flawed", "flaw": "E3.2", "withhold": [""]}, "table.column"),
])
def test_e32_needs_withheld_schema_and_nothing_else_withholds(tmp_path, row, needle):
    from vouchsql.errors import UserInputError
    from vouchsql.evals.datasets import load_premise

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"pair_id": "p", "db": "demo", "question": "q", **row}) + "\n", encoding="utf-8")
    with pytest.raises(UserInputError, match=needle):
        load_premise(path)


def test_withholding_in_both_schema_texts(demo_db):
    from vouchsql.db import connect
    from vouchsql.errors import UserInputError

    db = connect(demo_db)
    try:
        full = P.schema_text(db)
        less = P.schema_text(db, ["order_items", "customers.email"])
        assert "CREATE TABLE order_items" in full and "CREATE TABLE order_items" not in less
        # returns.order_item_id's key pointed at the withheld table: the key goes, the column stays.
        returns = re.search(r"CREATE TABLE returns \((.*?)\);", less, re.S).group(1)
        assert "order_item_id INTEGER NOT NULL" in returns and "REFERENCES order_items" not in returns
        customers = re.search(r"CREATE TABLE customers \((.*?)\);", less, re.S).group(1)
        assert "email" not in customers and "first_name" in customers
        vouch_full, vouch_less = P.vouch_schema_text(db), P.vouch_schema_text(db, ["customers.email"])
        assert "- email:" in vouch_full and "- email:" not in vouch_less and "- first_name:" in vouch_less
        with pytest.raises(UserInputError, match="customers.phone"):
            P.schema_text(db, ["customers.phone"])
    finally:
        db.close()


@pytest.mark.parametrize("text, expected", [
    ('{"sql_behavior": 2, "detection": 1, "type_identification": 1}', {"sql": 2, "det": 1, "type": 1,
                                                                        "type_forced": False}),
    ('{"sql_behavior": "0", "detection": 0, "type_identification": 1}', {"sql": 0, "det": 0, "type": 0,
                                                                          "type_forced": True}),
    ('{"sql_behavior": 3, "detection": 1, "type_identification": 1}', "sql_behavior"),
    ('{"sql_behavior": 1, "detection": true, "type_identification": 0}', "detection"),
    ("no json", None),
])
def test_read_judgement(text, expected):
    got = J.read_judgement(text)
    if isinstance(expected, dict):
        assert got == expected
    else:
        assert "malformed" in got and (expected is None or expected in got["malformed"])


def test_an_unreadable_judgement_leaves_the_reply_out_and_is_counted():
    base = {"setting": "implicit", "label": "flawed", "flaw": "E2.1", "gold_sql": None,
            "raw": '{"sql": null, "is_valid": false, "reason": "r"}'}
    ok = {"judge": "a", "raw": '{"sql_behavior": 2, "detection": 1, "type_identification": 0}'}
    m = P.measure({**base, "judgements": [ok, {"judge": "b", "raw": "sorry"}]}, "judges")
    assert m["judge_malformed"] and m["det"] is None and m["sql"] is None
    m = P.measure({**base, "judgements": [ok, {**ok, "judge": "b",
                                               "raw": '{"sql_behavior": 2, "detection": 0, "type_identification": 0}'}]},
                  "judges")
    assert (m["sql"], m["det"], m["type"]) == (2, 0.5, 0)


def test_attribution_validation_rules():
    q, reason, sql, schema = "Which store sold the most in the West?", "I used region = 'West'.", \
        "SELECT 1 FROM stores WHERE region = 'West'", "CREATE TABLE stores (\n  region TEXT\n);"

    def read(**entries):
        data = _none()
        data.update(entries)
        return J.read_attribution(json.dumps(data), question=q, reason=reason, sql=sql, shown_schema=schema)

    ok = _verdict("supported", "West", q="in the West", r="region = 'West'", replacement=True)
    assert read(M01=ok)["labels"] == {"M01": 1, "M02": 0, "M03": 0, "M04": 0}
    assert read(M01={**ok, "question_quote": "in the East"})["dropped"]["M01"].startswith("question_quote")
    assert read(M01={**ok, "concrete_replacement": False})["labels"]["M01"] == 0
    # Whitespace runs compare as one space.
    assert read(M03=_verdict("supported", "x", r="I  used region", c="region TEXT", basis="b"))["labels"]["M03"] == 1
    assert read(M03=_verdict("supported", "x", r="I used region", c="region INTEGER", basis="b"))["labels"]["M03"] == 0
    assert read(M02=_verdict("uncertain"))["labels"]["M02"] == 0
    assert "malformed" in J.read_attribution('{"M01": {"verdict": "supported"}}', question=q, reason=reason,
                                             sql=sql, shown_schema=schema)


def test_setting_prompts_follow_section_3_4():
    texts = {s: J.load(name).text for s, name in J.SETTING_PROMPTS.items()}
    for text in texts.values():
        system, _, user = text.partition("<!-- user -->")
        # App. B.1's one surviving line opens every user message; no setting hands the model the codes.
        assert user.strip().startswith("The database schema is as follows:\n{{schema}}")
        assert "E1.1" not in text and "flaw_code" not in text and "PremiseSQL" not in system
        assert '"sql"' in system and '"reason"' in system
    assert "is_valid" not in texts["base"] and "error" not in texts["base"] and "flaw" not in texts["base"]
    assert "may contain errors" in texts["implicit"] and '"is_valid"' in texts["implicit"]
    assert "contains logically flawed or incorrect premises" in texts["explicit"] and '"is_valid"' in texts["explicit"]


def test_vouch_setting_is_judged_for_det_and_type_but_keeps_its_own_sql_behaviour(tmp_path, demo_db):
    from vouchsql.llm import FakeModel
    from vouchsql.settings import load_config

    rows = [r for r in ROWS if r["pair_id"] in ("E21-01", "E42-01")]
    small = tmp_path / "two.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def assess(request):
        # Stops the contradiction (E2.1), passes the holiday question (E4.2) and the originals on.
        user = request.messages[1][1]
        stop = "before 2023" in user
        return json.dumps({"is_valid": not stop, "flaw_code": "E2.1" if stop else None, "reason": "r",
                           "clarification": "Which year?" if stop else None, "interpretations": []})

    def judge(det):
        return lambda request: json.dumps({"sql_behavior": 0, "detection": det, "type_identification": det})

    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True)
    records, manifest = P.run_premise(small, config, tmp_path / "run", model=FakeModel(assess), settings=["vouch"],
                                      judges=[FakeModel(judge(1)), FakeModel(judge(0))], judge_names=["a", "b"])
    metrics = P.analyse(records, ["vouch"], replicates=50, seed=0, det_from="judges")
    f = metrics["settings"]["vouch"]["flawed"]
    # SQL behaviour from the verdict (stopped: 2, passed on: 0), not the judges' 0s: (2 + 0) / 2 / 2.
    assert f["sql"] == 0.5
    assert f["det"] == 0.5 and f["type"] == 0.5  # judges split 1 and 0 on both
    assert manifest["parameters"]["judges"] == ["a", "b"] and manifest["parameters"]["det_from"] == "judges"
    assert "judge" in manifest["prompts"] and "vouch(assess)" in manifest["prompts"]
    assert metrics["mechanisms"]["stages"] == {}, "the mechanism pool is the paper's settings only"


def test_tables_over_two_runs_pool_their_outputs(printed, paper_run, capsys):
    _, out, _, tmp, small = paper_run
    m = "py:premise_paper_script:"
    second = tmp / "run2"
    assert main(["eval", "premise", "--paper", "premisesql", "--input", str(small), "--model", m + "abstainer",
                 "--judges", f"{m}judge_c,{m}judge_d", "--out", str(second), "--cache-dir", str(tmp / "cache"),
                 "--no-model-cache", "--bootstrap", "50"]) == 0
    capsys.readouterr()
    assert main(["eval", "premise", "--paper", "premisesql", "--paper-runs", str(out), str(second),
                 "--out", str(tmp / "tables")]) == 0
    text = capsys.readouterr().out
    rows = _table(text, "Table 3:")
    # Run 2: the judges give (2, 1, 1) to every flawed reply, so SQL = DET = TYPE = 1 in every setting;
    # the abstainer writes no SQL and calls every original invalid, so GEN = VAL = 0.
    assert rows[2] == [m + "abstainer", "1.000", "1.000", "1.000", "0.000", "1.000", "1.000", "1.000", "0.000",
                       "0.000", "1.000", "1.000", "1.000", "0.000", "0.000"]
    # Aggregate: both runs' four outputs per setting pooled, i.e. the mean of the two rows.
    # Base SQL (1/4 + 1)/2 = 5/8, DET (3/8 + 1)/2 = 11/16, TYPE (1/4 + 1)/2 = 5/8, GEN (1 + 0)/2;
    # Implicit SQL (5/8 + 1)/2 = 13/16, DET (3/4 + 1)/2 = 7/8, TYPE (5/8 + 1)/2 = 13/16, GEN, VAL (3/4)/2 = 3/8;
    # Explicit SQL 1, DET (7/8 + 1)/2 = 15/16, TYPE 13/16, GEN (1/2)/2 = 1/4, VAL (1/4)/2 = 1/8.
    cells = [5 / 8, 11 / 16, 5 / 8, 1 / 2, 13 / 16, 7 / 8, 13 / 16, 3 / 8, 3 / 8, 1.0, 15 / 16, 13 / 16, 1 / 4, 1 / 8]
    assert rows[3] == ["Aggregate", *[f"{c:.3f}" for c in cells]]
    assert rows[1][0] == m + "model" and len(rows) == 4
    # Table 4 pooled: E1.1 (0 + 1)/2 for each; E3.2 TYPE (1/2 + 1)/2; E4.2 SQL (1/2 + 1)/2.
    assert _table(text, "Table 4:")[1:] == [["E1.1", "Ambiguity", "0.500", "0.500", "0.500"],
                                            ["E2.1", "Internal Text Contrad.", "1.000", "1.000", "1.000"],
                                            ["E3.2", "Missing Schema Premise", "1.000", "1.000", "0.750"],
                                            ["E4.2", "External Knowledge Req.", "0.750", "1.000", "1.000"]]
    # κ over 24 outputs: run 2 adds 12 agreeing (2, 1, 1) pairs. DET: A 21 ones, B 19, two differ:
    # p_o 22/24, p_e (21·19 + 3·5)/576 = 414/576, κ = (528 − 414)/(576 − 414) = 19/27.
    # TYPE: A 19 ones, B 17, four differ: p_o 20/24, p_e (19·17 + 5·7)/576 = 358/576, κ = 122/218 = 61/109.
    assert f"24 flawed-query outputs): 1.0000 for SQL Behavior, {19 / 27:.4f} for Detection, and " \
           f"{61 / 109:.4f} for Type Identification" in text
    assert f"{m}judge_a and {m}judge_b; {m}judge_c and {m}judge_d" in text
    assert (tmp / "tables" / "paper_tables.md").read_text(encoding="utf-8").strip() == text.replace("\r", "").strip()


@pytest.mark.parametrize("args, needle", [
    (["--paper-runs", "x"], "give --paper premisesql"),
    (["--paper", "premisesql", "--paper-runs", "nowhere"], "no manifest.json"),
])
def test_paper_runs_bad_input(tmp_path, capsys, args, needle):
    assert main(["eval", "premise", *args]) == 2
    assert needle in capsys.readouterr().err


def test_the_mechanism_sample_is_stratified_by_setting_and_category_and_deterministic():
    """PremiseSQL App. C.3: one per nonempty stratum (setting × error category), the rest by
    largest remainder in proportion to stratum size, SHA-256-ranked within a stratum (seed 42)."""
    import random

    from vouchsql.evals.premise_agreement import stratified_sample

    recs = ([{"key": f"b1-{i}", "setting": "base", "flaw": "E1.1"} for i in range(6)]
            + [{"key": f"b2-{i}", "setting": "base", "flaw": "E2.2"} for i in range(2)]
            + [{"key": f"i1-{i}", "setting": "implicit", "flaw": "E1.2"} for i in range(2)])
    got = stratified_sample(recs, 5)
    # 1 each, then 2 more by size (6, 2, 2 of 10): exact 1.2, .4, .4 → 1, 0, 0 and one left for the
    # largest remainder (a tie of .4: the first stratum in order, base × E2).
    by = {}
    for r in got:
        by[(r["setting"], r["flaw"][:2])] = by.get((r["setting"], r["flaw"][:2]), 0) + 1
    assert by == {("base", "E1"): 2, ("base", "E2"): 2, ("implicit", "E1"): 1}
    shuffled = recs[:]
    random.Random(3).shuffle(shuffled)
    assert sorted(r["key"] for r in stratified_sample(shuffled, 5)) == sorted(r["key"] for r in got)
    assert stratified_sample(recs, 50) == recs and stratified_sample(recs, 0) == recs

"""The IES reproduction (issue 13): the rules as the paper froze them, the paper's check set,
the ablations, the fitted variant, the hypotheses and the tables of ``vouch eval confidence
--paper ies``. The table cells below are computed by hand in the comments, from the paper's
definitions (../shared/papers/002 §3.2–§3.4, §4.4, Tables 2, 4, 5, 7, 8)."""

from __future__ import annotations

import json

import pytest

import vouchsql
from vouchsql.answer import CheckResult
from vouchsql.evals import confidence as C
from vouchsql.evals import ies
from vouchsql.score import ScoreInput, score
from vouchsql.settings import load_config

KIND = {"missing_table": "veto", "bad_join": "veto", "question_shape": "cap", "empty_result": "signal",
        "join_fanout": "signal"}


def _checks(fired: tuple[str, ...] = ()) -> list[dict]:
    out = []
    for name, kind in KIND.items():
        terms = {"missing_table": {"grounded": 1.0}, "bad_join": {"grounded": 0.0 if name in fired else 1.0},
                 "question_shape": {"complete": 1.0}}.get(name, {})
        out.append(CheckResult(name=name, kind=kind, fired=name in fired, detail="x", terms=terms)
                   .model_dump(mode="json"))
    return out


def _record(i: int, db: str, label: bool, agreement: float, clusters: list[int], fired=()) -> dict:
    return {"key": f"r{i}", "index": i, "id": f"r{i}", "db": db, "question": "q", "label": label,
            "label_source": "given", "agreement": agreement, "k": 5, "strict_clusters": clusters,
            "checks": _checks(fired), "choices": [], "verdicts": {}, "check_set": "paper"}


# r1…r8: databases a and b; right answers r1, r2, r5, r7; wrong r3, r4, r6, r8.
RECORDS = [
    _record(1, "a", True, 1.0, [0, 0, 0, 0, 0]),
    _record(2, "a", True, 0.8, [0, 0, 0, 0, 1]),
    _record(3, "a", False, 0.6, [0, 0, 0, 1, 2]),
    _record(4, "a", False, 1.0, [0, 0, 0, 0, 0], fired=("empty_result",)),
    _record(5, "b", True, 1.0, [0, 0, 0, 0, 0], fired=("join_fanout",)),
    _record(6, "b", False, 0.4, [0, 0, 1, 2, 3]),
    _record(7, "b", True, 1.0, [0, 0, 0, 0, 0], fired=("bad_join",)),
    _record(8, "b", False, 0.2, [0, 1, 2, 3, 4]),
]


@pytest.fixture(scope="module")
def paper_metrics():
    metrics, curves = C.analyse(RECORDS, list(C.DEFAULT_RULES), replicates=300, seed=1, check_set="paper",
                                paper="ies")
    metrics["_curves"] = curves
    return metrics


def test_table4_rules_by_hand(paper_metrics):
    r = paper_metrics["rules"]
    # designed (paper checks): terms GROUNDED .3, COMPLETE .1, SAFETY .2 = min(L1, L2).
    # r2: L2 = 1 − H(.8,.2)/ln 5 = 0.689082 → (.3 + .1 + .2·.689082)/.6 = 0.8964; r3: L2 = 0.409564 → 0.8032;
    # r6: L2 = 0.172271 → 0.7241; r8: L2 = 0 → 0.6667; r7: bad join, GROUNDED ½, L1 = 0 → 0.25/.6 = 0.4167.
    # The empty result and the fan-out are not the paper's checks: r4, r5 score 1.
    # right 1, .8964, 1, .4167 vs wrong .8032, 1, .7241, .6667 → wins 3.5 + 3 + 3.5 + 0 = 10 of 16.
    assert r["designed"]["auroc"] == pytest.approx(10 / 16)
    assert r["designed"]["gate"] == {"pass": [3, 2], "flag": [0, 2], "abstain": [1, 0]}
    assert (r["designed"]["pass_accuracy"], r["designed"]["pass_share"]) == pytest.approx((3 / 5, 5 / 8))
    assert (r["designed"]["correct_withheld"], r["designed"]["wrong_withheld"]) == pytest.approx((1 / 4, 0))
    # agreement alone: right 1, .8, 1, 1 vs wrong .6, 1, .4, .2 → 3.5 + 3 + 3.5 + 3.5 = 13.5 of 16.
    assert r["agreement_alone"]["auroc"] == pytest.approx(13.5 / 16)
    assert r["agreement_alone"]["gate"] == {"pass": [4, 1], "flag": [0, 1], "abstain": [0, 2]}
    # agreement-first: r7's bad join vetoes at .59 → right 1, .8, 1, .59 → 3.5 + 3 + 3.5 + 2 = 12 of 16.
    assert r["agreement_first"]["auroc"] == pytest.approx(12 / 16)
    assert r["agreement_first"]["gate"] == {"pass": [3, 1], "flag": [0, 1], "abstain": [1, 2]}
    assert (r["agreement_first"]["pass_accuracy"], r["agreement_first"]["pass_share"]) == pytest.approx((3 / 4, 1 / 2))
    # v3: r4's empty result caps at .79 (the fan-out on r5 does not) → wrong .6, .79, .4, .2 → 4+4+4+2 = 14.
    assert r["v3"]["auroc"] == pytest.approx(14 / 16)
    assert r["v3"]["gate"] == {"pass": [3, 0], "flag": [0, 2], "abstain": [1, 2]}
    # v2: SAFETY = min(L1, A): r2 .9333, r3 .8667, r6 .8, r8 .7333, r7 .4167 (under the .59 cap)
    # → right 1, .9333, 1, .4167 vs wrong .8667, 1, .8, .7333 → 3.5 + 3 + 3.5 + 0 = 10.
    assert r["v2"]["auroc"] == pytest.approx(10 / 16)
    assert r["v2"]["gate"] == {"pass": [3, 3], "flag": [0, 1], "abstain": [1, 0]}


def test_table5_hypotheses_by_hand(paper_metrics):
    h = {x["id"]: x for x in paper_metrics["ies"]["hypotheses"]}
    ci = paper_metrics["paired"]["agreement_first-designed"]["ci"]
    assert h["H1"]["observed"].startswith("AUROC difference +0.125")
    assert h["H1"]["verdict"] == ("Pass" if ci[0] > 0 else "Fail")
    assert h["H2"]["verdict"] == "Fail"  # 25.0% correct withheld by both: not fewer
    assert h["H2"]["observed"] == "correct withheld 25.0% vs 25.0%; pass accuracy 75.0% vs 60.0%"
    assert h["H3"] == {"id": "H3", "observed": "empty result fired on 1 answers (fewer than 10)", "verdict": "Not tested"}
    assert h["H4"]["verdict"] == "Not as predicted"  # agreement alone .844 > agreement-first .750


def test_tables_2_and_7_by_hand(paper_metrics):
    a = paper_metrics["ies"]["ablations"]
    assert a["None (designed)"]["auroc"] == pytest.approx(10 / 16)
    # Drop GROUNDED: the mean of COMPLETE and SAFETY, (.1 + .2 × SAFETY) / .3. GROUNDED was still
    # measured, so evidence is not thin and nothing is capped at .79 (issue 29, deviation 3: the
    # paper's Drop rows pass about as many answers as the designed score). SAFETY = min(L1, L2):
    # right r1 1, r2 .6891, r5 1, r7 0 (its veto) → 1, .7927, 1, .3333; wrong r3 .4096, r4 1,
    # r6 .1723, r8 0 → .6064, 1, .4482, .3333. AUROC: 3.5 + 3 + 3.5 + 0.5 = 10.5 of 16; three
    # answers score 1 and pass (r2's .7927 is a flag): pass share 3/8.
    assert a["Drop GROUNDED"]["auroc"] == pytest.approx(10.5 / 16)
    assert a["Drop GROUNDED"]["pass_share"] == pytest.approx(3 / 8)
    assert a["Drop COMPLETE"]["pass_share"] > 0 and a["Drop SAFETY"]["pass_share"] > 0
    assert a["No hard caps"]["auroc"] == pytest.approx(10 / 16)  # r7's .4167 is already under .59
    assert a["Agreement alone, relaxed rows"]["auroc"] == pytest.approx(13.5 / 16)
    assert a["Unsupported claims ignored"] is None  # no claim judge in Vouch: not measured, never filled in
    s = paper_metrics["ies"]["steps"]
    # L2 alone: right 1, .6891, 1, 1 vs wrong .4096, 1, .1723, 0 → 3.5 + 3 + 3.5 + 3.5 = 13.5.
    assert s["L2 alone"] == pytest.approx(13.5 / 16)
    # min(L1, L2): r7's L1 = 0 → right 1, .6891, 1, 0 → 3.5 + 3 + 3.5 + 0.5 = 10.5.
    assert s["min(L1, L2)"] == pytest.approx(10.5 / 16)
    assert s["Weighted mean"] == s["With caps (designed)"] == pytest.approx(10 / 16)


def test_table8_and_the_report_layout(paper_metrics):
    metrics = {k: v for k, v in paper_metrics.items() if k != "_curves"}
    report = C.build_report(metrics, paper_metrics["_curves"], RECORDS, {"command": "t"})
    titles = [s.title for s in report.sections]
    for table in ("Table 4", "Table 5", "Table 2", "Table 7", "Table 8", "Table 9"):
        assert any(table in t for t in titles), table
    t8 = next(s for s in report.sections if "Table 8" in s.title).items[0]
    assert t8.rows == [["Designed", "3 / 2", "0 / 2", "1 / 0"], ["Agreement alone", "4 / 1", "0 / 1", "0 / 2"],
                       ["Agreement-first", "3 / 1", "0 / 1", "1 / 2"]]


def test_fitted_variant_cross_fits_by_whole_database(paper_metrics):
    fit = paper_metrics["ies"]["fitted"]
    assert fit["databases"] == 2 and fit["splits"] == 20 and fit["used"] == 20
    assert 0 <= fit["metrics"]["auroc"] <= 1
    # One database: no fit can keep databases apart, so the variant says why instead of a number.
    one = [dict(r, db="a") for r in RECORDS]
    metrics, _ = C.analyse(one, list(C.DEFAULT_RULES), replicates=50, seed=1, check_set="paper", paper="ies")
    assert "metrics" not in metrics["ies"]["fitted"] and "two or more databases" in metrics["ies"]["fitted"]["why"]


def test_cross_fitting_never_scores_an_answer_with_a_model_fitted_on_its_own_database():
    import numpy as np

    # Database "a" is all right, "b" all wrong, "c" mixed: a model that saw an answer's own
    # database could score it perfectly; fitted on the other databases it cannot.
    x = np.array([[1.0], [1.0], [0.0], [0.0], [1.0], [0.0]])
    y = np.array([1, 1, 0, 0, 1, 0])
    groups = ["a", "a", "b", "b", "c", "c"]
    scores, note = ies.cross_fitted(x, y, groups, splits=5, seed=0)
    assert note["databases"] == 3
    assert note["used"] + note["skipped_one_class"] == 5


# ---------------------------------------------------------------------------------------
# The rules on real checks (the targets)
# ---------------------------------------------------------------------------------------
def test_designed_passes_a_clean_fully_agreeing_answer_without_answer_text(demo_db, tmp_path):
    sql = "SELECT COUNT(*) FROM customers"
    answer = vouchsql.check(demo_db, "How many customers are there?", [sql] * 5, rule="designed",
                            cache_dir=str(tmp_path))
    assert answer.verdict.gate == "pass", answer.verdict.reasons
    names = {c.name: c for c in answer.checks}
    assert names["question_shape"].terms == {"complete": 1.0, "retrieve": 1.0}


def test_agreement_alone_passes_what_a_veto_stops(demo_db, tmp_path):
    sql = "SELECT COUNT(*) FROM storez"  # a missing table: no result, agreement 0 → abstain under every rule
    a = vouchsql.check(demo_db, "How many stores are there?", [sql] * 3, rule="agreement_alone", cache_dir=str(tmp_path))
    assert a.verdict.gate == "abstain"
    ok = "SELECT COUNT(*) FROM customers"
    inp = dict(agreement=1.0, k=5, strict_clusters=[0] * 5,
               checks=[CheckResult(name="bad_join", kind="veto", fired=True, detail="x")])
    assert score("agreement_alone", ScoreInput(**inp)).gate == "pass"
    assert score("agreement_first", ScoreInput(**inp)).gate == "abstain"
    assert vouchsql.check(demo_db, "How many customers are there?", [ok] * 5, rule="agreement_alone",
                          cache_dir=str(tmp_path)).verdict.score == 1.0


def test_the_paper_check_set_reads_only_the_papers_checks():
    fired = [CheckResult(name="question_filters", kind="cap", fired=True, detail="x", terms={"complete": 0.0}),
             CheckResult(name="missing_table", kind="veto", fired=False, detail="x", terms={"grounded": 1.0})]
    vouch = score("agreement_first", ScoreInput(agreement=1.0, k=5, checks=fired, strict_clusters=[0] * 5))
    paper = score("agreement_first", ScoreInput(agreement=1.0, k=5, checks=fired, strict_clusters=[0] * 5,
                                                 check_set="paper"))
    assert vouch.reasons == ["question_filters"]
    # Under the paper's checks the filter cap is not read, but its COMPLETE (0 < .5) caps (IES §3.4).
    assert paper.score == 0.79 and paper.reasons == ["incomplete (COMPLETE 0.00 by alignment)"]


def test_paper_thin_evidence_caps_agreement_first_when_fewer_than_three_terms_are_measured():
    only_grounded = [CheckResult(name="missing_table", kind="veto", fired=False, detail="x", terms={"grounded": 1.0})]
    v = score("agreement_first", ScoreInput(agreement=1.0, k=5, checks=only_grounded, strict_clusters=[0] * 5,
                                            check_set="paper"))
    assert v.score == 0.79 and v.reasons == ["thin_evidence (only grounded, safety measured)"]
    assert score("agreement_first", ScoreInput(agreement=1.0, k=5, checks=only_grounded,
                                               strict_clusters=[0] * 5)).score == 1.0


def test_v2_caps_an_answer_the_judge_finds_incomplete(demo_db, tmp_path):
    sql = "SELECT COUNT(*) FROM customers"
    q = "How many customers are there, and what is their average age?"
    a = vouchsql.check(demo_db, q, [sql] * 5, rule="v2", cache_dir=str(tmp_path),
                       judged_parts=[["the number of customers", True], ["their average age", False],
                                     ["their names", False]])
    assert a.verdict.score == 0.79 and "incomplete (COMPLETE 0.33 by judge)" in a.verdict.reasons
    assert "complete_judge" in [c.name for c in a.checks if c.fired]
    with pytest.raises(vouchsql.errors.UserInputError, match="judged_parts"):
        vouchsql.check(demo_db, q, [sql], judged_parts=[["x", "yes"]], cache_dir=str(tmp_path))


# ---------------------------------------------------------------------------------------
# --model: sample 0 shown, the judge's COMPLETE recorded
# ---------------------------------------------------------------------------------------
OVER_100 = "SELECT COUNT(*) FROM orders WHERE total > 100"
AT_LEAST_100 = "SELECT COUNT(*) FROM orders WHERE total >= 100"


def _reply(request):
    system = request.messages[0][1]
    if "Task: assess" in system:
        return json.dumps({"is_valid": True, "flaw_code": None, "reason": "r", "clarification": None,
                           "interpretations": []})
    if "Task: generate" in system:
        # sample 0 is the minority: "first" shows it, "largest" the other three
        sql = AT_LEAST_100 if request.sample in (0, 4) else OVER_100
        return json.dumps({"sql": sql, "interpretation": "orders over 100", "assumptions": []})
    if "Task: judge_complete" in system:
        return json.dumps({"parts": [{"part": "the number of orders over $100", "covered": True}]})
    return "There were some orders."


@pytest.mark.parametrize("shown, first_sql, agreement", [("first", AT_LEAST_100, 0.4), ("largest", OVER_100, 0.6)])
def test_model_runs_show_sample_0_or_the_largest_cluster_and_record_the_judge(demo_db, tmp_path, shown, first_sql,
                                                                              agreement):
    from vouchsql.llm import FakeModel

    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "db": str(demo_db), "question": "How many orders were over $100?",
                                "gold_sql": OVER_100}) + "\n", encoding="utf-8")
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True,
                         shown=shown, judge_complete=True)
    records, manifest = C.run_confidence(path, config, tmp_path / "run", model=FakeModel(_reply), k=5,
                                         parameters={"rules": ["agreement_first"], "bootstrap": 50, "seed": 0})
    r = records[0]
    assert r["candidates"][0]["sql"] == first_sql and r["agreement"] == pytest.approx(agreement)
    judge = next(c for c in r["checks"] if c["name"] == "complete_judge")
    assert judge["terms"] == {"complete": 1.0} and judge["evidence"]["parts"][0]["covered"] is True
    assert manifest["parameters"]["shown"] == shown and manifest["parameters"]["judge_complete"] is True


def test_cli_paper_preset_prints_the_tables_and_refuses_a_partial_rule_list(demo_db, tmp_path, capsys, clean_env):
    from vouchsql.cli import main

    items = [{"id": "a", "db": "demo", "question": "How many customers are there?",
              "candidates": ["SELECT COUNT(*) FROM customers"] * 5, "label": True},
             {"id": "b", "db": "demo", "question": "How many orders were over $100?",
              "candidates": [AT_LEAST_100, OVER_100, OVER_100], "label": False}]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    code = main(["eval", "confidence", "--paper", "ies", "--input", str(path), "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--bootstrap", "100"])
    text, err = capsys.readouterr()
    assert code == 0, err
    assert "IES Table 4" in text and "IES Table 5" in text and "not available" in text  # one database: no fit
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["check_set"] == "paper" and metrics["ies"]["complete_sources"]["alignment"] == 2
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["paper"] == "ies" and manifest["parameters"]["check_set"] == "paper"
    # --replay under Vouch's own checks: the same records, rescored
    replay = tmp_path / "replay"
    assert main(["eval", "confidence", "--replay", str(out), "--out", str(replay), "--check-set", "vouch"]) == 0
    assert json.loads((replay / "metrics.json").read_text(encoding="utf-8"))["check_set"] == "vouch"
    # --replay --paper ies prints the paper's tables, not only whether the numbers are identical
    capsys.readouterr()
    assert main(["eval", "confidence", "--replay", str(out), "--out", str(tmp_path / "again"), "--paper", "ies"]) == 0
    text = capsys.readouterr().out
    assert "IES Table 4" in text and "IES Table 5" in text and "every number identical" in text
    code = main(["eval", "confidence", "--paper", "ies", "--rules", "designed", "--input", str(path),
                 "--out", str(tmp_path / "x")])
    assert code == 2 and "every rule" in capsys.readouterr().err


def test_wrong_time_window_shifts_the_whole_window(demo_db, tmp_path):
    from vouchsql.db import connect
    from vouchsql.evals.plants import PlantContext, wrong_time_window
    from vouchsql.sql.inspect import inspect_sql

    sql = "SELECT COUNT(*) FROM orders WHERE order_date >= '2023-01-01' AND order_date < '2024-01-01'"
    with connect(demo_db, cache_dir=str(tmp_path)) as db:
        tree, profile = db.parse(sql), db.profile()
        ctx = PlantContext(db=db, profile=profile, tree=tree, inspection=inspect_sql(tree, profile, db.dialect),
                           result=db.execute(sql), answer_text="", question="How many orders in 2023?")
        planted = wrong_time_window(ctx)
        # App. B: the window moves by a year as a window (not >= '2024-01-01' AND < '2024-01-01', empty)
        assert "'2024-01-01'" in planted.sql and "'2025-01-01'" in planted.sql and "2023" not in planted.sql
        assert db.execute(planted.sql).error is None


def test_model_runs_read_a_spider_split_directly(demo_db, tmp_path):
    import shutil

    from vouchsql.llm import FakeModel

    root = tmp_path / "spider"
    (root / "database" / "shop").mkdir(parents=True)
    shutil.copy(demo_db, root / "database" / "shop" / "shop.sqlite")
    (root / "dev.json").write_text(json.dumps([{"db_id": "shop", "question": "How many orders were over $100?",
                                                "query": OVER_100}]), encoding="utf-8")
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True,
                         shown="first", judge_complete=True)
    records, manifest = C.run_confidence(None, config, tmp_path / "run", model=FakeModel(_reply), k=5,
                                         dataset=root, split="dev",
                                         parameters={"rules": ["agreement_first"], "bootstrap": 50, "seed": 0})
    r = records[0]
    assert r["label"] is False and r["label_source"] == "execution"  # sample 0 says >= 100, the gold > 100
    assert r["candidates"][0]["sql"] == AT_LEAST_100
    with pytest.raises(vouchsql.errors.UserInputError, match="--model"):
        C.run_confidence(None, config, tmp_path / "run2", dataset=root, split="dev")


# ---------------------------------------------------------------------------------------
# The whole preset with a scripted model: every table cell by hand
# ---------------------------------------------------------------------------------------
SCRIPT = {  # question → the five samples' SQL (sample 0 first: the answer --paper ies scores)
    "How many customers are there?": ["SELECT COUNT(*) FROM customers"] * 5,
    "How many orders were over $100?": [AT_LEAST_100, OVER_100, OVER_100, OVER_100, AT_LEAST_100],
    "How many tracks are there?": ["SELECT COUNT(*) FROM Track"] * 5,
    "How many customers are from Brazil?": ["SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'"] * 3
                                           + ["SELECT COUNT(*) FROM Customer"] * 2,
}


def _scripted(request):
    system = request.messages[0][1]
    user = "\n".join(c for r, c in request.messages if r == "user")
    if "Task: assess" in system:
        return json.dumps({"is_valid": True, "flaw_code": None, "reason": "r", "clarification": None,
                           "interpretations": []})
    if "Task: judge_complete" in system:
        return json.dumps({"parts": [{"part": "the count asked for", "covered": True}]})
    if "Task: judge_claims" in system:
        return json.dumps({"claims": []})
    if "Task: generate" in system:
        question = next(q for q in SCRIPT if q in user)
        return json.dumps({"sql": SCRIPT[question][request.sample], "interpretation": "as asked", "assumptions": []})
    return "The count is in the result."


def test_paper_preset_with_a_scripted_model_every_cell_by_hand(demo_db, chinook_path, tmp_path, capsys, monkeypatch,
                                                                clean_env):
    from vouchsql.cli import main

    labels = {"How many customers are there?": True, "How many orders were over $100?": False,
              "How many tracks are there?": True, "How many customers are from Brazil?": False}
    dbs = {"How many customers are there?": str(demo_db), "How many orders were over $100?": str(demo_db),
           "How many tracks are there?": str(chinook_path), "How many customers are from Brazil?": str(chinook_path)}
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"q{i}", "db": dbs[q], "question": q, "label": labels[q]})
                              for i, q in enumerate(SCRIPT)) + "\n", encoding="utf-8")
    import sys
    import types

    # the model named on the command line as py:module:function, as a user names their own
    monkeypatch.setitem(sys.modules, "ies_scripted_model", types.SimpleNamespace(fn=_scripted))
    out = tmp_path / "run"
    code = main(["eval", "confidence", "--paper", "ies", "--model", "py:ies_scripted_model:fn",
                 "--input", str(path), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
                 "--no-model-cache", "--bootstrap", "200"])
    text, err = capsys.readouterr()
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    r = m["rules"]
    # Sample 0 is shown (--paper ies): A = 1, 0.4, 1, 0.6. The judge covers every part, so
    # COMPLETE = 1 and, with GROUNDED and SAFETY, evidence is not thin; no paper check fires.
    assert m["ies"]["complete_sources"] == {"judge": 4, "alignment": 0, "unmeasured": 0}
    for rule in ("agreement_alone", "agreement_first", "v3"):
        assert r[rule]["auroc"] == 1.0 and r[rule]["gate"] == {"pass": [2, 0], "flag": [0, 1], "abstain": [0, 1]}
    # designed: a 3–2 split has L2 = 1 − (.6 ln(1/.6) + .4 ln(1/.4))/ln 5 = 0.5818, so the two
    # wrong answers score (.3 + .1 + .2 × .5818)/.6 = 0.8606 and pass; the right ones score 1.
    assert r["designed"]["auroc"] == 1.0 and r["designed"]["gate"] == {"pass": [2, 2], "flag": [0, 0],
                                                                       "abstain": [0, 0]}
    assert (r["designed"]["pass_accuracy"], r["designed"]["correct_withheld"]) == (0.5, 0.0)
    # v2: SAFETY = min(L1, A): (.4 + .2 × .4)/.6 = 0.8 and (.4 + .2 × .6)/.6 = 0.8667, both pass.
    assert r["v2"]["gate"] == {"pass": [2, 2], "flag": [0, 0], "abstain": [0, 0]}
    h = {x["id"]: x["verdict"] for x in m["ies"]["hypotheses"]}
    assert h["H2"] == "Fail"  # no correct answer withheld by either rule: "fewer" does not hold
    # H4 needs designed strictly below agreement alone: 1.000 = 1.000 is not as predicted.
    assert h["H3"] == "Not tested" and h["H4"] == "Not as predicted"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["parameters"]["shown"] == "first" and manifest["parameters"]["judge_complete"] is True
    assert "IES Table 8" in text and "H4" in text


# ---------------------------------------------------------------------------------------
# Deviations 1 and 2 of issue 29: the question as asked; a sample with no SQL stays in K
# ---------------------------------------------------------------------------------------
def _open_choice_reply(seen: list):
    """A model whose assess step would split the question into two interpretations; its K
    generate samples for the question as asked disagree 3–2."""

    def reply(request):
        system = request.messages[0][1]
        seen.append(system)
        if "Task: assess" in system:
            return json.dumps({"is_valid": True, "flaw_code": None, "reason": "r", "clarification": None,
                               "interpretations": [
                                   {"request": "How many orders were over $100, strictly?", "clause": "strictly"},
                                   {"request": "How many orders were $100 or more?", "clause": "inclusive"}]})
        if "Task: generate" in system:
            user = "\n".join(c for r, c in request.messages if r == "user")
            if "strictly" in user or "or more" in user:  # an interpretation: its samples all agree
                sql = OVER_100 if "strictly" in user else AT_LEAST_100
            else:
                sql = OVER_100 if request.sample in (0, 1, 2) else AT_LEAST_100
            return json.dumps({"sql": sql, "interpretation": "as asked", "assumptions": []})
        return "Some orders."

    return reply


@pytest.mark.parametrize("paper, agreement, assess_calls, interpretations", [
    ("ies", 0.6, 0, None),  # the paper: K samples of the question as asked, A = 3/5
    (None, 1.0, 1, 2),      # Vouch: the first interpretation's samples, said in the record
])
def test_the_ies_preset_samples_the_question_as_asked(demo_db, tmp_path, paper, agreement, assess_calls,
                                                      interpretations):
    from vouchsql.llm import FakeModel

    seen: list = []
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "db": str(demo_db), "question": "How many orders were over $100?",
                                "gold_sql": OVER_100}) + "\n", encoding="utf-8")
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True, shown="first")
    records, manifest = C.run_confidence(path, config, tmp_path / "run", model=FakeModel(_open_choice_reply(seen)),
                                         k=5, parameters={"rules": ["agreement_first"], "bootstrap": 50, "seed": 0,
                                                          "paper": paper})
    r = records[0]
    assert r["agreement"] == pytest.approx(agreement) and r["k"] == 5
    assert sum("Task: assess" in s for s in seen) == assess_calls
    assert r.get("interpretations") == interpretations
    assert manifest["parameters"]["assess"] is (paper != "ies")
    metrics, _ = C.analyse(records, ["agreement_first"], replicates=50)
    assert metrics["first_interpretation_only"] == (1 if interpretations else 0)


@pytest.mark.parametrize("empty, shown_sql, agreement, gate", [
    ((1,), OVER_100, 0.8, None),  # one of five gave no SQL: A = 4/5, not 4/4
    ((0,), "", 0.0, "abstain"),   # sample 0 gave none: nothing is shown (sample 1 is not shown instead)
])
def test_a_sample_with_no_sql_stays_one_of_the_k(demo_db, tmp_path, empty, shown_sql, agreement, gate):
    from vouchsql.llm import FakeModel

    def reply(request):
        system = request.messages[0][1]
        if "Task: generate" in system:
            return json.dumps({"sql": None if request.sample in empty else OVER_100, "interpretation": "as asked",
                               "assumptions": []})
        return "Some orders."

    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "q1", "db": str(demo_db), "question": "How many orders were over $100?",
                                "gold_sql": OVER_100}) + "\n", encoding="utf-8")
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), no_model_cache=True, shown="first")
    records, _ = C.run_confidence(path, config, tmp_path / "run", model=FakeModel(reply), k=5,
                                  parameters={"rules": ["agreement_first"], "bootstrap": 50, "seed": 0,
                                              "paper": "ies"})
    r = records[0]
    assert r["k"] == 5 and r["candidates"][0]["sql"] == shown_sql
    assert r["agreement"] == pytest.approx(agreement)
    if gate:
        assert r["verdicts"]["agreement_first"]["gate"] == gate and r["label"] is False


def test_table5_reports_the_truncation_bound_beside_h1():
    # r2's one disagreeing sample was a pair left open by truncation in the stored run: its
    # lower bound counts that pair as disagreeing (A 0.8 → 0.6, a flag instead of a pass).
    records = [dict(r) for r in RECORDS]
    records[0] = {**records[0], "agreement": 1.0, "agreement_lower": 0.6, "truncated_pairs": 2}
    metrics, _ = C.analyse(records, list(C.DEFAULT_RULES), replicates=100, seed=1, check_set="paper", paper="ies")
    bound = metrics["ies"]["truncation_lower_bound"]
    assert bound["answers"] == 1
    # agreement-first with r1 at .6: right r1 .6, r2 .8, r5 1, r7 .59 vs wrong r3 .6, r4 1, r6 .4, r8 .2:
    # r1 .6: .5+0+1+1 = 2.5; r2 .8: 1+0+1+1 = 3; r5 1: 1+.5+1+1 = 3.5; r7 .59: 0+0+1+1 = 2 → 11/16.
    assert bound["agreement_first_auroc"] == pytest.approx(11 / 16)
    h1 = next(h for h in metrics["ies"]["hypotheses"] if h["id"] == "H1")
    assert "with truncated pairs counted as disagreeing (1 answer), agreement-first AUROC 0.688" in h1["observed"]


def test_proposition_1_compares_the_statistics_under_one_matching():
    """A minus L2 with the matching held fixed (IES §8): strict A against strict entropy, and
    relaxed A against the entropy over the relaxed (greedy, sample-order) clusters."""
    def rec(i, label, strict, relaxed, agreement):
        return {**_record(i, "a", label, agreement, strict),
                "candidates": [{"sql": "x", "cluster": c} for c in relaxed]}

    records = [rec(1, True, [0, 0, 0, 0, 1], [0, 0, 0, 0, 1], 0.8),
               rec(2, False, [0, 1, 1, 1, 1], [0, 1, 1, 1, 1], 0.2),  # shown alone: L2 as for r1 (Prop. 1)
               rec(3, True, [0, 0, 0, 1, 1], [0, 0, 0, 1, 1], 0.6),
               rec(4, False, [0, 1, 2, 3, 4], [0, 0, 0, 0, 1], 0.8)]  # strict: all apart; relaxed: 4 of 5
    metrics, _ = C.analyse(records, list(C.DEFAULT_RULES), replicates=100, seed=1, check_set="paper", paper="ies")
    ies_m = metrics["ies"]
    # Strict: A = .8, .2, .6, .2 → AUROC 1; L2 = .6891, .6891, .5818, 0 → (1.5 + 1) / 4 = .625.
    assert ies_m["a_minus_l2"]["diff"] == pytest.approx(1 - 0.625)
    # Relaxed: A = .8, .2, .6, .8 → (1.5 + 1) / 4 = .625; L2 = .6891, .6891, .5818, .6891 → 1 / 4 = .25.
    assert ies_m["a_minus_l2_relaxed"]["diff"] == pytest.approx(0.625 - 0.25)


# ---------------------------------------------------------------------------------------
# The claim judge (issue 29, deviation 4): TDD-H's unsupported claims
# ---------------------------------------------------------------------------------------
def _with_claims(*claims: tuple[str, bool]) -> list[CheckResult]:
    checks = [CheckResult.model_validate(c) for c in _checks()]
    about = sum(a for _, a in claims)
    checks.append(CheckResult(name="claim_judge", kind="cap", fired=about > 0, detail="x",
                              evidence={"claims": [{"claim": c, "about_answer": a} for c, a in claims],
                                        "about_answer": about}))
    return checks


@pytest.mark.parametrize("claims, designed, v2, agreement_first", [
    # No claim: GROUNDED 1, COMPLETE 1, SAFETY min(L1 1, L2 1) → 1 for all.
    ((), 1.0, 1.0, 1.0),
    # A claim in the commentary: the design counts it (L1 = 0 → SAFETY 0: (.3 + .1) / .6 = .6667,
    # and its hard cap: .59); v2 and agreement-first count only claims about the answer.
    ((("it will rise next year", False),), 0.59, 1.0, 1.0),
    # A claim about the answer: every rule counts it; agreement-first caps at .79.
    ((("there are 12 customers", True),), 0.59, 0.59, 0.79),
])
def test_unsupported_claims_by_rule(claims, designed, v2, agreement_first):
    inp = dict(agreement=1.0, k=5, checks=_with_claims(*claims), strict_clusters=[0] * 5, check_set="paper")
    assert score("designed", ScoreInput(**inp)).score == pytest.approx(designed)
    assert score("v2", ScoreInput(**inp)).score == pytest.approx(v2)
    assert score("agreement_first", ScoreInput(**inp)).score == pytest.approx(agreement_first)
    # Table 2's rows: the design with claims about the answer only, and with claims ignored
    only_answer = score("designed", ScoreInput(**inp, options={"claims": "answer"})).score
    assert only_answer == pytest.approx(v2 if claims and claims[0][1] else 1.0)
    assert score("designed", ScoreInput(**inp, options={"claims": "ignore"})).score == 1.0


def test_ask_runs_the_claim_judge_and_the_check_carries_its_claims(demo_db, tmp_path):
    from vouchsql.api import ask
    from vouchsql.llm import FakeModel

    def reply(request):
        system = request.messages[0][1]
        if "Task: assess" in system:
            return json.dumps({"is_valid": True, "flaw_code": None, "reason": "r", "clarification": None,
                               "interpretations": []})
        if "Task: generate" in system:
            return json.dumps({"sql": OVER_100, "interpretation": "as asked", "assumptions": []})
        if "Task: judge_claims" in system:
            assert "<data name=\"result\">" in request.messages[-1][1]  # the judge sees the rows
            return json.dumps({"claims": [{"claim": "most were in December", "about_answer": False, "why": "no dates"},
                                          {"claim": "there were 999 such orders", "about_answer": True, "why": "x"}]})
        return "There were 999 such orders, most in December."

    answer = ask(demo_db, "How many orders were over $100?", model=FakeModel(reply), k=3, prose=True,
                 judge_claims=True, cache_dir=str(tmp_path / "c"), no_model_cache=True)
    check = {c.name: c for c in answer.checks}["claim_judge"]
    assert check.fired and check.evidence["about_answer"] == 1 and len(check.evidence["claims"]) == 2
    assert "claim_judge" in answer.verdict.reasons and answer.verdict.score <= 0.79
    # Without the setting no judge call is made and the check measures nothing.
    quiet = ask(demo_db, "How many orders were over $100?", model=FakeModel(reply), k=3, prose=True,
                cache_dir=str(tmp_path / "c2"), no_model_cache=True)
    assert {c.name: c for c in quiet.checks}["claim_judge"].detail.startswith("not measured")

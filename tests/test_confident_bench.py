"""bench/confident_errors.py: the counting of the confident-error benchmark (issue 12, part 5).

Fast: a toy SQLite database built here, hand-made records for the arithmetic, and three cases
of the shared development set (skipped where ../shared/cases is absent)."""

from __future__ import annotations

import importlib.util
import json
import math
import sqlite3
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CASES = Path(__file__).resolve().parents[2] / "shared" / "cases"
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("confident_errors", REPO / "bench" / "confident_errors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_wilson_bounds(bench):
    lo, hi = bench.wilson(10, 25)
    assert (lo, hi) == (0.234, 0.5926)
    assert (lo, hi) == tuple(round(x, 4) for x in _wilson_by_hand(10, 25))
    assert bench.wilson(0, 29) == [0.0, 0.1170]
    assert bench.wilson(5, 5)[1] == 1.0
    assert bench.wilson(0, 0) == [None, None]
    assert bench.share(3, 12) == {"k": 3, "n": 12, "share": 0.25, "ci95": bench.wilson(3, 12)}


def _planted(pid, kind, gate, runs=True):
    return {"planted_id": pid, "kind": kind, "runs": runs, "gate": gate, "withheld": gate in ("flag", "abstain")}


def _ref(gate, alarms, judgement, bench):
    outcome, gone = bench.judge_alarms(alarms, judgement)
    return {"runs": True, "gate": gate, "withheld": gate in ("flag", "abstain"), "alarms": alarms,
            "judgement": outcome, "judged_not_firing": gone}


def test_counting_on_hand_made_records(bench):
    records = [
        {"id": "a", "reference_is_wrong": None, "reference": _ref("pass", ["join_drop"], {"join_drop": "FALSE"}, bench),
         "planted": [_planted("a/wrong_join_key", "wrong_join_key", "abstain"),
                     _planted("a/drop_condition", "drop_condition", "pass")]},
        {"id": "b", "reference_is_wrong": None,
         "reference": _ref("flag", ["choice:ties", "join_fanout"], {"choice:ties": "RIGHT"}, bench),
         "planted": [_planted("b/wrong_join_key", "wrong_join_key", "flag"),
                     _planted("b/off_by_one", "off_by_one", "abstain", runs=False)]},
        {"id": "c", "reference_is_wrong": "ties at the cut-off",
         "reference": _ref("abstain", [], {"choice:ties": "RIGHT"}, bench),
         "planted": [_planted("c/wrong_join_key", "wrong_join_key", "pass")]},
        {"id": "d", "reference_is_wrong": "merges same-named rows", "reference": _ref("pass", [], {}, bench),
         "planted": []},
    ]
    s = bench.summarise(records)
    pl = s["planted"]
    assert list(pl["by_kind"]) == ["wrong_join_key", "drop_condition", "off_by_one"]  # the order
    jk = pl["by_kind"]["wrong_join_key"]
    assert (jk["k"], jk["n"], jk["share"]) == (2, 3, 0.6667)
    assert jk["gates"] == {"pass": 1, "flag": 1, "abstain": 1}
    assert jk["not_withheld"] == ["c/wrong_join_key"]
    # A planted SQL that does not run is counted apart and left out of n.
    ob = pl["by_kind"]["off_by_one"]
    assert (ob["planted"], ob["n"], ob["k"], ob["does_not_run"]) == (1, 0, 0, ["b/off_by_one"])
    assert ob["ci95"] == [None, None]
    assert (pl["all"]["k"], pl["all"]["n"], pl["all"]["planted"]) == (2, 4, 5)
    assert pl["all"]["ci95"] == bench.wilson(2, 4)

    rf = s["references"]
    assert (rf["correct_not_passed"]["k"], rf["correct_not_passed"]["n"]) == (1, 2)
    assert rf["correct_not_passed"]["ids"] == ["b"]
    assert (rf["wrong_withheld"]["k"], rf["wrong_withheld"]["n"]) == (1, 2)
    assert rf["wrong_withheld"]["ids"] == ["c"] and rf["wrong_withheld"]["not_withheld"] == ["d"]

    al = s["alarms"]
    assert al["by_alarm"]["join_drop"] == {"fired": 1, "RIGHT": 0, "FALSE": 1, "unjudged": 0,
                                           "precision": bench.share(0, 1)}
    assert al["by_alarm"]["choice:ties"]["RIGHT"] == 1
    assert al["by_alarm"]["join_fanout"]["unjudged"] == 1
    assert al["by_alarm"]["join_fanout"]["precision"]["n"] == 0
    assert al["false_alarms"] == [{"id": "a", "alarm": "join_drop"}]
    assert al["judged_not_firing"] == [{"id": "c", "alarm": "choice:ties", "judged": "RIGHT"}]


def test_planted_ids_number_repeated_kinds(bench):
    case = {"id": "x", "planted": [{"kind": "off_by_one"}, {"kind": "drop_condition"}, {"kind": "off_by_one"}]}
    assert bench.planted_ids(case) == ["x/off_by_one", "x/drop_condition", "x/off_by_one-2"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy")
    con = sqlite3.connect(folder / "toy.sqlite")
    con.executescript(
        "CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        "CREATE TABLE employee (employee_id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
        + "".join(f"INSERT INTO artist VALUES ({i}, 'artist {i}');" for i in range(1, 31))
        + "".join(f"INSERT INTO employee VALUES ({i}, 'employee {i}');" for i in range(1, 9)))
    con.commit()
    con.close()
    case = {"id": "toy-artists", "db": "toy", "question": "How many artists are there?",
            "reference_sql": "SELECT COUNT(*) AS artists FROM artist", "reference_is_wrong": None,
            "judgement": {"join_fanout": "FALSE"},
            "planted": [{"kind": "wrong_table", "sql": "SELECT 42", "description": "a constant"},
                        {"kind": "wrong_table", "sql": "SELECT COUNT(*) FROM employee", "description": "artist -> employee"},
                        {"kind": "drop_condition", "sql": "SELECT COUNT(*) FROM no_such_table", "description": "does not run"}]}
    (folder / "toy.jsonl").write_text(json.dumps(case) + "\n")
    return folder


def test_toy_database_end_to_end(bench, toy, tmp_path):
    cases = bench.load_cases([toy / "toy.jsonl"])
    [rec] = bench.run_cases(cases, datasets=toy, cache_dir=str(tmp_path / "cache"))
    ref = rec["reference"]
    # A correct one-table count, shown 5 times: agreement 1.0, passes.
    assert (ref["runs"], ref["gate"], ref["agreement"], ref["withheld"]) == (True, "pass", 1.0, False)
    assert ref["judgement"] == {a: "unjudged" for a in ref["alarms"]}
    assert ref["judged_not_firing"] == [{"alarm": "join_fanout", "judged": "FALSE"}]
    constant, employee, broken = rec["planted"]
    assert [p["planted_id"] for p in rec["planted"]] == ["toy-artists/wrong_table", "toy-artists/wrong_table-2",
                                                          "toy-artists/drop_condition"]
    for p in (constant, employee):
        assert p["runs"] and p["agreement"] == 1.0
        assert p["withheld"] == (p["gate"] in ("flag", "abstain"))
    # SQL the engine cannot run: abstained (no_result veto) but counted as "does not run".
    assert (broken["runs"], broken["gate"]) == (False, "abstain")
    assert "no such table" in broken["error"]
    assert "no_result" in [c["name"] for c in broken["checks"]]
    s = bench.summarise([rec])
    wt = s["planted"]["by_kind"]["wrong_table"]
    assert wt["n"] == 2 and wt["k"] == sum(p["withheld"] for p in (constant, employee))
    assert s["planted"]["by_kind"]["drop_condition"]["does_not_run"] == ["toy-artists/drop_condition"]
    assert s["planted"]["all"]["n"] == 2


def test_filters_and_json(bench, toy, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert bench.main(["--cases", str(toy / "toy.jsonl"), "--datasets", str(toy), "--kinds", "wrong_table",
                       "--json", str(out), "--quiet", "--cache-dir", str(tmp_path / "cache")]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == bench.SCHEMA and doc["settings"]["rule"] == "agreement_first"
    assert [p["kind"] for p in doc["cases"][0]["planted"]] == ["wrong_table", "wrong_table"]
    # One timing only: the total wall time.
    text = out.read_text()
    assert "elapsed" not in text and "_ms" not in text and isinstance(doc["wall_s"], float)
    printed = capsys.readouterr().out
    assert "| wrong_table | 2 | 0 | 2 |" in printed
    with pytest.raises(SystemExit):
        bench.main(["--cases", str(toy / "toy.jsonl"), "--datasets", str(toy), "--kinds", "nonsense", "--quiet"])
    with pytest.raises(SystemExit):
        bench.main(["--cases", str(toy / "toy.jsonl"), "--datasets", str(toy), "--ids", "nope", "--quiet"])


def test_three_dev_cases(bench, tmp_path):
    dev = CASES / "external_dev.jsonl"
    if not dev.is_file() or not DATASETS.is_dir():
        pytest.skip(f"the shared development cases are absent ({dev}; expected ../shared/cases beside the checkout)")
    cases = [c for c in bench.load_cases([dev]) if c["planted"]][:3]
    assert len(cases) == 3
    cache = str(tmp_path / "cache")
    records = bench.run_cases(cases, datasets=DATASETS, cache_dir=cache)
    assert bench.run_cases(cases, datasets=DATASETS, cache_dir=cache) == records  # same input, same output
    n_planted = sum(len(c["planted"]) for c in cases)
    s = bench.summarise(records)
    assert s["planted"]["all"]["planted"] == n_planted
    assert s["references"]["references"] == 3
    for rec in records:
        assert rec["reference"]["runs"], rec["id"]
        assert rec["reference"]["agreement"] == 1.0
        assert set(rec["reference"]["judgement"]) == set(rec["reference"]["alarms"])
        for p in rec["planted"]:
            assert p["gate"] in ("pass", "flag", "abstain")
            assert p["withheld"] == (p["gate"] in ("flag", "abstain"))
    withheld = sum(p["withheld"] for r in records for p in r["planted"] if p["runs"])
    assert s["planted"]["all"]["k"] == withheld
    assert s["planted"]["all"]["ci95"] == bench.wilson(withheld, s["planted"]["all"]["n"])

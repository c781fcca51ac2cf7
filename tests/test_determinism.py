"""Same input, same output: every golden check and choice case, vouched for twice — here, and
in another process while every CPU is busy — gives identical JSON apart from timings.

Nothing Vouch reports may depend on how loaded the machine is: the detectors' budget is
counted in queries and rows (``vouchsql.choices.base``), never in wall time, and no check
reads a clock. Run as a script, this module vouches for the cases in a JSON file and prints
the answers (that is what the busy process runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


FIXTURES = Path(__file__).parent / "fixtures"
TIMING_KEYS = {"elapsed_ms"}


def golden_cases() -> list[dict]:
    cases = []
    for path in sorted((FIXTURES / "checks").glob("*.json")) + sorted((FIXTURES / "choices").glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")):
            sql = case["sql"]
            cases.append({"id": f"{path.parent.name}/{path.stem}: {case['title']}", "db": case["db"],
                          "question": case["question"], "sql": sql if isinstance(sql, list) else [sql],
                          "answer_text": case.get("answer_text"), "hint": case.get("hint"),
                          "settings": case.get("settings", {})})
    return cases


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def vouch_all(cases: list[dict], paths: dict[str, str], cache_dir: str) -> dict[str, dict]:
    import vouchsql

    out = {}
    for case in cases:
        answer = vouchsql.check(paths[case["db"]], case["question"], case["sql"], answer_text=case["answer_text"],
                                hint=case["hint"], cache_dir=cache_dir, all_choices=True, **case["settings"])
        out[case["id"]] = without_timings(answer.model_dump(mode="json"))
    return out


def test_every_golden_case_gives_the_same_answer_on_a_busy_machine(request, tmp_path, demo_db):
    cases = golden_cases()
    assert len(cases) >= 200
    names = {c["db"] for c in cases}
    paths = {name: str(demo_db if name == "demo" else request.getfixturevalue(f"{name}_path")) for name in names}

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"cases": cases, "paths": paths, "cache": str(tmp_path / "cache-busy")}))
    # The other process runs while every CPU is kept busy, and while this one vouches too:
    # both at once take half the time of one after the other (the CI's budget).
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        other = subprocess.Popen([sys.executable, __file__, str(spec)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        try:
            here = vouch_all(cases, paths, str(tmp_path / "cache-here"))
            out, err = other.communicate(timeout=900)
        finally:
            if other.poll() is None:
                other.kill()
                other.wait()
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert other.returncode == 0, err[-3000:]
    busy = json.loads(out)
    assert busy.keys() == here.keys()
    differ = [key for key in here if here[key] != busy[key]]
    assert differ == [], f"{len(differ)} case(s) answered differently under load: {differ[:5]}"


if __name__ == "__main__":
    spec = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(vouch_all(spec["cases"], spec["paths"], spec["cache"])))


def test_choices_do_not_depend_on_how_long_queries_take(monkeypatch, request, tmp_path):
    """The same choices when the machine gets busier query by query (a clock whose every
    read jumps further than the one before, so each query appears slower than the shown
    one): the detectors' budget never reads a clock."""
    import vouchsql
    import vouchsql.db.base as base

    chinook = request.getfixturevalue("chinook_path")
    question = "How many invoices has each customer made?"
    sql = ("SELECT c.CustomerId, COUNT(*) FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId "
           "JOIN InvoiceLine il ON il.InvoiceId = i.InvoiceId GROUP BY c.CustomerId")

    def choices():
        answer = vouchsql.check(chinook, question, [sql], cache_dir=str(tmp_path / "cache"), all_choices=True)
        return [(c.type, c.sql, c.differs) for c in answer.choices]

    calm = choices()
    assert len(calm) >= 2, "the case must need more than one query to compare"

    class SlowClock:  # the profile is cached by the calm run: few reads, no overflow
        now, step = 0.0, 0.001

        def perf_counter(self):
            self.step *= 3
            self.now += self.step
            return self.now

    slow = SlowClock()
    monkeypatch.setattr(base, "time", type("T", (), {"perf_counter": slow.perf_counter,
                                                      "monotonic": staticmethod(__import__("time").monotonic)}))
    assert choices() == calm

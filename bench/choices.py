#!/usr/bin/env python
"""Benchmark: what choice detection costs beside the shown query's own execution time.

Not a test. The issue's target: on the shared databases, detection adds at most 2× the shown
query's own execution time; the ratio is reported per database.

Workload: the SQL of the request sets shipped with Vouch (``src/vouchsql/data/request_sets.jsonl``,
or ``--sets FILE``), shown with the open request, as ``vouch check`` would show it: for every
set its reference SQL A, and for every no-difference case its SQL. Per database (the shared
``../shared/datasets/{chinook,sakila,northwind}.sqlite``, each skipped with a message where
absent; ``--demo`` adds the demo database built into a temporary folder) it

1. opens the database once with ``vouchsql.connect(path, cache_dir=<temporary folder>)`` and
   builds the profile (not measured: ``check`` reads it from the cache);
2. per query, ``--repeat`` times after ``--warmup`` unmeasured rounds, in round-robin order:
   runs the shown SQL (``db.execute``, ``Result.elapsed_ms``: the shown query's own
   execution time) and then ``vouchsql.choices.detect_choices`` on it with the parsed tree and
   the profile, as ``vouchsql.pipeline.check_candidates`` calls it (parsing and profiling are
   the pipeline's, not the detectors'), timed with ``time.perf_counter``; its ``stats`` give
   the detectors' own database time and query count.

Columns (milliseconds; each repeat sums over the database's queries, then the median over
repeats is taken):

* ``shown``   the shown queries' execution time as Vouch reports it (``Result.elapsed_ms``:
  the read-only gate's parse, the engine, building the result);
* ``detect``  detection wall time: everything ``detect_choices`` costs;
* ``engine``  the part of ``detect`` inside the engine (``Database._run``: SQLite running the
  probes and alternatives and fetching their rows);
* ``gate``    the part of ``detect`` in the read-only gate (``Database.parse``: every probe and
  alternative is parsed again by sqlglot before it runs);
* ``python``  the rest: the detectors' own Python (reading the tree, copying and editing it,
  writing each alternative's SQL with sqlglot, comparing results);
* ``ratio``   ``detect / shown``: **the target is judged on this, ≤ 2.0 per database**;
* ``eng_ratio`` the engine time of detection over the shown query's engine time;
* ``q/req``   detector queries per request (mean); ``med q-ratio`` the median over queries
  of each query's own ``detect / shown`` (small queries weigh as much as large ones);
* ``>2x``     queries whose own ratio exceeds 2;
* ``slow``    ``detect / shown`` over the queries whose own time is at least 5 ms (their
  number in brackets): where the engine, not Python, sets the cost.

The detectors' default budget is kept (counted, not timed: 8× the rows the shown query reads
by the profile, at least 1,000,000, in at most 40 queries); ``--budget-rows`` overrides it.
The machine may be shared: the load average is printed.

    python bench/choices.py [--repeat 7] [--warmup 1] [--demo] [--sets FILE] [--per-query]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import vouchsql  # noqa: E402
from vouchsql.choices import Budget, detect_choices  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
DEFAULT_SETS = ROOT / "src" / "vouchsql" / "data" / "request_sets.jsonl"
TARGET = 2.0
SLOW_MS = 5.0  # the "slow" columns: queries whose own time is at least this (ms)


def load_workload(path: Path) -> dict[str, list[tuple[str, str, str]]]:
    """(id, question, sql) per database name: every set's SQL A with its open request, and
    every no-difference case's SQL."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = json.loads(line)
        out.setdefault(row["db"], []).append((row["id"], row.get("open") or row.get("open_request"), row["sql_a"]))
    return out


class Meter:
    """Wraps ``_run`` (the engine: SQLite running and fetching) and ``parse`` (the read-only
    gate, sqlglot) on one Database instance, so the time of each is known; library files are
    not changed."""

    def __init__(self, db) -> None:
        self.engine = 0.0
        self.gate = 0.0
        run, parse = db._run, db.parse

        def timed_run(*a, **k):
            start = time.perf_counter()
            try:
                return run(*a, **k)
            finally:
                self.engine += (time.perf_counter() - start) * 1000

        def timed_parse(*a, **k):
            start = time.perf_counter()
            try:
                return parse(*a, **k)
            finally:
                self.gate += (time.perf_counter() - start) * 1000

        db._run, db.parse = timed_run, timed_parse

    def take(self) -> tuple[float, float]:
        out = (self.engine, self.gate)
        self.engine = self.gate = 0.0
        return out


def bench_db(name: str, path: Path, items: list[tuple[str, str, str]], *, repeat: int, warmup: int,
             cache: str, budget_rows: int | None) -> dict:
    db = vouchsql.connect(path, cache_dir=cache)
    try:
        profile = db.profile()
        trees = {i: db.parse(sql) for i, _, sql in items}
        meter = Meter(db)
        keys = ("shown", "shown_engine", "detect", "engine", "gate", "queries")
        per_query = {i: {k: [] for k in keys} for i, _, _ in items}
        rounds = []
        for r in range(warmup + repeat):
            totals = dict.fromkeys(keys, 0.0)
            for item_id, question, sql in items:
                meter.take()
                result = db.execute(sql)
                shown_engine, _ = meter.take()
                if not result.ok:
                    raise SystemExit(f"{name}/{item_id}: the SQL does not run: {result.error.message}")
                stats: dict = {}
                start = time.perf_counter()
                detect_choices(question, db, sql, result, tree=trees[item_id], profile=profile,
                               budget=Budget(rows=budget_rows), stats=stats)
                detect_ms = (time.perf_counter() - start) * 1000
                engine, gate = meter.take()
                if r < warmup:
                    continue
                values = {"shown": result.elapsed_ms, "shown_engine": shown_engine, "detect": detect_ms,
                          "engine": engine, "gate": gate, "queries": stats.get("choices_queries", 0)}
                for k, v in values.items():
                    per_query[item_id][k].append(v)
                    totals[k] += v
            if r >= warmup:
                rounds.append(totals)
    finally:
        db.close()
    med = {k: statistics.median(t[k] for t in rounds) for k in keys}
    ratios = [t["detect"] / t["shown"] for t in rounds if t["shown"] > 0]
    sql_ratios = [t["engine"] / t["shown_engine"] for t in rounds if t["shown_engine"] > 0]
    query_rows = []
    for item_id, _, _ in items:
        q = per_query[item_id]
        shown, detect = statistics.median(q["shown"]), statistics.median(q["detect"])
        query_rows.append({"id": item_id, "shown": shown, "detect": detect, "engine": statistics.median(q["engine"]),
                           "gate": statistics.median(q["gate"]), "queries": statistics.median(q["queries"]),
                           "ratio": detect / shown if shown else None})
    q_ratios = [q["ratio"] for q in query_rows if q["ratio"] is not None]
    slow = [q for q in query_rows if q["shown"] >= SLOW_MS]
    slow_ratio = sum(q["detect"] for q in slow) / sum(q["shown"] for q in slow) if slow else None
    return {"slow_n": len(slow), "slow_ratio": slow_ratio,
            "db": name, "n": len(items), "shown": med["shown"], "shown_engine": med["shown_engine"],
            "detect": med["detect"], "engine": med["engine"], "gate": med["gate"],
            "python": med["detect"] - med["engine"] - med["gate"],
            "ratio": statistics.median(ratios), "engine_ratio": statistics.median(sql_ratios),
            "q_per_request": med["queries"] / len(items), "median_query_ratio": statistics.median(q_ratios),
            "over_2x": sum(1 for r in q_ratios if r > TARGET), "queries": query_rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="measured rounds (default 7)")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first (default 1)")
    ap.add_argument("--sets", type=Path, default=DEFAULT_SETS, help="request sets JSONL (default: the shipped sets)")
    ap.add_argument("--datasets", type=Path, default=SHARED, help="folder of chinook/sakila/northwind .sqlite")
    ap.add_argument("--demo", action="store_true", help="also the demo database (not a shared database)")
    ap.add_argument("--budget-rows", type=int, default=None, help="override the detectors' budget of rows read")
    ap.add_argument("--per-query", action="store_true", help="print every query's numbers")
    ap.add_argument("--json", type=Path, help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be at least 1 and --warmup at least 0")

    workload = load_workload(args.sets)
    print(f"vouchsql {vouchsql.__version__}; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.repeat} repeats after {args.warmup} warm-up; workload {args.sets.name}")
    results = []
    with tempfile.TemporaryDirectory(prefix="vouch-bench-choices-") as tmp:
        targets: list[tuple[str, Path]] = []
        for name in ("chinook", "sakila", "northwind"):
            path = args.datasets / f"{name}.sqlite"
            if not path.is_file():
                print(f"skipping {name}: {path} not found")
                continue
            targets.append((name, path))
        if args.demo:
            from vouchsql.demo import build_demo

            targets.append(("demo", build_demo(Path(tmp) / "demo.sqlite")))
        for name, path in targets:
            items = workload.get(name, [])
            if not items:
                print(f"skipping {name}: no request sets on it")
                continue
            results.append(bench_db(name, path, items, repeat=args.repeat, warmup=args.warmup, cache=tmp,
                                    budget_rows=args.budget_rows))

    head = (f"{'database':10} {'n':>3} {'shown':>8} {'detect':>8} {'engine':>8} {'gate':>7} {'python':>8} "
            f"{'ratio':>6} {'eng_ratio':>9} {'q/req':>6} {'med q-ratio':>11} {'>2x':>4} {'slow':>9}  "
            f"target: ratio ≤ {TARGET:g}")
    print(head)
    print("-" * len(head))
    for r in results:
        ok = "ok" if r["ratio"] <= TARGET else "MISSED"
        shared = "" if r["db"] != "demo" else " (not a shared database)"
        slow = f"{r['slow_ratio']:.2f} ({r['slow_n']})" if r["slow_ratio"] is not None else "—"
        print(f"{r['db']:10} {r['n']:>3} {r['shown']:>8.2f} {r['detect']:>8.2f} {r['engine']:>8.2f} {r['gate']:>7.2f} "
              f"{r['python']:>8.2f} {r['ratio']:>6.2f} {r['engine_ratio']:>9.2f} {r['q_per_request']:>6.2f} "
              f"{r['median_query_ratio']:>11.2f} {r['over_2x']:>4} {slow:>9}  {ok}{shared}")
        if args.per_query:
            for q in r["queries"]:
                ratio = f"{q['ratio']:.2f}" if q["ratio"] is not None else "—"
                print(f"    {q['id']:44} shown {q['shown']:8.2f}  detect {q['detect']:8.2f}  engine {q['engine']:8.2f}  "
                      f"gate {q['gate']:6.2f}  q {q['queries']:3.0f}  ratio {ratio}")
    shared_results = [r for r in results if r["db"] != "demo"]
    if shared_results:
        worst = max(shared_results, key=lambda r: r["ratio"])
        verdict = "met" if worst["ratio"] <= TARGET else "NOT met"
        print(f"\nTarget (detection ≤ {TARGET:g}× the shown query's time, per shared database): {verdict}; "
              f"worst {worst['db']} at {worst['ratio']:.2f}×")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

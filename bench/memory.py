#!/usr/bin/env python
"""Benchmark: peak memory of one request and of six concurrent HTTP requests, against the
byte cap (issue 27, item 4: peak ≤ 4 × max_result_bytes + a fixed base per request).

Each engine's run is a fresh child process, so the kernel's high-water mark (ru_maxrss)
belongs to it alone: it opens the database, runs one small query and records the RSS as the
base (imports, the engine, the profile), then sends the heavy statements — a wide result cut
by bytes, many list cells, text built in SQL — through ``POST /api/check`` of the real app
(FastAPI's TestClient), one at a time and then six at once from six threads, and reports the
peak above the base as a multiple of the cap. The engines are SQLite (Chinook), a DuckDB
file and a folder of CSV files (built from Chinook here).

The bound has two parts, so one cap cannot tell them apart: with several caps (``--caps``,
in MiB) each engine's peak above the base is fitted as ``fixed + slope × cap`` (least
squares), the slope being what each further byte of cap costs. The heavy statements scale
with the cap, so every cap sees its results cut by bytes, never refused: DuckDB's text is
half the largest value its guarding macros allow (``max_result_bytes`` / 8,192).

DuckDB runs in a worker process per connection (``vouchsql/db/duckdb_worker.py``), so
its memory is not in this process's high-water mark: each worker reports its own peak above
its start when it closes, and the bench adds the largest of one phase's workers (one at a
time) or the sum of the six (six at once) to the peak of this process. That is an upper
bound: the two peaks need not fall at the same moment.

The worker costs time where a database is opened (each ``vouch serve`` request opens its
own): the bench also prints the median of 20 opens, each with one small query and a close,
per engine, measured in the same run.

    python bench/memory.py [--caps 8,16,32,64] [--engines sqlite,duckdb,csv] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHINOOK = ROOT.parent / "shared" / "datasets" / "chinook.sqlite"
MiB = 2**20


def heavy(engine: str, cap: int) -> list[tuple[str, str]]:
    """The heavy statements for one engine at one cap."""
    if engine == "sqlite":
        width = max(1024, cap // 2048)
        return [
            ("wide rows", f"SELECT t.Name, hex(randomblob({width // 2})) AS blob FROM Track t, Genre g"),
            ("text per row", "SELECT g.Name, group_concat(t.Name || coalesce(t.Composer, ''), ',') AS s "
                             "FROM Track t, MediaType m, Genre g GROUP BY g.Name"),
            ("many rows", "SELECT a.TrackId, b.TrackId FROM Track a, Track b"),
        ]
    width = max(512, cap // 8192 // 2)
    return [
        ("wide rows", f"SELECT t.Name, repeat('x', {width}) AS pad FROM Track t, Genre g"),
        ("list cells", f"SELECT t.TrackId, list_transform(range({width // 10}), lambda i: t.Name) AS l FROM Track t"),
        ("many rows", "SELECT a.TrackId, b.TrackId FROM Track a, Track b"),
    ]


def _child(engine: str, target: str, cap: int) -> dict:
    import resource
    import threading
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(ROOT / "src"))
    from fastapi.testclient import TestClient

    from vouchsql.db.duckdb_worker import closed_peaks
    from vouchsql.server.app import ServerOptions, create_app
    from vouchsql.settings import load_config

    def peak() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    config = load_config(env={}, cache_dir=tempfile.mkdtemp(), max_result_bytes=cap, timeout=20)
    app = create_app(ServerOptions(databases={"w": target}, max_concurrent=6, max_response=cap), config)
    with TestClient(app) as client:
        def post(sql: str) -> dict:
            resp = client.post("/api/check", json={"db": "w", "question": "What does this return?",
                                                   "candidates": [sql]})
            body = resp.json() if resp.headers.get("content-type", "").startswith("application/json") else {}
            result = (body.get("shown") or {}).get("result") or {}
            return {"status": resp.status_code, "rows": result.get("row_count"),
                    "truncated": result.get("truncated_reason"), "error": (result.get("error") or {}).get("kind")}

        post("SELECT 1 AS one")
        base = peak()
        single = {}
        workers = []
        for label, sql in heavy(engine, cap):
            closed_peaks.clear()
            single[label] = post(sql)
            workers.append(max(closed_peaks, default=0))
        after_single = peak() + max(workers)
        closed_peaks.clear()
        statements = [sql for _, sql in heavy(engine, cap)] * 2
        lock = threading.Lock()
        outcomes = []
        with ThreadPoolExecutor(6) as pool:
            for out in pool.map(post, statements):
                with lock:
                    outcomes.append(out)
        # Six requests at once: six workers, each at most the largest of one at a time
        # (what each ran is logged); their peaks are summed as if they fell together.
        after_six = peak() + sum(sorted(closed_peaks)[-6:])
    return {"engine": engine, "cap": cap, "base_mib": base / 2**20,
            "one_at_a_time_over_base_x_cap": (after_single - base) / cap,
            "six_at_once_over_base_x_cap": (after_six - base) / cap,
            "single": single, "six": outcomes}


def _targets(workdir: Path) -> dict[str, str]:
    import duckdb

    csv_dir = workdir / "csv"
    csv_dir.mkdir()
    src = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    con = duckdb.connect(str(workdir / "chinook.duckdb"))
    for table in ("Track", "Genre", "MediaType", "Album", "Artist"):
        cur = src.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        import csv

        with open(csv_dir / f"{table}.csv", "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(names)
            writer.writerows(rows)
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv_auto('{csv_dir / (table + '.csv')}')")
    con.close()
    return {"sqlite": str(CHINOOK), "duckdb": str(workdir / "chinook.duckdb"), "csv": str(csv_dir)}


def open_cost(target: str, times: int = 20) -> float:
    """Median milliseconds to open ``target``, run one small query and close it."""
    import statistics
    import time

    sys.path.insert(0, str(ROOT / "src"))
    import vouchsql

    with tempfile.TemporaryDirectory() as cache:
        vouchsql.connect(target, cache_dir=cache).close()  # the worker server starts once
        spans = []
        for _ in range(times):
            started = time.perf_counter()
            with vouchsql.connect(target, cache_dir=cache) as db:
                db.execute("SELECT 1 AS one")
            spans.append(1000 * (time.perf_counter() - started))
    return statistics.median(spans)


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(fixed MiB, slope × cap) of a least-squares line through (cap, peak above base)."""
    import numpy as np

    caps = np.array([c for c, _ in points], dtype=float)
    peaks = np.array([p for _, p in points], dtype=float)
    slope, fixed = np.polyfit(caps, peaks, 1)
    return float(fixed) / MiB, float(slope)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--caps", default="8,16,32,64",
                        help="max_result_bytes values in MiB, comma-separated (default 8,16,32,64)")
    parser.add_argument("--engines", default="sqlite,duckdb,csv")
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "TARGET", "CAP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, target, cap = args.child
        print(json.dumps(_child(engine, target, int(cap))))
        return 0
    try:
        caps = [int(float(c) * MiB) for c in args.caps.split(",")]
    except ValueError:
        parser.error(f"--caps takes MiB values separated by commas, e.g. 8,32; got {args.caps!r}")
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        targets = _targets(Path(tmp))
        for engine in args.engines.split(","):
            for cap in caps:
                proc = subprocess.run([sys.executable, __file__, "--child", engine, targets[engine], str(cap)],
                                      capture_output=True, text=True, env={**os.environ, "MALLOC_ARENA_MAX": "2"})
                if proc.returncode != 0:
                    print(f"{engine}: the child failed:\n{proc.stderr[-2000:]}")
                    return 1
                records.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        opens = {engine: open_cost(targets[engine]) for engine in args.engines.split(",")}
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"caps {args.caps} MiB")
    print(f"{'engine':8} {'cap MiB':>8} {'base MiB':>9} {'one at a time':>14} {'six at once':>12}"
          f"   (peak above base, × the cap)")
    for r in records:
        print(f"{r['engine']:8} {r['cap'] / MiB:8.0f} {r['base_mib']:9.0f} {r['one_at_a_time_over_base_x_cap']:14.2f} "
              f"{r['six_at_once_over_base_x_cap']:12.2f}")
        for label, out in r["single"].items():
            print(f"    {label:14} {out}")
    if len(caps) > 1:
        print(f"\n{'engine':8} {'one: fixed MiB':>15} {'+ slope × cap':>14} {'six: fixed MiB':>15} {'+ slope × cap':>14}")
        for engine in args.engines.split(","):
            mine = [r for r in records if r["engine"] == engine]
            one = fit([(r["cap"], r["one_at_a_time_over_base_x_cap"] * r["cap"]) for r in mine])
            six = fit([(r["cap"], r["six_at_once_over_base_x_cap"] * r["cap"]) for r in mine])
            print(f"{engine:8} {one[0]:15.0f} {one[1]:14.2f} {six[0]:15.0f} {six[1]:14.2f}")
            for r in mine:
                r["fit_one"], r["fit_six"] = one, six
    print("\nopen + one query + close, median of 20: " + ", ".join(f"{e} {ms:.1f} ms" for e, ms in opens.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

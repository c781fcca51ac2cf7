#!/usr/bin/env python
"""Benchmark: how long Vouch takes to build a database profile from scratch.

Not a test. Every measurement opens the database anew with a fresh, empty cache folder and
``no_cache=True``, so nothing is read from an earlier profile. Databases measured:

* the shared public databases ``../shared/datasets/{chinook,sakila,northwind}.sqlite``
  (relative to the repository root; skipped with a message where absent),
* the demo database (``vouchsql.demo.build_demo``, built into a temporary folder),
* generated SQLite databases with a fact table of N rows (``--sizes``), made once inside
  SQLite with a recursive CTE and reused from ``--data-dir`` (default ``bench/.data``).

Run ``python bench/profile.py --help`` for the options; see ``bench/README.md`` for results.

The per-stage split comes from timing Vouch's own profiling statements at the engine
boundary (``Database._run``) and the SQL gate (``Database.parse``) on the opened instance;
nothing in the library is changed.
"""

from __future__ import annotations

import os
import sys

# This file is called profile.py: drop its folder from the import path so that the standard
# library's ``profile`` module (which cProfile imports) is not shadowed by this script.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(_HERE).parent
SHARED = REPO.parent / "shared" / "datasets"
SHARED_NAMES = ("chinook", "sakila", "northwind")
GENERATOR_VERSION = 1
DIMENSION_ROWS = 1000

# Stages, in the order they are printed. A profiling statement is put in a stage by its text.
STAGES = ("one_pass", "sample", "overlap", "gate", "other")
STAGE_HELP = {
    "one_pass": "the exact full-table aggregate (COUNT/MIN/MAX per column) and sample rows",
    "sample": "distinct counts, top values, stand-in codes and GEE singletons (from the sample "
              "above the sample threshold, else from the whole table)",
    "overlap": "key-overlap (rho) queries for join pairs",
    "gate": "sqlglot parse of every profiling statement (Database.parse)",
    "other": "the rest: schema reading, Python, rowid range lookups",
}


# -- data generation ---------------------------------------------------------------------

def _hash(col: str, mult: int) -> str:
    """A deterministic pseudo-random 24-bit integer from an integer column, computed in SQL
    (multiplicative hashing, keeping the middle bits)."""
    return f"((({col} * {mult}) % 4294967296) >> 8)"


def generated_path(data_dir: Path, rows: int) -> Path:
    return data_dir / f"sales_{rows}_v{GENERATOR_VERSION}.sqlite"


def _is_complete(path: Path, rows: int) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            got = conn.execute("SELECT value FROM bench_meta WHERE key = 'rows'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False
    return got is not None and int(got[0]) == rows


def generate(data_dir: Path, rows: int, log=print) -> Path:
    """The generated database with a ``sales`` table of ``rows`` rows, made if absent.

    ``customers`` (1000 rows) is the dimension; ``sales`` holds an INTEGER PRIMARY KEY, a
    declared foreign key ``customer_id`` (skewed towards low ids), a low-cardinality text
    ``category`` with ~5% NULLs, a REAL ``amount`` with -1 as "unknown" in ~1% of rows, and
    an ISO date ``sale_date`` rising with the id over five years. Same rows, same bytes
    (for a given SQLite version): all values come from arithmetic on the row number.
    """
    path = generated_path(data_dir, rows)
    if path.is_file() and _is_complete(path, rows):
        return path
    data_dir.mkdir(parents=True, exist_ok=True)
    ignore = data_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# generated benchmark databases (bench/profile.py)\n*\n")
    tmp = path.with_suffix(".tmp")
    for leftover in (tmp, Path(f"{tmp}-journal")):
        leftover.unlink(missing_ok=True)
    log(f"generating {path.name} ({rows:,} rows) ...", flush=True)
    start = time.perf_counter()
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.executescript(f"""
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            PRAGMA cache_size = -262144;
            PRAGMA temp_store = MEMORY;
            BEGIN;
            CREATE TABLE customers (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                region TEXT,
                signup_date TEXT NOT NULL
            );
            INSERT INTO customers (id, name, region, signup_date)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {DIMENSION_ROWS})
            SELECT i, 'Customer ' || printf('%04d', i),
                   CASE {_hash('i', 2246822519)} % 6 WHEN 0 THEN 'North' WHEN 1 THEN 'South'
                        WHEN 2 THEN 'East' WHEN 3 THEN 'West' WHEN 4 THEN 'Central' END,
                   date('2018-01-01', '+' || ({_hash('i', 3266489917)} % 730) || ' days')
            FROM s;
            CREATE TABLE sales (
                id INTEGER PRIMARY KEY,
                customer_id INTEGER NOT NULL REFERENCES customers (id),
                category TEXT,
                amount REAL NOT NULL,
                sale_date TEXT NOT NULL
            );
            INSERT INTO sales (id, customer_id, category, amount, sale_date)
            WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}),
            h AS (SELECT i, {_hash('i', 2654435761)} AS a, {_hash('i', 2246822519)} AS b,
                         {_hash('i', 3266489917)} AS c FROM s)
            SELECT i,
                   -- skewed: the square of a uniform draw favours low customer ids
                   1 + ((a % 1000) * (a % 1000)) / 1000,
                   CASE WHEN b % 100 < 5 THEN NULL
                        WHEN b % 100 < 35 THEN 'grocery'
                        WHEN b % 100 < 55 THEN 'electronics'
                        WHEN b % 100 < 70 THEN 'clothing'
                        WHEN b % 100 < 80 THEN 'home'
                        WHEN b % 100 < 88 THEN 'toys'
                        WHEN b % 100 < 94 THEN 'sports'
                        WHEN b % 100 < 98 THEN 'books'
                        ELSE 'garden' END,
                   CASE WHEN c % 100 = 0 THEN -1.0 ELSE round(0.5 + (c % 500000) / 100.0, 2) END,
                   date('2020-01-01', '+' || ((i - 1) * 1826 / {rows}) || ' days')
            FROM h;
            CREATE TABLE bench_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO bench_meta VALUES ('rows', '{rows}'), ('generator', '{GENERATOR_VERSION}');
            COMMIT;
        """)
    finally:
        conn.close()
    os.replace(tmp, path)
    log(f"  done in {time.perf_counter() - start:.1f} s, {path.stat().st_size / 2**20:.0f} MiB", flush=True)
    return path


# -- measuring ---------------------------------------------------------------------------

def stage_of(sql: str) -> str:
    s = " ".join(sql.split())
    if "INTERSECT" in s:
        return "overlap"
    sampled = "vouch_sample" in s or "rowid IN" in s
    if s.startswith("SELECT * FROM") or (
            s.startswith("SELECT COUNT(*),") and "MIN(" in s and "DISTINCT" not in s and not sampled):
        return "one_pass"
    return "sample"


class Recorder:
    """Times every profiling statement of one opened database, by stage. With ``gate=False``
    the sqlglot gate is skipped (an experiment: what the profile costs if Vouch's own,
    generated statements did not go through the gate meant for user SQL)."""

    def __init__(self, db, gate: bool = True) -> None:
        self.stage = defaultdict(float)
        self.statements: list[tuple[float, str, str]] = []
        run, parse = db._run, db.parse

        def timed_run(sql, max_rows, timeout):
            t0 = time.perf_counter()
            try:
                return run(sql, max_rows, timeout)
            finally:
                dt = time.perf_counter() - t0
                st = stage_of(sql)
                self.stage[st] += dt
                self.statements.append((dt, st, sql))

        def timed_parse(sql):
            t0 = time.perf_counter()
            try:
                return parse(sql) if gate else None
            finally:
                self.stage["gate"] += time.perf_counter() - t0

        db._run = timed_run
        db.parse = timed_parse


def measure_once(path: Path, overrides: dict, keep_statements: bool = False, gate: bool = True) -> dict:
    import vouchsql

    with tempfile.TemporaryDirectory(prefix="vouch-bench-cache-") as cache:
        t0, c0 = time.perf_counter(), time.process_time()
        db = vouchsql.connect(str(path), cache_dir=cache, no_cache=True, **overrides)
        try:
            rec = Recorder(db, gate=gate)
            profile = db.profile(refresh=True)
            total = time.perf_counter() - t0
            cpu = time.process_time() - c0
        finally:
            db.close()
    stages = {k: rec.stage.get(k, 0.0) for k in STAGES if k != "other"}
    stages["other"] = max(0.0, total - sum(stages.values()))
    tables = [t for t in profile.tables if not t.is_view]
    biggest = max(tables, key=lambda t: t.row_count) if tables else None
    out = {
        "seconds": total,
        "cpu_seconds": cpu,
        "built_seconds": profile.built_seconds,
        "stages": stages,
        "tables": len(profile.tables),
        "largest_table": biggest.name if biggest else None,
        "largest_rows": biggest.row_count if biggest else 0,
        "sampled_tables": sum(t.sampled for t in profile.tables),
        "join_pairs": len(profile.join_pairs),
        "statements": len(rec.statements),
    }
    if keep_statements:
        out["slowest"] = [{"seconds": round(dt, 4), "stage": st, "sql": " ".join(sql.split())}
                          for dt, st, sql in sorted(rec.statements, reverse=True)]
    return out


def measure(name: str, path: Path, repeat: int, overrides: dict, top_sql: int, gate: bool = True) -> dict:
    runs = [measure_once(path, overrides, keep_statements=(i == repeat - 1 and top_sql > 0), gate=gate)
            for i in range(repeat)]
    med = statistics.median(r["seconds"] for r in runs)
    result = {k: runs[-1][k] for k in ("tables", "largest_table", "largest_rows", "sampled_tables",
                                        "join_pairs", "statements")}
    result.update(
        database=name, path=str(path), repeat=repeat,
        seconds_median=round(med, 4),
        seconds_min=round(min(r["seconds"] for r in runs), 4),
        cpu_seconds_median=round(statistics.median(r["cpu_seconds"] for r in runs), 4),
        seconds_all=[round(r["seconds"], 4) for r in runs],
        stages_median={k: round(statistics.median(r["stages"][k] for r in runs), 4) for k in STAGES},
    )
    if top_sql > 0:
        result["slowest_statements"] = runs[-1]["slowest"][:top_sql]
    return result


def machine_info() -> dict:
    import vouchsql

    model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        mem = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_count": os.cpu_count(), "cpus_usable": usable, "cpu_model": model, "memory_gib": mem,
        "platform": platform.platform(), "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version, "vouchsql": getattr(vouchsql, "__version__", "?"),
        "vouchsql_from": str(Path(vouchsql.__file__).parent),
        "load_average": _loadavg(),
    }


def _loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


# -- command line ------------------------------------------------------------------------

def _sizes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        mult = {"k": 10**3, "m": 10**6}.get(part[-1], 1)
        out.append(int(float(part[:-1] if mult > 1 else part) * mult))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,10000000", type=_sizes,
                    help="rows in the generated fact tables, comma-separated (1m, 500k allowed); "
                         "empty for none (default: 1000000,10000000)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per database; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    ap.add_argument("--data-dir", type=Path, default=REPO / "bench" / ".data",
                    help="where generated databases are kept and reused (default: bench/.data)")
    ap.add_argument("--only", default="shared,demo,generated",
                    help="which groups to run: any of shared, demo, generated (default: all)")
    ap.add_argument("--db", action="append", default=[], type=Path,
                    help="also profile this database file (repeatable)")
    ap.add_argument("--top-sql", type=int, default=0, metavar="N",
                    help="also list the N slowest profiling statements per database")
    ap.add_argument("--sample-threshold", type=int, help="override the sample_threshold setting")
    ap.add_argument("--sample-rows", type=int, help="override the sample_rows setting")
    ap.add_argument("--no-gate", action="store_true",
                    help="experiment: skip the sqlglot gate for the profile's own statements")
    ap.add_argument("--cprofile", type=Path, metavar="FILE",
                    help="run everything under cProfile and write the stats to FILE")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    unknown = groups - {"shared", "demo", "generated"}
    if unknown:
        ap.error(f"--only: unknown group(s) {', '.join(sorted(unknown))}")
    overrides = {k: v for k, v in (("sample_threshold", args.sample_threshold),
                                   ("sample_rows", args.sample_rows)) if v is not None}
    # Progress goes to stderr under --json so stdout stays one JSON document.
    log = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print

    import vouchsql  # noqa: F401  (fail early, before generating anything)
    from vouchsql.demo import build_demo
    from vouchsql.settings import Config

    cfg = Config().with_overrides(**overrides)
    info = machine_info()
    targets: list[tuple[str, Path]] = []
    skipped: list[str] = []
    if "shared" in groups:
        for name in SHARED_NAMES:
            p = SHARED / f"{name}.sqlite"
            if p.is_file():
                targets.append((name, p))
            else:
                skipped.append(f"{name}: {p} not found (the shared datasets folder sits beside the checkout)")
    tmpdir = tempfile.TemporaryDirectory(prefix="vouch-bench-")
    if "demo" in groups:
        t0 = time.perf_counter()
        demo = build_demo(Path(tmpdir.name) / "demo.sqlite")
        log(f"built the demo database in {time.perf_counter() - t0:.1f} s", flush=True)
        targets.append(("demo", demo))
    if "generated" in groups:
        for n in args.sizes:
            targets.append((f"generated {n:,}", generate(args.data_dir, n, log=log)))
    for p in args.db:
        targets.append((p.name, p))
    for s in skipped:
        log(f"skipped {s}", flush=True)

    prof = None
    if args.cprofile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    results = []
    try:
        for name, path in targets:
            log(f"profiling {name} ...", flush=True)
            results.append(measure(name, path, args.repeat, overrides, args.top_sql, gate=not args.no_gate))
    finally:
        if prof is not None:
            prof.disable()
            prof.dump_stats(args.cprofile)
            log(f"cProfile stats written to {args.cprofile} (python -m pstats {args.cprofile})")
        tmpdir.cleanup()

    info["load_average_end"] = _loadavg()
    settings = {"sample_threshold": cfg.sample_threshold, "sample_rows": cfg.sample_rows,
                "repeat": args.repeat, "gate": not args.no_gate}
    if args.json:
        print(json.dumps({"machine": info, "settings": settings, "skipped": skipped,
                          "results": results}, indent=2))
        return 0

    print()
    print(f"machine: {info['cpu_count']} CPUs ({info['cpus_usable']} usable), {info['cpu_model']}, "
          f"{info['memory_gib']} GiB; {info['platform']}")
    print(f"python {info['python']}, SQLite {info['sqlite']}, vouchsql {info['vouchsql']} "
          f"(from {info['vouchsql_from']})")
    print(f"load average (1/5/15 min) at start {info['load_average']}, at end {info['load_average_end']}")
    print(f"settings: sample_threshold={cfg.sample_threshold:,}, sample_rows={cfg.sample_rows:,}, "
          f"repeat={args.repeat} (median shown)" + ("" if not args.no_gate else ", sqlglot gate SKIPPED"))
    print()
    head = ["database", "largest table", "rows", "profile s", "cpu s"] + [f"{s} s" for s in STAGES]
    rows = [[r["database"], r["largest_table"] or "-", f"{r['largest_rows']:,}",
             f"{r['seconds_median']:.3f}", f"{r['cpu_seconds_median']:.3f}"]
            + [f"{r['stages_median'][s]:.3f}" for s in STAGES]
            for r in results]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    print()
    print("  profile s  wall-clock seconds from connect to the finished profile (median of --repeat)")
    print("  cpu s      this process's CPU seconds over the same span (SQLite runs in-process, so this")
    print("             is the work done; it moves less than wall time when other jobs share the CPUs)")
    for s in STAGES:
        print(f"  {s:<9}  {STAGE_HELP[s]}")
    if args.top_sql:
        for r in results:
            print(f"\nslowest profiling statements, {r['database']}:")
            for st in r["slowest_statements"]:
                sql = st["sql"] if len(st["sql"]) <= 160 else st["sql"][:157] + "..."
                print(f"  {st['seconds']:8.3f} s  {st['stage']:<8}  {sql}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

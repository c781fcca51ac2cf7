#!/usr/bin/env python
"""Benchmark: profiling one large table cold, and whether its stand-in code is found.

Not a test. Two databases, each a dimension table of 1,000 ``customers`` and a fact table
``sales`` whose ``amount`` holds -1 for "unknown" in 1% of rows (every other value > 0):

* **PostgreSQL**: ``--pg-rows`` rows (default 20,000,000), built with ``generate_series``
  in a private schema ``vouch_bench_scale_<pid>`` that is dropped afterwards; ``amount`` is
  ``NUMERIC(12,2)``. Autovacuum is off for the table, so the statistics are what the
  benchmark makes them: it profiles the table first **never analyzed** (statistics absent:
  row count by ``COUNT(*)``, figures from a ``TABLESAMPLE SYSTEM`` sample), then after
  ``ANALYZE`` (**fresh**: ``reltuples`` and ``pg_stats``).
* **SQLite**: ``--sqlite-rows`` rows (default 10,000,000), the generated file of
  ``bench/profile.py`` (``amount REAL``), made once and reused from ``bench/.data``.

Each measurement opens the database anew with an empty cache folder and ``no_cache``, and
times ``connect`` plus the whole profile (``db.profile(refresh=True)``: both tables and the
key overlap of ``sales.customer_id`` with ``customers.id``), and separately the fact table's
own measurement. Printed: seconds (median of ``--repeat``), this process's CPU seconds (all of
SQLite's work, which runs in-process; for PostgreSQL only the client's), the load average
before each run and after the last, the figures' sources, and whether the -1 was found.

    python bench/profile_scale.py                    # both, 3 runs each
    python bench/profile_scale.py --only sqlite --repeat 5
    python bench/profile_scale.py --pg-rows 2000000  # a smaller PostgreSQL table
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PG_DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


# -- PostgreSQL ----------------------------------------------------------------------------

def pg_build(conn, schema: str, rows: int, log) -> None:
    """The two tables, in ``schema``: the same arithmetic on the row number as bench/profile.py."""
    start = time.perf_counter()
    h = "((i * 2654435761) % 4294967296) >> 8"
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"CREATE TABLE {schema}.customers (id integer PRIMARY KEY, name text NOT NULL, region text)")
    conn.execute(f"INSERT INTO {schema}.customers SELECT i, 'Customer ' || lpad(i::text, 4, '0'), "
                 f"(ARRAY['North', 'South', 'East', 'West', 'Central', NULL])[1 + ({h}) % 6] "
                 f"FROM generate_series(1, 1000) i")
    conn.execute(f"CREATE UNLOGGED TABLE {schema}.sales (id bigint NOT NULL, customer_id integer NOT NULL, "
                 f"category text, amount numeric(12,2) NOT NULL, sale_date date NOT NULL) "
                 f"WITH (autovacuum_enabled = false)")
    conn.execute(
        f"INSERT INTO {schema}.sales SELECT i, 1 + ((a % 1000) * (a % 1000)) / 1000, "
        f"CASE WHEN b % 100 < 5 THEN NULL ELSE (ARRAY['grocery', 'electronics', 'clothing', 'home', 'toys', "
        f"'sports', 'books', 'garden'])[1 + (b / 7) % 8] END, "
        f"CASE WHEN c % 100 = 0 THEN -1 ELSE round(0.5 + (c % 500000) / 100.0, 2) END, "
        f"DATE '2020-01-01' + ((i - 1) * 1826 / {rows})::int "
        f"FROM (SELECT i, ((i * 2654435761) % 4294967296) >> 8 AS a, ((i * 2246822519) % 4294967296) >> 8 AS b, "
        f"((i * 3266489917) % 4294967296) >> 8 AS c FROM generate_series(1::bigint, {rows}) i) s")
    conn.execute(f"ALTER TABLE {schema}.sales ADD PRIMARY KEY (id)")
    conn.execute(f"ALTER TABLE {schema}.sales ADD FOREIGN KEY (customer_id) REFERENCES {schema}.customers (id)")
    conn.execute(f"ANALYZE {schema}.customers")
    log(f"  built {rows:,} rows in {time.perf_counter() - start:.1f} s")


# -- measuring -------------------------------------------------------------------------------

# Fields the profile's store adds to a measured table (not part of the measurement).
_STORE_FIELDS = {"comment": True, "schema_name": True, "columns": {"__all__": {"comment"}}}


def measure(target: str, fact: str = "sales", statements: bool = False) -> dict:
    import vouchsql
    from vouchsql.db.profile import _table_profile

    timed: list[tuple[float, float, str]] = []
    with tempfile.TemporaryDirectory(prefix="vouch-bench-cache-") as cache:
        t0, c0 = time.perf_counter(), time.process_time()
        with vouchsql.connect(target, cache_dir=cache, no_cache=True) as db:
            if statements:  # each of the profile's statements, wall and CPU s, at the engine boundary
                run = db._run

                def timing(sql, *args, **kwargs):
                    t, c = time.perf_counter(), time.process_time()
                    try:
                        return run(sql, *args, **kwargs)
                    finally:
                        timed.append((time.perf_counter() - t, time.process_time() - c, " ".join(sql.split())))

                db._run = timing
            profile = db.profile(refresh=True)
            whole, cpu = time.perf_counter() - t0, time.process_time() - c0
            if statements:
                db._run = run
            info = next(i for i in db.schema() if i.name == fact)
            t1 = time.perf_counter()
            table = _table_profile(db, info)
            own = time.perf_counter() - t1
    amount = table.column("amount")
    again = profile.table(fact)
    return {
        "seconds": whole, "table_seconds": own, "cpu_seconds": cpu,
        "found": any(s.value == -1 for s in amount.stand_ins),
        "stand_in": [s.model_dump() for s in amount.stand_ins],
        "rows": table.row_count, "row_source": table.sources.get("row_count", "COUNT(*)"),
        "amount_sources": amount.sources, "sample_method": table.sample_method, "sample_size": table.sample_size,
        "statistics": table.statistics, "partial": table.partial,
        "same_twice": again.model_dump(exclude=_STORE_FIELDS) == table.model_dump(exclude=_STORE_FIELDS),
        "statements": timed,
    }


def run(name: str, target: str, repeat: int, log, statements: bool = False) -> dict:
    runs = []
    for i in range(repeat):
        before = loadavg()
        r = measure(target, statements=statements and i == repeat - 1)
        r["load_before"], r["load_after"] = before, loadavg()
        runs.append(r)
        log(f"  {name}: {r['seconds']:.2f} s whole profile ({r['cpu_seconds']:.2f} CPU s in this process), "
            f"{r['table_seconds']:.2f} s the fact table; "
            f"-1 found: {r['found']}; load {before}")
    out = dict(runs[-1])
    out.update(database=name, repeat=repeat,
               seconds_median=round(statistics.median(r["seconds"] for r in runs), 3),
               seconds_all=[round(r["seconds"], 3) for r in runs],
               table_seconds_median=round(statistics.median(r["table_seconds"] for r in runs), 3),
               cpu_seconds_median=round(statistics.median(r["cpu_seconds"] for r in runs), 3),
               found_every_time=all(r["found"] for r in runs),
               loads=[r["load_before"] for r in runs] + [runs[-1]["load_after"]])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="postgresql,sqlite", help="postgresql, sqlite or both (default)")
    ap.add_argument("--pg-rows", type=int, default=20_000_000)
    ap.add_argument("--sqlite-rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data-dir", type=Path, default=REPO / "bench" / ".data")
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    ap.add_argument("--statements", action="store_true",
                    help="also list each profiling statement of the last run with its wall and CPU seconds")
    args = ap.parse_args(argv)
    log = (lambda *a: print(*a, file=sys.stderr, flush=True)) if args.json else (lambda *a: print(*a, flush=True))
    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    results, skipped = [], []
    if "sqlite" in groups:
        gen = _load("vouch_bench_profile", REPO / "bench" / "profile.py")
        path = gen.generate(args.data_dir, args.sqlite_rows, log=lambda *a, **k: log(*a))
        log(f"SQLite {args.sqlite_rows:,} rows ({path.name})")
        results.append(run(f"sqlite {args.sqlite_rows:,}", str(path), args.repeat, log, args.statements))
    if "postgresql" in groups:
        try:
            import psycopg

            conn = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
        except Exception as exc:  # noqa: BLE001 - absent driver or server: say so and go on
            skipped.append(f"postgresql: {str(exc).strip().splitlines()[0]}")
        else:
            schema = f"vouch_bench_scale_{os.getpid()}"
            try:
                log(f"PostgreSQL {args.pg_rows:,} rows (schema {schema})")
                pg_build(conn, schema, args.pg_rows, log)
                url = f"{PG_URL}?options=-csearch_path%3D{schema}"
                results.append(run(f"postgresql {args.pg_rows:,}, never analyzed", url, args.repeat, log,
                                   args.statements))
                t0 = time.perf_counter()
                conn.execute(f"ANALYZE {schema}.sales")
                log(f"  ANALYZE in {time.perf_counter() - t0:.1f} s")
                results.append(run(f"postgresql {args.pg_rows:,}, analyzed", url, args.repeat, log, args.statements))
            finally:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                conn.close()
    import vouchsql

    machine = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "vouchsql_from": str(Path(vouchsql.__file__).parent)}
    if args.json:
        print(json.dumps({"machine": machine, "skipped": skipped, "results": results}, indent=2, default=str))
        return 0
    print()
    print(f"machine: {machine['cpus']} CPUs, Python {machine['python']}, vouchsql from {machine['vouchsql_from']}")
    for s in skipped:
        print(f"skipped {s}")
    print(f"{'database':<40} {'profile s':>9} {'cpu s':>6} {'table s':>8} {'-1 found':>8}  rows (source); "
          f"amount's sources; sample")
    for r in results:
        print(f"{r['database']:<40} {r['seconds_median']:>9.2f} {r['cpu_seconds_median']:>6.2f} "
              f"{r['table_seconds_median']:>8.2f} "
              f"{str(r['found_every_time']):>8}  {r['rows']:,} ({r['row_source']}); "
              f"{r['amount_sources'] or 'exact'}; {r['sample_method']} {r['sample_size']}")
        print(f"{'':<40} runs {r['seconds_all']}, loads {r['loads']}; {r['statistics'] or ''}")
        for wall, cpu, sql in r["statements"]:
            print(f"{'':<6}{wall:8.3f} s {cpu:7.3f} cpu s  {sql if len(sql) <= 100 else sql[:97] + '...'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

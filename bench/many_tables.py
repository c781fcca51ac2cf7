"""The first ``vouch check`` of one Chinook query on a database that also holds thousands of
other tables, with a cold profile cache (issue 16: ≤ 3 s at 2,000 tables, ≤ 5 s at 20,000).

The databases are Chinook plus N generated tables (ledgers, audits, staging copies, … of
5–9 columns and 20 rows each, names and keys drawn from a fixed seed), built once under
bench/.data/. Each round runs the CLI in a fresh process with a new cache folder, so the
catalogue is read and the tables the query touches are measured from nothing; plain
Chinook is run in the same rounds, alternating, so the ratio holds under the machine's load.
CPU seconds (user + system of the child) are printed beside the wall time: on a busy machine
the wall time also counts waiting for a core.

    python bench/many_tables.py --tables 2000 20000 --repeat 5
    python bench/many_tables.py --tables 20000 --repeat 3 --postgres postgresql://postgres@127.0.0.1:5432/test

``--postgres URL`` runs the same rounds on a PostgreSQL server as well: Chinook copied into a
schema ``vouch_many_<n>`` with the generated tables beside it (built once, kept on the
server; tests/engine_copies.py does the copy, names and keys as in SQLite), reached with that
schema first on the search path.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
CHINOOK = Path(os.environ.get("VOUCH_DATASETS", HERE.parent.parent / "shared" / "datasets")) / "chinook.sqlite"
QUESTION = "How many tracks are in each genre?"
SQL = ("SELECT g.Name, COUNT(*) FROM Track t JOIN Genre g ON g.GenreId = t.GenreId "
       "GROUP BY g.Name ORDER BY 2 DESC")
# The same query on the PostgreSQL copy, whose tables and columns keep Chinook's CamelCase
# names: unquoted, PostgreSQL folds them to lower case and finds no table "track".
PG_SQL = ('SELECT g."Name", COUNT(*) FROM "Track" t JOIN "Genre" g ON g."GenreId" = t."GenreId" '
          'GROUP BY g."Name" ORDER BY 2 DESC')

_KINDS = ["ledger", "audit", "staging", "snapshot", "archive", "event", "metric", "report", "queue", "log"]
_AREAS = ["billing", "payroll", "shipping", "inventory", "marketing", "support", "finance", "hr", "sales", "web"]
_COLUMNS = [("amount", "NUMERIC(12,2)"), ("status", "TEXT"), ("created_at", "TEXT"), ("note", "TEXT"),
            ("quantity", "INTEGER"), ("region", "TEXT"), ("score", "REAL"), ("code", "TEXT")]


def build(n: int) -> Path:
    """Chinook plus ``n`` generated tables (cached; rebuilt if absent)."""
    path = DATA / f"many_tables_{n}.sqlite"
    if path.is_file():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    shutil.copy(CHINOOK, tmp)
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    for name, defs, rows in _generated(n):
        conn.execute(f"CREATE TABLE {name} ({', '.join(defs)})")
        conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(defs))})", rows)
    conn.commit()
    conn.close()
    tmp.replace(path)
    return path


def _generated(n: int):
    """The ``n`` generated tables, drawn from seed ``n``: (name, column definitions, 20 rows)."""
    rng = random.Random(n)
    for i in range(n):
        name = f"{rng.choice(_AREAS)}_{rng.choice(_KINDS)}_{i:05d}"
        cols = rng.sample(_COLUMNS, rng.randint(3, 7))
        ref = rng.random() < 0.3  # some refer to an account table of their area
        defs = ["entry_id INTEGER PRIMARY KEY", "account_id INTEGER" if ref else "batch_no INTEGER"]
        defs += [f"{c} {t}" for c, t in cols]
        yield name, defs, [(j, rng.randint(1, 40), *[_value(t, rng) for _, t in cols]) for j in range(1, 21)]


def _value(type_name: str, rng: random.Random):
    if type_name.startswith(("NUMERIC", "REAL")):
        return round(rng.uniform(0, 500), 2)
    if type_name == "INTEGER":
        return rng.randint(0, 99)
    return rng.choice(["open", "closed", "pending", "n/a", "2024-01-0" + str(rng.randint(1, 9))])


def build_postgres(url: str, n: int) -> str:
    """Chinook plus ``n`` generated tables in schema vouch_many_<n> (kept once built); the URL
    that reads it."""
    import psycopg

    sys.path.insert(0, str(HERE.parent / "tests"))
    from engine_copies import copy_to_postgres, read_source

    schema = f"vouch_many_{n}"
    conn = psycopg.connect(url.split("?")[0], autocommit=True)
    have = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()[0]
    if have < n + 11:
        # one transaction per 500 tables: a whole schema's locks in one would pass
        # max_locks_per_transaction
        old = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        for i in range(0, len(old), 500):
            with conn.transaction():
                for t in old[i:i + 500]:
                    conn.execute(f'DROP TABLE IF EXISTS {schema}."{t}" CASCADE')
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        copy_to_postgres(read_source(CHINOOK), conn, schema)
        tables = list(_generated(n))
        for i in range(0, n, 500):
            with conn.transaction(), conn.cursor() as cur:
                for name, defs, rows in tables[i:i + 500]:
                    defs = [d.replace(" REAL", " DOUBLE PRECISION") for d in defs]
                    cur.execute(f"CREATE TABLE {schema}.{name} ({', '.join(defs)})")
                    cur.executemany(f"INSERT INTO {schema}.{name} VALUES ({', '.join(['%s'] * len(defs))})", rows)
        conn.execute("ANALYZE")
    conn.close()
    return f"{url.split('?')[0]}?options=-csearch_path%3D{schema}"


def run_once(db: "Path | str", sql: str = SQL) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one cold ``vouch check`` of a query that runs."""
    cache = tempfile.mkdtemp(prefix="vouch-bench-cache-")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vouchsql.cli", "check", "--db", str(db), "-q", QUESTION,
                           "--sql", sql, "--cache-dir", cache, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(cache, ignore_errors=True)
    if done.returncode not in (0, 1, 2) or '"verdict"' not in done.stdout:  # 1, 2: flagged, abstained
        raise SystemExit(f"vouch check failed on {db}:\n{done.stderr[-2000:]}")
    error = json.loads(done.stdout)["shown"]["result"]["error"]
    if error is not None:  # a check of a query that failed measures less than a real one
        raise SystemExit(f"the query did not run on {db}: {error['message']}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--postgres", metavar="URL", help="also on this PostgreSQL server (see above)")
    args = ap.parse_args()
    if not CHINOOK.is_file():
        raise SystemExit(f"Chinook not found at {CHINOOK}; set VOUCH_DATASETS to the folder holding chinook.sqlite")
    dbs = {"chinook (11 tables)": CHINOOK}
    for n in args.tables:
        print(f"building/reading the {n}-table database …", flush=True)
        dbs[f"chinook + {n} tables"] = build(n)
        if args.postgres:
            print(f"building/reading the {n}-table PostgreSQL schema …", flush=True)
            dbs[f"pg: chinook + {n}"] = build_postgres(args.postgres, n)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in dbs}
    load = os.getloadavg()[0]
    for _ in range(args.repeat):
        for label, path in dbs.items():  # alternating: each round sees the same load
            times[label].append(run_once(path, PG_SQL if label.startswith("pg:") else SQL))
    print(f"\nfirst check, cold cache, {args.repeat} rounds; load average {load:.1f} → {os.getloadavg()[0]:.1f}; "
          f"{os.cpu_count()} CPUs")
    print(f"{'database':<24} {'median wall s':>14} {'median CPU s':>13} {'wall / chinook':>15}")
    base = statistics.median(w for w, _ in times["chinook (11 tables)"])
    for label, runs in times.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{label:<24} {wall:>14.2f} {cpu:>13.2f} {wall / base:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

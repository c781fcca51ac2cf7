"""The profile on SQLite, DuckDB, PostgreSQL and MariaDB agrees where the data are the same.

One small SQLite database, built here from seeded Python data, is copied to each engine
(tests/engine_copies.py: ``DECIMAL(6,2)`` → ``numeric(6,2)`` / ``decimal(6,2)``, ``DATE`` →
``date``, …). ``people`` (600 rows) is profiled exactly on every engine: its row and NULL
counts, distinct counts, min/max, top values and stand-in codes (a -1 in a DECIMAL column, a
0 and a 999) must equal what Python counts in the data. ``events`` (3,000 rows) is above
the lowered ``sample_threshold``: its distinct counts, top values and stand-ins are estimates
on every engine, marked with their source (the sample, or PostgreSQL's fresh ``pg_stats``),
within the tolerances below; with ``scan_threshold`` lowered too its NULL counts and min/max
are estimates as well, and only what is cheap stays exact. A server that is absent skips its
engine with the reason.
"""

from __future__ import annotations

import random
import sqlite3
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

import vouchsql
from conftest import MARIADB_URL, PG_URL
from engine_copies import copy_to_duckdb, copy_to_mariadb, copy_to_postgres, read_source
from vouchsql.db.profile import _table_profile

ENGINES = ["sqlite", "duckdb", "postgresql", "mariadb"]
SAMPLED = dict(sample_threshold=1000, sample_rows=500)
UNSCANNED = dict(SAMPLED, scan_threshold=2000)
CITIES = ["oslo"] * 9 + ["lima"] * 7 + ["rome"] * 5 + ["kyiv"] * 3 + ["pune"] * 2 + ["bern"]  # no ties in the top 5
KINDS = ["view"] * 10 + ["click"] * 6 + ["buy"] * 3 + ["refund"]


def people_rows() -> list[tuple]:
    rng = random.Random(16)
    rows = []
    for i in range(1, 601):
        age = -1 if i % 20 == 0 else round(18 + rng.randrange(0, 145) / 2, 2)  # -1 in 5% (a DECIMAL code)
        region_code = 0 if i % 50 == 7 else rng.randrange(10, 101)  # 0 in 2%, others ≥ 10: a code
        population = 0 if i % 50 == 9 else 50 + i * 7  # 0 in 2% too, but a population can be 0
        income = 999 if i % 30 == 11 else rng.randrange(1, 81)  # 999 in 3.3%, others ≤ 80
        name = None if i % 10 == 3 else "".join(rng.choice("abcdefghij") for _ in range(5))
        joined = f"20{rng.randrange(15, 24)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        ratio = None if i % 7 == 0 else round(rng.random(), 4)
        rows.append((i, age, region_code, income, name, joined, CITIES[rng.randrange(len(CITIES))], ratio, population))
    return rows


def events_rows() -> list[tuple]:
    rng = random.Random(61)
    rows = []
    for i in range(1, 3001):
        amount = -1 if rng.random() < 0.02 else round(rng.uniform(0.5, 400), 2)
        kind = None if rng.random() < 0.05 else KINDS[rng.randrange(len(KINDS))]
        at = f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
        rows.append((i, 1 + rng.randrange(600), amount, kind, at))
    return rows


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("profile_engines") / "same.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, age DECIMAL(6,2), region_code INTEGER NOT NULL, "
                "income INTEGER, name TEXT, joined DATE NOT NULL, city TEXT NOT NULL, ratio REAL, population INTEGER)")
    con.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, person_id INTEGER NOT NULL REFERENCES people (id), "
                "amount DECIMAL(10,2) NOT NULL, kind TEXT, at DATE NOT NULL)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", people_rows())
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", events_rows())
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def targets(source, tmp_path_factory):
    """engine -> the database to open, or the reason it is skipped; made once per module."""
    found: dict[str, str] = {"sqlite": str(source)}
    data = read_source(source)
    cleanup = []
    try:
        import duckdb  # noqa: F401

        path = tmp_path_factory.mktemp("profile_engines_duckdb") / "same.duckdb"
        copy_to_duckdb(data, path)
        found["duckdb"] = str(path)
    except ImportError:
        found["duckdb"] = "skip: DuckDB is not installed (pip install 'vouchsql[duckdb]')"
    token = uuid.uuid4().hex[:8]
    try:
        import psycopg

        raw = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True,
                              connect_timeout=3)
    except Exception as exc:  # noqa: BLE001 - driver or server absent
        found["postgresql"] = f"skip: PostgreSQL is not reachable at {PG_URL}: {str(exc).strip().splitlines()[0]}"
    else:
        schema = f"vouch_profile_engines_{token}"
        copy_to_postgres(data, raw, schema)
        raw.execute("RESET search_path")
        analyze_fresh(raw, schema)
        found["postgresql"] = f"{PG_URL}?options=-csearch_path%3D{schema}"
        cleanup.append(lambda: (raw.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'), raw.close()))
    try:
        import pymysql

        my = pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test", autocommit=True,
                             connect_timeout=3)
    except Exception as exc:  # noqa: BLE001
        found["mariadb"] = f"skip: MariaDB/MySQL is not reachable at {MARIADB_URL}: {exc}"
    else:
        name = f"vouch_profile_engines_{token}"
        cur = my.cursor()
        copy_to_mariadb(data, cur, name)
        found["mariadb"] = MARIADB_URL.rsplit("/", 1)[0] + "/" + name
        cleanup.append(lambda: (cur.execute(f"DROP DATABASE IF EXISTS `{name}`"), my.close()))
    yield found
    for step in cleanup:
        step()


def analyze_fresh(raw, schema: str) -> None:
    """ANALYZE once the loading session's own row counts have reached the statistics: they
    are sent at most once a second, so an ANALYZE right after a COPY in the same session
    was followed by its 3,000 inserts and read as stale (n_mod_since_analyze 3,000)."""
    try:
        raw.execute("SELECT pg_stat_force_next_flush()")  # PostgreSQL 15+
    except Exception:  # noqa: BLE001 - older servers: wait out the flush interval instead
        time.sleep(1.5)
    raw.execute("SELECT 1")
    raw.execute(f'ANALYZE "{schema}".people, "{schema}".events')


def measured(targets, engine: str, table: str, **settings):
    target = targets[engine]
    if target.startswith("skip: "):
        pytest.skip(target[6:])
    with vouchsql.connect(target, no_cache=True, **settings) as db:
        info = next(i for i in db.schema() if i.name == table)
        return _table_profile(db, info)


def truth(rows: list[tuple], names: list[str]) -> dict[str, dict]:
    """Each column's figures, counted in Python."""
    out = {}
    for j, name in enumerate(names):
        values = [r[j] for r in rows]
        present = [v for v in values if v is not None]
        counts = Counter(present)
        out[name] = {"nulls": len(values) - len(present), "distinct": len(counts), "min": min(present),
                     "max": max(present), "top": sorted(counts.items(), key=lambda t: (-t[1], t[0]))[:5]}
    return out


PEOPLE = ["id", "age", "region_code", "income", "name", "joined", "city", "ratio", "population"]
EVENTS = ["id", "person_id", "amount", "kind", "at"]


def same(a, b) -> bool:
    """Equal as the profile's JSON means it: numbers by value (23.0 is 23), the rest as is."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    return a == b


@pytest.mark.parametrize("engine", ENGINES)
def test_an_exact_table_has_the_same_figures_on_every_engine(targets, engine):
    tp = measured(targets, engine, "people", **SAMPLED)
    expected = truth(people_rows(), PEOPLE)
    assert (tp.row_count, tp.sampled, tp.row_count_estimated, tp.partial, tp.error) == (600, False, False, None, None)
    for name in PEOPLE:
        col, want = tp.column(name), expected[name]
        assert col.sources == {} and not (col.null_estimated or col.distinct_estimated or col.range_estimated), name
        assert (col.null_count, col.distinct_count) == (want["nulls"], want["distinct"]), name
        assert same(col.min, want["min"]) and same(col.max, want["max"]), (name, col.min, col.max)
        if name != "id":  # the key's "top values" are five values of count 1, in key order
            assert len(col.top_values) == len(want["top"]), name
            for (v, n), (wv, wn) in zip(col.top_values, want["top"]):
                assert same(v, wv) and n == wn, (name, col.top_values, want["top"])
    codes = {c.name: [(s.value, s.count, s.share, s.estimated) for s in c.stand_ins] for c in tp.columns if c.stand_ins}
    # A 0 is a code where the column cannot mean 0 (a region code), not where it can (a
    # population: an uninhabited place), by what the column is (issue 26).
    assert codes == {"age": [(-1, 30, 0.05, False)], "region_code": [(0, 12, 0.02, False)],
                     "income": [(999, 20, round(20 / 600, 6), False)]}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sampled_table_marks_its_estimates_and_keeps_them_close(targets, engine):
    tp = measured(targets, engine, "events", **SAMPLED)
    rows = events_rows()
    expected = truth(rows, EVENTS)
    assert (tp.row_count, tp.sampled, tp.row_count_estimated, tp.partial) == (3000, True, False, None)
    estimate_source = "pg_stats" if engine == "postgresql" else "sample"
    for name in EVENTS:
        col, want = tp.column(name), expected[name]
        # Below scan_threshold the NULL counts and min/max are exact, from a scan.
        assert not col.null_estimated and not col.range_estimated, name
        assert col.null_count == want["nulls"], name
        assert same(col.min, want["min"]) and same(col.max, want["max"]), name
        if name == "id":  # the key: one row per value, exact
            assert (col.distinct_count, col.distinct_estimated) == (3000, False)
            continue
        assert col.distinct_estimated and col.sources["distinct_count"] == estimate_source, name
        assert col.sources["top_values"] == col.sources["stand_ins"] == estimate_source, name
        assert abs(col.distinct_count - want["distinct"]) <= 0.35 * want["distinct"], (name, col.distinct_count)
    assert tp.column("kind").top_values[0][0] == "view"
    assert abs(tp.column("kind").top_values[0][1] - expected["kind"]["top"][0][1]) <= 0.15 * 3000
    if engine != "postgresql":
        assert 400 <= tp.sample_size <= 600 and tp.sample_method
    [code] = tp.column("amount").stand_ins
    true_share = sum(r[2] == -1 for r in rows) / 3000
    assert code.value == -1 and code.estimated and abs(code.share - true_share) <= 0.02, code


@pytest.mark.parametrize("engine", ENGINES)
def test_above_the_scan_threshold_only_cheap_figures_stay_exact(targets, engine):
    tp = measured(targets, engine, "events", **UNSCANNED)
    rows = events_rows()
    expected = truth(rows, EVENTS)
    source = "pg_stats" if engine == "postgresql" else "sample"
    if engine == "postgresql":  # the row count of the last ANALYZE, which read every row
        assert tp.row_count_estimated and tp.sources == {"row_count": "pg_class.reltuples"}
        assert tp.statistics.startswith("pg_stats: fresh")
    else:  # COUNT(*) is cheap
        assert not tp.row_count_estimated and tp.sources == {}
    assert tp.row_count == 3000
    key, kind, amount = tp.column("id"), tp.column("kind"), tp.column("amount")
    # Exact where cheap: the key's ends from its index, NOT NULL columns' NULL count.
    assert (key.min, key.max, key.range_estimated, key.null_count, key.null_estimated) == (1, 3000, False, 0, False)
    assert (amount.null_count, amount.null_estimated) == (0, False)
    # Estimated and marked: a nullable column's NULL count, everyone else's min and max.
    assert kind.null_estimated and kind.sources["null_count"] == source
    assert abs(kind.null_count - expected["kind"]["nulls"]) <= 0.04 * 3000, kind.null_count
    assert amount.range_estimated and amount.sources["min"] == amount.sources["max"] == source
    assert amount.min == -1 and 300 <= amount.max <= 400
    assert [s.value for s in amount.stand_ins] == [-1]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_same_data_give_the_same_profile_twice(targets, engine):
    first = measured(targets, engine, "events", **UNSCANNED)
    second = measured(targets, engine, "events", **UNSCANNED)
    assert first.model_dump() == second.model_dump()

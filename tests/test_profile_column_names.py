"""The profile's batched per-value query works whatever the user's columns are called: a
column named like one of its own CTE columns (``k``, ``v``, ``n``, ``d``, …) is profiled
like any other, on every engine. Before the fix a column named ``k`` was ambiguous with the
key table's ``k`` and the whole table's profile failed."""

from __future__ import annotations

import sqlite3

import pytest

import vouchsql

# The names the batched query gives its own columns and tables.
NAMES = ["k", "v", "n", "d", "by_n", "up", "non_null", "singles"]
ROWS = [tuple(i % (j + 2) for j in range(len(NAMES))) for i in range(60)]


def _expect(profile) -> None:
    table = profile.table("t")
    assert table.error is None, table.error
    for j, name in enumerate(NAMES):
        col = table.column(name)
        assert col.distinct_count == j + 2, name
        assert (col.min, col.max) == (0, j + 1), name
        assert col.top_values[0] == (0, len(range(0, 60, j + 2))), name


def _sqlite(path):
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE t ({', '.join(f'{n} INTEGER' for n in NAMES)})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(NAMES))})", ROWS)
    con.commit()
    con.close()
    return path


def test_sqlite_columns_named_like_the_query_own(tmp_path):
    with vouchsql.connect(_sqlite(tmp_path / "t.sqlite"), cache_dir=str(tmp_path / "cache")) as db:
        _expect(db.profile())


def test_the_join_on_a_key_named_k_is_rated(tmp_path):
    # The join check reads the profile: with the table's profile failing it rated nothing.
    con = sqlite3.connect(tmp_path / "k.sqlite")
    con.execute("CREATE TABLE a (k INTEGER)")
    con.execute("CREATE TABLE b (k INTEGER)")
    con.executemany("INSERT INTO a VALUES (?)", [(i,) for i in range(100)])
    con.executemany("INSERT INTO b VALUES (?)", [(i if i < 50 else 1000 + i,) for i in range(100)])
    con.commit()
    con.close()
    answer = vouchsql.check(tmp_path / "k.sqlite", "How many rows match?", "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k",
                            cache_dir=str(tmp_path / "cache"))
    bad_join = next(c for c in answer.checks if c.name == "bad_join")
    assert bad_join.evidence["joins"][0]["rho"] == 0.5 and bad_join.fired


def test_duckdb_columns_named_like_the_query_own(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE t ({', '.join(f'{n} INTEGER' for n in NAMES)})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(NAMES))})", ROWS)
    con.close()
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        _expect(db.profile())


def test_postgresql_columns_named_like_the_query_own(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.t ({', '.join(f'{n} INTEGER' for n in NAMES)})")
    with raw.cursor() as cur:
        cur.executemany(f"INSERT INTO {schema}.t VALUES ({', '.join(['%s'] * len(NAMES))})", ROWS)
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        _expect(db.profile())


def test_mariadb_columns_named_like_the_query_own(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.t ({', '.join(f'{n} INT' for n in NAMES)}) ENGINE=InnoDB")
    cur.executemany(f"INSERT INTO {name}.t VALUES ({', '.join(['%s'] * len(NAMES))})", ROWS)
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        _expect(db.profile())

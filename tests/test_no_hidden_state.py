"""Same input, same output (issue 28, part 2): after a row with a new value is written, a new
connection in the same process gives the verdict a fresh process gives. The values the
question's words are looked up in are read per connection, never from a process-wide cache."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import vouchsql

QUESTION = "How many customers live in Zanzibar?"
SQL = "SELECT COUNT(*) FROM customer"


def _verdict(url: str, cache_dir: str) -> tuple[bool, str]:
    answer = vouchsql.check(url, QUESTION, [SQL, SQL], cache_dir=cache_dir)
    got = {c.name: c for c in answer.checks}["question_filters"]
    return got.fired, answer.verdict.gate


def _fresh_process(url: str, cache_dir: str) -> tuple[bool, str]:
    code = ("import json, sys, vouchsql\n"
            f"a = vouchsql.check({url!r}, {QUESTION!r}, [{SQL!r}, {SQL!r}], cache_dir={cache_dir!r})\n"
            "c = {c.name: c for c in a.checks}['question_filters']\n"
            "print(json.dumps([c.fired, a.verdict.gate]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    fired, gate = json.loads(out.stdout.strip().splitlines()[-1])
    return fired, gate


def _same_before_and_after(url: str, write, tmp_path) -> None:
    cache = str(tmp_path / "cache")
    before = _verdict(url, cache)
    assert before == (False, "pass"), before  # nobody lives in Zanzibar: nothing to filter on
    write()
    after = _verdict(url, cache)  # a new connection, the same process
    assert after == _fresh_process(url, cache)
    assert after == (True, "flag"), after  # now the question names a held value the SQL ignores


ROWS = [(i, f"c{i}", ["Oslo", "Lima", "Rome"][i % 3]) for i in range(1, 13)]


def test_sqlite(tmp_path):
    import sqlite3

    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    con.executemany("INSERT INTO customer VALUES (?, ?, ?)", ROWS)
    con.commit()

    def write():
        con.execute("INSERT INTO customer VALUES (99, 'z', 'Zanzibar')")
        con.commit()
    _same_before_and_after(str(path), write, tmp_path)
    con.close()


def test_duckdb(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR)")
    con.executemany("INSERT INTO customer VALUES (?, ?, ?)", ROWS)
    con.close()

    def write():
        c = duckdb.connect(str(path))
        c.execute("INSERT INTO customer VALUES (99, 'z', 'Zanzibar')")
        c.close()
    _same_before_and_after(str(path), write, tmp_path)


def test_postgresql(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.customer (id INTEGER PRIMARY KEY, name TEXT, city TEXT)")
    for row in ROWS:
        raw.execute(f"INSERT INTO {schema}.customer VALUES (%s, %s, %s)", row)
    _same_before_and_after(url, lambda: raw.execute(f"INSERT INTO {schema}.customer VALUES (99, 'z', 'Zanzibar')"),
                           tmp_path)


def test_mariadb(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.customer (id INT PRIMARY KEY, name VARCHAR(20), city VARCHAR(20))")
    cur.executemany(f"INSERT INTO {name}.customer VALUES (%s, %s, %s)", ROWS)
    _same_before_and_after(url, lambda: cur.execute(f"INSERT INTO {name}.customer VALUES (99, 'z', 'Zanzibar')"),
                           tmp_path)

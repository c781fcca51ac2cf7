"""Keys named with a reserved word (``group``, ``order``): the probes the checks write
from stored names must quote them, on every engine, or the engine refuses the probe and the
check says nothing merged / not measured where the same data with a plain name fire."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import vouchsql
from vouchsql.sql.edit import column, stored_name

QUESTION = "How many players per team?"
PROBED = ("merged_entities", "join_fanout", "join_drop")


def _rows():
    # 40 teams, three called "Rovers" (one label that merges three teams); 200 players, every fifth
    # without a team, so an inner join drops 8 teams and repeats the rest.
    teams = [(i, f"team {i}" if i > 3 else "Rovers", 10 * i) for i in range(1, 41)]
    players = [(i, (i % 40) + 1 if i % 5 else None, f"p{i}") for i in range(1, 201)]
    return teams, players


def _sqls(q: str) -> list[str]:
    return [f"SELECT t.name, COUNT(*) FROM teams t JOIN players p ON p.{q} = t.{q} GROUP BY t.name",
            f"SELECT SUM(t.budget) FROM teams t JOIN players p ON p.{q} = t.{q}",
            f"SELECT t.name, COUNT(*) FROM teams t JOIN players p ON p.{q} = t.{q} GROUP BY t.{q}"]


def _verdicts(db, q: str, cache: Path) -> list[dict]:
    out = []
    for sql in _sqls(q):
        answer = vouchsql.check(db, QUESTION, [sql], cache_dir=str(cache))
        out.append({c.name: (c.fired, c.detail) for c in answer.checks if c.name in PROBED})
    return out


# What the three checks say on each query, with the key named ``gid``.
EXPECTED = [
    {"merged_entities": True, "join_fanout": False, "join_drop": False},
    {"merged_entities": False, "join_fanout": True, "join_drop": False},
    {"merged_entities": False, "join_fanout": False, "join_drop": False},
]


def _assert_measured(verdicts: list[dict]) -> None:
    assert [{k: v[0] for k, v in one.items()} for one in verdicts] == EXPECTED
    for one in verdicts:
        assert not any(d.startswith("not measured") for _, d in one.values()), one
    assert "1 group(s) hold more than one" in verdicts[0]["merged_entities"][1]
    assert "Rovers" in verdicts[0]["merged_entities"][1]
    assert verdicts[0]["join_drop"][1] == "the joins keep 32 of 40 teams rows"


def _sqlite(path: Path, key: str) -> Path:
    con = sqlite3.connect(path)
    q = f'"{key}"'
    con.execute(f"CREATE TABLE teams ({q} INTEGER PRIMARY KEY, name TEXT, budget INTEGER)")
    con.execute(f"CREATE TABLE players (id INTEGER PRIMARY KEY, {q} INTEGER REFERENCES teams({q}), name TEXT)")
    teams, players = _rows()
    con.executemany("INSERT INTO teams VALUES (?, ?, ?)", teams)
    con.executemany("INSERT INTO players VALUES (?, ?, ?)", players)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("key", ["gid", "group", "order", "select"])
def test_sqlite_probes_quote_a_reserved_key(tmp_path, key):
    db = _sqlite(tmp_path / "teams.db", key)
    _assert_measured(_verdicts(db, f'"{key}"', tmp_path / "cache"))


def test_postgres_probes_quote_a_reserved_key(pg, tmp_path):
    url, raw, schema = pg
    raw.execute(f'CREATE TABLE {schema}.teams ("group" INTEGER PRIMARY KEY, name TEXT, budget INTEGER)')
    raw.execute(f'CREATE TABLE {schema}.players (id INTEGER PRIMARY KEY, '
                f'"group" INTEGER REFERENCES {schema}.teams("group"), name TEXT)')
    teams, players = _rows()
    with raw.cursor() as cur:
        cur.executemany(f"INSERT INTO {schema}.teams VALUES (%s, %s, %s)", teams)
        cur.executemany(f"INSERT INTO {schema}.players VALUES (%s, %s, %s)", players)
    _assert_measured(_verdicts(url, '"group"', tmp_path / "cache"))


def test_mariadb_probes_quote_a_reserved_key(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.teams (`group` INT PRIMARY KEY, name VARCHAR(20), budget INT)")
    cur.execute(f"CREATE TABLE {name}.players (id INT PRIMARY KEY, `group` INT, name VARCHAR(20), "
                f"FOREIGN KEY (`group`) REFERENCES {name}.teams(`group`))")
    teams, players = _rows()
    cur.executemany(f"INSERT INTO {name}.teams VALUES (%s, %s, %s)", teams)
    cur.executemany(f"INSERT INTO {name}.players VALUES (%s, %s, %s)", players)
    _assert_measured(_verdicts(url, "`group`", tmp_path / "cache"))


@pytest.mark.parametrize("dialect, name, sql", [
    ("sqlite", "group", 't."group"'),
    ("sqlite", "order", 't."order"'),
    ("sqlite", "key", "t.key"),          # SQLite takes key and date bare: no quotes added
    ("sqlite", "date", "t.date"),
    ("sqlite", "TrackId", "t.TrackId"),
    ("postgres", "group", 't."group"'),
    ("postgres", "user", 't."user"'),    # bare, PostgreSQL reads user as CURRENT_USER
    ("postgres", "name", "t.name"),
    ("postgres", "TrackId", 't."TrackId"'),
    ("mysql", "group", "t.`group`"),
    ("mysql", "key", "t.`key`"),
    ("spark", "group", "t.`group`"),
    ("duckdb", "order", 't."order"'),
    ("sqlite", "first name", 't."first name"'),
])
def test_stored_names_are_quoted_where_the_engine_would_refuse_them(dialect, name, sql):
    assert column("t", name, dialect).sql(dialect) == sql


def test_a_reserved_table_qualifier_is_quoted_too():
    assert column("order", "id", "sqlite").sql("sqlite") == '"order".id'
    assert stored_name("order", "postgres").sql("postgres") == '"order"'


@pytest.mark.parametrize("alias", ["grp", '"group"', '"order"'])
def test_the_average_of_averages_keeps_a_reserved_output_name(chinook_path, alias):
    # The detector's outer query names the inner one's outputs: a bare ``group`` there made
    # SQLite refuse it, and the choice vanished.
    sql = (f"SELECT c.Country AS {alias}, AVG(i.Total) FROM Invoice i JOIN Customer c "
           f"ON c.CustomerId = i.CustomerId GROUP BY c.Country ORDER BY 2 DESC")
    answer = vouchsql.check(chinook_path, "What is the average invoice total per country?", [sql], all_choices=True)
    levels = [c for c in answer.choices if c.type == "aggregation_level"]
    assert len(levels) == 1 and levels[0].differs and levels[0].result.row_count == 24
    assert levels[0].sql.startswith(f"SELECT {alias}, AVG(entity_avg)")

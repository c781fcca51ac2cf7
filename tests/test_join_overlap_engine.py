"""bad_join measures key overlap with the join's own comparison, so it agrees with the engine:
SQLite's type affinity (a TEXT key of '1', '2'… joined to an INTEGER key matches every row),
MariaDB's case-insensitive collation and PAD SPACE. A join the engine matches row for row is
never a bad join; a join the engine matches on few rows still is."""

from __future__ import annotations

import vouchsql
from test_boundaries import make_db, run_check


def _shop(path, person_key: str, visit_key: str, rows):
    return make_db(path, {
        "person": (f"id {person_key} PRIMARY KEY, name TEXT", [(k, f"p{i}") for i, k in enumerate(rows[0])]),
        "visit": (f"visit_id INTEGER PRIMARY KEY, person_id {visit_key}, spent REAL",
                  [(i, k, 1.5 * i) for i, k in enumerate(rows[1], 1)]),
    })


def test_sqlite_affinity_text_keys_joined_to_integer_keys(tmp_path):
    # visit.person_id stores '1'..'20' as TEXT (how many Spider databases store keys); the
    # engine converts them for the comparison with the INTEGER key and matches every visit.
    path = _shop(tmp_path / "a.sqlite", "INTEGER", "TEXT", ([i for i in range(1, 21)], [str(i) for i in range(1, 21)]))
    sql = "SELECT p.name, SUM(v.spent) FROM person p JOIN visit v ON p.id = v.person_id GROUP BY p.id"
    check = run_check(path, "bad_join", sql)
    assert not check.fired, check.detail
    (pair,) = check.evidence["joins"]
    assert (pair["overlap"], pair["left_distinct"], pair["right_distinct"], pair["rho"]) == (20, 20, 20, 1.0)


def test_sqlite_affinity_does_not_hide_a_real_miss(tmp_path):
    # the same shapes, but only 2 of 20 person ids are visit keys: still a bad join
    path = _shop(tmp_path / "b.sqlite", "INTEGER", "TEXT",
                 ([i for i in range(1, 21)], [str(i) for i in (1, 2)] + [str(100 + i) for i in range(18)]))
    check = run_check(path, "bad_join", "SELECT COUNT(*) FROM person p JOIN visit v ON p.id = v.person_id")
    assert check.fired
    (pair,) = check.evidence["joins"]
    assert (pair["overlap"], pair["left_distinct"], pair["right_distinct"]) == (2, 20, 20)
    assert pair["rho"] == 0.1


def test_sqlite_text_keys_with_no_affinity_stay_apart(tmp_path):
    # two TEXT columns: "001" and "1" are different keys to the engine, so they do not match
    path = _shop(tmp_path / "c.sqlite", "TEXT", "TEXT",
                 ([f"{i:03d}" for i in range(1, 21)], [str(i) for i in range(1, 21)]))
    check = run_check(path, "bad_join", "SELECT COUNT(*) FROM person p JOIN visit v ON p.id = v.person_id")
    assert check.fired
    assert check.evidence["joins"][0]["overlap"] == 0


def _every_key_shared(url: str, tmp_path) -> None:
    """person.code joined to visit.person_code: all 12 visits match, and bad_join agrees."""
    answer = vouchsql.check(url, "Labels of visited people", [
        "SELECT p.label FROM person p JOIN visit v ON p.code = v.person_code"], cache_dir=str(tmp_path))
    assert answer.shown.result.row_count == 12
    check = {c.name: c for c in answer.checks}["bad_join"]
    assert not check.fired, check.detail
    assert check.evidence["joins"][0]["rho"] == 1.0


def test_mariadb_case_and_padding_insensitive_keys(mariadb, tmp_path):
    url, cur, name = mariadb
    cur.execute(f"CREATE TABLE {name}.person (code VARCHAR(10) PRIMARY KEY, label VARCHAR(10))")
    cur.execute(f"CREATE TABLE {name}.visit (id INT PRIMARY KEY, person_code VARCHAR(10))")
    cur.executemany(f"INSERT INTO {name}.person VALUES (%s, %s)", [(f"AB{i}", f"l{i}") for i in range(12)])
    # lower case and a trailing space: the default collation matches them to 'AB0'…
    cur.executemany(f"INSERT INTO {name}.visit VALUES (%s, %s)", [(i, f"ab{i} ") for i in range(12)])
    _every_key_shared(url, tmp_path)


def test_postgresql_char_padding_follows_the_engine(pg, tmp_path):
    # char(6) keys compared with varchar keys: PostgreSQL sets char's padding aside in the
    # comparison, so the join matches every key and the overlap, counted by it, says so
    url, raw, schema = pg
    raw.execute(f"CREATE TABLE {schema}.person (code CHAR(6) PRIMARY KEY, label TEXT)")
    raw.execute(f"CREATE TABLE {schema}.visit (id INTEGER PRIMARY KEY, person_code VARCHAR(10))")
    for i in range(12):
        raw.execute(f"INSERT INTO {schema}.person VALUES (%s, %s)", (f"AB{i}", f"l{i}"))
        raw.execute(f"INSERT INTO {schema}.visit VALUES (%s, %s)", (i, f"AB{i}"))
    _every_key_shared(url, tmp_path)

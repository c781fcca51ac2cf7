"""unmatched_literal: a string compared for equality that no row stores as written, though some
row does once case and surrounding spaces are set aside. Real SQLite files, PostgreSQL and
MariaDB schemas; the evidence exactly."""

from __future__ import annotations

import pytest

import vouchsql
from test_boundaries import make_db, run_check


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("literals") / "shop.sqlite"
    return make_db(path, {
        "region": ("id INTEGER PRIMARY KEY, name CHAR(10), code TEXT",
                   [(1, "North     ", "N"), (2, "South     ", "S"), (3, "East      ", "E")]),
        "store": ("id INTEGER PRIMARY KEY, region_id INTEGER REFERENCES region(id), city TEXT, size INTEGER",
                  [(i, 1 + i % 3, ["Oslo", "Rome", "Lima", "OSLO "][i % 4], i) for i in range(1, 13)]),
    })


def literals(check) -> list[tuple]:
    return [(x["sql"], x["column"], x["literal"], x["stored"], x["rows"]) for x in check.evidence["literals"]]


@pytest.mark.parametrize("sql, expected", [
    # padded CHAR values: never equal on SQLite
    ("SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE r.name = 'North'",
     [("r.name = 'North'", "region.name", "North", "North     ", 1)]),
    # the literal on the left, and a case no row stores ('Oslo' and 'OSLO ' are held, 'oslo' is not)
    ("SELECT COUNT(*) FROM store WHERE 'oslo' = city",
     [("city = 'oslo'", "store.city", "oslo", "OSLO ", 6)]),
    # IN: each string measured; 'Rome' is held as written, 'lima' only folded
    ("SELECT COUNT(*) FROM store WHERE city IN ('Rome', 'lima')",
     [("city = 'lima'", "store.city", "lima", "Lima", 3)]),
    # in an ON and in a CASE, and the same column and string read once
    ("SELECT SUM(CASE WHEN r.code = 'n' THEN 1 ELSE 0 END) FROM store s JOIN region r ON r.id = s.region_id "
     "AND r.code = 'n'",
     [("r.code = 'n'", "region.code", "n", "N", 1)]),
])
def test_unmatched_literal_fires(shop, sql, expected):
    check = run_check(shop, "unmatched_literal", sql)
    assert check.fired, check.detail
    assert literals(check) == expected
    assert check.evidence["not_measured"] == []
    assert "keeps none of the rows it names" in check.detail


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE TRIM(r.name) = 'North'",
    "SELECT COUNT(*) FROM store WHERE city = 'Oslo'",  # held as written (beside 'OSLO ')
    "SELECT COUNT(*) FROM store WHERE city = 'Paris'",  # held by no row even folded: not this check's
    "SELECT COUNT(*) FROM store WHERE city = '   '",  # only spaces: nothing to compare
    "SELECT COUNT(*) FROM store WHERE size = '3'",  # a number written as text, equal by affinity
    "SELECT COUNT(*) FROM store WHERE city <> 'oslo'",  # not an equality
    "SELECT COUNT(*) FROM store WHERE city LIKE 'oslo'",  # LIKE ignores ASCII case on SQLite
    # the string of a subquery is the subquery's, held as written there
    "SELECT COUNT(*) FROM store WHERE region_id IN (SELECT id FROM region WHERE code = 'N')",
    "WITH s AS (SELECT city FROM store) SELECT COUNT(*) FROM s WHERE city = 'oslo'",  # a CTE's column
])
def test_unmatched_literal_is_silent(shop, sql):
    check = run_check(shop, "unmatched_literal", sql)
    assert not check.fired, check.detail
    assert check.evidence["literals"] == [] and check.evidence["not_measured"] == []


def test_the_gate_is_withheld_when_it_fires(shop):
    answer = vouchsql.check(shop, "How many stores are in the north?",
                            ["SELECT COUNT(*) FROM store s JOIN region r ON r.id = s.region_id WHERE r.name = 'North'"]
                            * 5, cache_dir=str(shop.parent / "cache"))
    assert answer.shown.result.rows == [[0]]
    assert answer.verdict.gate == "flag" and "unmatched_literal" in answer.verdict.reasons


def _servers_agree(url, raw, schema, tmp_path, execute):
    for statement in (f"CREATE TABLE {schema}.region (id INTEGER PRIMARY KEY, name CHAR(10), code VARCHAR(5))",
                      f"INSERT INTO {schema}.region VALUES (1, 'North', 'N'), (2, 'South', 'S')"):
        execute(statement)

    def check(sql):
        answer = vouchsql.check(url, "How many regions?", [sql], cache_dir=str(tmp_path))
        return {c.name: c for c in answer.checks}["unmatched_literal"]
    return check


def test_postgresql_pads_char_itself_and_compares_case(pg, tmp_path):
    url, raw, schema = pg
    check = _servers_agree(url, raw, schema, tmp_path, raw.execute)
    # char(10) compares without its padding: the filter keeps North, silent
    got = check("SELECT COUNT(*) FROM region WHERE name = 'North'")
    assert not got.fired and got.evidence["literals"] == []
    # but PostgreSQL compares case: 'n' is no code
    got = check("SELECT COUNT(*) FROM region WHERE code = 'n'")
    assert got.fired and literals(got) == [("code = 'n'", "region.code", "n", "N", 1)]


def test_mariadb_collation_ignores_case_and_padding(mariadb, tmp_path):
    url, cur, name = mariadb
    check = _servers_agree(url, cur, name, tmp_path, cur.execute)
    for sql in ("SELECT COUNT(*) FROM region WHERE name = 'North'", "SELECT COUNT(*) FROM region WHERE code = 'n'"):
        got = check(sql)
        assert not got.fired and got.evidence["literals"] == [], got.detail

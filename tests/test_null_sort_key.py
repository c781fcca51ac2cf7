"""null_sort_key: ORDER BY x … LIMIT n that keeps rows whose x is NULL returns the unknown rows,
not the extreme ones. The engine's own NULL ordering decides: SQLite sorts NULLs first
ascending, PostgreSQL descending. Real databases; verdicts and evidence exactly."""

from __future__ import annotations

import sqlite3

import pytest

import vouchsql
from test_boundaries import run_check


def _key(path, sql, question="Which track comes first by composer?"):
    return run_check(path, "null_sort_key", sql, question=question)


@pytest.mark.parametrize("sql, order, column, kept, known", [
    # 2,526 of Chinook's 3,503 tracks name a composer
    ("SELECT Name FROM Track ORDER BY Composer LIMIT 3", "ORDER BY Composer LIMIT 3", "Composer", 3,
     "SELECT COUNT(Composer) FROM Track"),
    # an output alias and a qualified column name the same key
    ("SELECT Name, Composer AS c FROM Track ORDER BY c LIMIT 2", "ORDER BY c LIMIT 2", "Composer", 2,
     "SELECT COUNT(Composer) FROM Track"),
    ("SELECT c.FirstName FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId ORDER BY c.Company LIMIT 1",
     "ORDER BY c.Company LIMIT 1", "c.Company", 1,
     "SELECT COUNT(c.Company) FROM Customer c JOIN Invoice i ON i.CustomerId = c.CustomerId"),
])
def test_fires_on_sqlite_ascending(chinook_path, sql, order, column, kept, known):
    check = _key(chinook_path, sql)
    assert (check.fired, check.kind) == (True, "cap")
    limit = int(order.rsplit(" ", 1)[1])
    with sqlite3.connect(chinook_path) as con:
        left_out = con.execute(known).fetchone()[0]
    assert left_out > 0
    assert check.evidence == {"keys": [{"order": order, "column": column, "kept_null": kept,
                                        "known_left_out": left_out, "limit": limit}], "not_measured": []}
    assert check.detail.startswith(f"{order} keeps {kept} row(s) whose {column} is NULL (unknown) and leaves out "
                                   f"{left_out} with a known {column}")


@pytest.mark.parametrize("sql, detail", [
    ("SELECT Name FROM Track ORDER BY Composer DESC LIMIT 3", "no ORDER BY … LIMIT keeps a NULL sort key"),
    ("SELECT Name FROM Track WHERE Composer IS NOT NULL ORDER BY Composer LIMIT 3",
     "no ORDER BY … LIMIT keeps a NULL sort key"),
    ("SELECT Name FROM Track ORDER BY Composer NULLS LAST LIMIT 3", "no ORDER BY … LIMIT keeps a NULL sort key"),
    # NULLS FIRST written out: the writer's choice
    ("SELECT Name FROM Track ORDER BY Composer NULLS FIRST LIMIT 3", "no ORDER BY … LIMIT keeps a NULL sort key"),
    # the NULL rows asked for, and a LIMIT that keeps every row there is
    ("SELECT Name FROM Track WHERE Composer IS NULL ORDER BY Composer, Name LIMIT 3",
     "no ORDER BY … LIMIT keeps a NULL sort key"),
    ("SELECT Company FROM Customer WHERE Country = 'Brazil' ORDER BY Company LIMIT 10",
     "no ORDER BY … LIMIT keeps a NULL sort key"),
    # no LIMIT: every row is returned, the order only places the unknown ones
    ("SELECT Name FROM Track ORDER BY Composer", "no ORDER BY … LIMIT keeps a NULL sort key"),
    # a correlated subquery is not probed
    ("SELECT a.Title FROM Album a WHERE (SELECT t.Composer FROM Track t WHERE t.AlbumId = a.AlbumId "
     "ORDER BY t.Composer LIMIT 1) IS NULL",
     "not measured: ORDER BY t.Composer LIMIT 1 (a correlated subquery, or the probe failed)"),
])
def test_quiet_on_sqlite(chinook_path, sql, detail):
    check = _key(chinook_path, sql)
    assert (check.fired, check.detail) == (False, detail)


def test_postgres_sorts_nulls_first_descending(pg):
    """The same SQL on PostgreSQL: NULLs come first in descending order, last in ascending."""
    url, _raw, _schema = pg
    q = "Which pets have the last nicknames alphabetically?"
    desc = vouchsql.check(url, q, ["SELECT id FROM pets ORDER BY nick DESC LIMIT 2"] * 5)
    asc = vouchsql.check(url, q, ["SELECT id FROM pets ORDER BY nick LIMIT 2"] * 5)
    fired = {c.name: c for c in desc.checks}["null_sort_key"]
    assert (fired.fired, desc.verdict.gate) == (True, "flag")
    # 50 of the 200 pets have no nickname
    assert fired.evidence["keys"] == [{"order": "ORDER BY nick DESC LIMIT 2", "column": "nick", "kept_null": 2,
                                       "known_left_out": 150, "limit": 2}]
    assert {c.name: c.fired for c in asc.checks}["null_sort_key"] is False

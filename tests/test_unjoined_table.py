"""unjoined_table: a table joined to the rest by no condition multiplies every row of the
others (a cartesian product). Real SQLite files and Chinook; verdicts and details exactly."""

from __future__ import annotations

import pytest

from test_boundaries import make_db, run_check

TAIL = ("joined to the other tables by no condition: each of its rows pairs with every row of the rest "
        "(a cartesian product); join it on its key, or write CROSS JOIN if every pair is meant")


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("unjoined") / "shop.sqlite"
    return make_db(path, {
        "customer": ("id INTEGER PRIMARY KEY, name TEXT", [(i, f"c{i}") for i in range(1, 6)]),
        "orders": ("id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL",
                   [(i, 1 + i % 5, 10.0 * i) for i in range(1, 21)]),
        "item": ("id INTEGER PRIMARY KEY, order_id INTEGER, qty INTEGER", [(i, 1 + i % 20, i % 3 + 1) for i in range(1, 41)]),
        "settings": ("key TEXT PRIMARY KEY, value TEXT", [("currency", "EUR"), ("vat", "0.2")]),
        "single": ("id INTEGER PRIMARY KEY, rate REAL", [(1, 1.1)]),
    })


@pytest.mark.parametrize("sql, unjoined", [
    ("SELECT SUM(o.total) FROM orders o, customer c", ["customer"]),
    ("SELECT SUM(i.qty) FROM item i, orders o, customer c WHERE o.customer_id = c.id", ["item"]),
    ("SELECT SUM(i.qty) FROM orders o JOIN customer c ON c.id = o.customer_id JOIN item i ON 1 = 1", ["item"]),
    ("SELECT COUNT(*) FROM orders o JOIN customer c ON c.name LIKE 'c%'", ["customer"]),
    # in a subquery too, and named as written
    ("SELECT name FROM customer WHERE id IN (SELECT o.customer_id FROM orders o, item i WHERE i.qty > 1)", ["item"]),
    # two settings rows each pair with every order
    ("SELECT o.id, s.value FROM orders o, settings s", ["settings"]),
])
def test_unjoined_table_fires(shop, sql, unjoined):
    check = run_check(shop, "unjoined_table", sql)
    assert (check.fired, check.kind, check.evidence) == (True, "cap", {"unjoined": unjoined})
    assert check.detail == f"{', '.join(unjoined)} {TAIL}"


@pytest.mark.parametrize("sql", [
    "SELECT SUM(o.total) FROM orders o JOIN customer c ON c.id = o.customer_id",
    "SELECT SUM(o.total) FROM orders o, customer c WHERE o.customer_id = c.id",
    "SELECT SUM(o.total) FROM orders o JOIN customer c USING (id)",
    "SELECT SUM(o.total) FROM orders o NATURAL JOIN customer c",
    # written on purpose
    "SELECT c.name, s.value FROM customer c CROSS JOIN settings s",
    "SELECT a.name, b.name FROM customer AS a CROSS JOIN customer b",
    # one row on one side: each row pairs with it alone
    "SELECT o.total * s.rate FROM orders o, single s",
    "SELECT o.id, s.value FROM orders o, settings s WHERE s.key = 'currency'",
    "SELECT COUNT(*) FROM orders o JOIN customer c ON c.name = 'c1'",
    # a derived table (one row of an aggregate) and a subquery that links the two
    "SELECT o.id FROM orders o, (SELECT AVG(total) a FROM orders) m WHERE o.total > m.a",
    "SELECT c.name FROM customer c, orders o WHERE EXISTS (SELECT 1 FROM item i WHERE i.order_id = o.id "
    "AND o.customer_id = c.id)",
    # a range join is a join
    "SELECT COUNT(*) FROM orders o, customer c WHERE o.total < c.id * 10",
])
def test_unjoined_table_does_not_fire(shop, sql):
    check = run_check(shop, "unjoined_table", sql)
    assert (check.fired, check.detail, check.evidence) == (False, "every table is joined to the others",
                                                            {"unjoined": []})


def test_unjoined_table_caps_a_confident_cartesian_sum(chinook_path, tmp_path):
    import vouchsql

    sql = ("SELECT SUM(il.UnitPrice * il.Quantity) FROM InvoiceLine il, Track t, Genre g "
           "WHERE g.GenreId = t.GenreId AND g.Name = 'Rock'")
    answer = vouchsql.check(chinook_path, "What is the total revenue from Rock tracks?", [sql] * 3,
                            cache_dir=str(tmp_path))
    check = {c.name: c for c in answer.checks}["unjoined_table"]
    assert check.fired and check.evidence == {"unjoined": ["InvoiceLine"]}
    assert answer.verdict.gate != "pass" and "unjoined_table" in answer.verdict.reasons


def test_unjoined_table_unparsed(shop):
    check = run_check(shop, "unjoined_table", "SELEC 1")
    assert (check.fired, check.detail) == (False, "not measured: the SQL could not be parsed")

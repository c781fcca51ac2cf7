"""Key domains without a declared foreign key: what the names and the data say a column
identifies (vouchsql.db.keys), and the join_key_meaning veto on a database that declares none
(the golden cases in tests/fixtures/checks/join_key_meaning.json use the shared databases,
which declare theirs)."""

from __future__ import annotations

import sqlite3

import pytest

import vouchsql
from vouchsql.db.keys import key_map, ref_words, singular

SCHEMA = """
CREATE TABLE users (id INTEGER, name TEXT);
CREATE TABLE orders (id INTEGER, user_id INTEGER, total REAL);
CREATE TABLE products (code TEXT PRIMARY KEY, title TEXT);
CREATE TABLE order_items (order_id INTEGER, product_code TEXT, qty INTEGER);
CREATE TABLE profiles (user_id INTEGER PRIMARY KEY, bio TEXT);
CREATE TABLE Team (TeamId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE Match (MatchId INTEGER PRIMARY KEY, HomeTeamId INTEGER, AwayTeamId INTEGER);
CREATE TABLE Country (Code TEXT PRIMARY KEY, Name TEXT);
CREATE TABLE City (ID INTEGER PRIMARY KEY, Name TEXT, CountryCode TEXT);
CREATE TABLE parts (partid INTEGER PRIMARY KEY, label TEXT);
CREATE TABLE bins (binid INTEGER PRIMARY KEY, partid INTEGER);
CREATE TABLE employees (employeeNumber INTEGER PRIMARY KEY, lastName TEXT, reportsTo INTEGER);
CREATE TABLE customers (customerNumber INTEGER PRIMARY KEY, salesRepEmployeeNumber INTEGER);
"""


@pytest.fixture(scope="module")
def plain_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "plain.sqlite"
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO users VALUES (?, ?)", [(i, f"user {i}") for i in range(1, 21)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, 1 + i % 20, i * 1.5) for i in range(1, 41)])
    con.executemany("INSERT INTO products VALUES (?, ?)", [(f"P{i}", f"product {i}") for i in range(1, 11)])
    con.executemany("INSERT INTO order_items VALUES (?, ?, ?)", [(1 + i % 40, f"P{1 + i % 10}", 1) for i in range(60)])
    con.executemany("INSERT INTO profiles VALUES (?, ?)", [(i, "bio") for i in range(1, 11)])
    con.executemany("INSERT INTO Team VALUES (?, ?)", [(i, f"team {i}") for i in range(1, 9)])
    con.executemany("INSERT INTO Match VALUES (?, ?, ?)", [(i, 1 + i % 8, 1 + (i + 3) % 8) for i in range(1, 31)])
    con.executemany("INSERT INTO Country VALUES (?, ?)", [("FRA", "France"), ("DEU", "Germany"), ("ITA", "Italy")])
    con.executemany("INSERT INTO City VALUES (?, ?, ?)", [(1, "Paris", "FRA"), (2, "Lyon", "FRA"), (3, "Berlin", "DEU")])
    con.executemany("INSERT INTO parts VALUES (?, ?)", [(i, f"part {i}") for i in range(1, 6)])
    con.executemany("INSERT INTO bins VALUES (?, ?)", [(i, 1 + i % 5) for i in range(1, 11)])
    con.executemany("INSERT INTO employees VALUES (?, ?, ?)", [(1000 + i, f"e{i}", 1000) for i in range(5)])
    con.executemany("INSERT INTO customers VALUES (?, ?)", [(100 + i, 1000 + i % 5) for i in range(20)])
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def keys(plain_db, tmp_path_factory):
    db = vouchsql.connect(plain_db, cache_dir=str(tmp_path_factory.mktemp("kcache")))
    return key_map(db.profile())


def root(keys, table, column):
    d = keys.domain(table, column)
    return None if d is None else str(d.root)


def test_names_split_and_singular():
    assert ref_words("CustomerId") == ref_words("customer_id") == ref_words("customerid") == ["customer", "id"]
    assert ref_words("SupportRepId") == ["support", "rep", "id"]
    assert ref_words("CUSTOMER_ID") == ["customer", "id"]
    assert [singular(n) for n in ("categories", "addresses", "statuses", "Order Details", "Track")] == \
        ["category", "address", "status", "orderdetail", "track"]


@pytest.mark.parametrize("table, column, expected", [
    ("orders", "user_id", "users.id"),          # <entity>_id → the key of the plural table
    ("orders", "id", "orders.id"),              # no declared key: a unique id column is the key
    ("order_items", "order_id", "orders.id"),
    ("order_items", "product_code", "products.code"),  # the suffix must match the key's
    ("profiles", "user_id", "users.id"),        # a key that names another entity is that entity's
    ("Match", "HomeTeamId", "Team.TeamId"),     # role words dropped: Home·Team·Id
    ("Match", "AwayTeamId", "Team.TeamId"),
    ("Match", "MatchId", "Match.MatchId"),
    ("City", "CountryCode", "Country.Code"),
    ("City", "ID", "City.ID"),
    ("bins", "partid", "parts.partid"),         # run-together names
    ("customers", "salesRepEmployeeNumber", "employees.employeeNumber"),  # sales·rep·employee·number
    ("employees", "reportsTo", None),           # only a declared key could place it
    ("users", "name", None),                    # not a key: nothing guessed
    ("Country", "Name", None),
])
def test_domains_from_names_and_data(keys, table, column, expected):
    assert root(keys, table, column) == expected


def _pairs(plain_db, cache, sql):
    answer = vouchsql.check(plain_db, "q?", [sql, sql], cache_dir=cache)
    result = next(c for c in answer.checks if c.name == "join_key_meaning")
    return result, result.evidence["pairs"]


@pytest.mark.parametrize("sql, fired, verdicts", [
    ("SELECT u.name, COUNT(*) FROM users u JOIN orders o ON o.user_id = u.id GROUP BY u.id", False, ["follows"]),
    ("SELECT u.name, COUNT(*) FROM users u JOIN orders o ON o.id = u.id GROUP BY u.id", True, ["different_entities"]),
    ("SELECT t.Name, COUNT(*) FROM Match m JOIN Team t ON t.TeamId = m.HomeTeamId GROUP BY t.TeamId", False, ["follows"]),
    ("SELECT COUNT(*) FROM Match h JOIN Match a ON a.AwayTeamId = h.HomeTeamId", False, ["follows"]),
    ("SELECT t.Name, COUNT(*) FROM Match m JOIN Team t ON t.TeamId = m.MatchId GROUP BY t.TeamId", True, ["different_entities"]),
    ("SELECT ci.Name, co.Name FROM City ci JOIN Country co ON co.Code = ci.CountryCode", False, ["follows"]),
    ("SELECT COUNT(*) FROM users u JOIN profiles p ON p.user_id = u.id", False, ["follows"]),
    ("SELECT COUNT(*) FROM users u JOIN profiles p ON p.bio = u.name", False, ["not_measured"]),
    ("SELECT COUNT(*) FROM order_items i JOIN products p ON p.code = i.product_code "
     "JOIN orders o ON o.id = i.order_id", False, ["follows", "follows"]),
])
def test_verdicts_without_declared_keys(plain_db, tmp_path, sql, fired, verdicts):
    result, pairs = _pairs(plain_db, str(tmp_path / "c"), sql)
    assert result.fired is fired, result.detail
    assert [p["verdict"] for p in pairs] == verdicts


def test_the_key_the_join_should_have_taken_is_named(plain_db, tmp_path):
    result, pairs = _pairs(plain_db, str(tmp_path / "c"),
                           "SELECT t.Name, COUNT(*) FROM Match m JOIN Team t ON t.TeamId = m.MatchId GROUP BY t.TeamId")
    assert pairs[0]["should_take"][:2] == ["Match.HomeTeamId references Team.TeamId, by its name",
                                           "Match.AwayTeamId references Team.TeamId, by its name"]
    assert "the join should follow Match.HomeTeamId references Team.TeamId" in result.detail


def test_same_input_same_output(plain_db, tmp_path):
    sql = "SELECT COUNT(*) FROM users u JOIN orders o ON o.id = u.id"
    first = _pairs(plain_db, str(tmp_path / "a"), sql)[0]
    second = _pairs(plain_db, str(tmp_path / "b"), sql)[0]
    assert first.model_dump() == second.model_dump()


def test_table_prefixed_column_names(tmp_path):
    """TPC-H style: every column of a table carries its letter (``o_custkey``)."""
    path = tmp_path / "tpch.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_nationkey INTEGER);
        CREATE TABLE orders (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER, o_totalprice REAL);
        CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name TEXT);
        CREATE TABLE lineitem (l_orderkey INTEGER, l_linenumber INTEGER, l_quantity REAL,
                               PRIMARY KEY (l_orderkey, l_linenumber));
    """)
    con.executemany("INSERT INTO customer VALUES (?, ?, ?)", [(i, f"c{i}", i % 5) for i in range(1, 11)])
    con.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(i, 1 + i % 10, 1.0) for i in range(1, 31)])
    con.executemany("INSERT INTO nation VALUES (?, ?)", [(i, f"n{i}") for i in range(5)])
    con.executemany("INSERT INTO lineitem VALUES (?, ?, ?)", [(1 + i % 30, i, 1.0) for i in range(60)])
    con.commit()
    con.close()
    keys = key_map(vouchsql.connect(path, cache_dir=str(tmp_path / "c")).profile())
    assert root(keys, "orders", "o_custkey") == "customer.c_custkey"
    assert root(keys, "customer", "c_nationkey") == "nation.n_nationkey"
    assert root(keys, "lineitem", "l_orderkey") == "orders.o_orderkey"
    assert root(keys, "lineitem", "l_linenumber") is None
    cache = str(tmp_path / "c")
    good = "SELECT c.c_name, COUNT(*) FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey GROUP BY c.c_custkey"
    bad = "SELECT c.c_name, COUNT(*) FROM customer c JOIN orders o ON o.o_orderkey = c.c_custkey GROUP BY c.c_custkey"
    assert [p["verdict"] for p in _pairs(path, cache, good)[1]] == ["follows"]
    assert [p["verdict"] for p in _pairs(path, cache, bad)[1]] == ["different_entities"]


def test_a_measured_table_without_a_declared_key_loses_its_name_taken_key(tmp_path):
    """The key index is read from the catalogue once per database and shared by every profile,
    the figures are each profile's own: from the catalogue, ``shipment`` and ``shipments`` both
    own a ``shipment_id`` taken at its name, so ``ledger.shipmentid`` names neither. A profile
    that measured ``shipments`` finds its ids repeated: there, and in the full profile,
    ``shipment`` is the one owner; a later profile that did not measure it is as the first."""
    path = tmp_path / "ship.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE shipment (shipment_id INTEGER, weight REAL)")
    con.execute("CREATE TABLE shipments (shipment_id INTEGER, weight REAL)")
    con.execute("CREATE TABLE ledger (entry_id INTEGER PRIMARY KEY, shipmentid INTEGER)")
    con.executemany("INSERT INTO shipment VALUES (?, ?)", [(i, 1.0) for i in range(1, 6)])
    con.executemany("INSERT INTO shipments VALUES (?, ?)", [(1 + i % 5, 1.0) for i in range(10)])  # ids repeat
    con.executemany("INSERT INTO ledger VALUES (?, ?)", [(i, 1 + i % 5) for i in range(10)])
    con.commit()
    con.close()
    db = vouchsql.connect(path, cache_dir=str(tmp_path / "c"))

    def root(profile):
        d = key_map(profile).domain("ledger", "shipmentid")
        return None if d is None else str(d.root)

    assert root(db.profile_for(["ledger"])) is None  # two tables' keys by name: no guess
    assert root(db.profile_for(["ledger", "shipments"])) == "shipment.shipment_id"
    assert root(db.profile()) == "shipment.shipment_id"
    assert root(db.profile_for(["ledger"])) is None  # the shared index is unchanged

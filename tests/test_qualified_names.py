"""Schema-qualified table names (issue 16): a table read as ``schema.table`` through the
``schemas`` setting is checked as the same table named bare on a search path. The key map
(join_key_meaning), the counting-unit choice, the value index (question_filters) and the
scopes the checks and detectors read key tables by the profile's qualified name, so
``sweep.track`` is never looked up as a bare ``track`` (the default schema's, or nothing).

On the local PostgreSQL server (the ``pg`` fixture's schema is the default one, first on the
search path; a second schema holds a small music shop) and on SQLite (``main.track``)."""

from __future__ import annotations

import sqlite3

import pytest

import vouchsql

from conftest import PG_URL  # the server the pg fixture reaches

# A small music shop: 5 genres, 60 tracks, 10 customers, 40 invoices, 200 invoice lines.
SHOP = [
    "CREATE TABLE {s}.genre (genre_id INT PRIMARY KEY, name TEXT)",
    "CREATE TABLE {s}.track (track_id INT PRIMARY KEY, name TEXT, "
    "genre_id INT REFERENCES {s}.genre(genre_id))",
    "CREATE TABLE {s}.customer (customer_id INT PRIMARY KEY, last_name TEXT)",
    "CREATE TABLE {s}.invoice (invoice_id INT PRIMARY KEY, customer_id INT REFERENCES {s}.customer(customer_id))",
    "CREATE TABLE {s}.invoice_line (invoice_line_id INT PRIMARY KEY, "
    "invoice_id INT REFERENCES {s}.invoice(invoice_id), track_id INT REFERENCES {s}.track(track_id))",
    # customer_id with no declared key: placed by its name, in its own schema first
    "CREATE TABLE {s}.payment (payment_id INT PRIMARY KEY, customer_id INT, amount INT)",
    "INSERT INTO {s}.genre VALUES (1, 'Rock'), (2, 'Jazz'), (3, 'Blues'), (4, 'Pop'), (5, 'Metal')",
    "INSERT INTO {s}.track SELECT i, 'track ' || i, 1 + i % 5 FROM generate_series(1, 60) i",
    "INSERT INTO {s}.customer SELECT i, 'name ' || i FROM generate_series(1, 10) i",
    "INSERT INTO {s}.invoice SELECT i, 1 + i % 10 FROM generate_series(1, 40) i",
    "INSERT INTO {s}.invoice_line SELECT i, 1 + i % 40, 1 + (i * 7) % 60 FROM generate_series(1, 200) i",
    "INSERT INTO {s}.payment SELECT i, 1 + i % 10, i FROM generate_series(1, 30) i",
    "ANALYZE {s}.genre; ANALYZE {s}.track; ANALYZE {s}.customer; ANALYZE {s}.invoice; "
    "ANALYZE {s}.invoice_line; ANALYZE {s}.payment",
]

WRONG_KEY = "SELECT COUNT(*) FROM {p}track t JOIN {p}genre g ON g.genre_id = t.track_id WHERE g.name = 'Rock'"
BUYERS = ("SELECT COUNT(*) FROM {p}invoice i JOIN {p}invoice_line il ON il.invoice_id = i.invoice_id "
          "JOIN {p}track t ON t.track_id = il.track_id JOIN {p}genre g ON g.genre_id = t.genre_id "
          "WHERE g.name = 'Jazz'")
PAYMENTS = "SELECT COUNT(*) FROM {p}payment p JOIN {p}customer c ON c.customer_id = p.payment_id"


@pytest.fixture
def shop(pg):
    """(search-path URL of the shop's schema, the shop's schema, the pg fixture's default schema).
    The default schema holds its own ``track``, ``genre`` and ``customer`` of other shapes, so a
    bare-name lookup of the shop's tables would find the wrong ones."""
    url, raw, schema = pg
    other = schema + "_shop"
    raw.execute(f"CREATE SCHEMA {other}")
    try:
        for sql in SHOP:
            raw.execute(sql.format(s=other))
        raw.execute(f"CREATE TABLE {schema}.genre (id INT PRIMARY KEY, label TEXT)")
        raw.execute(f"CREATE TABLE {schema}.track (id INT PRIMARY KEY, title TEXT, length INT)")
        raw.execute(f"CREATE TABLE {schema}.customer (customer_id INT PRIMARY KEY, city TEXT)")
        raw.execute(f"INSERT INTO {schema}.genre VALUES (1, 'Rock'), (2, 'Soul')")
        raw.execute(f"INSERT INTO {schema}.track SELECT i, 't' || i, i FROM generate_series(1, 9) i")
        raw.execute(f"INSERT INTO {schema}.customer SELECT i, 'c' || i FROM generate_series(1, 4) i")
        yield f"{PG_URL}?options=-csearch_path%3D{other}", other, schema
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {other} CASCADE")


def _check(db, question: str, sql: str):
    answer = vouchsql.check(db, question, [sql])
    return {c.name: c for c in answer.checks}, answer


def _jkm(other: str, p: str) -> str:
    return (f"the join keys belong to different entities: {p}genre.genre_id = {p}track.track_id joins the key of "
            f"{p}genre to the key of {p}track; the join should follow {p}track.genre_id references "
            f"{p}genre.genre_id")


def test_a_wrong_join_key_abstains_on_qualified_names_as_on_the_search_path(shop, tmp_path):
    search_path, other, default = shop
    # the shop's schema on the search path, bare names: the reference outcome
    with vouchsql.connect(search_path, cache_dir=str(tmp_path / "a")) as db:
        checks, answer = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p=""))
    assert checks["join_key_meaning"].fired and checks["join_key_meaning"].detail == _jkm(other, "")
    assert answer.verdict.gate == "abstain" and "join_key_meaning" in answer.verdict.reasons
    # the same read through the schemas setting (the server's default schema is public), qualified
    for schemas in (other, f"{default},{other}"):
        with vouchsql.connect(PG_URL, schemas=schemas, cache_dir=str(tmp_path / schemas)) as db:
            checks, answer = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p=f"{other}."))
        jkm = checks["join_key_meaning"]
        assert jkm.fired, jkm.detail
        assert jkm.detail == _jkm(other, f"{other}."), jkm.detail
        assert jkm.evidence["pairs"][0]["left_key"] == f"{other}.genre.genre_id"
        assert jkm.evidence["pairs"][0]["should_take"] == [f"{other}.track.genre_id references {other}.genre.genre_id"]
        assert answer.verdict.gate == "abstain" and "join_key_meaning" in answer.verdict.reasons
        # the value 'Rock' is found in the table the SQL reads (the default schema's genre
        # holds it too, and is not read)
        assert checks["question_filters"].detail == (
            f"the SQL has the filters the question asks for: 'Rock' ({other}.genre.name) filtered by 'Rock'")


def test_the_default_schema_named_qualified_is_the_bare_table(shop, tmp_path):
    search_path, other, _ = shop
    with vouchsql.connect(search_path, cache_dir=str(tmp_path / "c")) as db:
        bare, _ = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p=""))
        qualified, _ = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p=f"{other}."))
    for name in ("join_key_meaning", "question_filters", "bad_join", "join_drop", "missing_table"):
        assert (qualified[name].fired, qualified[name].detail) == (bare[name].fired, bare[name].detail), name
    assert qualified["join_key_meaning"].detail == _jkm(other, "")


def test_counting_unit_is_offered_on_qualified_names(shop, tmp_path):
    search_path, other, default = shop
    question = "How many customers bought Jazz tracks?"
    expected = ("the question counts customers, but COUNT(*) counts joined rows; "
                "COUNT(DISTINCT i.customer_id) counts each customer once (40 vs 2)")
    with vouchsql.connect(search_path, cache_dir=str(tmp_path / "a")) as db:
        _, answer = _check(db, question, BUYERS.format(p=""))
    assert [(c.type, c.description) for c in answer.choices] == [("counting_unit", expected)]
    with vouchsql.connect(PG_URL, schemas=f"{default},{other}", cache_dir=str(tmp_path / "b")) as db:
        _, answer = _check(db, question, BUYERS.format(p=f"{other}."))
    assert [(c.type, c.description) for c in answer.choices] == [("counting_unit", expected)]
    assert "open_choice:counting_unit" in answer.verdict.reasons
    assert answer.choices[0].result.rows == [[2]] and answer.shown.result.rows == [[40]]


def test_a_name_places_a_key_in_its_own_schema_first(shop, tmp_path):
    """payment.customer_id declares no key; two schemas have a customer table with a
    customer_id key: the name places it in the shop's own schema."""
    search_path, other, default = shop
    p = f"{other}."
    with vouchsql.connect(PG_URL, schemas=f"{default},{other}", cache_dir=str(tmp_path / "b")) as db:
        checks, _ = _check(db, "How many payments per customer?", PAYMENTS.format(p=p))
    jkm = checks["join_key_meaning"]
    assert jkm.fired
    assert jkm.detail == (f"the join keys belong to different entities: {p}customer.customer_id = "
                          f"{p}payment.payment_id joins the key of {p}customer to the key of {p}payment; the join "
                          f"should follow {p}payment.customer_id references {p}customer.customer_id, by its name")
    with vouchsql.connect(search_path, cache_dir=str(tmp_path / "a")) as db:
        checks, _ = _check(db, "How many payments per customer?", PAYMENTS.format(p=""))
    assert checks["join_key_meaning"].detail == jkm.detail.replace(p, "")


def test_sqlite_main_qualified_is_the_bare_table(tmp_path):
    path = tmp_path / "shop.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE genre (genre_id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE track (track_id INTEGER PRIMARY KEY, name TEXT, genre_id INTEGER REFERENCES genre(genre_id));
    """)
    con.executemany("INSERT INTO genre VALUES (?, ?)", [(1, "Rock"), (2, "Jazz"), (3, "Blues")])
    con.executemany("INSERT INTO track VALUES (?, ?, ?)", [(i, f"track {i}", 1 + i % 3) for i in range(1, 31)])
    con.commit()
    con.close()
    with vouchsql.connect(path, cache_dir=str(tmp_path / "c")) as db:
        bare, _ = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p=""))
        main, _ = _check(db, "How many tracks are in the Rock genre?", WRONG_KEY.format(p="main."))
    assert bare["join_key_meaning"].fired and bare["join_key_meaning"].detail == _jkm("", "")
    for name in ("join_key_meaning", "question_filters", "bad_join", "join_drop"):
        assert (main[name].fired, main[name].detail) == (bare[name].fired, bare[name].detail), name

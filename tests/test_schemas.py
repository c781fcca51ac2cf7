"""Several schemas: the ``schemas`` setting chooses what is read; a table outside the default
schema is keyed ``schema.table`` in the catalogue, the profile, the checks and the join pairs,
and two tables of one name in two schemas stay two tables. On PostgreSQL (schemas), MariaDB
(databases) and DuckDB (schemas); the servers' tests skip where a server is absent."""

from __future__ import annotations

import time

import pytest

import vouchsql
from vouchsql.errors import UserInputError


def _fired(answer) -> dict[str, str]:
    return {c.name: c.detail for c in answer.checks if c.fired}


def _assert_two_schemas(db, other: str) -> None:
    """What every engine must show for the same two-schema world (see the fixtures)."""
    names = [t.qualified for t in db.schema()]
    assert names == ["customers", "orders", f"{other}.customers", f"{other}.orders"], names
    prof = db.profile_for([f"{other}.orders"])
    by_key = {t.qualified: t for t in prof.tables}
    # what the query reads and its join neighbour are measured; the others are catalogue only
    assert by_key[f"{other}.orders"].measured and by_key[f"{other}.orders"].row_count == 40
    assert by_key[f"{other}.customers"].measured and by_key[f"{other}.customers"].row_count == 5
    assert not by_key["customers"].measured and not by_key["orders"].measured
    # the same bare name in two schemas: two tables, each with its own figures
    assert prof.table("customers").row_count == 30
    assert prof.table(f"{other}.customers").row_count == 5
    assert prof.table(f"{other}.orders").schema_name == other
    pair = prof.join_pair(f"{other}.orders", "customer_id", f"{other}.customers", "id")
    assert pair is not None and pair.source == "declared" and pair.rho == 1.0

    # a query across schemas: nothing is missing, and the join is measured on the right tables
    good = vouchsql.check(db, "How many orders are there per region?",
                          [f"SELECT c.region, COUNT(*) FROM {other}.orders o JOIN {other}.customers c "
                           f"ON c.id = o.customer_id GROUP BY c.region ORDER BY c.region"])
    assert "missing_table" not in _fired(good), _fired(good)
    assert "bad_join" not in _fired(good), _fired(good)
    assert good.shown.result.rows == [["east", 16], ["west", 24]]
    # the same join to the default schema's customers: ids 1..5 of 30, a key that does not fit
    bad = vouchsql.check(db, "How many orders are there per customer name?",
                         [f"SELECT c.name, COUNT(*) FROM {other}.orders o JOIN customers c "
                          f"ON c.id = o.total GROUP BY c.name"])
    assert "bad_join" in _fired(bad), _fired(bad)
    missing = vouchsql.check(db, "How many orders?", [f"SELECT COUNT(*) FROM {other}.nothing_here"])
    assert "missing_table" in _fired(missing)


# -- DuckDB ----------------------------------------------------------------------------------

@pytest.fixture
def duck_two_schemas(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (pip install 'vouchsql[duckdb]')")
    path = tmp_path / "two.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE SCHEMA sales")
    _world(conn.execute, "sales", "SELECT i FROM range(1, {n} + 1) t(i)")
    conn.close()
    return path


def _world(run, other: str, series: str) -> None:
    """The default schema: customers (30) and orders (10); ``other``: customers (5, with a
    region) and orders (40) whose customer_id refers to them."""
    run("CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(20))")
    run("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id))")
    run(f"CREATE TABLE {other}.customers (id INTEGER PRIMARY KEY, region VARCHAR(10))")
    run(f"CREATE TABLE {other}.orders (id INTEGER PRIMARY KEY, "
        f"customer_id INTEGER REFERENCES {other}.customers(id), total INTEGER)")
    run(f"INSERT INTO customers SELECT i, CONCAT('c', i) FROM ({series.format(n=30)}) AS s")
    run(f"INSERT INTO orders SELECT i, 1 + i % 30 FROM ({series.format(n=10)}) AS s")
    run(f"INSERT INTO {other}.customers SELECT i, CASE WHEN i % 2 = 0 THEN 'east' ELSE 'west' END "
        f"FROM ({series.format(n=5)}) AS s")
    run(f"INSERT INTO {other}.orders SELECT i, 1 + i % 5, 100 + i FROM ({series.format(n=40)}) AS s")


def test_duckdb_reads_the_schemas_asked_for(duck_two_schemas, tmp_path):
    with vouchsql.connect(duck_two_schemas, cache_dir=str(tmp_path / "c")) as db:
        assert db.default_schema == "main"
        assert [t.qualified for t in db.schema()] == ["customers", "orders"]  # default: main only
    with vouchsql.connect(duck_two_schemas, schemas="main,sales", cache_dir=str(tmp_path / "c")) as db:
        _assert_two_schemas(db, "sales")
    with vouchsql.connect(duck_two_schemas, schemas="*", cache_dir=str(tmp_path / "c")) as db:
        assert len(db.schema()) == 4


def test_an_unknown_schema_is_named_with_those_there_are(duck_two_schemas):
    with vouchsql.connect(duck_two_schemas, schemas="sales,nope") as db:
        with pytest.raises(UserInputError, match=r"schema 'nope' not found.*sales"):
            db.schema()


def test_the_schemas_setting_is_checked(tmp_path):
    with pytest.raises(UserInputError, match=r"schemas.*\* already means every schema"):
        vouchsql.connect(tmp_path / "x.sqlite", schemas="*,a")


# -- PostgreSQL ------------------------------------------------------------------------------

@pytest.fixture
def pg_two_schemas(pg):
    url, raw, schema = pg
    other = schema + "_b"
    raw.execute(f"DROP TABLE {schema}.pets; DROP TABLE {schema}.owners")
    raw.execute(f"CREATE SCHEMA {other}")
    try:
        _world(lambda sql: raw.execute(sql.replace("CREATE TABLE c", f"CREATE TABLE {schema}.c")
                                       .replace("CREATE TABLE o", f"CREATE TABLE {schema}.o")
                                       .replace("REFERENCES customers", f"REFERENCES {schema}.customers")
                                       .replace("INTO customers", f"INTO {schema}.customers")
                                       .replace("INTO orders", f"INTO {schema}.orders")),
               other, "SELECT i FROM generate_series(1, {n}) AS g(i)")
        yield url, schema, other
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {other} CASCADE")


def _reads_the_schemas_asked_for(url: str, default: str, other: str, tmp_path) -> None:
    """A server's default schema alone by default, both when asked, and an unknown one named."""
    with vouchsql.connect(url, cache_dir=str(tmp_path / "c")) as db:
        assert db.default_schema == default
        assert [t.qualified for t in db.schema()] == ["customers", "orders"]
    with vouchsql.connect(url, schemas=f"{default},{other}", cache_dir=str(tmp_path / "c")) as db:
        _assert_two_schemas(db, other)
    with vouchsql.connect(url, schemas=f"{other},nope") as db:
        with pytest.raises(UserInputError, match=rf"schema 'nope' not found.*{other}"):
            db.schema()


def test_postgres_reads_the_schemas_asked_for(pg_two_schemas, tmp_path):
    _reads_the_schemas_asked_for(*pg_two_schemas, tmp_path)


# -- MariaDB ---------------------------------------------------------------------------------

@pytest.fixture
def mariadb_two_databases(mariadb):
    url, cur, name = mariadb
    other = name + "_b"
    cur.execute(f"DROP TABLE {name}.pets")
    cur.execute(f"DROP TABLE {name}.owners")
    cur.execute(f"CREATE DATABASE {other}")
    try:
        cur.execute(f"USE {name}")
        _world(cur.execute, other, "SELECT seq AS i FROM seq_1_to_{n}")
        yield url, name, other
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {other}")


def test_mariadb_reads_the_databases_asked_for(mariadb_two_databases, tmp_path):
    _reads_the_schemas_asked_for(*mariadb_two_databases, tmp_path)


# -- one table's identity on the servers -----------------------------------------------------

def _row_counts_after_a_write(url, write, tmp_path, flush=lambda: None) -> tuple[int, int, bool]:
    """Profile owners and pets, write to pets, profile again with the same cache folder: the
    rows seen before and after, and whether owners' cache entry was reused."""
    from vouchsql.db.profile import cache_file

    flush()  # the fixture's writes reported too
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        before = db.profile_for(["pets"]).table("pets").row_count
        owners_entry = cache_file(db, "owners")
    write()
    flush()
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        after = db.profile_for(["pets"]).table("pets").row_count
        same_owners = cache_file(db, "owners") == owners_entry
    return before, after, same_owners


def test_postgres_a_write_to_one_table_remeasures_that_table(pg, tmp_path):
    url, raw, schema = pg
    before, after, same_owners = _row_counts_after_a_write(
        url, lambda: raw.execute(f"INSERT INTO {schema}.pets VALUES (201, 1, 3, 'x')"), tmp_path,
        # a session reports its counters when idle (up to 10 s later); asked, at once
        flush=lambda: (raw.execute("SELECT pg_stat_force_next_flush()"), time.sleep(0.3)))
    assert (before, after, same_owners) == (200, 201, True)


def test_mariadb_a_write_to_one_table_remeasures_that_table(mariadb, tmp_path):
    url, cur, name = mariadb
    before, after, same_owners = _row_counts_after_a_write(
        url, lambda: cur.execute(f"INSERT INTO {name}.pets VALUES (201, 1, 3, 'x')"), tmp_path)
    assert (before, after, same_owners) == (200, 201, True)

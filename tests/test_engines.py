"""connect() picks the engine from a path or URL, and every engine answers the same way:
SELECTs work, writes are refused by the engine itself, runaway queries stop, profile runs.

The PostgreSQL and MariaDB tests run against real servers at 127.0.0.1 (skipped with a
reason when unreachable); each creates its own uniquely named schema (a database, on
MariaDB) with a direct driver connection and drops it afterwards.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest

import vouchsql
from vouchsql.db.sqlite import SQLiteDatabase
from vouchsql.errors import ExecutionError, ReadOnlyViolation, UserInputError

try:
    import duckdb
except ImportError:
    duckdb = None

needs_duckdb = pytest.mark.skipif(duckdb is None, reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")



# -- SQLite ---------------------------------------------------------------------------------

def test_sqlite_file(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        assert isinstance(db, SQLiteDatabase)
        assert db.engine == "sqlite" and db.dialect == "sqlite"
        assert db.target == str(demo_db.resolve())
        assert "customers" in db.table_names()
        result = db.execute("SELECT COUNT(*) AS n FROM customers")
        assert result.columns == ["n"] and result.rows == [[1200]]


def test_sqlite_file_any_suffix(demo_db, tmp_path):
    path = tmp_path / "data.bin"
    shutil.copyfile(demo_db, path)
    with vouchsql.connect(str(path), cache_dir=str(tmp_path)) as db:
        assert db.engine == "sqlite"
        assert db.execute("SELECT COUNT(*) FROM stores").error is None


def test_sqlite_url_absolute_and_relative(demo_db, tmp_path, monkeypatch):
    with vouchsql.connect(f"sqlite:///{demo_db.resolve().as_posix()}", cache_dir=str(tmp_path)) as db:
        assert isinstance(db, SQLiteDatabase) and db.target == str(demo_db.resolve())
        assert db.execute("SELECT COUNT(*) FROM customers").rows == [[1200]]
    shutil.copyfile(demo_db, tmp_path / "rel.sqlite")
    monkeypatch.chdir(tmp_path)
    with vouchsql.connect("sqlite:///rel.sqlite", cache_dir=str(tmp_path)) as db:
        assert isinstance(db, SQLiteDatabase)
        assert db.target == str((tmp_path / "rel.sqlite").resolve())


def test_chinook_through_every_path_form(chinook_path, tmp_path):
    expected = sqlite3.connect(f"file:{chinook_path}?mode=ro", uri=True).execute(
        "SELECT COUNT(*) FROM Track").fetchone()[0]
    for target in (chinook_path, str(chinook_path), f"sqlite:///{chinook_path.as_posix()}"):
        with vouchsql.connect(target, cache_dir=str(tmp_path)) as db:
            assert db.engine == "sqlite"
            assert db.execute("SELECT COUNT(*) FROM Track").rows == [[expected]]


def test_connect_passes_settings_through(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path), max_rows=3, timeout=2) as db:
        assert db.config.max_rows == 3 and db.config.timeout == 2.0
        result = db.execute("SELECT * FROM customers")
        assert result.row_count == 3 and result.truncated is True


@pytest.mark.parametrize("make,problem", [
    (lambda p: p / "missing.sqlite", "no such file"),
    (lambda p: (p / "notes.txt").write_text("hello\n") and p / "notes.txt", "not a SQLite database"),
    (lambda p: (p / "empty.sqlite").write_bytes(b"") or p / "empty.sqlite", "empty file"),
    (lambda p: (p / "nodata").mkdir() or p / "nodata", "no .csv"),
])
def test_bad_paths_are_user_errors(tmp_path, make, problem):
    target = make(tmp_path)
    with pytest.raises(UserInputError) as info:
        vouchsql.connect(target, cache_dir=str(tmp_path))
    assert problem in info.value.message
    assert info.value.exit_code == 2


def test_unknown_url_scheme_and_empty_target(tmp_path):
    with pytest.raises(UserInputError) as info:
        vouchsql.connect("foo://bar", cache_dir=str(tmp_path))
    assert "foo" in info.value.message
    with pytest.raises(UserInputError):
        vouchsql.connect("", cache_dir=str(tmp_path))


# -- DuckDB file ----------------------------------------------------------------------------

def _make_duckdb(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE owners (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("INSERT INTO owners SELECT i, 'o' || i FROM range(1, 51) t(i)")
    con.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES owners(id), "
                "age INTEGER, nick VARCHAR)")
    con.execute("INSERT INTO pets SELECT i, 1 + i % 25, CASE WHEN i % 10 = 0 THEN -1 ELSE i % 15 END, "
                "CASE WHEN i % 4 = 0 THEN NULL ELSE 'n' || i END FROM range(1, 201) t(i)")
    con.close()
    return path


@needs_duckdb
@pytest.mark.parametrize("name", ["pets.duckdb", "pets.db", "pets"])
def test_duckdb_file_detected(tmp_path, name):
    path = _make_duckdb(tmp_path / name)
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        assert db.engine == "duckdb" and db.dialect == "duckdb"
        assert db.table_names() == ["owners", "pets"]
        assert db.execute("SELECT COUNT(*) FROM pets WHERE nick IS NULL").rows == [[50]]


@needs_duckdb
def test_duckdb_url(tmp_path, monkeypatch):
    path = _make_duckdb(tmp_path / "pets.duckdb")
    with vouchsql.connect(f"duckdb:///{path.as_posix()}", cache_dir=str(tmp_path / "cache")) as db:
        assert db.engine == "duckdb" and db.target == str(path.resolve())
    monkeypatch.chdir(tmp_path)
    with vouchsql.connect("duckdb:///pets.duckdb", cache_dir=str(tmp_path / "cache")) as db:
        assert db.target == str(path.resolve())
        assert db.execute("SELECT COUNT(*) FROM owners").rows == [[50]]


@needs_duckdb
def test_duckdb_file_profile(tmp_path):
    path = _make_duckdb(tmp_path / "pets.duckdb")
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        profile = db.profile()
    pets = profile.table("pets")
    assert profile.engine == "duckdb"
    assert profile.table("owners").row_count == 50 and pets.row_count == 200
    assert pets.primary_key == ["id"]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in pets.foreign_keys] == [(["owner_id"], "owners", ["id"])]
    nick = pets.column("nick")
    assert nick.null_count == 50 and nick.distinct_count == 150
    age = pets.column("age")
    assert (age.min, age.max) == (-1, 14)
    assert [(s.value, s.count) for s in age.stand_ins] == [(-1, 20)]
    pair = profile.join_pair("pets", "owner_id", "owners", "id")
    assert pair is not None and pair.source == "declared"
    assert (pair.left_distinct, pair.right_distinct, pair.overlap) == (25, 50, 25)
    assert pair.rho == 1.0


# -- DuckDB over a folder of CSV / Parquet files --------------------------------------------

@pytest.fixture
def data_folder(tmp_path) -> Path:
    if duckdb is None:
        pytest.skip("DuckDB is not installed (pip install 'vouchsql[duckdb]')")
    folder = tmp_path / "data folder"
    folder.mkdir()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT i AS item_id, 'n' || i AS name FROM range(100) t(i)) "
                f"TO '{(folder / 'items.csv').as_posix()}' (HEADER)")
    con.execute(f"COPY (SELECT i AS sale_id, i % 100 AS item_id, "
                f"CASE WHEN i % 5 = 0 THEN NULL ELSE i * 1.5 END AS amount FROM range(1000) t(i)) "
                f"TO '{(folder / 'sales 2024.parquet').as_posix()}' (FORMAT parquet)")
    con.execute(f"COPY (SELECT i AS id, 'r' || i AS region FROM range(5) t(i)) "
                f"TO '{(folder / 'regions.tsv').as_posix()}' (HEADER, DELIMITER '\t')")
    con.execute(f"COPY (SELECT i AS id FROM range(7) t(i)) TO '{(folder / 'items.parquet').as_posix()}' (FORMAT parquet)")
    con.close()
    (folder / "README.txt").write_text("ignored\n")
    return folder


def test_folder_views_named_after_files(data_folder, tmp_path):
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        assert db.engine == "duckdb"
        assert sorted(db.table_names()) == ["items", "items_2", "regions", "sales_2024"]
        assert db.execute("SELECT COUNT(*) FROM items").rows == [[100]]
        assert db.execute("SELECT COUNT(*) FROM items_2").rows == [[7]]
        assert db.execute("SELECT COUNT(*), COUNT(amount) FROM sales_2024").rows == [[1000, 800]]
        assert db.execute("SELECT region FROM regions ORDER BY id LIMIT 1").rows == [["r0"]]
        joined = db.execute("SELECT COUNT(*) FROM sales_2024 s JOIN items i ON i.item_id = s.item_id")
        assert joined.rows == [[1000]]


def test_folder_profile(data_folder, tmp_path):
    with vouchsql.connect(str(data_folder), cache_dir=str(tmp_path / "cache")) as db:
        profile = db.profile()
    assert {t.name: t.row_count for t in profile.tables} == {
        "items": 100, "items_2": 7, "regions": 5, "sales_2024": 1000}
    assert all(t.error is None for t in profile.tables)
    amount = profile.column("sales_2024", "amount")
    assert amount.null_count == 200 and amount.distinct_count == 800
    assert profile.column("items", "item_id").distinct_count == 100


def test_folder_identity_follows_the_files(data_folder, tmp_path):
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        first = db.identity()
    (data_folder / "items.csv").write_text("item_id,name\n1,a\n")
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        assert db.identity() != first
        assert db.execute("SELECT COUNT(*) FROM items").rows == [[1]]


# -- real servers: PostgreSQL and MariaDB --------------------------------------------------

def _server_counts(cur_exec, schema: str) -> tuple:
    return tuple(cur_exec(f"SELECT COUNT(*) FROM {schema}.{t}") for t in ("owners", "pets"))


# (write SQL, what the server must say). Run with the gate bypassed.
PG_WRITES = [
    "INSERT INTO pets VALUES (1000, 1, 3, 'x')",
    "UPDATE pets SET age = 0",
    "DELETE FROM pets",
    "CREATE TABLE vouch_new (a INTEGER)",
    "CREATE TEMP TABLE vouch_tmp (a INTEGER)",
    "DROP TABLE pets",
    "TRUNCATE pets",
    "WITH d AS (DELETE FROM pets RETURNING *) SELECT * FROM d",
    "DO $$ BEGIN INSERT INTO pets VALUES (1001, 1, 3, 'x'); END $$",
    "COMMIT; INSERT INTO pets VALUES (1002, 1, 3, 'x')",
    "COMMIT; SET TRANSACTION READ WRITE; DELETE FROM pets",
    "SELECT 1; DELETE FROM pets",
]


def _check_server(db, count_now, counts_before, writes, sleep_sql):
    # SELECT works, with values.
    result = db.execute("SELECT COUNT(*) AS n, COUNT(nick) AS k, MIN(age) AS lo FROM pets")
    assert result.error is None
    assert [c.lower() for c in result.columns] == ["n", "k", "lo"]
    assert result.rows == [[200, 150, -1]]
    capped = db.execute("SELECT id FROM pets ORDER BY id", max_rows=10)
    assert capped.truncated is True and capped.rows == [[i] for i in range(1, 11)]
    # Writes: refused by the gate, and by the read-only transaction with the gate bypassed.
    for sql in writes:
        result = db.execute(sql)
        assert result.error is not None, sql
        with pytest.raises(ExecutionError):
            db._run(sql, 10, 5.0)
        assert count_now() == counts_before, f"{sql!r} changed the data"
    # The statement timeout.
    started = time.perf_counter()
    result = db.execute(sleep_sql, timeout=1)
    assert result.error is not None and result.error.kind == "timeout", result
    assert "1 s" in result.error.message
    assert time.perf_counter() - started < 4.5
    # Still usable afterwards.
    assert db.execute("SELECT COUNT(*) FROM owners").rows == [[50]]


def _check_server_profile(profile):
    assert {t.name: t.row_count for t in profile.tables} == {"owners": 50, "pets": 200}
    pets = profile.table("pets")
    assert pets.primary_key == ["id"]
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in pets.foreign_keys] == [(["owner_id"], "owners", ["id"])]
    assert pets.column("nick").null_count == 50 and pets.column("nick").distinct_count == 150
    assert pets.column("owner_id").distinct_count == 25
    assert [(s.value, s.count) for s in pets.column("age").stand_ins] == [(-1, 20)]
    pair = profile.join_pair("pets", "owner_id", "owners", "id")
    assert pair is not None and pair.source == "declared"
    assert (pair.left_distinct, pair.right_distinct, pair.overlap, pair.rho) == (25, 50, 25, 1.0)


def test_postgresql(pg, tmp_path):
    url, raw, schema = pg

    def counts():
        return _server_counts(lambda q: raw.execute(q).fetchone()[0], schema)

    before = counts()
    assert before == (50, 200)
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        assert db.engine == "postgresql" and db.dialect == "postgres"
        assert "password" not in db.target
        assert db.table_names() == ["owners", "pets"]
        with pytest.raises(ReadOnlyViolation):
            db._run("INSERT INTO pets VALUES (1000, 1, 3, 'x')", 10, 5.0)
        _check_server(db, counts, before, PG_WRITES, "SELECT pg_sleep(5)")
        _check_server_profile(db.profile())
    tables = raw.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                         "ORDER BY 1", (schema,)).fetchall()
    assert tables == [("owners",), ("pets",)]


MARIADB_WRITES = [
    "INSERT INTO pets VALUES (1000, 1, 3, 'x')",
    "UPDATE pets SET age = 0",
    "DELETE FROM pets",
    "CREATE TABLE vouch_new (a INT)",
    "CREATE TEMPORARY TABLE vouch_tmp (a INT)",
    "DROP TABLE pets",
    "TRUNCATE pets",
    "ALTER TABLE pets ADD COLUMN vouch INT",
    "RENAME TABLE pets TO vouch_pets",
    "COMMIT; DELETE FROM pets",
    "SELECT 1; DELETE FROM pets",
]


def test_mariadb(mariadb, tmp_path):
    url, cur, name = mariadb

    def counts():
        def one(q):
            cur.execute(q)
            return cur.fetchone()[0]
        return _server_counts(one, name)

    before = counts()
    assert before == (50, 200)
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        assert db.engine == "mysql" and db.dialect == "mysql"
        assert db.table_names() == ["owners", "pets"]
        with pytest.raises(ReadOnlyViolation):
            db._run("INSERT INTO pets VALUES (1000, 1, 3, 'x')", 10, 5.0)
        # DDL commits implicitly in MySQL/MariaDB: only a session-wide read-only mode stops it.
        with pytest.raises(ReadOnlyViolation):
            db._run("CREATE TABLE vouch_new (a INT)", 10, 5.0)
        _check_server(db, counts, before, MARIADB_WRITES, "SELECT SLEEP(5)")
        _check_server_profile(db.profile())
    cur.execute(f"SHOW TABLES FROM {name}")
    assert sorted(r[0] for r in cur.fetchall()) == ["owners", "pets"]


def test_mariadb_dialect_url_gets_the_time_limit(mariadb, tmp_path):
    # mariadb+pymysql:// names the dialect "mariadb", not "mysql": the session still has to
    # be read-only and time-limited.
    url, _, _ = mariadb
    with vouchsql.connect(url.replace("mysql+pymysql://", "mariadb+pymysql://"), cache_dir=str(tmp_path),
                          timeout=1) as db:
        assert db.engine == "mariadb"
        result = db.execute("SELECT SLEEP(5)")
        assert result.error is not None and result.error.kind == "timeout"
        with pytest.raises(ReadOnlyViolation):
            db._run("CREATE TABLE vouch_new (a INT)", 10, 5.0)


def test_unreachable_server_is_a_user_error(tmp_path):
    pytest.importorskip("psycopg")
    pytest.importorskip("sqlalchemy")
    with pytest.raises(UserInputError) as info:
        # Port 9 (discard) is essentially never a PostgreSQL server.
        vouchsql.connect("postgresql+psycopg://nobody@127.0.0.1:9/none?connect_timeout=2", cache_dir=str(tmp_path))
    assert "cannot connect" in info.value.message


def _identities(url: str, tmp_path) -> dict[str, str]:
    with vouchsql.connect(url, cache_dir=str(tmp_path)) as db:
        return {t.name: db.table_identity(t) for t in db.schema() if t.name in ("owners", "pets")}


@pytest.mark.parametrize("engine", ["pg", "mariadb"])
@pytest.mark.parametrize("at_once", [500, 0])
def test_a_server_table_identity_follows_its_own_writes(request, tmp_path, monkeypatch, engine, at_once):
    # at_once 0: the asked table's marks alone, as on a catalogue of more than 500 tables.
    from vouchsql.db import sqlalchemy as sa_db

    monkeypatch.setattr(sa_db, "MARKS_AT_ONCE", at_once)
    url, raw, name = request.getfixturevalue(engine)

    def flushed() -> None:  # the fixture's own inserts reach pg_stat_all_tables now, not within a second
        if engine == "pg":
            raw.execute("SELECT pg_stat_force_next_flush()")
            time.sleep(0.1)

    flushed()
    before = _identities(url, tmp_path)
    assert before == _identities(url, tmp_path) and before["owners"] != before["pets"]
    assert all("|" in v for v in before.values())  # each from the table's own marks
    # TRUNCATE gives the table new storage at once (PostgreSQL's relfilenode; MariaDB's create time
    # and length), with no wait for the statistics collector.
    if engine == "mariadb":
        time.sleep(1.1)  # CREATE_TIME has one-second resolution
    raw.execute(f"TRUNCATE TABLE {name}.pets")
    flushed()
    after = _identities(url, tmp_path)
    assert after["owners"] == before["owners"] and after["pets"] != before["pets"]


@pytest.mark.parametrize("scheme", ["postgres://", "postgres+psycopg://"])
def test_the_postgres_spelling_of_the_url_is_postgresql(pg, tmp_path, scheme):
    # libpq and Heroku write postgres://; SQLAlchemy knows only postgresql
    url, _, _ = pg
    with vouchsql.connect(scheme + url.split("://", 1)[1], cache_dir=str(tmp_path)) as db:
        assert db.engine == "postgresql"
        assert db.execute("SELECT COUNT(*) FROM owners").rows == [[50]]

"""Vouch never changes a database and never runs away.

Every write is tried twice: through ``db.execute`` (the statement gate refuses it with a
Result error) and straight at the engine with ``db._run`` (bypassing the gate), which must
still raise. Either way the database file stays byte-identical. Runaway queries stop at
the time limit and large results stop at the row cap.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from pathlib import Path

import pytest

try:
    import duckdb
except ImportError:  # the [duckdb] extra is optional
    duckdb = None

import vouchsql
from vouchsql.errors import ExecutionError, QueryTimeout, ReadOnlyViolation, VouchError

# Kinds a refused statement may carry in Result.error.
REFUSED_KINDS = {"not_select", "multiple_statements", "parse", "empty", "rejected", "read_only", "execution"}


def listing(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its sha256: new files (journals, ATTACH targets,
    VACUUM INTO copies, COPY outputs) show up as well as changed ones."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# -- SQLite --------------------------------------------------------------------------------

# (sql template, exception the engine raises when the gate is bypassed). {t} is a table,
# {c} one of its text columns, {tmp} the folder that holds the database copy.
SQLITE_WRITES = [
    ("INSERT INTO {t} ({c}) VALUES ('vouch')", ReadOnlyViolation),
    ("UPDATE {t} SET {c} = 'vouch'", ReadOnlyViolation),
    ("DELETE FROM {t}", ReadOnlyViolation),
    ("DROP TABLE {t}", ReadOnlyViolation),
    ("CREATE TABLE vouch_new (a INTEGER)", ReadOnlyViolation),
    ("CREATE TEMP TABLE vouch_tmp AS SELECT 1 AS a", ReadOnlyViolation),
    ("CREATE INDEX vouch_idx ON {t} ({c})", ReadOnlyViolation),
    ("ALTER TABLE {t} RENAME TO vouch_renamed", ReadOnlyViolation),
    ("REPLACE INTO {t} ({c}) VALUES ('vouch')", ReadOnlyViolation),
    ("INSERT OR REPLACE INTO {t} ({c}) VALUES ('vouch')", ReadOnlyViolation),
    ("SELECT 1; DELETE FROM {t}", ExecutionError),
    ("SELECT * FROM {t}; DROP TABLE {t}", ExecutionError),
    ("DELETE FROM {t}; SELECT 1", ReadOnlyViolation),
    ("ATTACH DATABASE '{tmp}/other.sqlite' AS other", ReadOnlyViolation),
    ("PRAGMA writable_schema = ON", ReadOnlyViolation),
    ("PRAGMA journal_mode = WAL", ReadOnlyViolation),
    ("PRAGMA user_version = 7", ReadOnlyViolation),
    ("SELECT load_extension('{tmp}/no_such_extension')", ReadOnlyViolation),
    ("VACUUM INTO '{tmp}/vacuumed.sqlite'", ReadOnlyViolation),
    ("VACUUM", ReadOnlyViolation),
    ("REINDEX", ReadOnlyViolation),
    ("ANALYZE", ReadOnlyViolation),
    ("BEGIN IMMEDIATE", ReadOnlyViolation),
    ("/* only a comment first */ DELETE FROM {t}", ReadOnlyViolation),
    ("-- a line comment\nDROP TABLE {t}", ReadOnlyViolation),
    ("WITH x AS (SELECT 1) DELETE FROM {t}", ReadOnlyViolation),
    ("WITH x AS (SELECT 1) INSERT INTO {t} ({c}) SELECT 'vouch' FROM x", ReadOnlyViolation),
    ("WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d", ExecutionError),
    ("  dElEtE\n\t FrOm   {t}   ;  ", ReadOnlyViolation),
    ("insert\ninto {t} ({c})\nvalues ('vouch')", ReadOnlyViolation),
    ("\n\n   DrOp    TaBlE\t{t}", ReadOnlyViolation),
]


@pytest.fixture(params=["chinook", "demo"])
def sqlite_copy(request, tmp_path, demo_db):
    """A copy of a SQLite database in its own folder: (path, table, text column)."""
    if request.param == "chinook":
        source = request.getfixturevalue("chinook_path")
        table, column = "Artist", "Name"
    else:
        source, table, column = demo_db, "tags", "name"
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / source.name
    shutil.copyfile(source, path)
    return path, table, column


def _fill(template: str, table: str, column: str, folder: Path) -> str:
    return template.format(t=table, c=column, tmp=folder.as_posix())


@pytest.mark.parametrize("template,engine_error", SQLITE_WRITES, ids=[w[0][:40] for w in SQLITE_WRITES])
def test_sqlite_write_refused_by_gate_and_engine(sqlite_copy, tmp_path, template, engine_error):
    path, table, column = sqlite_copy
    folder = path.parent
    sql = _fill(template, table, column, folder)
    before = listing(folder)
    with vouchsql.connect(path, cache_dir=str(tmp_path / "cache")) as db:
        rows_before = db.execute(f"SELECT COUNT(*) FROM {table}").rows
        # Layer 1: the gate (or, for load_extension, the authorizer) refuses with a Result.
        result = db.execute(sql)
        assert result.error is not None, f"{sql!r} was not refused"
        assert result.error.kind in REFUSED_KINDS
        assert result.error.message and "\n" not in result.error.message
        assert result.rows == [] and result.row_count == 0
        # Layer 2: the engine alone, gate bypassed: mode=ro and the authorizer still refuse.
        with pytest.raises(engine_error) as info:
            db._run(sql, 10, 5.0)
        assert isinstance(info.value, VouchError)
        assert info.value.message
        # The connection is still usable and sees unchanged data.
        assert db.execute(f"SELECT COUNT(*) FROM {table}").rows == rows_before
    assert listing(folder) == before, f"{sql!r} changed or created a file"


def test_sqlite_gate_names_the_statement(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        cases = {
            "DELETE FROM customers": ("not_select", "DELETE"),
            "  uPdAtE customers SET age = 1": ("not_select", "UPDATE"),
            "DROP TABLE customers": ("not_select", "DROP"),
            "SELECT 1; SELECT 2": ("multiple_statements", "2 statements"),
            "ATTACH DATABASE 'x.db' AS x": ("not_select", "ATTACH"),
            "PRAGMA writable_schema = ON": ("not_select", "PRAGMA"),
            "REINDEX": ("not_select", "REINDEX"),
            "VACUUM INTO 'x.db'": ("not_select", "VACUUM"),
        }
        for sql, (kind, word) in cases.items():
            err = db.execute(sql).error
            assert err is not None and err.kind == kind, sql
            assert word in err.message, (sql, err.message)
        err = db.execute("SELECT load_extension('x')").error
        assert err.kind == "read_only" and "load_extension" in err.message


def test_sqlite_reads_still_work_after_refusals(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        db.execute("DELETE FROM customers")
        with pytest.raises(ReadOnlyViolation):
            db._run("DELETE FROM customers", 10, 5.0)
        result = db.execute("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5) "
                            "SELECT COUNT(*) FROM r")
        assert result.error is None and result.rows == [[5]]
        assert db.execute("SELECT COUNT(*) FROM customers").rows == [[1200]]


# -- runaway queries (SQLite) ---------------------------------------------------------------

ENDLESS_CTE = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r"


def _assert_timed_out(result, started: float, limit: str = "1") -> None:
    elapsed = time.perf_counter() - started
    assert result.error is not None, "the runaway query was not stopped"
    assert result.error.kind == "timeout"
    assert re.search(rf"\b{re.escape(limit)} s\b", result.error.message), result.error.message
    assert result.rows == []
    assert elapsed < 5, f"took {elapsed:.1f} s to stop a query with a 1 s limit"


def test_endless_recursive_cte_stops_at_time_limit(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        started = time.perf_counter()
        result = db.execute(ENDLESS_CTE, timeout=1)
        _assert_timed_out(result, started)
        assert time.perf_counter() - started >= 0.9  # it really ran until the limit
        # The connection recovers: the next query runs normally.
        assert db.execute("SELECT COUNT(*) FROM customers").rows == [[1200]]


def test_cartesian_product_stops_at_time_limit(sakila_path, tmp_path):
    with vouchsql.connect(sakila_path, cache_dir=str(tmp_path)) as db:
        started = time.perf_counter()
        result = db.execute("SELECT COUNT(*) FROM rental, payment, film", timeout=1)
        _assert_timed_out(result, started)


def test_timeout_from_settings_and_fractional_limit(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path), timeout=0.5) as db:
        assert db.config.timeout == 0.5
        started = time.perf_counter()
        result = db.execute(ENDLESS_CTE)
        _assert_timed_out(result, started, limit="0.5")


def test_engine_layer_raises_query_timeout(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        with pytest.raises(QueryTimeout) as info:
            db._run(ENDLESS_CTE, 10, 0.5)
        assert info.value.kind == "timeout"


def test_row_cap_truncates_and_says_so(sakila_path, tmp_path):
    with vouchsql.connect(sakila_path, cache_dir=str(tmp_path)) as db:
        result = db.execute("SELECT * FROM rental", max_rows=10)
        assert result.error is None
        assert result.truncated is True
        assert result.row_count == 10 and len(result.rows) == 10
        # Exactly at the cap is not truncated.
        exact = db.execute("SELECT * FROM rental LIMIT 10", max_rows=10)
        assert exact.truncated is False and exact.row_count == 10


def test_row_cap_stops_an_endless_result(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path), max_rows=10) as db:
        started = time.perf_counter()
        result = db.execute("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r",
                            timeout=5)
        assert result.error is None
        assert result.truncated is True and result.row_count == 10
        assert result.rows == [[i] for i in range(1, 11)]
        assert time.perf_counter() - started < 2


# -- DuckDB file ----------------------------------------------------------------------------

needs_duckdb = pytest.mark.skipif(duckdb is None, reason="DuckDB is not installed (pip install 'vouchsql[duckdb]')")

DUCKDB_WRITES = [
    "INSERT INTO people VALUES (5000, 'vouch', 1)",
    "UPDATE people SET age = 0",
    "DELETE FROM people",
    "DROP TABLE people",
    "CREATE TABLE vouch_new (a INTEGER)",
    "CREATE VIEW vouch_view AS SELECT 1 AS a",
    "CREATE TEMP TABLE vouch_tmp AS SELECT 1 AS a",
    "ALTER TABLE people ADD COLUMN vouch INTEGER",
    "SELECT 1; DELETE FROM people",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "COPY people TO '{tmp}/people.csv'",
    "COPY (SELECT 1 AS a) TO '{tmp}/out.parquet' (FORMAT parquet)",
    "EXPORT DATABASE '{tmp}/export'",
    "CHECKPOINT",
    "SET enable_external_access = true",
    "LOAD httpfs",
    "/* hidden */ DELETE FROM people",
    "WITH x AS (SELECT 1) DELETE FROM people",
    "  iNsErT\n\tInTo people VALUES (5001, 'vouch', 2)",
]


@pytest.fixture
def duckdb_file(tmp_path) -> Path:
    folder = tmp_path / "duck"
    folder.mkdir()
    path = folder / "people.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name VARCHAR, age INTEGER)")
    con.execute("INSERT INTO people SELECT i, 'p' || i, i % 90 FROM range(1000) t(i)")
    con.close()
    return path


@needs_duckdb
@pytest.mark.parametrize("template", DUCKDB_WRITES, ids=[w[:40] for w in DUCKDB_WRITES])
def test_duckdb_file_write_refused(duckdb_file, tmp_path, template):
    folder = duckdb_file.parent
    sql = template.format(tmp=folder.as_posix())
    before = listing(folder)
    with vouchsql.connect(duckdb_file, cache_dir=str(tmp_path / "cache")) as db:
        assert db.engine == "duckdb"
        result = db.execute(sql)
        assert result.error is not None and result.error.kind in REFUSED_KINDS
        with pytest.raises(ExecutionError):
            db._run(sql, 10, 5.0)
        assert db.execute("SELECT COUNT(*) FROM people").rows == [[1000]]
    assert listing(folder) == before, f"{sql!r} changed or created a file"


@needs_duckdb
def test_duckdb_file_cannot_read_other_files(duckdb_file, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a,b\n1,2\n")
    with vouchsql.connect(duckdb_file, cache_dir=str(tmp_path / "cache")) as db:
        for sql in (f"SELECT * FROM read_csv('{secret.as_posix()}')",
                    f"SELECT * FROM read_text('{secret.as_posix()}')",
                    f"SELECT * FROM glob('{tmp_path.as_posix()}/*')"):
            result = db.execute(sql)
            assert result.error is not None and result.rows == [], sql
            with pytest.raises(ExecutionError):
                db._run(sql, 10, 5.0)


@needs_duckdb
def test_duckdb_runaway_queries_stop(duckdb_file, tmp_path):
    with vouchsql.connect(duckdb_file, cache_dir=str(tmp_path / "cache")) as db:
        started = time.perf_counter()
        _assert_timed_out(db.execute(ENDLESS_CTE, timeout=1), started)
        started = time.perf_counter()
        cross = ("SELECT COUNT(*) FROM people a, people b, people c, people d "
                 "WHERE hash(a.id, b.id, c.id, d.id) = 42")
        _assert_timed_out(db.execute(cross, timeout=1), started)
        capped = db.execute("SELECT * FROM people", max_rows=10)
        assert capped.truncated is True and capped.row_count == 10
        # Still usable after the interrupts.
        assert db.execute("SELECT COUNT(*) FROM people").rows == [[1000]]


# -- DuckDB over a folder of CSV and Parquet files -----------------------------------------

@pytest.fixture
def data_folder(tmp_path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    con = duckdb.connect()
    con.execute(f"COPY (SELECT i AS id, 'n' || i AS name FROM range(100) t(i)) "
                f"TO '{(folder / 'items.csv').as_posix()}' (HEADER)")
    con.execute(f"COPY (SELECT i AS id, i % 100 AS item_id, i * 1.5 AS amount FROM range(1000) t(i)) "
                f"TO '{(folder / 'sales.parquet').as_posix()}' (FORMAT parquet)")
    con.close()
    (folder / "notes.txt").write_text("not a data file\n")
    return folder


FOLDER_WRITES = [
    "CREATE TABLE vouch_new (a INTEGER)",
    "CREATE VIEW vouch_view AS SELECT 1 AS a",
    "DROP VIEW items",
    "INSERT INTO items VALUES (1000, 'vouch')",
    "COPY items TO '{folder}/copy.csv'",
    "COPY (SELECT 1 AS x) TO '{folder}/items.csv' (USE_TMP_FILE false)",
    "COPY (SELECT 1 AS x) TO '{folder}/sales.parquet' (FORMAT parquet, USE_TMP_FILE false)",
    "COPY (SELECT 1 AS x) TO '{outside}/leak.csv'",
    "ATTACH '{folder}/new.duckdb' AS other",
    "EXPORT DATABASE '{folder}/export'",
    "SET enable_external_access = true",
    "SET allowed_paths = ['/']",
    "INSTALL httpfs",
    "SELECT 1; COPY items TO '{folder}/copy2.csv'",
]


@needs_duckdb
@pytest.mark.parametrize("template", FOLDER_WRITES, ids=[w[:40] for w in FOLDER_WRITES])
def test_folder_write_refused(data_folder, tmp_path, template):
    outside = tmp_path / "outside"
    outside.mkdir()
    sql = template.format(folder=data_folder.as_posix(), outside=outside.as_posix())
    before = listing(data_folder)
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        result = db.execute(sql)
        assert result.error is not None and result.error.kind in REFUSED_KINDS
        with pytest.raises(ExecutionError):
            db._run(sql, 10, 5.0)
        assert db.execute("SELECT COUNT(*) FROM items").rows == [[100]]
        assert db.execute("SELECT COUNT(*) FROM sales").rows == [[1000]]
    assert listing(data_folder) == before, f"{sql!r} changed or created a file"
    assert list(outside.iterdir()) == []


@needs_duckdb
def test_folder_engine_reads_only_its_data_files(data_folder, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a,b\n1,2\n")
    targets = [f"read_csv('{secret.as_posix()}')",
               f"read_text('{(data_folder / 'notes.txt').as_posix()}')",
               f"glob('{data_folder.as_posix()}/*')"]
    if os.path.exists("/etc/passwd"):
        targets.append("read_csv('/etc/passwd')")
    before = listing(data_folder)
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        for target in targets:
            sql = f"SELECT * FROM {target}"
            result = db.execute(sql)
            assert result.error is not None and result.rows == [], sql
            with pytest.raises(ExecutionError):
                db._run(sql, 10, 5.0)
        # The data files themselves stay readable through their views.
        assert db.execute("SELECT SUM(id) FROM items").rows == [[sum(range(100))]]
    assert listing(data_folder) == before


@needs_duckdb
def test_folder_runaway_query_stops(data_folder, tmp_path):
    with vouchsql.connect(data_folder, cache_dir=str(tmp_path / "cache")) as db:
        started = time.perf_counter()
        _assert_timed_out(db.execute("SELECT COUNT(*) FROM sales a, sales b, items c, items d "
                                     "WHERE hash(a.id, b.id, c.id, d.id) = 42", timeout=1),
                          started)

"""SQLite, the embedded default: read-only by construction.

Three independent layers keep the file unchanged: the connection is opened with a
``mode=ro`` URI, an authorizer denies every action that is not a read (writes, ATTACH and
DETACH, state-changing PRAGMAs, extension loading), and extension loading stays disabled.
A progress handler enforces the time limit; the fetch stops one row past the cap.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, UserInputError
from ..settings import Config
from .base import ColumnInfo, Database, Fetch, ForeignKeyInfo, TableInfo, fetch_bounded, timeout_message
from .shared import shared_schema

if TYPE_CHECKING:
    from sqlglot import exp

SQLITE_HEADER = b"SQLite format 3\x00"
# A number in [0, 1) that a multiplicative hash (Knuth's) of the integer i decides: where a
# systematic sample takes its row within each stretch, the same every time (integer
# arithmetic, exact on SQLite and MariaDB alike).
JITTER_SQL = "((i * 2654435761) % 4294967296) / 4294967296.0"

# PRAGMAs that only read the schema; every other PRAGMA (journal_mode, writable_schema,
# user_version=…, and so on) is denied even when it would only read. database_list is denied
# too: it tells a client of `vouch serve` the server-side path the server hides.
_READ_PRAGMAS = {
    "table_info", "table_xinfo", "table_list", "foreign_key_list", "index_list",
    "index_info", "index_xinfo", "collation_list", "function_list",
}
# Functions that reach outside the database or change the connection.
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}

# Below this, SQLite could not even hold the statement text or an ordinary group_concat.
_MIN_LENGTH_LIMIT = 1_000_000

_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    if action in _ALLOWED:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in ("sqlite_master", "sqlite_schema"):
        # SQLite asks this while it sets up a table-valued function (json_each, pragma_*).
        # IGNORE lets the read go on and leaves the column unchanged: still no write, and the
        # catalogue cannot be modified in any case.
        return sqlite3.SQLITE_IGNORE
    return sqlite3.SQLITE_DENY


def check_sqlite_file(path: Path) -> None:
    """Raise UserInputError unless ``path`` is a readable, non-empty SQLite file."""
    if not path.exists():
        raise UserInputError(f"{path}: no such file; give the path of a SQLite file, a DuckDB file, a folder of CSV/Parquet files, or a database URL")
    if path.is_dir():
        raise UserInputError(f"{path} is a folder, not a database file")
    size = path.stat().st_size
    if size == 0:
        raise UserInputError(f"{path} is an empty file, not a SQLite database")
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read ({exc.strerror})") from None
    if head != SQLITE_HEADER:
        raise UserInputError(f"{path} is not a SQLite database (its header does not start with 'SQLite format 3')")


class SQLiteDatabase(Database):
    engine = "sqlite"
    dialect = "sqlite"
    default_schema = "main"  # the file itself; attached databases are refused

    def __init__(self, path: str | os.PathLike[str], config: Config) -> None:
        self.path = Path(path).expanduser().resolve()
        check_sqlite_file(self.path)
        super().__init__(str(self.path), config)
        uri = "file:" + urllib.parse.quote(str(self.path)) + "?mode=ro"
        try:
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise UserInputError(f"{self.path}: cannot open as SQLite ({exc})") from None
        if hasattr(self._conn, "enable_load_extension"):  # absent when Python's SQLite lacks it
            self._conn.enable_load_extension(False)
        self._conn.set_authorizer(_authorizer)
        self._schema: list[TableInfo] | None = None
        self._column_names: frozenset[str] | None = None

    def close(self) -> None:
        self._conn.close()

    def _interrupt(self) -> None:
        self._conn.interrupt()

    def identity(self) -> str:
        st = self.path.stat()
        return f"sqlite:{self.path}:{st.st_size}:{st.st_mtime_ns}"

    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        max_bytes = self.config.max_result_bytes if max_bytes is None else max_bytes
        deadline = time.monotonic() + timeout
        # Called every N virtual-machine steps; a non-zero return interrupts the query. N is
        # small because a step can be slow: hex(randomblob(2000000)) takes ~30 ms a row, so
        # 10,000 steps (~700 such rows) ran 13 s past a 1 s limit.
        # cancel() from another thread stops it the same way, whenever it comes.
        self._conn.set_progress_handler(
            lambda: int(time.monotonic() > deadline or getattr(self, "_cancelled", False)), 1_000)
        # SQLite builds a whole string or blob in one step, which no progress handler can
        # interrupt (zeroblob(400000000) ran 8.5 s past a 3 s limit and took 1.6 GB), so the
        # largest value it may build is bounded too, at the byte cap.
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(_MIN_LENGTH_LIMIT, max_bytes))
        cur = self._conn.cursor()
        try:
            cur.execute(sql)
            columns = [d[0] for d in cur.description or []]
            rows, truncated = fetch_bounded(cur.fetchmany, max_rows, max_bytes, deadline)
        except QueryTimeout:
            raise self._stopped(timeout) from None
        except sqlite3.OperationalError as exc:
            err = _translate(exc, time.monotonic() > deadline, timeout)
            # an interrupt is this query's time limit, or cancel() of the call it belongs to
            raise (self._stopped(timeout) if isinstance(err, QueryTimeout) else err) from None
        except sqlite3.DataError as exc:
            raise _translate(exc, False, timeout, max_bytes) from None
        except sqlite3.DatabaseError as exc:
            # The authorizer's denials arrive as a plain DatabaseError ("not authorized").
            raise _translate(exc, False, timeout) from None
        except sqlite3.Warning as exc:
            raise ExecutionError(f"SQLite refused the query: {exc}") from None
        finally:
            cur.close()
            self._conn.set_progress_handler(None, 0)
        return Fetch(columns, rows, truncated)

    def sample_method(self, table: str, total: int, schema: str | None = None) -> str:
        return "rowid lookups" if self._has_rowid(table) else "first rows"

    def sample_source(self, table: str, n: int, total: int, schema: str | None = None) -> str:
        # Evenly spaced rowids through an index lookup: a deterministic systematic sample
        # that costs n lookups rather than a scan. WITHOUT ROWID tables and views fall back
        # to the first n rows.
        if not self._has_rowid(table):
            return super().sample_source(table, n, total, schema)
        q = self.table_sql(table, schema)
        # Two scalar subqueries: SQLite answers a lone min() or max() from the b-tree's ends,
        # but scans the whole table for both in one SELECT.
        lo, hi = self._conn.execute(f"SELECT (SELECT min(rowid) FROM {q}), (SELECT max(rowid) FROM {q})").fetchone()
        if lo is None:
            return super().sample_source(table, n, total, schema)
        step = max(1.0, (hi - lo + 1) / n)
        # One rowid from each of n equal stretches, at a place within it that a hash of the
        # stretch's number decides: the plain i * step of before took every 6th row of a
        # 3,000-row table and so missed a code held by every 100th row entirely.
        return (f"(SELECT * FROM {q} WHERE rowid IN ("
                f"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < {int(n)}) "
                f"SELECT {int(lo)} + CAST((i + {JITTER_SQL}) * {step!r} AS INTEGER) FROM s))")

    def as_engine_reads(self, tree: exp.Expression, sql: str) -> exp.Expression:
        """SQLite reads a double-quoted name that is no column as a string (its documented
        fallback, which Spider-style SQL relies on: ``WHERE country = "France"``); the parser
        reads an identifier. Such names become string literals here, so the checks that read
        literals see ``'France'``. Conservative: a name that is a column of any table, or an
        alias of the query, stays a name; so do `backticked` and [bracketed] names, which
        never fall back."""
        from sqlglot import exp

        if '"' not in sql:
            return tree
        if self._column_names is None:  # the catalogue's, read once per connection
            self._column_names = frozenset(c.name.lower() for t in self.schema() for c in t.columns)
        names = set(self._column_names)
        names |= {a.alias.lower() for a in tree.find_all(exp.Alias)}
        names |= {c.name.lower() for ta in tree.find_all(exp.TableAlias) for c in ta.columns}  # WITH t("a") AS …
        for col in list(tree.find_all(exp.Column)):
            ident = col.this
            if (col.table or not isinstance(ident, exp.Identifier) or not ident.quoted
                    or ident.name.lower() in names or f'"{ident.name}"' not in sql):
                continue
            col.replace(exp.Literal.string(ident.name))
        return tree

    def _has_rowid(self, table: str) -> bool:
        info = {t.name: t for t in self.schema()}.get(table)
        if info is None or info.is_view:
            return False
        try:
            self._conn.execute(f"SELECT rowid FROM {self.quote(table)} LIMIT 1").fetchall()
            return True
        except sqlite3.DatabaseError:
            return False

    def schema(self) -> list[TableInfo]:
        # Every connection of the process to the unchanged file shares one catalogue (see
        # db/shared.py): a server opening a connection per request reads it once.
        if self._schema is None:
            self._schema = shared_schema(self.identity(), self._read_schema)
        return self._schema

    def _read_schema(self) -> list[TableInfo]:
        rows = self._conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
        try:
            found = self._catalogue()
        except sqlite3.DatabaseError:
            # A view over a dropped table makes the one-statement read fail: read the
            # tables one by one, so the others are still listed.
            found = None
        tables: list[TableInfo] = []
        for name, kind in rows:
            if found is not None:
                cols, fk_rows = found[0].get(name, []), found[1].get(name, [])
            else:
                # The PRAGMA statement form, one table at a time.
                try:
                    cols = self._pragma("table_info", name)  # cid, name, type, notnull, default, pk
                    fk_rows = self._pragma("foreign_key_list", name)
                except sqlite3.DatabaseError:
                    # A view over a dropped table: listed without columns; profiling it then
                    # records the error instead of failing the whole schema.
                    tables.append(TableInfo(name, [], is_view=(kind == "view")))
                    continue
            columns = [ColumnInfo(c[1], c[2] or "", not c[3]) for c in cols]
            pk = [c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5])]
            fks: dict[int, ForeignKeyInfo] = {}
            # id, seq, table, from, to, …
            for fk in sorted(fk_rows, key=lambda r: (r[0], r[1])):
                entry = fks.setdefault(fk[0], ForeignKeyInfo([], fk[2], []))
                entry.columns.append(fk[3])
                entry.ref_columns.append(fk[4])
            for entry in fks.values():
                if any(c is None for c in entry.ref_columns):  # REFERENCES t without columns: its PK
                    entry.ref_columns = self._primary_key(entry.ref_table) or entry.ref_columns
            tables.append(TableInfo(name, columns, pk, list(fks.values()), is_view=(kind == "view")))
        return tables

    def _catalogue(self) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
        """Every table's columns and foreign keys in two statements, through the pragma_*
        table-valued functions: two PRAGMAs per table cost 4.5 s on 20,000 tables, these
        0.5 s CPU (foreign keys read only where declared). (The authorizer lets the
        functions' set-up read go on; see _authorizer.)"""
        cols: dict[str, list[tuple[Any, ...]]] = {}
        # Each row as PRAGMA table_info gives it, the table's name after it (a row is kept
        # as it comes: 140,000 of them).
        for row in self._conn.execute(
                "SELECT p.cid, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk, m.name "
                "FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p "
                "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid"):
            cols.setdefault(row[6], []).append(row)
        fks: dict[str, list[tuple[Any, ...]]] = {}
        # A foreign key is declared with REFERENCES in the table's CREATE statement (ALTER
        # TABLE … ADD COLUMN rewrites that statement too), so only such tables are asked.
        for name, *row in self._conn.execute(
                "SELECT m.name, f.id, f.seq, f.\"table\", f.\"from\", f.\"to\" "
                "FROM sqlite_master AS m JOIN pragma_foreign_key_list(m.name) AS f "
                "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.sql LIKE '%REFERENCES%'"):
            fks.setdefault(name, []).append(tuple(row))
        return cols, fks

    def _primary_key(self, table: str) -> list[str]:
        cols = self._pragma("table_info", table)
        return [c[1] for c in sorted((c for c in cols if c[5]), key=lambda c: c[5])]

    def _pragma(self, pragma: str, table: str) -> list[tuple[Any, ...]]:
        # Only schema-reading pragmas from _READ_PRAGMAS get here; the name is quoted.
        return self._conn.execute(f"PRAGMA {pragma}({self.quote(table)})").fetchall()


def _translate(exc: sqlite3.DatabaseError, timed_out: bool, timeout: float,
               max_bytes: int | None = None) -> Exception:
    text = str(exc)
    if timed_out or text == "interrupted":
        return QueryTimeout(timeout_message(timeout))
    if "too big" in text:
        limit = f"{max_bytes:,} bytes" if max_bytes else "the byte cap"
        return ExecutionError(f"SQLite stopped the query: it built a value larger than max_result_bytes "
                              f"({limit}); select less, or raise --max-result-bytes / VOUCH_MAX_RESULT_BYTES")
    if ("not authorized" in text or "authorization denied" in text
            or "readonly" in text.replace("-", "") or "read-only" in text):
        return ReadOnlyViolation(f"SQLite refused: {text} (Vouch opens databases read-only)")
    return ExecutionError(f"SQLite error: {text}")

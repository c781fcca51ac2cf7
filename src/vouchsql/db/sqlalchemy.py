"""Any SQLAlchemy URL (optional extra ``[sqlalchemy]``, or ``[postgres]`` / ``[mysql]`` with
a driver). Every query runs inside a transaction that is read-only where the dialect can
say so, with a statement timeout where the dialect supports one, and is always rolled back.
Before that, :mod:`.policy` refuses what a read-only transaction does not cover (functions
with side effects, executable comments), judged from the server's own catalogue; rows are
streamed so that the row and byte caps stop the fetch, not only trim its result.
"""

from __future__ import annotations

import hashlib
import logging
import itertools
import os
import re
import socket
import threading
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, UntrustedCode, UserInputError, VouchError
from ..settings import Config
from ..sql.gate import SQLGLOT_DIALECTS
from .base import ColumnInfo, Database, Fetch, ForeignKeyInfo, TableInfo, fetch_bounded
from .shared import shared_schema
from .sqlite import JITTER_SQL
from .policy import (MYSQL_CATALOGUE_SQL, MYSQL_UDF_SQL, MYSQL_VIEWS_SQL, PG_CATALOGUE_SQL,
                     PG_OPERATORS_SQL, PG_VIEWS_SQL, MySQLPolicy, PostgresPolicy, pg_bodies_sql)

if TYPE_CHECKING:  # sqlalchemy is imported only when a URL is opened
    from sqlalchemy.engine import URL, Connection, CursorResult, Engine, Inspector
    from sqlalchemy.engine.default import StrCompileDialect
    from sqlalchemy.engine.interfaces import ReflectedForeignKeyConstraint
    from sqlalchemy.exc import ResourceClosedError
    from sqlalchemy.types import TypeEngine

    from .privileges import RolePowers
    from .stats import TableStatistics
    from .trust import TrustReport

log = logging.getLogger("vouchsql.db")
CANCEL_TRIES, CANCEL_EVERY_S = 40, 0.05  # cancel() keeps asking the server for 2 s, then cuts


def _import_sqlalchemy() -> ModuleType:
    try:
        import sqlalchemy
    except ImportError:
        raise UserInputError(
            "database URLs need the sqlalchemy extra: pip install 'vouchsql[postgres]' "
            "(or [mysql], or [sqlalchemy] plus your driver)") from None
    return sqlalchemy


_DRIVER_HINTS = {
    "postgresql": "pip install 'vouchsql[postgres]' and use postgresql+psycopg://…",
    "mysql": "pip install 'vouchsql[mysql]' and use mysql+pymysql://…",
    "mariadb": "pip install 'vouchsql[mysql]' and use mariadb+pymysql://…",
}


# Schemas of the engine itself, never the user's data (``*`` leaves them out).
_SYSTEM_SCHEMAS = {"information_schema", "pg_catalog", "pg_toast", "mysql", "performance_schema", "sys"}


class SQLAlchemyDatabase(Database):
    engine = "sqlalchemy"
    _trust: TrustReport  # trust_report(), once read

    def __init__(self, url: str, config: Config) -> None:
        sa = _import_sqlalchemy()
        self._sa = sa
        try:
            self._url: URL = sa.engine.make_url(url)
            _ = self._url.port  # a malformed host or port ('[::1:5432') raises only when read
        except (sa.exc.ArgumentError, ValueError) as exc:
            raise UserInputError(f"{url[:200]!r} is not a database URL ({_first_line(exc)}): write it as "
                                 "dialect+driver://user@host:port/database") from None
        if self._url.host and len(self._url.host) > 253:
            raise UserInputError(f"the host in the database URL is {len(self._url.host):,} characters long; a host "
                                 "name has at most 253")
        backend, plus, driver = self._url.drivername.partition("+")
        if backend == "postgres":
            # The libpq and Heroku spelling, which SQLAlchemy no longer takes as a name.
            self._url = self._url.set(drivername="postgresql" + plus + driver)
        try:
            self._engine: Engine = sa.create_engine(self._url, pool_pre_ping=True)
        except sa.exc.NoSuchModuleError:
            raise UserInputError(
                f"unknown URL scheme {self._url.drivername!r}: give a SQLite/DuckDB file path, a folder "
                f"of CSV/Parquet files, or a SQLAlchemy URL such as postgresql://user@host/db") from None
        except ImportError as exc:
            raise UserInputError(f"the driver for {self._url.drivername!r} is not installed ({exc.name}); "
                                 f"{_DRIVER_HINTS.get(self._url.get_backend_name(), 'install the driver for this URL')}"
                                 ) from None
        name = self._engine.dialect.name
        self.engine = name
        self.dialect = SQLGLOT_DIALECTS.get(name, name)
        super().__init__(self._url.render_as_string(hide_password=True), config)
        self._policy_cache: PostgresPolicy | MySQLPolicy | None = None
        self._pg_type_lengths: dict[int, int] = {}  # type oid → typlen (-1: variable length)
        self._reader_role: list[str] = []
        try:
            with self._engine.connect() as conn:
                self._is_mariadb = name == "mariadb" or name == "mysql" and "mariadb" in str(
                    conn.exec_driver_sql("SELECT VERSION()").scalar()).lower()
                if self._is_postgres:
                    self._reader_role = _pg_reader_role(conn)
                conn.rollback()
        except VouchError:
            raise
        except Exception as exc:  # noqa: BLE001 - every driver fails its own way (a bad charset, an
            # unresolvable host, a refused socket): each is the URL's to fix, named, never a traceback
            self._engine.dispose()
            raise UserInputError(f"cannot connect to {self.target}: {type(exc).__name__}: {_first_line(exc)}") from None
        self._schema: list[TableInfo] | None = None
        report = self.trust_report()
        if report is not None and report.untrusted:
            self._engine.dispose()
            raise UntrustedCode(report.refusal(self.target))

    def close(self) -> None:
        self._engine.dispose()

    def _interrupt(self) -> None:
        # Stop the running statement on the server itself — PostgreSQL's cancel request,
        # MariaDB's KILL QUERY from a second session — so the driver call returns only once the
        # server has stopped it (a slot freed then is free on the server too). A cancel that
        # reaches the server between two statements stops nothing, so it is sent again while
        # the statement runs; past CANCEL_TRIES the connection is cut as the time limit would.
        if getattr(self, "_active_watchdog", None) is None:
            return  # no statement yet: the next one refuses to start (_refuse_if_cancelled)
        threading.Thread(target=self._keep_cancelling, daemon=True, name="vouch-cancel").start()

    def _keep_cancelling(self) -> None:
        for _ in range(CANCEL_TRIES):
            watchdog = getattr(self, "_active_watchdog", None)
            if watchdog is None:
                return
            try:
                driver = watchdog._driver
                if self._is_postgres:
                    driver.cancel()  # the protocol's CancelRequest: the session's own key, no role
                elif hasattr(driver, "thread_id"):
                    with self._engine.connect() as other:
                        other.exec_driver_sql(f"KILL QUERY {int(driver.thread_id())}")
                else:
                    break
            except Exception:  # noqa: BLE001 - the cut below ends the call either way
                log.debug("could not cancel the statement on %s", self.target, exc_info=True)
                break
            time.sleep(CANCEL_EVERY_S)
        watchdog = getattr(self, "_active_watchdog", None)
        if watchdog is not None:
            watchdog.cancel()
            watchdog._sever()

    def identity(self) -> str:
        # Read once per connection: the schema is, and a 20,000-table shape is hashed once.
        if "_identity" not in self.__dict__:
            shape = "|".join(f"{t.qualified}:{','.join(c.name + ' ' + c.type for c in t.columns)}"
                             for t in self.schema())
            self._identity = f"{self.target}#{hashlib.sha256(shape.encode()).hexdigest()[:16]}"
        return self._identity

    def table_identity(self, info: TableInfo) -> str:
        """One table's identity from the server's own bookkeeping, so a write to one table
        re-measures that table only (and a write is noticed at all: the database identity
        follows the schema's shape alone). PostgreSQL: the table's storage file and its
        cumulative insert/update/delete counters (pg_stat_all_tables, reported by the server
        within about a second of a commit); MariaDB/MySQL: information_schema.TABLES' create
        and update times, row estimate and data length. A view, whose rows are its base
        tables', and an engine without such figures keep the database's identity."""
        if info.is_view:
            return self.identity()
        mark = self._table_mark(info.schema or self.default_schema or "", info.name)
        return f"{self.identity()}|{mark}" if mark is not None else self.identity()

    def _table_mark(self, schema: str, name: str) -> str | None:
        """One table's change marks: for a catalogue of at most MARKS_AT_ONCE tables, every
        table's in one query per connection; for a larger one, the asked table's alone, by
        its exact names (a check measures a handful of tables, and on 20,000 the query for
        all of them took 0.7 s, mostly pg_relation_size of each)."""
        marks: dict[tuple[str, str], str | None] = self.__dict__.setdefault("_marks", {})
        key = (schema.lower(), name.lower())
        if key in marks:
            return marks[key]
        if len(self.schema()) <= MARKS_AT_ONCE:
            if not self.__dict__.get("_all_marks"):
                marks.update(self._read_marks(None))
                self._all_marks = True
            return marks.get(key)
        marks[key] = self._read_marks((schema, name)).get(key)
        return marks[key]

    def _read_marks(self, one: tuple[str, str] | None) -> dict[tuple[str, str], str]:
        if self._is_postgres:
            # analyze counts too: after ANALYZE the profile reads pg_stats instead of a sample.
            # The counters by the functions behind pg_stat_all_tables, so one table's query
            # does not compute the view for every table.
            sql = ("SELECT n.nspname, c.relname, c.relfilenode, pg_relation_size(c.oid), "
                   "pg_stat_get_tuples_inserted(c.oid), pg_stat_get_tuples_updated(c.oid), "
                   "pg_stat_get_tuples_deleted(c.oid), pg_stat_get_analyze_count(c.oid), "
                   "pg_stat_get_autoanalyze_count(c.oid) "
                   "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p', 'm', 'f')")
            where = " AND n.nspname = %s AND c.relname = %s"
            among = " AND n.nspname = ANY(%s)"  # psycopg sends a list as an array
        elif self.engine in ("mysql", "mariadb"):
            sql = ("SELECT TABLE_SCHEMA, TABLE_NAME, CREATE_TIME, UPDATE_TIME, TABLE_ROWS, DATA_LENGTH "
                   "FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'")
            where = " AND TABLE_SCHEMA = %s AND TABLE_NAME = %s"
            among = " AND TABLE_SCHEMA IN %s"  # PyMySQL writes a tuple as (a, b)
        else:
            return {}
        try:
            with self._engine.connect() as conn:
                if one:
                    rows = conn.exec_driver_sql(sql + where, one).fetchall()
                else:  # only the schemas read: a server's other schemas may hold thousands more
                    read = tuple(sorted({t.schema or self.default_schema or "" for t in self.schema()}))
                    arg = list(read) if self._is_postgres else read
                    rows = conn.exec_driver_sql(sql + among, (arg,)).fetchall() if read else []
                conn.rollback()
        except self._sa.exc.SQLAlchemyError:
            rows = []  # no access to the statistics: the database's identity serves
        return {(str(r[0]).lower(), str(r[1]).lower()): ":".join(map(str, r[2:])) for r in rows}

    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        sa = self._sa
        max_bytes = self.config.max_result_bytes if max_bytes is None else max_bytes
        self._check_policy(sql)
        start = time.monotonic()
        with self._engine.connect() as conn:
            stream = None
            watchdog = _Watchdog(conn.connection.driver_connection, timeout + _GRACE_S)
            self._active_watchdog: _Watchdog | None = watchdog  # what cancel() cuts, from another thread
            try:
                # Read after the watchdog is set, as cancel() sets its flag before it reads the
                # watchdog: a cancel in between is seen by one of the two.
                self._refuse_if_cancelled()
                for stmt in self._session_setup(timeout):
                    conn.exec_driver_sql(stmt)
                stream = self._stream(conn, sql, max_bytes)
                rows, truncated = fetch_bounded(stream.fetchmany, max_rows, max_bytes, start + timeout)
                columns = stream.columns()
                truncated = truncated or ("cell" if stream.cut else None)
                if truncated and not self._is_postgres:
                    # PyMySQL's unbuffered cursor would read every remaining row to close;
                    # dropping the connection stops the server instead.
                    stream.abandon(conn)
                    stream = None
            except sa.exc.ResourceClosedError:
                raise ExecutionError(f"{self.engine}: the statement returned no rows; "
                                     f"Vouch runs only SELECT queries") from None
            except (sa.exc.DBAPIError, self._engine.dialect.loaded_dbapi.Error, QueryTimeout) as exc:
                if watchdog.fired:
                    stream = None
                elif stream is not None and not self._is_postgres:
                    stream.abandon(conn)
                    stream = None
                raise self._translate(exc, watchdog.fired or time.monotonic() - start >= timeout,
                                      timeout) from None
            finally:
                self._active_watchdog = None
                watchdog.cancel()
                if watchdog.fired:
                    # The socket is cut: nothing more can be read or rolled back on it.
                    stream = None
                    if not conn.invalidated:
                        conn.invalidate()
                if stream is not None:
                    stream.close()
                if not conn.invalidated:
                    conn.rollback()
        return Fetch(columns, rows, truncated)

    @property
    def _is_postgres(self) -> bool:
        return self.engine == "postgresql"

    def _session_setup(self, timeout: float) -> list[str]:
        """Statements that make the current transaction read-only and time-limited, and on
        PostgreSQL drop a superuser's powers to reading for its duration."""
        ms = max(1, int(timeout * 1000))
        if self._is_postgres:
            setup = ["SET TRANSACTION READ ONLY", f"SET LOCAL statement_timeout = {ms}"]
            if self._reader_role:
                setup += self._reader_role
            return setup
        if self.engine in ("mysql", "mariadb"):
            # SESSION, not just the next transaction: DDL commits implicitly and would then run
            # in a fresh, writable transaction (CREATE TABLE got through with the plain form).
            # MariaDB takes seconds, MySQL milliseconds (SELECTs only); both are session-scoped.
            return ["SET SESSION TRANSACTION READ ONLY",
                    f"SET SESSION max_statement_time = {timeout:g}" if self._is_mariadb
                    else f"SET SESSION max_execution_time = {ms}"]
        return []

    def _translate(self, exc: Exception, past_limit: bool, timeout: float) -> VouchError:
        if getattr(self, "_cancelled", False):
            # cancel() stopped it (MariaDB's KILL QUERY reads "Query execution was interrupted")
            return self._stopped(timeout)
        text = "" if isinstance(exc, QueryTimeout) else _first_line(exc)
        low = text.lower()
        if isinstance(exc, QueryTimeout) or past_limit or "timeout" in low or "canceling statement" in low \
                or "max_statement_time" in low or "maximum statement execution time" in low:
            return self._stopped(timeout)
        if "read-only" in low or "read only" in low:
            return ReadOnlyViolation(f"{self.engine} refused: {text}")
        if "permission denied" in low or "must be superuser" in low or "access denied" in low:
            return ReadOnlyViolation(f"{self.engine} refused: {text} (Vouch reads with the fewest powers it can)")
        return ExecutionError(f"{self.engine} error: {text}")

    # -- the policy read from the server's catalogue ------------------------------------
    def _check_policy(self, sql: str) -> None:
        policy = self._policy()
        if isinstance(policy, PostgresPolicy) and policy.unknown_calls(sql):
            # A function created since the catalogue was read, or a typo: read it again once.
            self._policy_cache = None
            policy = self._policy()
        if policy is not None:
            policy.check(sql)

    def _policy(self) -> PostgresPolicy | MySQLPolicy | None:
        if self._policy_cache is None and self.engine in ("postgresql", "mysql", "mariadb"):
            with self._engine.connect() as conn:
                try:
                    if self._is_postgres:
                        read: Callable[[str], Sequence[Any]] = lambda sql: conn.exec_driver_sql(sql).fetchall()  # noqa: E731
                        self._policy_cache = PostgresPolicy.from_rows(
                            read(PG_CATALOGUE_SQL), read(pg_bodies_sql(self._pg_version(conn))), read(PG_VIEWS_SQL),
                            read(PG_OPERATORS_SQL))
                    else:
                        policy = MySQLPolicy()
                        policy.add_stored(conn.exec_driver_sql(MYSQL_CATALOGUE_SQL).fetchall(),
                                          conn.exec_driver_sql(MYSQL_VIEWS_SQL).fetchall())
                        try:
                            policy.add_udfs(conn.exec_driver_sql(MYSQL_UDF_SQL).fetchall())
                        except self._sa.exc.DBAPIError:
                            # A role without SELECT on mysql.func cannot see the server's UDFs;
                            # it is usually also one that cannot have created any.
                            conn.rollback()
                        self._policy_cache = policy
                finally:
                    conn.rollback()
        return self._policy_cache

    def _pg_version(self, conn: Connection) -> int:
        if "_server_version" not in self.__dict__:
            self._server_version: int = int(cast(str, conn.exec_driver_sql("SHOW server_version_num").scalar()))
        return self._server_version

    def _stream(self, conn: Connection, sql: str, max_bytes: int) -> "_Stream":
        """Run the caller's statement in the current transaction as a stream of rows."""
        driver = conn.connection.driver_connection
        if self._engine.dialect.driver == "psycopg":
            return _PsycopgStream(driver, sql, max_bytes, self._pg_type_lengths)
        if self._engine.dialect.driver == "pymysql":
            return _PyMySQLStream(driver, sql)
        return _BufferedStream(conn.exec_driver_sql(sql))

    # -- the profile's samples and statistics ---------------------------------------------
    def _table_info(self, table: str, schema: str | None) -> TableInfo | None:
        return next((t for t in self.schema() if t.name == table and t.schema == schema), None)

    def sample_method(self, table: str, total: int, schema: str | None = None) -> str:
        info = self._table_info(table, schema)
        if info is None or info.is_view:
            return "first rows"  # neither TABLESAMPLE nor a key reaches into a view
        if self._is_postgres:
            # BERNOULLI reads every page and keeps each row by chance: fine where a whole
            # scan is allowed anyway; past scan_threshold SYSTEM reads only the chosen pages.
            return "TABLESAMPLE SYSTEM" if total > self.config.scan_threshold else "TABLESAMPLE BERNOULLI"
        if self.engine in ("mysql", "mariadb") and info.primary_key:
            # MariaDB/MySQL have no TABLESAMPLE: evenly spaced values of an integer key,
            # each found through the key's index, else a hash of the key over a full scan.
            pk = info.primary_key
            col = next((c for c in info.columns if c.name == pk[0]), None)
            if len(pk) == 1 and col is not None and _INTEGER_TYPE.search(col.type or ""):
                return "key lookups"
            return "key hash"
        return "first rows"

    def sample_source(self, table: str, n: int, total: int, schema: str | None = None) -> str:
        ref = self.table_sql(table, schema)
        method = self.sample_method(table, total, schema)
        rate = min(1.0, n / total) if total > 0 else 1.0
        if method.startswith("TABLESAMPLE"):
            # REPEATABLE: the same pages and rows every time while the table is unchanged.
            return f"(SELECT * FROM {ref} {method} ({100 * rate:.6f}) REPEATABLE (7))"
        info = self._table_info(table, schema)
        if method == "key lookups":
            assert info is not None  # (sample_method found it)
            return self._key_lookups(ref, info.primary_key[0], n) or f"(SELECT * FROM {ref})"
        if method == "key hash":
            assert info is not None  # (sample_method found it)
            key = ", ".join(f"CAST({self.quote(c)} AS CHAR)" for c in info.primary_key)
            return (f"(SELECT * FROM {ref} WHERE CRC32(CONCAT_WS('|', {key})) % 1000000 < "
                    f"{max(1, round(rate * 1_000_000))})")
        return f"(SELECT * FROM {ref} LIMIT {int(n)})"

    def _key_lookups(self, ref: str, key: str, n: int) -> str | None:
        """The rows whose integer key is one of ``n`` evenly spaced values between the key's
        lowest and highest (both read from the index): a systematic sample that costs ``n``
        index lookups, not a scan. The values come from a cross join of digit tables, as
        MySQL caps recursive CTEs at 1,000 rows."""
        k = self.quote(key)
        lo, hi = self.query(f"SELECT (SELECT MIN({k}) FROM {ref}), (SELECT MAX({k}) FROM {ref})")[0]
        if lo is None or int(hi) - int(lo) + 1 <= n:
            return None  # empty, or no more keys than wanted: the whole table
        step = (int(hi) - int(lo) + 1) / n
        places = len(str(max(n - 1, 1)))
        digits = " UNION ALL ".join(f"SELECT {i} AS d" for i in range(10))
        i = " + ".join(f"{10 ** p} * d{p}.d" for p in range(places))
        joined = " CROSS JOIN ".join(f"({digits}) AS d{p}" for p in range(places))
        # One key from each of n equal stretches, placed in it by a hash of its number (see
        # sqlite.JITTER_SQL: evenly spaced keys alias with data that repeat with a period).
        jitter = JITTER_SQL.replace("i", "vouch_i.i")
        keys = (f"SELECT DISTINCT {int(lo)} + FLOOR((vouch_i.i + {jitter}) * {step!r}) AS vouch_key "
                f"FROM (SELECT {i} AS i FROM {joined}) AS vouch_i WHERE vouch_i.i < {int(n)}")
        return (f"(SELECT vouch_t.* FROM ({keys}) AS vouch_keys JOIN {ref} AS vouch_t "
                f"ON vouch_t.{k} = vouch_keys.vouch_key)")

    def table_statistics(self, info: TableInfo) -> TableStatistics | None:
        """PostgreSQL's ``pg_class``/``pg_stats`` figures with their freshness (see
        :mod:`.stats`); MariaDB/MySQL's estimates cannot be judged fresh and are not used."""
        if not self._is_postgres or info.is_view:
            return None
        from .stats import postgres_sql, postgres_statistics

        return postgres_statistics(self.query(postgres_sql(self.table_sql(info.name, info.schema))))

    def value_sql(self, expr: str, type_name: str) -> str:
        if not self._is_postgres:
            return expr
        kind = (type_name or "").upper()
        if kind == "MONEY":
            # money compares with no integer (money = 0 fails) and fetches as '$1.00' text.
            return f"CAST({expr} AS NUMERIC)"
        if kind in _PG_UNORDERED or kind == "NULL":
            # No equality or ordering to group or rank by (json, xml, the geometric types),
            # or a type SQLAlchemy does not know (reflected as NULL): as text.
            return f"CAST({expr} AS TEXT)"
        return expr

    def schema(self) -> list[TableInfo]:
        """Tables and views of the schemas the ``schemas`` setting names (default: the
        connection's default schema), reflected a schema at a time with SQLAlchemy's
        ``get_multi_*`` calls: one catalogue query per kind, not one per table (a
        2,000-table schema is a few queries, not 6,000)."""
        if self._schema is not None:
            return self._schema
        insp = self._sa.inspect(self._engine)
        schemas = self._schemas_to_read(insp)
        key = self._catalogue_key(schemas)
        # Connections to an unchanged PostgreSQL catalogue share one reflection (db/shared.py):
        # `vouch serve`, a connection per request, reads 2,000 tables' catalogue once (~0.6 s),
        # then only the one-row key (~40 ms).
        try:
            self._schema = self._reflect(insp, schemas) if key is None else \
                shared_schema(key, lambda: self._reflect(insp, schemas))
        except self._sa.exc.OperationalError as exc:
            message = _first_line(exc)
            if "SHOW VIEW" not in message:
                raise
            # MariaDB/MySQL reflect a view's columns from SHOW CREATE TABLE, which needs SHOW
            # VIEW; without it nothing is known of the view, not even what it runs.
            raise UserInputError(f"{self.target}: the account cannot read a view's definition ({message}); grant "
                                 "it SHOW VIEW on that view, or leave the view out of its grants (`vouch doctor` "
                                 "prints table-by-table grants)") from None
        return self._schema

    def _catalogue_key(self, schemas: list[str | None]) -> str | None:
        """A key of what reflection reads, cheap to read and changed by any DDL on the schemas
        read: PostgreSQL's catalogue rows of their tables, columns (with their types),
        constraints and comments, each by its oid and the transaction that wrote it (``xmin``,
        new on every change of the row). None on other engines, or where it cannot be read:
        the catalogue is then reflected per connection."""
        if not self._is_postgres:
            return None
        names = sorted(s or self.default_schema or "" for s in schemas)
        try:
            with self._engine.connect() as conn:
                row = conn.exec_driver_sql(PG_CATALOGUE_KEY_SQL, (names,) * 4).fetchone()
                conn.rollback()
        except self._sa.exc.SQLAlchemyError:
            return None
        assert row is not None  # (an aggregate: always one row)
        return f"{self.target}|{self.default_schema}|{','.join(names)}|{row[0]}:{row[1]}"

    def _reflect(self, insp: Inspector, schemas: list[str | None]) -> list[TableInfo]:
        default = self.default_schema
        tables: list[TableInfo] = []
        for schema in schemas:
            # None asks for the default schema, whose tables keep unqualified names.
            where = None if schema == default else schema
            kinds = self._sa.engine.reflection.ObjectKind
            views = set(insp.get_view_names(schema=where))
            cols = insp.get_multi_columns(schema=where, kind=kinds.ANY)
            pks: dict[Any, Any] = insp.get_multi_pk_constraint(schema=where)  # (read with a {} default below)
            fks = insp.get_multi_foreign_keys(schema=where)
            comments: dict[Any, Any] = (insp.get_multi_table_comment(schema=where, kind=kinds.ANY)
                                        if self._has_comments else {})
            for key in sorted(cols, key=lambda k: k[1]):
                name = key[1]
                columns = [ColumnInfo(c["name"], type_text(c["type"]), bool(c.get("nullable", True)),
                                      c.get("comment")) for c in cols[key]]
                pk = [] if name in views else list((pks.get(key) or {}).get("constrained_columns") or [])
                refs = [] if name in views else [
                    ForeignKeyInfo(list(fk["constrained_columns"]), self._ref_name(fk, where),
                                   list(fk["referred_columns"]))
                    for fk in fks.get(key) or []]
                comment = (comments.get(key) or {}).get("text")
                tables.append(TableInfo(name, columns, pk, refs, is_view=name in views, schema=where,
                                        comment=comment))
        return tables

    @property
    def _has_comments(self) -> bool:
        return self._engine.dialect.supports_comments

    @property
    def default_schema(self) -> str | None:  # type: ignore[override]
        """PostgreSQL's current schema (the first of the search path), MariaDB's database."""
        if "_default_schema" not in self.__dict__:
            self._default_schema: str | None = self._sa.inspect(self._engine).default_schema_name
        return self._default_schema

    def _schemas_to_read(self, insp: Inspector) -> list[str | None]:
        wanted = self.config.schemas
        default = self.default_schema
        if not wanted:
            return [default]
        known = [s for s in insp.get_schema_names() if s.lower() not in _SYSTEM_SCHEMAS
                 and not s.lower().startswith("pg_")]
        if wanted == ("*",):
            return sorted(known, key=lambda s: (s != default, s))
        by_lower = {s.lower(): s for s in known}
        missing = [w for w in wanted if w.lower() not in by_lower and w != default]
        if missing:
            raise UserInputError(f"schema {', '.join(map(repr, missing))} not found on {self.target}; "
                                 f"the role can read: {', '.join(known) or 'none'}")
        return [default if w == default else by_lower[w.lower()] for w in wanted]

    def _ref_name(self, fk: ReflectedForeignKeyConstraint, where: str | None) -> str:
        """A foreign key's table as the profile keys it: qualified outside the default schema.
        SQLAlchemy leaves ``referred_schema`` empty where the table is visible unqualified
        (PostgreSQL's search path); MySQL's reflection fills it in."""
        ref_schema = fk.get("referred_schema")
        if ref_schema is None or ref_schema == self.default_schema:
            return fk["referred_table"]
        return f"{ref_schema}.{fk['referred_table']}"

    def trust_report(self, role: str | None = None) -> TrustReport | None:
        """What the role queries run as can reach that runs code the database holds
        (:mod:`.trust`), read once; ``role`` asks for another role instead (not kept)."""
        if self.engine not in ("postgresql", "mysql", "mariadb"):
            return None
        if role is None and "_trust" in self.__dict__:
            return self._trust
        from .trust import match_trusted, mysql_report, postgresql_report

        try:
            policy = self._policy()
            assert policy is not None  # (an engine with a policy: checked above)
            with self._engine.connect() as conn:
                try:
                    if self._is_postgres:
                        runs_as = role or ("pg_read_all_data" if self._reader_role
                                           else str(conn.exec_driver_sql("SELECT current_user").scalar()))
                        report = postgresql_report(conn, runs_as, set(policy.refused),
                                                   set(cast(PostgresPolicy, policy).views))
                    else:
                        report = mysql_report(conn, set(policy.refused), self.engine)
                finally:
                    conn.rollback()
        except self._sa.exc.SQLAlchemyError as exc:
            self._engine.dispose()
            raise ExecutionError(f"cannot read what code {self.target} holds from its catalogue: "
                                 f"{_first_line(exc)}") from None
        report.trusted = match_trusted(report.found, self.config.trusted_objects)
        if role is None:
            self._trust = report
        return report

    def role_powers(self) -> RolePowers | None:
        """What the connecting role may do beyond reading (:mod:`.privileges`), read once."""
        if "_role_powers" not in self.__dict__:
            from .privileges import read_role_powers

            try:
                self._role_powers: RolePowers | None = read_role_powers(self._engine, self.engine)
            except self._sa.exc.SQLAlchemyError as exc:
                raise ExecutionError(f"cannot read the privileges of the role on {self.target}: "
                                     f"{_first_line(exc)}") from None
        return self._role_powers


# One row that changes with any DDL reflection would see on the schemas named (the same list
# four times): tables and views, their columns and the columns' types, constraints, comments.
_RELATIONS = "('r', 'v', 'm', 'p', 'f')"
PG_CATALOGUE_KEY_SQL = f"""
SELECT count(*), md5(string_agg(x, ',' ORDER BY x)) FROM (
  SELECT 'c' || c.oid || ':' || c.xmin::text || ':' || c.relname || ':' || c.relkind::text AS x
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = ANY(%s) AND c.relkind IN {_RELATIONS}
  UNION ALL
  SELECT 'a' || a.attrelid || ':' || a.attnum || ':' || a.xmin::text || ':' || t.xmin::text
    FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
   WHERE n.nspname = ANY(%s) AND c.relkind IN {_RELATIONS} AND a.attnum > 0
  UNION ALL
  SELECT 'k' || k.oid || ':' || k.xmin::text FROM pg_catalog.pg_constraint k
    JOIN pg_catalog.pg_namespace n ON n.oid = k.connamespace WHERE n.nspname = ANY(%s)
  UNION ALL
  SELECT 'd' || d.objoid || ':' || d.objsubid || ':' || d.xmin::text FROM pg_catalog.pg_description d
    JOIN pg_catalog.pg_class c ON c.oid = d.objoid AND d.classoid = 'pg_catalog.pg_class'::regclass
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY(%s)
) AS parts"""

# A declared type of whole numbers (INT, BIGINT UNSIGNED, …), for key-lookup samples.
_INTEGER_TYPE = re.compile(r"(?<![A-Z])(?:TINY|SMALL|MEDIUM|BIG)?INT(?:EGER)?(?![A-Z])", re.IGNORECASE)
# PostgreSQL types with no btree ordering or equality, named as SQLAlchemy reflects them.
_PG_UNORDERED = {"JSON", "XML", "POINT", "LINE", "LSEG", "BOX", "PATH", "POLYGON", "CIRCLE"}


# How long past the time limit a statement may keep the caller waiting before its connection
# is cut: the server's own limit (statement_timeout, max_statement_time) acts first, but a
# server checks it only between steps (PostgreSQL building a 1 GB string_agg ran 1.2 s past a
# 1 s statement_timeout).
_GRACE_S = 0.5
MARKS_AT_ONCE = 500  # tables in a catalogue whose change marks are read in one query


class _Watchdog:
    """Shuts the connection's socket down if the statement is still running ``seconds`` after
    it started, so the blocked driver call returns at once with an error; the server ends
    the statement when it next notices that its client is gone."""

    def __init__(self, driver: Any, seconds: float) -> None:
        self.fired = False
        self._driver = driver
        self._timer = threading.Timer(seconds, self._sever)
        self._timer.daemon = True
        self._timer.start()

    def _sever(self) -> None:
        fd = _socket_fd(self._driver)
        if fd is None:
            return
        self.fired = True
        try:
            # A duplicate of the descriptor: shutting it down ends the connection for both,
            # closing it leaves the driver's own descriptor to the driver.
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()


def _socket_fd(driver: Any) -> int | None:
    """The socket descriptor of a psycopg or PyMySQL connection (None for other drivers)."""
    try:
        pgconn = getattr(driver, "pgconn", None)
        if pgconn is not None:
            return cast(int, pgconn.socket)  # psycopg's PGconn.socket: the descriptor
        sock = getattr(driver, "_sock", None)
        return sock.fileno() if sock is not None else None
    except Exception:  # noqa: BLE001 - a closed connection has no socket; nothing to cut
        return None


def _pg_reader_role(conn: Connection) -> list[str]:
    """For a superuser on PostgreSQL 14+, the statements that make each query run as the
    built-in role ``pg_read_all_data``: it reads every table, but cannot read server files,
    run programs, open dblink sessions without a password, create replication slots or reset
    statistics — the engine, not Vouch's parser, then refuses what the policy might miss.
    The search path is pinned to the schemas the login role resolves (``$user`` included),
    so unqualified names mean the same tables. Other roles keep their own (fewer) powers."""
    row = conn.exec_driver_sql(
        "SELECT r.rolsuper, to_regrole('pg_read_all_data') IS NOT NULL, current_schemas(false)::text[] "
        "FROM pg_catalog.pg_roles r WHERE r.rolname = current_user").fetchone()
    if not row or not row[0] or not row[1]:
        return []
    schemas = ", ".join('"' + s.replace('"', '""') + '"' for s in row[2]) or "pg_catalog"
    return [f"SET LOCAL search_path TO {schemas}", "SET LOCAL ROLE pg_read_all_data"]


class _Stream:
    """Rows of one running statement, pulled a chunk at a time. ``cut``: a cell was cut to
    fit before it reached Python."""

    cut = False

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:  # pragma: no cover - interface
        raise NotImplementedError

    def columns(self) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        pass

    def abandon(self, conn: Connection) -> None:
        """Stop reading for good: the connection is dropped, not drained."""
        conn.invalidate()


# Text types whose values the server can cut with left(); bytea with substring(). Other
# variable-length values (json, arrays, xml …) cannot be cut and keep their type: one that is
# over its share is sent as NULL and the row marked cut. bpchar is left alone: left() would
# turn it into text and drop its padding, and its declared length bounds it anyway.
_PG_TEXT_TYPES = {25, 1043, 705}
_PG_BYTEA = 17
_PG_FIXED_OR_BOUNDED = {16, 18, 19, 20, 21, 23, 26, 700, 701, 1042, 1082, 1083, 1114, 1184, 1186, 1266,
                        1700, 2950, 869, 650, 829, 774}


class _PsycopgStream(_Stream):
    """psycopg's ``stream()``: one statement by the extended protocol ("COMMIT; INSERT …"
    cannot end the read-only transaction and write after it), rows as the server sends them,
    and the query cancelled when the stream is closed early.

    libpq receives a row whole, so a single 400 MB cell would land in this process before any
    cap could look at it. The statement is therefore described first (parsed and planned,
    not run) and, when it returns variable-length columns, wrapped so that the server cuts
    each such cell to its share of ``max_bytes`` before sending it."""

    def __init__(self, driver: Any, sql: str, max_bytes: int, type_lengths: dict[int, int]) -> None:
        import psycopg

        self._cur = driver.cursor()
        self._share = 0
        self._cut_columns: list[int] = []
        self._flag = False
        pgconn = driver.pgconn
        described = pgconn.prepare(b"", sql.encode(driver.info.encoding))
        if described.status == psycopg.pq.ExecStatus.FATAL_ERROR:
            # The same error the statement itself would raise; raised now, as the failed
            # Parse has already ended the transaction.
            raise psycopg.errors.error_from_result(described, encoding=driver.info.encoding)
        shape = pgconn.describe_prepared(b"")
        names = [shape.fname(i).decode(driver.info.encoding) for i in range(shape.nfields)]
        oids = [shape.ftype(i) for i in range(shape.nfields)]
        # psycopg's stream sets the cursor's description with the first row, so an empty
        # result has none: the described names stand in (an empty EXCEPT is still a result).
        self._described = names
        wrapped = self._wrap(driver, sql, names, oids, max_bytes, type_lengths)
        self._rows = self._cur.stream(wrapped or sql)

    def _wrap(self, driver: Any, sql: str, names: list[str], oids: list[int], max_bytes: int,
              type_lengths: dict[int, int]) -> str | None:
        unknown = sorted({o for o in oids if o not in type_lengths and o not in _PG_FIXED_OR_BOUNDED
                          and o not in _PG_TEXT_TYPES and o != _PG_BYTEA})
        if unknown:
            with driver.cursor() as cur:
                cur.execute("SELECT oid::int, typlen FROM pg_catalog.pg_type WHERE oid = ANY(%s)", (unknown,))
                type_lengths.update(dict(cur.fetchall()))
        variable = [i for i, o in enumerate(oids) if o in _PG_TEXT_TYPES or o == _PG_BYTEA
                    or (o not in _PG_FIXED_OR_BOUNDED and type_lengths.get(o, -1) < 0)]
        if not variable:
            return None
        share = max(1024, max_bytes // len(variable))
        aliases = [f"c{i}" for i in range(len(names))]
        columns, flags = [], []
        for i, (name, oid) in enumerate(zip(names, oids)):
            ref = f"vouch_q.{aliases[i]}"
            if i not in variable:
                expr = ref
            elif oid in _PG_TEXT_TYPES:
                expr = f"left({ref}::text, {share + 1})"
                self._cut_columns.append(i)
            elif oid == _PG_BYTEA:
                expr = f"substring({ref} from 1 for {share + 1})"
                self._cut_columns.append(i)
            else:
                expr = f"CASE WHEN pg_column_size({ref}) > {share} THEN NULL ELSE {ref} END"
                flags.append(f"pg_column_size({ref}) > {share}")
            columns.append(f'{expr} AS "{name.replace(chr(34), chr(34) * 2)}"')
        if flags:
            columns.append(f"COALESCE({' OR '.join(flags)}, false) AS vouch_cut")
            self._flag = True
        self._share = share
        body = sql.rstrip().rstrip(";")
        wrapped = (f"SELECT {', '.join(columns)} FROM (\n{body}\n) AS vouch_q({', '.join(aliases)})")
        # A statement the wrapper cannot hold (a trailing comment after a ';', say) is run as
        # it was given, with the client-side byte cap only.
        with _savepoint(driver) as ok:
            ok(driver.pgconn.prepare(b"", wrapped.encode(driver.info.encoding)))
        if not ok.worked:
            self._cut_columns, self._flag = [], False
            return None
        return wrapped

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:
        rows = list(itertools.islice(self._rows, n))
        if not (self._cut_columns or self._flag):
            return rows
        out = []
        for row in rows:
            row = list(row)
            if self._flag:
                self.cut = self.cut or bool(row.pop())
            for i in self._cut_columns:
                value = row[i]
                if value is not None and len(value) > self._share:
                    row[i] = value[:self._share]
                    self.cut = True
            out.append(tuple(row))
        return out

    def columns(self) -> list[str]:
        if self._cur.description is None:
            if self._described:
                return list(self._described)
            raise _resource_closed()
        names = [d.name for d in self._cur.description]
        return names[:-1] if self._flag else names

    def close(self) -> None:
        self._rows.close()
        self._cur.close()


class _savepoint:
    """Try one step inside a savepoint: a failure rolls back to it, leaving the read-only
    transaction usable. ``ok(result)`` records a libpq result's success."""

    def __init__(self, driver: Any) -> None:
        self._pgconn = driver.pgconn
        self.worked = False

    def __enter__(self) -> "_savepoint":
        self._pgconn.exec_(b"SAVEPOINT vouch_wrap")
        return self

    def __call__(self, result: Any) -> None:
        import psycopg

        self.worked = result.status != psycopg.pq.ExecStatus.FATAL_ERROR

    def __exit__(self, *exc: object) -> None:
        self._pgconn.exec_(b"RELEASE SAVEPOINT vouch_wrap" if self.worked and not exc[0]
                           else b"ROLLBACK TO SAVEPOINT vouch_wrap")


class _PyMySQLStream(_Stream):
    """PyMySQL's unbuffered cursor, given the statement with no parameters so that the
    driver never %-formats it (``LIKE 'A%'`` and ``DATE_FORMAT(d, '%Y')`` failed that way)."""

    def __init__(self, driver: Any, sql: str) -> None:
        import pymysql.cursors

        self._cur = driver.cursor(pymysql.cursors.SSCursor)
        self._cur.execute(sql)
        if self._cur.description is None:
            self._cur.close()
            raise _resource_closed()

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:
        return list(self._cur.fetchmany(n))

    def columns(self) -> list[str]:
        return [d[0] for d in self._cur.description]

    def close(self) -> None:
        self._cur.close()

    def abandon(self, conn: Connection) -> None:
        result = getattr(self._cur, "_result", None)
        conn.invalidate()
        if result is not None:
            # The socket is closed: the result must not try to drain it when collected.
            result.unbuffered_active = False


class _BufferedStream(_Stream):
    """Any other driver through SQLAlchemy: rows as its cursor gives them."""

    def __init__(self, result: CursorResult[Any]) -> None:
        self._result = result
        self._columns = list(result.keys())  # raises ResourceClosedError for no rows

    def fetchmany(self, n: int) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._result.fetchmany(n)]

    def columns(self) -> list[str]:
        return self._columns

    def close(self) -> None:
        self._result.close()

    def abandon(self, conn: Connection) -> None:
        self.close()


def type_text(sa_type: TypeEngine[Any]) -> str:
    """``str(sa_type)``, compiled by one shared string dialect: ``str()`` builds a new one for
    every call, which on a 20,000-table catalogue (100,000 columns) cost 1.6 s of its 6."""
    global _STR_DIALECT
    if _STR_DIALECT is None:
        from sqlalchemy.engine.default import StrCompileDialect

        _STR_DIALECT = StrCompileDialect()
    return sa_type.compile(dialect=_STR_DIALECT)


_STR_DIALECT: StrCompileDialect | None = None


def _resource_closed() -> ResourceClosedError:
    from sqlalchemy.exc import ResourceClosedError

    return ResourceClosedError("no rows")


def _first_line(exc: Exception) -> str:
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0]

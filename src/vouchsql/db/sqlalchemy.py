"""Any SQLAlchemy URL (optional extra ``[sqlalchemy]``, or ``[postgres]`` / ``[mysql]`` with
a driver). Every query runs inside a transaction that is read-only where the dialect can
say so, with a statement timeout where the dialect supports one, and is always rolled back.
"""

from __future__ import annotations

import hashlib
import time

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, UserInputError
from ..settings import Config
from ..sql.gate import SQLGLOT_DIALECTS
from .base import ColumnInfo, Database, ForeignKeyInfo, TableInfo


def _import_sqlalchemy():
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


def _session_setup(dialect: str, timeout: float) -> list[str]:
    """Statements that make the current transaction read-only and time-limited."""
    ms = max(1, int(timeout * 1000))
    if dialect == "postgresql":
        return ["SET TRANSACTION READ ONLY", f"SET LOCAL statement_timeout = {ms}"]
    if dialect in ("mysql", "mariadb"):
        # SESSION, not just the next transaction: DDL commits implicitly and would then run
        # in a fresh, writable transaction (CREATE TABLE got through with the plain form).
        return ["SET SESSION TRANSACTION READ ONLY"]
    return []


class SQLAlchemyDatabase(Database):
    engine = "sqlalchemy"

    def __init__(self, url: str, config: Config) -> None:
        sa = _import_sqlalchemy()
        self._sa = sa
        try:
            self._url = sa.engine.make_url(url)
        except sa.exc.ArgumentError:
            raise UserInputError(f"{url!r} is not a database URL") from None
        try:
            self._engine = sa.create_engine(self._url, pool_pre_ping=True)
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
        try:
            with self._engine.connect() as conn:
                self._is_mariadb = name == "mariadb" or name == "mysql" and "mariadb" in str(
                    conn.exec_driver_sql("SELECT VERSION()").scalar()).lower()
        except sa.exc.SQLAlchemyError as exc:
            raise UserInputError(f"cannot connect to {self.target}: {_first_line(exc)}") from None
        self._schema: list[TableInfo] | None = None

    def close(self) -> None:
        self._engine.dispose()

    def identity(self) -> str:
        shape = "|".join(f"{t.name}:{','.join(c.name + ' ' + c.type for c in t.columns)}" for t in self.schema())
        return f"{self.target}#{hashlib.sha256(shape.encode()).hexdigest()[:16]}"

    def _run(self, sql: str, max_rows: int, timeout: float):
        sa = self._sa
        start = time.monotonic()
        with self._engine.connect() as conn:
            try:
                for stmt in _session_setup(self.engine, timeout):
                    conn.exec_driver_sql(stmt)
                if self.engine in ("mysql", "mariadb"):
                    # MariaDB takes seconds, MySQL milliseconds (SELECTs only); both are session-scoped.
                    conn.exec_driver_sql(f"SET SESSION max_statement_time = {timeout:g}" if self._is_mariadb
                                         else f"SET SESSION max_execution_time = {int(timeout * 1000)}")
                columns, cur = self._execute(conn, sql)
                rows = [tuple(r) for r in cur.fetchmany(max_rows + 1)]
                cur.close()
            except sa.exc.ResourceClosedError:
                raise ExecutionError(f"{self.engine}: the statement returned no rows; "
                                     f"Vouch runs only SELECT queries") from None
            except (sa.exc.DBAPIError, self._engine.dialect.loaded_dbapi.Error) as exc:
                text = _first_line(exc)
                low = text.lower()
                if "timeout" in low or "canceling statement" in low or "max_statement_time" in low \
                        or "maximum statement execution time" in low or time.monotonic() - start >= timeout:
                    raise QueryTimeout(f"the query ran past the {timeout:g} s time limit and was stopped "
                                       f"(raise it with --timeout or VOUCH_TIMEOUT)") from None
                if "read-only" in low or "read only" in low:
                    raise ReadOnlyViolation(f"{self.engine} refused: {text}") from None
                raise ExecutionError(f"{self.engine} error: {text}") from None
            finally:
                conn.rollback()
        return columns, rows[:max_rows], len(rows) > max_rows

    def _execute(self, conn, sql: str):
        """Run the caller's statement in the current transaction; (columns, cursor)."""
        if self._engine.dialect.driver == "psycopg":
            # A prepared statement (extended protocol) holds exactly one command, so
            # "COMMIT; INSERT …" cannot end the read-only transaction and write after it.
            cur = conn.connection.driver_connection.cursor()
            cur.execute(sql, prepare=True)
            if cur.description is None:
                cur.close()
                raise self._sa.exc.ResourceClosedError("no rows")
            return [d.name for d in cur.description], cur
        result = conn.exec_driver_sql(sql)
        return list(result.keys()), result  # keys() raises ResourceClosedError for no rows

    def sample_source(self, table: str, n: int, total: int) -> str:
        if self.engine == "postgresql" and total > 0:
            pct = min(100.0, 100.0 * n / total)
            return f"(SELECT * FROM {self.quote(table)} TABLESAMPLE BERNOULLI ({pct:.6f}) REPEATABLE (7))"
        return f"(SELECT * FROM {self.quote(table)} LIMIT {int(n)})"

    def schema(self) -> list[TableInfo]:
        if self._schema is not None:
            return self._schema
        insp = self._sa.inspect(self._engine)
        tables: list[TableInfo] = []
        views = set(insp.get_view_names())
        for name in sorted(set(insp.get_table_names()) | views):
            columns = [ColumnInfo(c["name"], str(c["type"]), bool(c.get("nullable", True)))
                       for c in insp.get_columns(name)]
            pk = [] if name in views else list(insp.get_pk_constraint(name).get("constrained_columns") or [])
            fks = [] if name in views else [
                ForeignKeyInfo(list(fk["constrained_columns"]), fk["referred_table"], list(fk["referred_columns"]))
                for fk in insp.get_foreign_keys(name)]
            tables.append(TableInfo(name, columns, pk, fks, is_view=name in views))
        self._schema = tables
        return tables


def _first_line(exc: Exception) -> str:
    orig = getattr(exc, "orig", None) or exc
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0]

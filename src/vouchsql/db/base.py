"""The one interface every engine implements, and the guarded execution around it.

An engine supplies four things: ``_run`` (execute one already-gated statement on a read-only
connection within a time limit, fetching at most N rows), ``schema`` (tables, columns, keys),
``identity`` (what the profile cache is keyed on) and ``sample_source`` (a FROM-able sample
of a large table, so the profile never scans what it can estimate).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..answer import Result, ResultError
from ..errors import ExecutionError, SQLRejected, VouchError
from ..settings import Config
from ..sql.gate import parse_one_select


@dataclass
class ColumnInfo:
    name: str
    type: str
    nullable: bool = True


@dataclass
class ForeignKeyInfo:
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


@dataclass
class TableInfo:
    name: str
    columns: list[ColumnInfo]
    primary_key: list[str] = field(default_factory=list)
    foreign_keys: list[ForeignKeyInfo] = field(default_factory=list)
    is_view: bool = False


def jsonable(value: Any) -> Any:
    """Engine values → JSON-safe values, keeping numbers as numbers."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**63 else float(value)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "base64:" + base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


class Database(ABC):
    """A database opened read-only. Use :func:`vouchsql.connect` to get one."""

    engine: str = "?"
    dialect: str = "sqlite"

    def __init__(self, target: str, config: Config) -> None:
        self.target = target
        self.config = config
        self._profile = None
        self.query_ms = 0.0  # time spent in Vouch's own queries, for the benchmarks

    # -- what engines implement -------------------------------------------------------
    @abstractmethod
    def _run(self, sql: str, max_rows: int, timeout: float) -> tuple[list[str], list[tuple], bool]:
        """Run one gated statement; return (columns, rows, truncated). Raise VouchError."""

    @abstractmethod
    def schema(self) -> list[TableInfo]:
        """Tables and views with columns and declared keys."""

    @abstractmethod
    def identity(self) -> str:
        """A string that changes whenever the database's content may have changed."""

    def sample_source(self, table: str, n: int, total: int) -> str:
        """A parenthesised subquery (callers add the alias) holding about ``n`` rows of
        ``table``. Engines override this with a real sample; the fallback takes the first
        ``n`` rows."""
        return f"(SELECT * FROM {self.quote(table)} LIMIT {int(n)})"

    def close(self) -> None:  # pragma: no cover - engines override
        pass

    # -- shared behaviour ------------------------------------------------------------
    def quote(self, name: str) -> str:
        return exp.to_identifier(name, quoted=True).sql(dialect=self.dialect)

    def parse(self, sql: str) -> exp.Expression:
        """The gate: the parsed tree of one read-only SELECT, or SQLRejected."""
        return parse_one_select(sql, self.dialect)

    def execute(self, sql: str, *, max_rows: int | None = None, timeout: float | None = None,
                from_tree: bool = False) -> Result:
        """Run one read-only SELECT. Never raises for a bad query: the returned Result
        carries ``error`` (kind and message) instead.

        ``from_tree``: Vouch generated ``sql`` from an edit of a tree that already passed the
        gate, so the gate's parse is skipped (it costs about a millisecond per statement); the
        engine's read-only layers apply as always."""
        max_rows = self.config.max_rows if max_rows is None else max_rows
        timeout = self.config.timeout if timeout is None else timeout
        start = time.perf_counter()
        try:
            if not from_tree:
                self.parse(sql)
            columns, rows, truncated = self._run(sql, max_rows, timeout)
        except VouchError as exc:
            return Result(error=ResultError(kind=exc.kind, message=exc.message),
                          elapsed_ms=_ms(start))
        clean = [[jsonable(v) for v in row] for row in rows]
        return Result(columns=columns, rows=clean, row_count=len(clean), truncated=truncated,
                      elapsed_ms=_ms(start))

    def query(self, sql: str, *, timeout: float | None = None, max_rows: int = 1_000_000,
              from_tree: bool = False) -> list[tuple]:
        """Internal read-only query for Vouch's own SQL (profiling, checks); raises on error.
        ``from_tree`` as in :meth:`execute`."""
        if not from_tree:
            self.parse(sql)
        start = time.perf_counter()
        try:
            _, rows, _ = self._run(sql, max_rows, timeout or self.config.profile_timeout)
        finally:
            self.query_ms += (time.perf_counter() - start) * 1000
        return rows

    def table_names(self) -> list[str]:
        return [t.name for t in self.schema()]

    def profile(self, *, refresh: bool = False):
        """The schema-and-data profile, from the on-disk cache when it is current."""
        from .profile import load_or_build

        if self._profile is None or refresh:
            self._profile = load_or_build(self, refresh=refresh or self.config.no_cache)
        return self._profile

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.target}>"


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


__all__ = ["Database", "TableInfo", "ColumnInfo", "ForeignKeyInfo", "jsonable",
           "ExecutionError", "SQLRejected"]

"""The one interface every engine implements, and the guarded execution around it.

An engine supplies four things: ``_run`` (execute one already-gated statement on a read-only
connection within a time limit, fetching through :func:`fetch_bounded` so that at most N rows
and B bytes ever reach Python), ``schema`` (tables, columns, keys),
``identity`` (what the profile cache is keyed on) and ``sample_source`` (a FROM-able sample
of a large table, so the profile never scans what it can estimate).
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple, Sequence

from sqlglot import exp

from ..answer import Result, ResultError
from ..errors import ExecutionError, QueryTimeout, SQLRejected, VouchError
from ..settings import Config
from ..sql.gate import parse_one_select
from .catalog import ColumnInfo, ForeignKeyInfo, TableInfo, jsonable  # noqa: F401 - imported from here too
from .policy import check_built_sizes

if TYPE_CHECKING:
    from .privileges import RolePowers
    from .profile import Profile, Progress, _Store
    from .stats import TableStatistics
    from .trust import TrustReport

# What a statement stopped by Database.cancel() reports (the call it belonged to ran past its limit).
CANCELLED = "the call this query belonged to was stopped at its time limit"


def timeout_message(timeout: float) -> str:
    return (f"the query ran past the {timeout:g} s time limit and was stopped "
            f"(raise it with --timeout or VOUCH_TIMEOUT)")


class Fetch(NamedTuple):
    """What an engine's ``_run`` returns: the columns, at most ``max_rows`` rows, and why the
    rows stop short of the whole result (``None`` when they are the whole result)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: str | None  # "rows", "bytes", "cell" or None


# Bytes counted per value that is not text or binary, and per row: a rough footprint, so
# that a result of many small numbers is bounded as well as one of a few huge strings.
_SCALAR_BYTES = 8
_ROW_BYTES = 16


def value_bytes(value: Any) -> int:
    """The bytes a cell counts against ``max_result_bytes``: text and binary by their length,
    other scalars ``_SCALAR_BYTES``, a nested value (list, map, struct) by what it holds."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, memoryview):
        return value.nbytes
    if isinstance(value, (list, tuple, dict)):
        return _nested_bytes(value)
    return _SCALAR_BYTES


def _nested_bytes(value: Any) -> int:
    """A nested value's size in this process: every container and item at its Python size
    (``sys.getsizeof``: a one-character string holds 50 bytes, a list 8 per item). Counting
    only the characters let a DuckDB list of 150 short names per row hold five times the cap
    in Python objects (bench/memory.py), where a wide text cell holds about its length."""
    total, stack = 0, [value]
    while stack:  # iterative: a deeply nested value must not exhaust the recursion limit
        item = stack.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def _cut(value: Any, budget: int) -> Any:
    """``value`` cut to about ``budget`` bytes (text by characters, binary by bytes)."""
    if isinstance(value, str):
        return value[:max(0, budget)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value[:max(0, budget)])
    if isinstance(value, (list, tuple)):  # the leading items that fit, the last one cut
        kept: list[Any] = []
        for item in value:
            size = _nested_bytes(item)
            if size > budget:
                if isinstance(item, (str, bytes, bytearray, memoryview, list, tuple, dict)) and budget > 0:
                    kept.append(_cut(item, budget))
                break
            kept.append(item)
            budget -= size
        return kept if isinstance(value, list) else tuple(kept)
    if isinstance(value, dict):
        return dict(zip(value.keys(), _cut(list(value.values()), budget)))
    return value


def fetch_bounded(fetchmany: Callable[[int], Sequence[Sequence[Any]]], max_rows: int, max_bytes: int,
                  deadline: float | None = None, chunk: int = 256) -> tuple[list[tuple[Any, ...]], str | None]:
    """Pull rows from a cursor in chunks until the result ends, ``max_rows`` rows are in,
    or the values reach ``max_bytes``; return (rows, why truncated).

    The byte cap is applied as rows arrive, and a streaming cursor is asked for one row
    first, then for no more rows than the largest row seen so far says fit in a quarter of
    ``max_bytes``: a driver builds every row of a ``fetchmany`` before returning any, so a
    chunk of 256 rows of 16 MB each held gigabytes before the cap could look, and how many
    it held by the time limit depended on the machine's speed. A first row that alone is
    over the cap is kept with its large cells cut (``"cell"``): the user sees the row and is
    told it was cut. ``deadline`` (time.monotonic) is checked between chunks; past it,
    :class:`QueryTimeout` is raised, so the time limit covers fetching as well as running."""
    rows: list[tuple[Any, ...]] = []
    used = 0
    largest = 0
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise QueryTimeout("the query ran past its time limit while its rows were fetched")
        want = min(chunk, max_rows + 1 - len(rows))
        want = 1 if largest == 0 else max(1, min(want, max_bytes // (4 * largest)))
        batch = fetchmany(want)
        if not batch:
            return rows, None
        for row in batch:
            if len(rows) == max_rows:
                return rows, "rows"
            size = _ROW_BYTES + sum(value_bytes(v) for v in row)
            largest = max(largest, size)
            if used + size > max_bytes:
                if rows:
                    return rows, "bytes"
                # One row over the whole budget: share the budget among its cells.
                share = max(1, (max_bytes - _ROW_BYTES) // max(1, len(row)))
                rows.append(tuple(_cut(v, share) for v in row))
                return rows, "cell"
            used += size
            rows.append(tuple(row))
        chunk = min(chunk * 4, 16_384)


class Database(ABC):
    """A database opened read-only. Use :func:`vouchsql.connect` to get one."""

    engine: str = "?"
    dialect: str = "sqlite"
    # The schema unqualified names resolve to (PostgreSQL's first search-path schema,
    # MariaDB's database, DuckDB's main); None where an engine has one namespace.
    default_schema: str | None = None
    # Set by db/profile.py on first use: the per-table figures measured so far.
    _profile_store: _Store

    def __init__(self, target: str, config: Config) -> None:
        self.target = target
        self.config = config
        self._profile: Profile | None = None
        self.query_ms = 0.0  # time spent in Vouch's own queries, for the benchmarks

    # -- what engines implement -------------------------------------------------------
    @abstractmethod
    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        """Run one gated statement read-only within ``timeout`` seconds (fetching included),
        holding at most ``max_rows`` rows and ``max_bytes`` bytes of values (default: the
        ``max_result_bytes`` setting); raise VouchError."""

    @abstractmethod
    def schema(self) -> list[TableInfo]:
        """Tables and views with columns and declared keys."""

    @abstractmethod
    def identity(self) -> str:
        """A string that changes whenever the database's content may have changed."""

    def table_identity(self, info: TableInfo) -> str:
        """What one table's cached figures are keyed on: changes whenever its content may
        have. The database's identity by default (any change re-measures every table);
        engines that can tell one table's changes override it."""
        return self.identity()

    def table_sql(self, name: str, schema: str | None = None) -> str:
        """The quoted reference to a table: ``"schema"."name"``, or ``"name"`` in the default schema."""
        return (self.quote(schema) + "." if schema else "") + self.quote(name)

    def sample_source(self, table: str, n: int, total: int, schema: str | None = None) -> str:
        """A parenthesised subquery (callers add the alias) holding about ``n`` of the
        ``total`` rows of ``table``, the same rows every time for the same data. Engines
        override this with a real sample; the fallback takes the first ``n`` rows."""
        return f"(SELECT * FROM {self.table_sql(table, schema)} LIMIT {int(n)})"

    def sample_method(self, table: str, total: int, schema: str | None = None) -> str:
        """How :meth:`sample_source` draws its rows, in a few words, for the profile."""
        return "first rows"

    def table_statistics(self, info: TableInfo) -> TableStatistics | None:
        """The engine's own statistics of a table (a ``stats.TableStatistics``: its row
        estimate, per-column NULL fraction, distinct count and common values, and whether
        they are fresh), or ``None`` where the engine keeps none worth reading."""
        return None

    def value_sql(self, expr: str, type_name: str) -> str:
        """``expr`` (a column of declared type ``type_name``) as the profile groups and
        compares it: engines override this for types that cannot be grouped, ordered or
        compared with 0 as they are (PostgreSQL's ``money``, ``json``)."""
        return expr

    def close(self) -> None:  # pragma: no cover - engines override
        pass

    def cancel(self) -> None:
        """Stop this connection's work, from another thread: the statement running now is
        interrupted where the engine allows it, and every later one refused (a call that ran
        past its limit must not go on holding the engine, ``vouch mcp``)."""
        self._cancelled = True
        try:
            self._interrupt()
        except Exception:  # noqa: BLE001 - a connection closed meanwhile has nothing left to stop
            pass

    def _interrupt(self) -> None:
        """Interrupt the statement running now (engines override; the default waits for it)."""

    def _refuse_if_cancelled(self) -> None:
        if getattr(self, "_cancelled", False):
            raise QueryTimeout(CANCELLED)

    def _stopped(self, timeout: float) -> QueryTimeout:
        """The error of a statement the engine stopped: by :meth:`cancel` (the call it
        belonged to ran past its limit) or by this query's own time limit."""
        return QueryTimeout(CANCELLED if getattr(self, "_cancelled", False) else timeout_message(timeout))

    def role_powers(self) -> RolePowers | None:
        """The server role's powers beyond reading (a ``privileges.RolePowers``); ``None``
        here, since an embedded engine is opened read-only by construction and has no role."""
        return None

    def trust_report(self, role: str | None = None) -> TrustReport | None:
        """The code the database holds that its role can reach (a ``trust.TrustReport``);
        ``None`` here: an embedded engine runs no code a file holds (SQLite and DuckDB files
        keep no functions; their views are SQL the statement gate reads like any query)."""
        return None

    # -- shared behaviour ------------------------------------------------------------
    def quote(self, name: str) -> str:
        return exp.to_identifier(name, quoted=True).sql(dialect=self.dialect)

    def parse(self, sql: str) -> exp.Expression:
        """The gate: the parsed tree of one read-only SELECT, or SQLRejected."""
        return parse_one_select(sql, self.dialect)

    def as_engine_reads(self, tree: exp.Expression, sql: str) -> exp.Expression:
        """``tree`` (parsed from ``sql``) rewritten where the engine reads a token otherwise than
        the parser does, so the checks reason about what the engine runs. None here."""
        return tree

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
            self._refuse_if_cancelled()
            if not from_tree:
                check_built_sizes(self.parse(sql), self.config.max_result_bytes)
            columns, rows, truncated = self._run(sql, max_rows, timeout)
        except VouchError as exc:
            return Result(error=ResultError(kind=exc.kind, message=exc.message),
                          elapsed_ms=_ms(start))
        except RecursionError:
            # A tree too deep for the parser or the engine's driver: the SQL, not Vouch, must change.
            return Result(error=ResultError(kind="rejected", message="the SQL is nested too deeply to "
                                            "analyse; simplify it (fewer nested parentheses or subqueries)"),
                          elapsed_ms=_ms(start))
        clean = [[jsonable(v) for v in row] for row in rows]
        return Result(columns=columns, rows=clean, row_count=len(clean), truncated=truncated is not None,
                      truncated_reason=truncated, elapsed_ms=_ms(start))

    def query(self, sql: str, *, timeout: float | None = None, max_rows: int = 1_000_000,
              from_tree: bool = False) -> list[tuple[Any, ...]]:
        """Internal read-only query for Vouch's own SQL (profiling, checks); raises on error.
        ``from_tree`` as in :meth:`execute`."""
        self._refuse_if_cancelled()
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

    def profile(self, *, refresh: bool = False,
                progress: Progress | None = None) -> Profile:
        """The whole schema-and-data profile: every table measured (each from the on-disk
        cache when it is current). ``progress(done, total, table)`` is told of each table.
        A query needs only :meth:`profile_for` its tables."""
        from .profile import build_profile

        if self._profile is None or refresh:
            self._profile = build_profile(self, refresh=refresh, progress=progress)
        return self._profile

    def profile_for(self, tables: Iterable[str]) -> Profile:
        """The profile a query reading ``tables`` needs: those tables and their join
        neighbours measured (on first use, then cached per table), every other table known
        from the catalogue only, measured if a check asks for it by name."""
        from .profile import profile_for

        return profile_for(self, tables)

    def catalogue(self) -> Profile:
        """Every table's columns and keys, no table measured (see :meth:`profile_for`)."""
        from .profile import catalogue

        return catalogue(self)

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.target}>"


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


__all__ = ["Database", "TableInfo", "ColumnInfo", "ForeignKeyInfo", "Fetch", "fetch_bounded", "jsonable",
           "ExecutionError", "SQLRejected"]

"""Measuring one table for the profile: which figures are exact, which are estimates and
from what, within a budget that does not depend on the clock.

Every figure comes from the engine (aggregates, never a table pulled into Python). What is
exact and what is estimated depends on the table's row count N alone — ``COUNT(*)``, or the
engine's row estimate where its statistics are fresh and N is past ``scan_threshold``:

* N ≤ ``sample_threshold``: one grouped pass per batch of columns over the whole table; every
  figure exact.
* N ≤ ``scan_threshold``: NULL counts and min/max exact, from one aggregate scan; distinct
  counts, top values and stand-in codes estimated, from the engine's fresh statistics
  (PostgreSQL's ``pg_stats``) or else a deterministic sample of ``sample_rows`` rows.
* N > ``scan_threshold``: nothing reads the whole table. NULL counts and min/max are
  estimated too, from the same source, except what is cheap and exact anyway: a NOT NULL
  column has no NULLs, a single-column primary key's min and max come from its index.

Each estimate says where it came from (``ColumnProfile.sources``, ``TableProfile.sources``).
The budget per table is counted in statements (``profile_statements``), so the same data
give the same profile on a busy machine and an idle one; ``profile_timeout`` is only a safety
net: a table it cuts short keeps what was measured, is marked ``partial`` and ``timed_out``,
and is measured again next time.
"""

from __future__ import annotations

import decimal
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from ..errors import QueryTimeout, VouchError
from .catalog import TableInfo, jsonable
from .figures import (SAMPLE_ROWS_SHOWN, STAND_IN_SHARE, TOP_VALUES, ColumnProfile, ForeignKey, StandIn,
                      TableProfile, _is_numeric)
from .stats import ColumnStatistics, TableStatistics

if TYPE_CHECKING:
    from .base import Database
    from .catalog import ColumnInfo

T = TypeVar("T")

# Wide tables are profiled in batches: SQLite refuses more than 2,000 result columns and
# PostgreSQL more than 1,664, and DuckDB crashed on one statement over 3,000 columns.
AGGREGATES_PER_STATEMENT = 200
COLUMNS_PER_STATEMENT = 1000
# rows × columns² per grouped statement (see _grouped_values): 1,000 columns of a small
# table at once, about 45 columns of a 100,000-row sample.
CASE_BUDGET = 200_000_000
# Values kept from each end of a column's ordered values: the stand-in test needs the code
# and its neighbour, and a NaN or an infinity may stand before them.
EDGE_VALUES = 3


class _Stop(Exception):
    """The table's budget ran out; ``why`` says which, ``timed_out`` whether by the clock."""

    def __init__(self, why: str, timed_out: bool) -> None:
        super().__init__(why)
        self.why, self.timed_out = why, timed_out


class _Budget:
    """The table's statements: at most ``profile_statements`` of them, each given what is left
    of ``profile_timeout``."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.limit = db.config.profile_timeout
        self.deadline = time.monotonic() + self.limit
        self.left = db.config.profile_statements

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.left <= 0:
            raise _Stop(f"the table's statement budget (profile_statements = "
                        f"{self.db.config.profile_statements:,}) ran out", False)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Stop(self._late(), True)
        self.left -= 1
        try:
            return self.db.query(sql, timeout=remaining)
        except QueryTimeout:
            raise _Stop(self._late(), True) from None

    def _late(self) -> str:
        return f"the table's profile ran past profile_timeout ({self.limit:g} s)"


@dataclass
class _Column:
    """One column's figures as they are measured; a field left None was not measured."""

    info: Any
    nulls: int | None = None
    null_source: str | None = None  # None: exact
    lo: Any = None
    hi: Any = None
    range_source: str | None = "not measured"
    distinct: int | None = None
    distinct_source: str | None = None
    top: list[tuple[Any, int]] | None = None
    stand_ins: list[StandIn] | None = None
    value_source: str | None = None  # of top values and stand-ins


def measure_table(db: Database, info: TableInfo) -> TableProfile:
    """The table's profile (see the module docstring); never raises for the table's data."""
    base = dict(name=info.name, is_view=info.is_view, primary_key=info.primary_key,
                foreign_keys=[ForeignKey(columns=f.columns, ref_table=f.ref_table, ref_columns=f.ref_columns)
                              for f in info.foreign_keys])
    m = _Measure(db, info)
    try:
        m.run()
    except _Stop as stop:
        m.stop = stop
    except VouchError as exc:
        # A view over a missing table, a file the engine cannot read: keep the rest of the profile.
        return TableProfile(**base, row_count=0, error=exc.message,
                            columns=[ColumnProfile(name=c.name, type=c.type, nullable=c.nullable)
                                     for c in info.columns])
    return m.profile(base)


class _Measure:
    def __init__(self, db: Database, info: TableInfo) -> None:
        self.db, self.info, self.cfg = db, info, db.config
        self.budget = _Budget(db)
        self.ref = db.table_sql(info.name, info.schema)
        self.cols = {c.name: _Column(c) for c in info.columns}
        self.key = _unique_key(db, info)
        self.total: int | None = None
        self.row_source: str | None = None
        self.stats: TableStatistics | None = None
        self.stats_note: str | None = None
        self.sample_n: int | None = None
        self.sample_method: str | None = None
        self.sample_rows: list[list[Any]] = []
        self.stop: _Stop | None = None
        self.guess: int | None = None  # the row count the sample was drawn for, while the sample counts the rows

    # -- the order of work: cheap and most useful first, so a cut keeps the most --------
    def run(self) -> None:
        cfg, info = self.cfg, self.info
        self._read_statistics()
        stats = self.stats if self.stats is not None and self.stats.fresh else None
        guess = self.stats.row_guess if self.stats is not None and stats is None else None
        others = any(c.name != self.key for c in info.columns)
        if stats is not None and stats.rows is not None and stats.rows > cfg.scan_threshold:
            self.total, self.row_source = stats.rows, stats.row_source
        elif guess is not None and guess > max(cfg.scan_threshold, cfg.sample_threshold) and others:
            # Stale statistics of a table this large: COUNT(*) would read it all (4.7 s for
            # 20M rows here). The sample counts it instead: the rows it holds over the share
            # of the table it reads (see _take).
            self.guess = guess
        else:
            self.total = int(self.budget.query(f"SELECT COUNT(*) FROM {self.ref}")[0][0])
        total = self.total if self.guess is None else self.guess
        assert total is not None  # (counted above, or guessed)
        self.sample_rows = [[jsonable(v) for v in r] for r in
                            self.budget.query(f"SELECT * FROM {self.ref} LIMIT {SAMPLE_ROWS_SHOWN}")]
        if total <= cfg.sample_threshold:
            self._grouped(self.ref, info.columns, total, exact=True)
            return
        # Estimated value figures: from fresh statistics where they hold the column, else
        # from the sample; then the exact figures that the row count allows.
        by_stats = {c.name: stats.columns[c.name] for c in info.columns
                    if stats is not None and c.name in stats.columns and c.name != self.key}
        for name, cs in by_stats.items():
            assert stats is not None  # (by_stats is empty otherwise)
            self._from_statistics(self.cols[name], cs, total, stats.source)
        self._cheap_exact(scanned=total <= cfg.scan_threshold)
        self._key_figures()  # (once the rows are counted: after the sample, where it counts them)
        rest = [c for c in info.columns if c.name not in by_stats and c.name != self.key]
        if rest:
            where = {"schema": info.schema} if info.schema else {}  # engines of one schema take no such argument
            self.sample_method = self.db.sample_method(info.name, total, **where)
            src = f"{self.db.sample_source(info.name, cfg.sample_rows, total, **where)} AS vouch_sample"
            self._grouped(src, rest, min(total, cfg.sample_rows), exact=False)
        self._key_figures()
        if self.guess is None and total <= cfg.scan_threshold:
            self._exact_figures()

    def _key_figures(self) -> None:
        """A key's values are its rows: nothing to count, and no value more common than another."""
        if self.key is None or self.total is None or self.cols[self.key].distinct is not None:
            return
        col = self.cols[self.key]
        col.distinct, col.distinct_source = self.total, self.row_source
        col.top, col.stand_ins, col.value_source = [], [], "not measured"

    def _read_statistics(self) -> None:
        try:
            self.stats = self.db.table_statistics(self.info)
        except VouchError as exc:
            # A role that may not read the catalogue, say: the table is measured instead.
            self.stats, self.stats_note = None, f"the engine's statistics could not be read: {exc.message}"
            return
        if self.stats is not None:
            self.stats_note = self.stats.note  # "; not used" is added where nothing came from them

    # -- the figures -----------------------------------------------------------------------
    def _grouped(self, src: str, cols: list[ColumnInfo], rows: int, exact: bool) -> None:
        _grouped_values(self.db, self.budget, src, cols, rows,
                        on_batch=lambda got, batch: self._take(got, batch, exact))

    def _take(self, values: dict[str, "_Values"], cols: list[ColumnInfo], exact: bool) -> None:
        """The figures of one batch of the grouped pass (``cols``), called as each arrives."""
        if not exact and self.sample_n is None:
            self.sample_n = max((v.rows for v in values.values()), default=0)
            if self.guess is not None:  # the sample read about sample_rows / guess of the table
                self.total = int(round(self.sample_n * self.guess / min(self.cfg.sample_rows, self.guess)))
                self.row_source = "sample"
        if not exact and not self.sample_n and self.guess is None:
            return  # an empty sample of rows that exist (SYSTEM chose no page): nothing to scale
        total = self.total or 0
        for name, v in values.items():
            col = self.cols[name]
            if exact:
                col.nulls, col.null_source = v.nulls, None
                col.lo, col.hi, col.range_source = v.lowest(), v.highest(), None
                col.distinct, col.distinct_source = v.distinct, None
                col.top = v.top
                col.stand_ins, col.value_source = _stand_ins(col.info, v, v.non_null, False), None
                continue
            n = self.sample_n or v.rows
            scale = total / n if n else 0.0
            if col.info.nullable:
                col.nulls, col.null_source = int(round(v.nulls * scale)), "sample"
            else:
                col.nulls, col.null_source = 0, None
            if col.range_source is not None:  # not already exact from the key's index
                col.lo, col.hi, col.range_source = v.lowest(), v.highest(), "sample"
            non_null = total - col.nulls
            col.distinct = _estimate_distinct(v.distinct, v.singles, v.non_null, non_null)
            col.distinct_source = "sample"
            col.top = [(value, int(round(count * scale))) for value, count in v.top]
            col.stand_ins = _stand_ins(col.info, v, non_null, True)
            col.value_source = "sample"
        # Columns a batch returned nothing for hold only NULLs (or the source had no rows).
        for c in cols:
            col = self.cols[c.name]
            if c.name not in values and col.distinct is None:
                col.nulls = total if (exact or c.nullable) else 0
                col.null_source = None if exact or not c.nullable else "sample"
                col.distinct, col.top, col.stand_ins = 0, [], []
                col.distinct_source = col.value_source = None if exact else "sample"
                if col.range_source is not None:
                    col.range_source = None if exact else "sample"

    def _from_statistics(self, col: _Column, cs: ColumnStatistics, total: int, source: str) -> None:
        v = _statistics_values(cs, total)
        col.nulls, col.null_source = (0, None) if not col.info.nullable else (total - v.non_null, source)
        col.lo, col.hi, col.range_source = v.lowest(), v.highest(), source
        col.distinct, col.distinct_source = v.distinct, source
        col.top = v.top
        col.stand_ins, col.value_source = _stand_ins(col.info, v, v.non_null, True), source

    def _cheap_exact(self, scanned: bool) -> None:
        """What is exact at no cost: a NOT NULL column's NULL count, and a single-column
        primary key's min and max, read from the ends of its index (not when the whole
        table is scanned anyway)."""
        for col in self.cols.values():
            if not col.info.nullable or col.info.name == self.key:
                col.nulls, col.null_source = 0, None
        pk = self.info.primary_key
        if scanned or len(pk) != 1 or self.info.is_view or pk[0] not in self.cols:
            return
        k = self.db.value_sql(self.db.quote(pk[0]), self.cols[pk[0]].info.type)
        lo, hi = self.budget.query(f"SELECT (SELECT MIN({k}) FROM {self.ref}), (SELECT MAX({k}) FROM {self.ref})")[0]
        col = self.cols[pk[0]]
        col.lo, col.hi, col.range_source = jsonable(lo), jsonable(hi), None

    def _exact_figures(self) -> None:
        """Non-NULL count, min and max of every column over the whole table, in statements of
        at most AGGREGATES_PER_STATEMENT aggregates. A column declared NOT NULL needs no
        COUNT of its own, and a single-column primary key's MIN and MAX come from its index
        as scalar subqueries, not a per-row comparison."""
        q, ref, info = self.db.quote, self.ref, self.info
        pk = info.primary_key[0] if len(info.primary_key) == 1 and not info.is_view else None
        for batch in _batches(info.columns, AGGREGATES_PER_STATEMENT // 3):
            parts = []
            for c in batch:
                count = f"COUNT({q(c.name)})" if c.nullable and c.name != self.key else "COUNT(*)"
                v = self.db.value_sql(q(c.name), c.type)
                if c.name == pk:
                    parts.append(f"{count}, (SELECT MIN({v}) FROM {ref}), (SELECT MAX({v}) FROM {ref})")
                else:
                    parts.append(f"{count}, MIN({v}), MAX({v})")
            row = self.budget.query(f"SELECT {', '.join(parts)} FROM {ref}")[0]
            for i, c in enumerate(batch):
                col = self.cols[c.name]
                assert self.total is not None  # (the whole table is read only once counted)
                col.nulls, col.null_source = self.total - int(row[3 * i]), None
                col.lo, col.hi, col.range_source = jsonable(row[3 * i + 1]), jsonable(row[3 * i + 2]), None

    # -- the result ------------------------------------------------------------------------
    def profile(self, base: dict[str, Any]) -> TableProfile:
        columns, missing = [], []
        for col in self.cols.values():
            c = col.info
            cp = ColumnProfile(name=c.name, type=c.type, nullable=c.nullable)
            sources: dict[str, str] = {}
            if col.nulls is None:
                sources["null_count"] = "not measured"
            else:
                cp.null_count = col.nulls
                if col.null_source:
                    sources["null_count"] = col.null_source
            if col.range_source != "not measured" or col.lo is not None:
                cp.min, cp.max = col.lo, col.hi
            if col.range_source:
                sources["min"] = sources["max"] = col.range_source
            if col.distinct is None:
                sources["distinct_count"] = "not measured"
            else:
                cp.distinct_count = col.distinct
                if col.distinct_source:
                    sources["distinct_count"] = col.distinct_source
            if col.top is None:
                sources["top_values"] = sources["stand_ins"] = "not measured"
            else:
                cp.top_values, cp.stand_ins = col.top, col.stand_ins or []
                if col.value_source:
                    sources["top_values"] = sources["stand_ins"] = col.value_source
            cp.sources = sources
            cp.null_estimated = "null_count" in sources
            cp.distinct_estimated = "distinct_count" in sources
            cp.range_estimated = "min" in sources
            if sources.get("distinct_count") == "not measured" or sources.get("null_count") == "not measured":
                missing.append(c.name)
            columns.append(cp)
        used = self.stats is not None and (self.row_source == self.stats.row_source or any(
            self.stats.source in cp.sources.values() for cp in columns))
        statistics = self.stats_note if used or self.stats is None else f"{self.stats_note}; not used"
        sampled = self.total is not None and self.total > self.cfg.sample_threshold
        tp = TableProfile(**base, row_count=self.total or 0, columns=columns, sampled=sampled,
                          sample_size=self.sample_n, sample_method=self.sample_method if self.sample_n is not None
                          else None, row_count_estimated=self.row_source is not None or self.total is None,
                          statistics=statistics, sample_rows=self.sample_rows)
        if self.row_source:
            tp.sources["row_count"] = self.row_source
        elif self.total is None:
            tp.sources["row_count"] = "not measured"
        if self.stop is None and missing:
            tp.partial = f"the figures of {len(missing):,} of {len(columns):,} columns ({_names(missing)}) " \
                         f"were not measured: the sample held no rows"
        if self.stop is not None:
            tp.timed_out = self.stop.timed_out
            what = (f"the figures of {len(missing):,} of {len(columns):,} columns ({_names(missing)})"
                    if missing else "the exact NULL counts and min/max (shown from the sample instead)")
            if self.total is None:
                what = "the row count and every column's figures"
            tp.partial = f"{what} were not measured: {self.stop.why}"
        return tp


def _unique_key(db: Database, info: TableInfo) -> str | None:
    """The table's single-column primary key where it can hold no NULL: on every engine but
    SQLite, and there an INTEGER PRIMARY KEY (the rowid; SQLite lets other key columns hold
    NULLs unless declared NOT NULL)."""
    if len(info.primary_key) != 1 or info.is_view:
        return None
    col = next((c for c in info.columns if c.name == info.primary_key[0]), None)
    if col is None or (db.dialect == "sqlite" and col.nullable and (col.type or "").upper() != "INTEGER"):
        return None
    return col.name


def _names(names: list[str], shown: int = 3) -> str:
    head = ", ".join(names[:shown])
    return head + (f" and {len(names) - shown:,} more" if len(names) > shown else "")


def _batches(items: list[T], size: int) -> list[list[T]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


# -- the grouped pass ---------------------------------------------------------------------

@dataclass
class _Values:
    """What the grouped pass returns for one column: its most frequent values, the few
    lowest and highest, how often 0 occurs and how many rows are NULL — all the stand-in
    test and the figures need."""

    top: list[tuple[Any, int]] = field(default_factory=list)
    distinct: int = 0
    non_null: int = 0
    rows: int = 0  # rows read, NULLs included
    nulls: int = 0
    singles: int = 0  # values that occur exactly once
    low: list[Any] = field(default_factory=list)  # ascending, as jsonable gives them
    high: list[Any] = field(default_factory=list)  # descending
    low_numbers: list[float | int | None] = field(default_factory=list)  # the same as numbers (NaN, ±inf kept)
    high_numbers: list[float | int | None] = field(default_factory=list)
    counts: list[tuple[Any, int]] = field(default_factory=list)  # every value returned, with its count

    def lowest(self) -> Any:
        return self.low[0] if self.low else None

    def highest(self) -> Any:
        return self.high[0] if self.high else None

    def count_of(self, value: Any) -> int:
        return next((n for v, n in self.counts if _same(v, value)), 0)


def _number(value: Any) -> float | int | None:
    """A value as a number the stand-in test can compare (a Decimal, an infinity, a NaN
    included), or None for anything else (booleans too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value) if not value.is_finite() else jsonable(value)
    return None


def _same(a: object, b: object) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return float(x) == float(y)
    return a == b


def _grouped_values(db: Database, budget: _Budget, src: str, cols: list[ColumnInfo], rows: int,
                    on_batch: Callable[[dict[str, _Values], list[ColumnInfo]], object] | None = None
                    ) -> dict[str, _Values]:
    """One GROUP BY (column, value) per batch of columns instead of a query per column: a
    per-column query costs DuckDB a fresh read of a CSV file's header (half a second for
    10,000 columns), and a COUNT(DISTINCT …) per column in one statement costs it a hash
    table each (it crashed on 3,000). The cells of a batch are unpivoted with a CASE over a
    key table, so each statement's work grows as rows × columns², which the batch size
    bounds. On SQLite every column shares one batch (its CASE takes values of any type, and
    each batch reads the sample again); elsewhere columns of one declared type share a
    batch, so the CASE has one result type. ``on_batch(values)`` is told of each batch's
    figures (and its columns) as they arrive, so a budget that runs out keeps the batches
    before it."""
    width = max(1, min(COLUMNS_PER_STATEMENT, math.isqrt(CASE_BUDGET // max(rows, 1))))
    by_type: dict[str, list[ColumnInfo]] = {}
    for c in cols:
        by_type.setdefault("" if db.dialect == "sqlite" else (c.type or ""), []).append(c)
    out: dict[str, _Values] = {}
    for type_name, same_type in by_type.items():
        # Comparing with 0 is only safe where the engine will not try to cast text to a number.
        zero = db.dialect == "sqlite" or _is_numeric(type_name)
        for batch in _batches(same_type, width):
            got: dict[str, _Values] = {}
            for k, v, n, by_n, up, d, non_null, total, singles in budget.query(_grouped_sql(db, src, batch, zero)):
                values = got.setdefault(batch[int(k)].name, _Values(distinct=int(d), non_null=int(non_null or 0),
                                                                    rows=int(total), singles=int(singles or 0)))
                if v is None:
                    values.nulls = int(n)
                    continue
                value = jsonable(v)
                values.counts.append((value, int(n)))
                if by_n <= TOP_VALUES:
                    values.top.append(cast(Any, (int(by_n), value, int(n))))  # ranked: sorted into pairs below
                if up <= EDGE_VALUES:
                    values.low.append((int(up), value, _number(v)))
                if up > d - EDGE_VALUES:  # the values are distinct, so ranking down is ranking up reversed
                    values.high.append((int(d - up), value, _number(v)))
            for values in got.values():
                values.top = [(v, n) for _, v, n in sorted(cast("list[tuple[int, Any, int]]", values.top), key=lambda t: t[0])]
                low = sorted(values.low, key=lambda t: t[0])
                high = sorted(values.high, key=lambda t: t[0])
                values.low, values.low_numbers = [v for _, v, _ in low], [x for _, _, x in low]
                values.high, values.high_numbers = [v for _, v, _ in high], [x for _, _, x in high]
            out.update(got)
            if on_batch is not None:
                on_batch(got, batch)
    return out


def _grouped_sql(db: Database, src: str, batch: list[ColumnInfo], zero: bool) -> str:
    q = db.quote
    # Keys 0…len-1 from a digits table: no recursion (MySQL caps recursive CTEs at 1,000 rows).
    digits = " UNION ALL ".join(f"SELECT {i}" for i in range(10))
    places = max(1, len(str(len(batch) - 1)))
    key = " + ".join(f"{10 ** p} * d{p}.d" for p in range(places))
    joined = ", ".join(f"vouch_digits AS d{p}" for p in range(places))
    # Qualified: a user column named k is otherwise ambiguous with vouch_keys.k in the CROSS JOIN.
    case = " ".join(f"WHEN {i} THEN vouch_src.{q(c.name)}" for i, c in enumerate(batch))
    columns = ", ".join(f"{db.value_sql(q(c.name), c.type)} AS {q(c.name)}" for c in batch)
    # NULLs are a group of their own (the NULL count, and the rows read, come with the
    # values), ranked apart from the values so that engines ordering NULLs first and last agree.
    part = "PARTITION BY k, CASE WHEN v IS NULL THEN 1 ELSE 0 END"
    return (
        f"WITH vouch_digits(d) AS ({digits}), "
        f"vouch_keys(k) AS (SELECT {key} FROM {joined}), "
        f"vouch_src AS (SELECT {columns} FROM {src}), "
        f"vouch_cells AS (SELECT vouch_keys.k AS k, CASE vouch_keys.k {case} END AS v "
        f"FROM vouch_src CROSS JOIN vouch_keys WHERE vouch_keys.k < {len(batch)}), "
        f"vouch_groups AS (SELECT k, v, COUNT(*) AS n FROM vouch_cells GROUP BY k, v), "
        f"vouch_ranked AS (SELECT k, v, n, "
        f"ROW_NUMBER() OVER ({part} ORDER BY n DESC, v) AS by_n, "
        f"ROW_NUMBER() OVER ({part} ORDER BY v) AS up, "
        f"COUNT(v) OVER (PARTITION BY k) AS d, "
        f"SUM(CASE WHEN v IS NULL THEN 0 ELSE n END) OVER (PARTITION BY k) AS non_null, "
        f"SUM(n) OVER (PARTITION BY k) AS total, "
        f"SUM(CASE WHEN n = 1 AND v IS NOT NULL THEN 1 ELSE 0 END) OVER (PARTITION BY k) AS singles "
        f"FROM vouch_groups) "
        f"SELECT k, v, n, by_n, up, d, non_null, total, singles FROM vouch_ranked "
        f"WHERE v IS NULL OR by_n <= {TOP_VALUES} OR up <= {EDGE_VALUES} OR up > d - {EDGE_VALUES}"
        + (" OR v = 0" if zero else ""))


def _statistics_values(cs: ColumnStatistics, total: int) -> _Values:
    """The engine's statistics of a column in the grouped pass's form, scaled to ``total``
    rows: the common values with their counts, the lowest and highest values it saw (the
    common values and the histogram's bounds), its distinct count."""
    counts = [(v, int(round(f * total))) for v, f in cs.common]
    seen: dict[Any, Any] = {}
    for v in [v for v, _ in cs.common] + list(cs.bounds):
        key = _number(v) if _number(v) is not None else v
        seen.setdefault(key, v)
    try:
        ordered = sorted(seen.values(), key=lambda v: (_number(v) is None or math.isnan(cast(float, _number(v))),
                                                       _number(v) if _number(v) is not None else v))
    except TypeError:  # values of more than one kind (should not happen within one column)
        ordered = list(seen.values())
    plain = [x for x in ordered if not (_number(x) is not None and math.isnan(cast(float, _number(x))))]
    non_null = int(round((1 - cs.null_frac) * total))
    low, high = plain[:EDGE_VALUES], plain[::-1][:EDGE_VALUES]
    try:
        top = sorted(counts, key=lambda t: (-t[1], t[0]))[:TOP_VALUES]
    except TypeError:
        top = sorted(counts, key=lambda t: -t[1])[:TOP_VALUES]
    return _Values(top=[(jsonable(v), n) for v, n in top], distinct=min(cs.distinct(total), non_null),
                   non_null=non_null, rows=total, nulls=total - non_null,
                   low=[jsonable(v) for v in low], high=[jsonable(v) for v in high],
                   low_numbers=[_number(v) for v in low], high_numbers=[_number(v) for v in high],
                   counts=[(jsonable(v), n) for v, n in counts])


def _estimate_distinct(d: int, f1: int, n: int, total: int) -> int:
    """Distinct non-NULL values of a column of ``total`` non-NULL values, from a sample of
    ``n`` of them holding ``d`` distinct values, ``f1`` of them once: the Duj1 estimator
    (Haas, Naughton, Seshadri and Stokes, 1995), n·d / (n − f1 + f1·n/N), which PostgreSQL's
    ANALYZE uses too, so a sampled table and pg_stats estimate alike. A sample of all-unique
    values gives N (a key), one with no singletons gives d."""
    if n <= 0 or d <= 0:
        return 0
    if total <= n:
        return d
    estimate = n * d / ((n - f1) + f1 * n / total)
    return int(round(min(max(estimate, d), total)))


# The last word of a column name that says it holds identifiers or codes, where 0 names
# nothing: a 0 there stands in for "unknown". Everywhere else (a population, a price, a
# score, a count) 0 is a value the column means, however rare (an uninhabited territory).
_CODE_WORDS = frozenset({"id", "code", "key", "zip", "postcode", "no"})


def _zero_is_a_code(name: str, low: list[float], high: list[float]) -> bool:
    """Whether 0 can only stand in for "unknown" in this column, by what it means: an
    identifier or code (by its name's last word), or a year (every other value 1000–2999)."""
    from ..words import words_of

    parts = words_of(name).split()
    if parts and parts[-1] in _CODE_WORDS:  # customer_id, CustomerId, postal code
        return True
    others = [x for x in (*low, *high) if x != 0]
    return bool(others) and all(float(x).is_integer() and 1000 <= x <= 2999 for x in others)


def _stand_ins(info: ColumnInfo, values: _Values, non_null_total: int, estimated: bool) -> list[StandIn]:
    """IES §3.2: a value covering ≥ 0.5% of a column whose other values are non-negative
    (for a negative code), much smaller (for a large code), or far from zero (for zero, and
    only where the column cannot mean a true 0: :func:`_zero_is_a_code`). The candidates
    are the column's lowest and highest finite values and 0, from the same values their
    counts come from (the whole column, its sample, or the engine's statistics); a NaN is no
    value to compare, and an infinity beside a code is a value that the code's rule must see.
    Counts are scaled to the table where ``estimated``."""
    lows = [x for x in values.low_numbers if x is None or not math.isnan(x)]
    highs = [x for x in values.high_numbers if x is None or not math.isnan(x)]
    if not lows or not highs or lows[0] is None or highs[0] is None:
        return []  # not a column of numbers at both ends (text beside numbers in SQLite, say)
    low, high = [x for x in lows if x is not None], [x for x in highs if x is not None]
    n = values.non_null
    codes = []
    if math.isfinite(low[0]) and low[0] < 0:
        codes.append(low[0])
    if low[0] <= 0 <= high[0]:
        codes.append(0)
    if math.isfinite(high[0]) and high[0] >= 99:
        codes.append(high[0])
    found = []
    for code in codes:
        hits = values.count_of(code)
        lo = next((v for v in low if not _same(v, code)), None)
        hi = next((v for v in high if not _same(v, code)), None)
        if not n or not hits or lo is None:
            continue
        share = hits / n
        if share < STAND_IN_SHARE:
            continue
        reason = None
        if code < 0 and lo >= 0:
            reason = f"{code:g} in a column whose other values are all ≥ 0"
        elif code == 0 and lo >= 10 and share < 0.5 and _zero_is_a_code(info.name, low, high):
            # A zero that most rows hold is the column's ordinary value (units on order),
            # not a code for "unknown"; nor is a zero the column can mean (a population).
            reason = f"0 in a column whose other values are all ≥ {lo:g}"
        elif code > 0 and hi is not None and math.isfinite(hi) and code >= 10 * max(abs(hi), 1) and (
                set(str(int(code))) == {"9"} or code >= 1000 * max(abs(hi), 1)):
            reason = f"{code:g} in a column whose other values are at most {hi:g}"
        if reason:
            count = int(round(share * non_null_total)) if estimated else int(hits)
            found.append(StandIn(value=code, count=count, share=round(share, 6), reason=reason, estimated=estimated))
    return found


__all__ = ["measure_table"]

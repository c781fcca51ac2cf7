"""The engine's own statistics of a table, read for the profile where they can be trusted.

PostgreSQL keeps them per table and column: ``pg_class.reltuples`` (the row estimate of the
last ANALYZE or VACUUM) and ``pg_stats`` (``null_frac``, ``n_distinct``, the most common
values with their frequencies, and the histogram's bounds), all from ANALYZE's random sample
of about 30,000 rows. They are only as current as that ANALYZE, so they are used only when
**fresh**: the table was analyzed and ``pg_stat_user_tables.n_mod_since_analyze`` (rows
inserted, updated or deleted since) is at most 50 + 10% of its rows — autovacuum's own rule
for when a table is due to be analyzed again (``autovacuum_analyze_threshold`` 50,
``autovacuum_analyze_scale_factor`` 0.1, the defaults). A stale table is sampled instead.

MariaDB/MySQL keep estimates too (``information_schema.TABLES.TABLE_ROWS``, InnoDB's figure
from 20 sampled pages, often tens of percent off, and engine-independent statistics without a
record of when they were taken or what changed since), so nothing of theirs is used as a
figure: they cannot be judged fresh. SQLite keeps none (``sqlite_stat1`` holds index
selectivities only, and only after ANALYZE) and DuckDB's are per row group, not per column
value; both count rows exactly at little cost.
"""

from __future__ import annotations

import decimal
import json
import math
from dataclasses import dataclass, field
from typing import Any

from .catalog import jsonable

# autovacuum's defaults: a table is due for ANALYZE once more rows than this changed.
STALE_ROWS = 50
STALE_SHARE = 0.1


@dataclass
class ColumnStatistics:
    null_frac: float
    n_distinct: float  # PostgreSQL's convention: < 0 is minus the distinct share of the rows
    common: list[tuple[Any, float]] = field(default_factory=list)  # (value, share of all rows)
    bounds: list[Any] = field(default_factory=list)  # histogram bounds, ascending

    def distinct(self, rows: int) -> int:
        return int(round(-self.n_distinct * rows)) if self.n_distinct < 0 else int(round(self.n_distinct))


@dataclass
class TableStatistics:
    source: str  # where the column figures come from ("pg_stats")
    row_source: str  # where the row estimate comes from ("pg_class.reltuples")
    rows: int | None  # the engine's row estimate, None when it has none
    fresh: bool
    note: str  # why they are fresh or not, said in the profile
    # Columns whose values the statistics hold in the profile's own form; the others are
    # sampled (a type whose values JSON does not carry as the profile's queries return them).
    columns: dict[str, ColumnStatistics] = field(default_factory=dict)
    # A guess at the rows now, good enough to choose how to measure (never a figure): the
    # last ANALYZE's rows per page times the pages the table has now, as PostgreSQL's planner
    # reckons, or, never analyzed, the pages times the rows of the declared widths a page holds.
    row_guess: int | None = None


def freshness(analyzed: bool, reltuples: float, modified: int | None) -> tuple[bool, str]:
    """Whether PostgreSQL's statistics of a table may stand in for measuring it, and why."""
    if not analyzed or reltuples < 0:
        return False, "never analyzed"
    if modified is None:
        return False, "no count of the rows changed since the last ANALYZE"
    limit = STALE_ROWS + STALE_SHARE * max(reltuples, 0.0)
    if modified > limit:
        return False, (f"{modified:,} rows changed since the last ANALYZE, more than "
                       f"{STALE_ROWS} + {STALE_SHARE:.0%} of its rows")
    return True, (f"{modified:,} rows changed since the last ANALYZE (at most {STALE_ROWS} + "
                  f"{STALE_SHARE:.0%} of its rows)")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# pg_type categories whose values array_to_json writes as the profile's own queries return
# them (numbers as numbers, text as text, dates and times as ISO text, booleans), and the
# types among them that do not (money is a number category but its JSON is '$1.00' text).
_PG_CATEGORIES = {"N", "S", "D", "B"}
_PG_MONEY = 790
_PG_FLOATS = {700, 701}
_PAGE = 8192
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _json(text: str | None) -> list[Any]:
    # Decimals, so that 1.10 stays the numeric it was until jsonable decides its form.
    return json.loads(text, parse_float=decimal.Decimal, parse_int=decimal.Decimal) if text else []


def postgres_sql(table_sql: str) -> str:
    """One statement: the table's row estimate and freshness, and each column's statistics."""
    regclass = f"to_regclass({_literal(table_sql)})"
    return (
        "SELECT c.reltuples::float8, s.n_mod_since_analyze, "
        "(s.last_analyze IS NOT NULL OR s.last_autoanalyze IS NOT NULL), c.relkind::text, c.relpages::float8, "
        "pg_relation_size(c.oid)::float8 / current_setting('block_size')::float8, t.typlen::int, "
        "a.attname::text, a.atttypid::int, t.typcategory::text, st.null_frac::float8, st.n_distinct::float8, "
        "array_to_json(st.most_common_vals)::text, st.most_common_freqs::float8[], "
        "array_to_json(st.histogram_bounds)::text "
        "FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = c.oid "
        "LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
        # pg_stats is a view over every table's statistics: joined on the outer query's
        # names, PostgreSQL computes all of it (~200 ms with 2,000 tables); given the names
        # as one-row subqueries, it reads only this table's rows through the catalogue's
        # indexes (~10 ms), with the same result.
        "LEFT JOIN (SELECT * FROM pg_catalog.pg_stats s0 WHERE NOT s0.inherited "
        "AND s0.schemaname = (SELECT n0.nspname FROM pg_catalog.pg_class c0 "
        f"JOIN pg_catalog.pg_namespace n0 ON n0.oid = c0.relnamespace WHERE c0.oid = {regclass}) "
        f"AND s0.tablename = (SELECT c0.relname FROM pg_catalog.pg_class c0 WHERE c0.oid = {regclass})) st "
        "ON st.attname = a.attname "
        f"WHERE c.oid = {regclass}")


def postgres_statistics(rows: list[tuple[Any, ...]]) -> TableStatistics | None:
    """The statistics from :func:`postgres_sql`'s rows (None for a view or an unknown table)."""
    if not rows or rows[0][3] not in ("r", "m"):
        return None
    reltuples, modified, analyzed, _, relpages, pages = rows[0][:6]
    fresh, note = freshness(analyzed, float(reltuples), None if modified is None else int(modified))
    columns: dict[str, ColumnStatistics] = {}
    for *_, name, type_oid, category, null_frac, n_distinct, mcv, mcf, hist in rows:
        if name is None or null_frac is None or category not in _PG_CATEGORIES or type_oid == _PG_MONEY:
            continue

        def value(v: Any, numeric: bool = category == "N", floating: bool = type_oid in _PG_FLOATS) -> Any:
            # As the profile's own queries return them: a numeric as an int when whole, a
            # float8 as a float, NaN and infinities as floats (jsonable makes them text).
            if not numeric:
                return v
            if isinstance(v, str):
                return _NON_FINITE.get(v, v)
            return float(v) if floating else jsonable(v)

        common = [(value(v), float(f)) for v, f in zip(_json(mcv), mcf or [])]
        bounds = [value(v) for v in _json(hist)]
        columns[name] = ColumnStatistics(float(null_frac), float(n_distinct), common, bounds)
    rows_estimate = int(round(reltuples)) if reltuples >= 0 else None
    if reltuples >= 0 and relpages and relpages > 0:
        guess = reltuples / relpages * pages
    else:
        # A heap tuple: a 24-byte header and a 4-byte line pointer, then its columns (a
        # variable-length value taken as 32 bytes), in a page less its 24-byte header.
        width = 28 + sum(r[6] if r[6] and r[6] > 0 else 32 for r in rows if r[7] is not None)
        guess = pages * ((_PAGE - 24) // max(width, 1))
    return TableStatistics(source="pg_stats", row_source="pg_class.reltuples", rows=rows_estimate,
                           fresh=fresh, note=f"pg_stats: {'fresh' if fresh else 'stale'} ({note})",
                           columns=columns, row_guess=int(guess))


__all__ = ["ColumnStatistics", "TableStatistics", "freshness", "postgres_sql", "postgres_statistics",
           "STALE_ROWS", "STALE_SHARE"]

"""A measured table's figures — row count, each column's NULLs, distinct count, range, top
values and stand-in codes — as the profile keeps and caches them, and what a declared type
holds. The data model only: :mod:`.measure` fills it, :mod:`.profile` keeps it."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from ..factories import new_list

TOP_VALUES = 5
SAMPLE_ROWS_SHOWN = 3
STAND_IN_SHARE = 0.005  # IES §3.2: a code must cover at least 0.5% of the column
# Declared types of numbers, as whole words of the type's name on every engine (SMALLINT,
# INT8, UBIGINT, HUGEINT, BIGINT UNSIGNED, DOUBLE PRECISION, FLOAT4, NUMERIC(10,2), DECIMAL,
# MONEY): a bare "INT" anywhere also matched INTERVAL and POINT, whose comparison with 0 then
# failed the table's whole profile on PostgreSQL.
_INTEGER_WORD = r"U?(?:TINY|SMALL|MEDIUM|BIG|HUGE)?INT(?:EGER)?\d*|(?:SMALL|BIG)?SERIAL\d*"
_NUMERIC_TYPES = (rf"(?<![A-Z])(?:{_INTEGER_WORD}|REAL|FLOAT\d*|DOUBLE|NUMERIC|NUMBER|DECIMAL|DEC|"
                  rf"FIXED|(?:SMALL)?MONEY)(?![A-Z])")
# What a value of a declared type computes like (a boolean sums and compares as 0/1).
_INTEGER_LIKE = rf"(?<![A-Z])(?:{_INTEGER_WORD}|BOOL(?:EAN)?)(?![A-Z])"
_NUMBER_LIKE = rf"{_NUMERIC_TYPES}|(?<![A-Z])BOOL(?:EAN)?(?![A-Z])"
_COMPOSITE = r"\s*(?:STRUCT|MAP|LIST|UNION|ARRAY)\b"


@cache
def _rx(pattern: str) -> re.Pattern[str]:
    """One of the type patterns above, compiled case-insensitively on first use: a check that
    reads no column's type needs none of them, and compiling the four at import cost ≈ 16 M
    instructions of every ``vouch check`` start-up (``bench/startup.py --instructions``)."""
    return re.compile(pattern, re.I)


class StandIn(BaseModel):
    value: float | int
    count: int  # rows holding the code (scaled to the table where ``estimated``)
    share: float  # of the column's non-NULL values
    reason: str
    estimated: bool = False


class ColumnProfile(BaseModel):
    name: str
    type: str
    nullable: bool = True
    null_count: int = 0
    distinct_count: int = 0
    distinct_estimated: bool = False
    min: Any = None
    max: Any = None
    top_values: list[tuple[Any, int]] = Field(default_factory=new_list)
    stand_ins: list[StandIn] = Field(default_factory=new_list)
    comment: str | None = None
    # Estimates besides distinct_count: the NULL count, and min/max (together, "range").
    null_estimated: bool = False
    range_estimated: bool = False
    # Where each figure that is not exact came from, by field name: "sample" (the table's
    # sample), "pg_stats" (the engine's fresh statistics) or "not measured" (the table's
    # budget ran out first). A field not named is exact.
    sources: dict[str, str] = Field(default_factory=dict)

    def may_have_nulls(self) -> bool:
        """Whether the column may hold NULLs: it has some, or its NULL count is an estimate
        of a nullable column (a sample that saw none does not prove there are none)."""
        return self.null_count > 0 or (self.null_estimated and self.nullable)

    def is_integer(self) -> bool:
        """Whether the declared type computes as integers (booleans too): ``a / b`` of two
        such columns is an integer division on most engines."""
        return bool(_rx(_INTEGER_LIKE).search(self.type or ""))

    def is_number(self) -> bool:
        """Whether the declared type holds numbers (booleans too)."""
        return bool(_rx(_NUMBER_LIKE).search(self.type or ""))


class ForeignKey(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


class TableProfile(BaseModel):
    name: str
    # The schema holding the table, None for the default schema (named unqualified in SQL).
    # Not called ``schema``: that name is taken on pydantic's BaseModel.
    schema_name: str | None = None
    is_view: bool = False
    row_count: int
    primary_key: list[str] = Field(default_factory=new_list)
    foreign_keys: list[ForeignKey] = Field(default_factory=new_list)
    columns: list[ColumnProfile]
    sampled: bool = False  # some figures are estimates (from a sample or the engine's statistics)
    sample_size: int | None = None  # rows in the sample the estimates read (None: none read)
    sample_method: str | None = None  # how that sample was drawn ("rowid lookups", "TABLESAMPLE SYSTEM", …)
    row_count_estimated: bool = False
    # Where the table's own estimated figures came from ({"row_count": "pg_class.reltuples"}).
    sources: dict[str, str] = Field(default_factory=dict)
    statistics: str | None = None  # the engine's statistics and whether they were used, and why
    # What was not measured and why (the table's statement budget, or profile_timeout); None
    # when every figure was. ``timed_out``: cut short by the clock, so it may differ next time.
    partial: str | None = None
    timed_out: bool = False
    sample_rows: list[list[Any]] = Field(default_factory=new_list)
    error: str | None = None
    comment: str | None = None
    # False for a table known from the catalogue only (names, types, keys): its figures are
    # measured when a query reads it or joins next to it (see Profile.table).
    measured: bool = True

    @property
    def qualified(self) -> str:
        """``schema.name``, or ``name`` in the default schema: the table's key everywhere."""
        return f"{self.schema_name}.{self.name}" if self.schema_name else self.name

    def column(self, name: str) -> ColumnProfile | None:
        low = name.lower()
        return next((c for c in self.columns if c.name.lower() == low), None)


def _is_numeric(type_name: str) -> bool:
    """Whether a declared type holds numbers (not a list or struct of them)."""
    t = type_name or ""
    return "[" not in t and not _rx(_COMPOSITE).match(t) and bool(_rx(_NUMERIC_TYPES).search(t))


"""What the catalogue says about a table — its columns, keys, comments and schema — and how an
engine's values become JSON. Plain data, shared by the engines (:mod:`.base`), the profile and
its measurements; imports none of them."""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ColumnInfo:
    name: str
    type: str
    nullable: bool = True
    comment: str | None = None  # the engine's column comment, where it keeps one


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
    # The schema (Spark: database) holding the table; None for the default schema, whose
    # tables a query names unqualified. A foreign key's ref_table is qualified the same way.
    schema: str | None = None
    comment: str | None = None  # the engine's table comment, where it keeps one

    @property
    def qualified(self) -> str:
        """``schema.name``, or ``name`` in the default schema: the table's key everywhere."""
        return f"{self.schema}.{self.name}" if self.schema else self.name


def jsonable(value: Any) -> Any:
    """Engine values → JSON-safe values, keeping numbers as numbers."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():  # NUMERIC 'NaN' / 'Infinity': as a float's, a string
            return str(float(value))
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

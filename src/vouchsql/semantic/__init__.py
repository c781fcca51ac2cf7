"""Semantic layers read as Vouch definitions (issue 30): Snowflake Cortex Analyst semantic
models (:mod:`.cortex`), dbt MetricFlow semantic models and metrics (:mod:`.dbt`) and WrenAI
MDL (:mod:`.wren`), each mapped to terms, notes, column words and sample values, logical
tables, verified queries and what `vouch definitions check` runs (:mod:`.model`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import cortex, dbt, wren
from .model import LogicalTable, Mapped, Runnable, VerifiedQuery, logical_sql
from .source import Where, load_structured, read_text


def read_semantic(data: Any, path: Path) -> Mapped | None:
    """The semantic layer ``data`` (read from ``path``) holds, or None when it is none of the
    three formats (Vouch's own definitions)."""
    where = Where(path)
    if cortex.is_cortex(data):
        return cortex.read(data, where)
    if wren.is_wren(data):
        return wren.read(data, where)
    if dbt.is_dbt(data):
        return dbt.read([(data, where)])
    return None


def read_dbt_project(folder: Path) -> Mapped:
    return dbt.read_project(folder)


__all__ = ["LogicalTable", "Mapped", "Runnable", "VerifiedQuery", "logical_sql", "read_semantic",
           "read_dbt_project", "load_structured", "read_text"]

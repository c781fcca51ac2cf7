"""Shared reading for the two join-shape signals: the outer SELECT, its tables and the
entity key of a table, and running a count probe."""

from __future__ import annotations

from sqlglot import exp

from ..errors import VouchError
from ..sql.edit import base_tables
from .base import CheckContext


def outer_select(ctx: CheckContext) -> exp.Select | None:
    insp = ctx.inspection
    if insp is None or not insp.qualified_ok or not isinstance(insp.qualified, exp.Select):
        return None
    select = insp.qualified
    return select if select.args.get("joins") else None


def alias_for(select: exp.Select, table: str) -> str | None:
    """The alias of ``table`` in this SELECT, when it appears exactly once."""
    hits = [t for t in base_tables(select) if t.name.lower() == table.lower()]
    return hits[0].alias_or_name if len(hits) == 1 else None


def run_counts(ctx: CheckContext, probe: exp.Select) -> tuple | None:
    try:
        rows = ctx.db.query(probe.sql(dialect=ctx.db.dialect), timeout=ctx.db.config.timeout, from_tree=True)
    except VouchError:
        return None
    return tuple(rows[0]) if rows else None

"""Shared reading for the two join-shape signals: the outer SELECT, its tables and the
entity key of a table, what the query groups by, and running a count probe."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..db.profile import Profile
from ..errors import VouchError
from ..sql.edit import base_tables, conjuncts, from_node
from ..sql.inspect import table_key
from .base import CheckContext


def outer_select(ctx: CheckContext) -> exp.Select | None:
    insp = ctx.inspection
    if insp is None or not insp.qualified_ok or not isinstance(insp.qualified, exp.Select):
        return None
    select = insp.qualified
    return select if select.args.get("joins") else None


def alias_for(select: exp.Select, table: str, profile: Profile | None = None) -> str | None:
    """The alias of ``table`` (the profile's key: ``schema.table`` outside the default schema)
    in this SELECT, when it appears exactly once."""
    keys = tables_by_alias(select, profile)
    hits = [t for t in base_tables(select) if keys[t.alias_or_name.lower()].lower() == table.lower()]
    return hits[0].alias_or_name if len(hits) == 1 else None


def tables_by_alias(select: exp.Select, profile: Profile | None = None) -> dict[str, str]:
    """Alias (lower case) → the table's key (as the profile keys it, when it knows the table:
    ``schema.table`` outside the default schema), for the plain tables of this SELECT."""
    out: dict[str, str] = {}
    schema = profile.default_schema if profile is not None else None
    for t in base_tables(select):
        key = table_key(t, schema)
        known = profile.find(key) if profile is not None else None
        out[t.alias_or_name.lower()] = known.qualified if known is not None else key
    return out




def _col(node: exp.Expr) -> tuple[str, str] | None:
    if isinstance(node, exp.Column) and node.table and not isinstance(node.this, exp.Star):
        return node.table.lower(), node.name.lower()
    return None


def inner_equalities(select: exp.Select) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Column pairs an inner join (``JOIN … ON``, or ``WHERE a.x = b.y``) makes equal."""
    out = []
    conds = []
    for join in select.args.get("joins") or []:
        if (join.side or "").upper() in ("LEFT", "RIGHT", "FULL"):
            continue
        conds += conjuncts(join.args.get("on"))
    conds += conjuncts(select.args.get("where"))
    for c in conds:
        if isinstance(c, exp.EQ):
            a, b = _col(c.left), _col(c.right)
            if a and b and a[0] != b[0]:
                out.append((a, b))
    return out


def group_keys(select: exp.Select) -> list[set[tuple[str, str]] | None]:
    """Per GROUP BY expression, the (alias, column) pairs, lower case, that hold its value:
    the column, the columns of a ``COALESCE`` (how a qualified ``JOIN … USING`` key reads),
    and every column an inner join makes equal to one of those; ``None`` for an expression
    that is not a column."""
    group = select.args.get("group")
    pairs = inner_equalities(select)
    out: list[set[tuple[str, str]] | None] = []
    for g in group.expressions if group else []:
        parts = [g.this] + list(g.expressions) if isinstance(g, exp.Coalesce) else [g]
        cols = [_col(p) for p in parts]
        if not all(cols):
            out.append(None)
            continue
        same: set[tuple[str, str]] = set(cols)  # type: ignore[arg-type]
        changed = True
        while changed:
            changed = False
            for a, b in pairs:
                for x, y in ((a, b), (b, a)):
                    if x in same and y not in same:
                        same.add(y)
                        changed = True
        out.append(same)
    return out


def grouped_columns(select: exp.Select) -> set[tuple[str, str]]:
    """Every (alias, column) pair, lower case, that holds a GROUP BY value (:func:`group_keys`)."""
    return {c for same in group_keys(select) if same for c in same}


def grouped_entities(ctx: CheckContext, select: exp.Select) -> set[str]:
    """Aliases (lower case) whose rows the SELECT groups one by one: it groups by the table's
    key or by a column unique in it."""

    tables = tables_by_alias(select, ctx.profile)
    out = set()
    for alias, col in grouped_columns(select):
        table = tables.get(alias)
        if table is None:
            continue
        key = ctx.profile.entity_key(table)
        if (key is not None and key.lower() == col) or ctx.profile.is_unique(table, col):
            out.add(alias)
    return out


def driving_alias(select: exp.Select) -> str | None:
    f = from_node(select)
    node = f.this if f is not None else None
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        return node.alias_or_name
    return None


def run_counts(ctx: CheckContext, probe: exp.Select) -> tuple[Any, ...] | None:
    try:
        rows = ctx.probe.rows(probe)
    except VouchError:
        return None
    return tuple(rows[0]) if rows else None

"""Cap: on SQLite, numbers stored as text are compared and ranked as text, and the answer
changes when they are read as numbers.

A column declared ``TEXT`` (or ``VARCHAR``, or with no type) that holds numbers as strings
(``'46'``, ``'150'``, ``'null'``) is compared by SQLite's affinity rules: in ``Horsepower >
150`` the 150 becomes the text ``'150'``, so ``'46' > '150'`` holds and ``'230' > '150'`` does
not decide by size; ``MAX(Horsepower)`` is ``'98'``, and ``ORDER BY Horsepower DESC LIMIT 1``
keeps it. Agreement cannot see it: every sample writes the same comparison.

Read on SQLite only (PostgreSQL refuses such a comparison, MariaDB and DuckDB convert the text
to a number): each ordering comparison of such a column with a number, each MIN/MAX of one and
each ORDER BY key of a SELECT with a LIMIT. The SQL runs again with those columns read as
numbers (``CAST(x AS REAL)``), and the check fires only where the answer changes, showing both.
A column is such a column when the profile's most frequent values include a number written as
text.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from ..agreement import strict_match
from ..answer import CheckResult
from ..sql.edit import base_tables
from ..sql.inspect import table_key
from ..sql.tree import limit_value, own_nodes, selects, twin
from . import evidence as ev
from .base import CheckContext, report, unparsed
from .unmatched_literal import brief

_ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE)
# SQLite's affinity: a declared type with CHAR, CLOB or TEXT is TEXT; none at all is BLOB
_TEXT_AFFINITY = re.compile(r"CHAR|CLOB|TEXT", re.I)
_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _number(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_number


class NumbersAsText:
    name = "numbers_as_text"
    kind = "cap"
    Evidence = ev.NumbersAsTextEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        if ctx.probe.engine != "sqlite":
            return report(self, False, "not measured: only SQLite compares numbers stored as text as text",
                          columns=[], uses=[])
        sites: list[exp.Column] = []
        uses: list[str] = []
        dialect = ctx.probe.dialect
        for select in selects(ctx.tree):
            for node in own_nodes(select, exp.Binary):
                if not isinstance(node, _ORDERING):
                    continue
                sides: tuple[tuple[exp.Expression, exp.Expression], ...] = (
                    (node.this, node.expression), (node.expression, node.this))
                for col, against in sides:
                    if isinstance(col, exp.Column) and _number(against) and self._text_numbers(ctx, select, col):
                        sites.append(col)
                        uses.append(node.sql(dialect=dialect))
            for between in own_nodes(select, exp.Between):
                col = between.this
                if (isinstance(col, exp.Column) and _number(between.args["low"]) and _number(between.args["high"])
                        and self._text_numbers(ctx, select, col)):
                    sites.append(col)
                    uses.append(between.sql(dialect=dialect))
            for agg in own_nodes(select, (exp.Max, exp.Min)):
                if isinstance(agg.this, exp.Column) and self._text_numbers(ctx, select, agg.this):
                    sites.append(agg.this)
                    uses.append(agg.sql(dialect=dialect))
            order = select.args.get("order")
            if order is not None and limit_value(select) is not None:
                for o in order.expressions:
                    if isinstance(o.this, exp.Column) and self._text_numbers(ctx, select, o.this):
                        sites.append(o.this)
                        uses.append(f"ORDER BY {o.sql(dialect=dialect)} LIMIT {limit_value(select)}")
        if not sites:
            return report(self, False, "no number stored as text is compared or ranked", columns=[], uses=[])
        columns = sorted({c.sql(dialect=dialect) for c in sites})
        tree = ctx.tree.copy()
        for col in sites + self._matched_with(ctx, sites):
            target = twin(tree, ctx.tree, col)
            assert target is not None  # col is in ctx.tree, so its copy has a twin
            target.replace(exp.Cast(this=target.copy(), to=exp.DataType.build("REAL")))
        other = ctx.probe.run(tree)
        shown = ctx.result
        if other.error is not None or shown.error is not None or shown.truncated or other.truncated:
            return report(self, False, f"not measured: {', '.join(uses)} (the query read as numbers did not run "
                                       f"whole)", columns=columns, uses=uses)
        if strict_match(shown, other):
            return report(self, False, f"{', '.join(columns)} stored as text; {', '.join(uses)} gives the same "
                                       f"answer read as numbers", columns=columns, uses=uses)
        return report(self, True, f"{', '.join(columns)} holds numbers stored as text, so SQLite compares and ranks "
                                  f"them as text in {', '.join(uses)} (as text '9' > '10'); read as numbers "
                                  f"(CAST(… AS REAL)) the answer is {brief(other)} instead of {brief(shown)}",
                      columns=columns, uses=uses, as_numbers=brief(other), shown=brief(shown))

    def _matched_with(self, ctx: CheckContext, sites: list[exp.Column]) -> list[exp.Column]:
        """The other places the SQL compares the same columns with something that is not a
        string (``Age = (SELECT MIN(Age) …)``, ``a.x = b.x``, ``x IN (…)``): read as numbers
        too, so the edit changes how the values rank and nothing else."""
        assert ctx.tree is not None
        names = {c.name.lower() for c in sites}
        found: list[exp.Column] = []
        for col in ctx.tree.find_all(exp.Column):
            if any(col is s for s in sites) or col.name.lower() not in names or not isinstance(col.parent, (exp.EQ, exp.NEQ, exp.In)):
                continue
            cmp = col.parent
            others = [cmp.expression] if isinstance(cmp, (exp.EQ, exp.NEQ)) else list(cmp.expressions)
            if isinstance(cmp, (exp.EQ, exp.NEQ)) and cmp.expression is col:
                others = [cmp.this]
            if isinstance(cmp, exp.In) and cmp.this is not col:
                continue
            if any(isinstance(o, exp.Literal) and o.is_string for o in others):
                continue
            select = col.find_ancestor(exp.Select)
            if isinstance(select, exp.Select) and self._text_numbers(ctx, select, col):
                found.append(col)
        return found

    @staticmethod
    def _text_numbers(ctx: CheckContext, select: exp.Select, col: exp.Column) -> bool:
        """Whether ``col`` (in ``select``) is a column of text affinity whose frequent values
        include a number written as text."""
        tables = base_tables(select)
        if col.table:
            tables = [t for t in tables if (t.alias_or_name or "").lower() == col.table.lower()]
        found: list[Any] = []
        for t in tables:
            tp = ctx.profile.table(table_key(t, ctx.profile.default_schema))
            cp = tp.column(col.name) if tp is not None else None
            if cp is not None:
                found.append(cp)
        if len(found) != 1:
            return False
        cp = found[0]
        if (cp.type or "").strip() and not _TEXT_AFFINITY.search(cp.type):
            return False
        return any(isinstance(v, str) and _NUMBER.fullmatch(v) for v, _n in cp.top_values)

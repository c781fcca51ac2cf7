"""Cap: the SQL counts rows per group where every group is one row, so the count is decided by
the schema, not by the data.

A SELECT that reads one table, with no join, and groups by every column of that table's
primary key makes each group exactly one row. ``COUNT(*)`` is then 1 in every group, and
``COUNT(x)`` (or ``COUNT(DISTINCT x)``) is 0 or 1. So:

- **never**: a HAVING comparison of such a count that no possible count satisfies
  (``GROUP BY id HAVING COUNT(*) > 2``) keeps nothing, whatever the data;
- **order**: ``ORDER BY COUNT(*) … LIMIT n``, the count as the first key, ranks groups whose
  counts are all 1, so the rows it keeps are an arbitrary pick.

A comparison every possible count satisfies (``HAVING COUNT(*) >= 1``) filters nothing: the
answer is the unfiltered one, right where no filter was meant, so it is not judged; nor is a
count after the first ORDER BY key (a tie-breaker that breaks nothing).

Each is the shape of a count meant over another table ("channels with more than two series",
"the program with the most students") written over the one table that names the entity. Only
the catalogue's primary key is used: a column that merely happens to hold distinct values
today says nothing about what a count per group of it means. Nothing is run.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from ..answer import CheckResult
from ..sql.edit import base_tables, driving_table
from ..sql.inspect import table_key
from ..sql.tree import expand_key, limit_value, literal_value, own_nodes, selects
from . import evidence as ev
from .base import CheckContext, report, unparsed

_OPS: dict[type[exp.Binary], Callable[[float, float], bool]] = {
    exp.GT: operator.gt, exp.GTE: operator.ge, exp.LT: operator.lt, exp.LTE: operator.le,
    exp.EQ: operator.eq, exp.NEQ: operator.ne}
# ``count OP n`` written the other way round, ``n OP count``
_FLIP: dict[type[exp.Binary], Callable[[float, float], bool]] = {
    exp.GT: operator.lt, exp.GTE: operator.le, exp.LT: operator.gt, exp.LTE: operator.ge,
    exp.EQ: operator.eq, exp.NEQ: operator.ne}


def _number(node: exp.Expression) -> float | None:
    """A number written as a literal (``2``, ``-1``, ``(3)``), else None."""
    value = literal_value(node.unnest())
    return value if isinstance(value, float) else None


def _counts(node: exp.Expression) -> tuple[int, ...] | None:
    """The values a count can take in a one-row group: (1,) for COUNT(*), (0, 1) for COUNT(x)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Count):
        return None
    arg = node.this
    return (1,) if isinstance(arg, exp.Star) else (0, 1)


class OneRowGroups:
    name = "one_row_groups"
    kind = "cap"
    Evidence = ev.OneRowGroupsEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        dialect = ctx.probe.dialect
        ctes = {c.alias_or_name.lower() for c in ctx.tree.find_all(exp.CTE)}
        findings: list[dict[str, Any]] = []
        for select in selects(ctx.tree):
            key = self._one_row_key(ctx, select, ctes)
            if key is None:
                continue
            table, columns = key
            grouped = f"GROUP BY {', '.join(columns)} makes each group one row of {table} (its primary key)"
            having = select.args.get("having")
            comparisons: list[exp.Binary] = [
                n for n in (own_nodes(having, exp.Binary) if having is not None else []) if type(n) in _OPS]
            for cmp in comparisons:
                if not self._never(cmp):
                    continue
                sql: str = cmp.sql(dialect=dialect)
                findings.append({"kind": "never", "table": table, "condition": sql,
                                 "problem": f"{grouped}, so HAVING {sql} keeps no group, whatever the data"})
            order = select.args.get("order")
            if order is not None and order.expressions and limit_value(select) is not None:
                counted = expand_key(select, order.expressions[0].this)
                if _counts(counted) == (1,):
                    sql = counted.sql(dialect=dialect)
                    findings.append({"kind": "order", "table": table, "condition": sql,
                                     "problem": f"{grouped}, so {sql} is 1 in every group and the "
                                                f"LIMIT keeps an arbitrary pick"})
        if findings:
            detail = "; ".join(f["problem"] for f in findings) + (
                ": the count the question means is of rows of another table, joined to this one")
            return report(self, True, detail, findings=findings)
        return report(self, False, "no count over groups of one row", findings=[])

    @staticmethod
    def _one_row_key(ctx: CheckContext, select: exp.Select, ctes: set[str]) -> tuple[str, list[str]] | None:
        """(table, its primary key columns) where ``select`` reads that one table, with no
        join, and groups by every column of its primary key; else None."""
        group = select.args.get("group")
        table = driving_table(select)
        if group is None or table is None or len(base_tables(select)) != 1 or select.args.get("joins"):
            return None
        if table.name.lower() in ctes and not table.db:
            return None
        tp = ctx.profile.find(table_key(table, ctx.profile.default_schema))
        if tp is None or tp.is_view or not tp.primary_key:
            return None
        # a GROUP BY name binds to the table's column before an output alias (SQLite, PostgreSQL)
        grouped = {e.name.lower() for e in group.expressions if isinstance(e, exp.Column)}
        if not all(c.lower() in grouped for c in tp.primary_key):
            return None
        return tp.name, list(tp.primary_key)

    @staticmethod
    def _never(cmp: exp.Binary) -> bool:
        """Whether no count a one-row group can have satisfies the comparison of a count with
        a number."""
        left, right = cmp.this, cmp.expression
        counts, number, op = _counts(left), _number(right), _OPS[type(cmp)]
        if counts is None:
            counts, number, op = _counts(right), _number(left), _FLIP[type(cmp)]
        if counts is None or number is None:
            return False
        return not any(op(c, number) for c in counts)

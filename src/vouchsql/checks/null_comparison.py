"""Veto: the SQL compares with NULL where the comparison can never be true, so the filter or
branch it guards keeps nothing, whatever the data.

- ``x = NULL``, ``x <> NULL``, ``x > NULL`` … and ``CASE x WHEN NULL``: a comparison with NULL
  is unknown, never true (``x IS NULL`` is what finds the missing values);
- ``x NOT IN (…, NULL)``: true for no row, since ``x <> NULL`` is unknown for every ``x``;
- ``x NOT IN (SELECT c …)`` where the subquery returns a NULL: the same, found by running the
  subquery (uncorrelated ones only) with ``c IS NULL``. ``NOT EXISTS`` is the form that keeps
  the rows.

Syntax settles the first two without running anything; the third is "not measured" where the
probe cannot run. MySQL's null-safe ``<=>`` is another operator and never fires.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import build_scope

from ..answer import CheckResult
from ..errors import VouchError
from . import evidence as ev
from .base import CheckContext, report, unparsed

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _null(node: exp.Expression | None) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Null)


def null_comparisons(tree: exp.Expression, dialect: str | None) -> list[str]:
    """Each comparison in ``tree`` that can never be true because one side is NULL, as SQL."""
    found: list[str] = []
    node: exp.Expr  # a comparison, then a NOT
    for node in tree.find_all(*_COMPARISONS):
        if _null(node.this) or _null(node.expression):
            found.append(node.sql(dialect=dialect))
    for case in tree.find_all(exp.Case):
        if case.this is not None:
            for when in case.args.get("ifs") or []:
                if _null(when.this):
                    found.append(f"CASE {case.this.sql(dialect=dialect)} WHEN NULL")
    for node in tree.find_all(exp.Not):
        inner = node.this
        if isinstance(inner, exp.In) and any(_null(v) for v in inner.expressions):
            found.append(node.sql(dialect=dialect))
    return list(dict.fromkeys(found))


def _not_in_subqueries(tree: exp.Expression) -> list[tuple[exp.Not, exp.Select]]:
    out = []
    for node in tree.find_all(exp.Not):
        inner = node.this
        query = inner.args.get("query") if isinstance(inner, exp.In) else None
        select = query.this if isinstance(query, exp.Subquery) else query
        if isinstance(select, exp.Select) and len(select.expressions) == 1:
            out.append((node, select))
    return out


def _returns_null(ctx: CheckContext, select: exp.Select) -> bool | None:
    """Whether the uncorrelated subquery ``select`` returns a NULL; None if that cannot be
    known (a correlated subquery, a probe error)."""
    scope = build_scope(select.copy())
    if scope is None or scope.external_columns:
        return None
    inner = select.copy()
    value = inner.expressions[0]
    inner.set("expressions", [exp.alias_(value.unalias() if isinstance(value, exp.Alias) else value, "vouch_v")])
    probe = (exp.select(exp.Literal.number(1)).from_(exp.Subquery(this=inner, alias=exp.TableAlias(
        this=exp.to_identifier("vouch_s")))).where(exp.column("vouch_v", "vouch_s").is_(exp.null())).limit(1))
    try:
        rows = ctx.probe.rows(probe, max_rows=1)
    except VouchError:
        return None
    return bool(rows)


class NullComparison:
    name = "null_comparison"
    kind = "veto"
    Evidence = ev.NullComparisonEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None or ctx.inspection is None:
            return unparsed(self)
        dialect = ctx.probe.dialect
        never = null_comparisons(ctx.tree, dialect)
        not_measured: list[str] = []
        # The qualified tree names each column's table, so a correlated subquery is told apart
        # (The same NOT INs, in the same order, in the tree as written name them for the user.)
        written_nodes = _not_in_subqueries(ctx.tree)
        qualified = _not_in_subqueries(ctx.inspection.qualified) if ctx.inspection.qualified_ok else []
        for (shown, _), (_node, select) in zip(written_nodes, qualified if len(qualified) == len(written_nodes) else []):
            null = _returns_null(ctx, select)
            written = shown.this.this.sql(dialect=dialect)
            if null:
                never.append(f"{written} NOT IN (a subquery that returns NULL)")
            elif null is None:
                not_measured.append(f"{written} NOT IN (…)")
        if never:
            return report(self, True, f"{'; '.join(never)}: never true, since a comparison with NULL is unknown, "
                                      f"so it keeps nothing; write IS NULL / IS NOT NULL, or NOT EXISTS for "
                                      f"NOT IN (subquery)", comparisons=never, not_measured=not_measured)
        if not_measured:
            return report(self, False, f"not measured: {'; '.join(not_measured)} (a correlated subquery, or "
                                       f"the probe failed)", comparisons=[], not_measured=not_measured)
        return report(self, False, "no comparison with NULL", comparisons=[], not_measured=[])

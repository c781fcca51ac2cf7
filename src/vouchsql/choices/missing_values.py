"""Missing values: keep or skip NULLs? (SpecBridge: "missing values").

Forms read, per SELECT of the tree, only for columns of a table that holds NULLs in that
column (the profile's null count; a column NULL only because of an outer join is the
population scope's business and is skipped):

- ``GROUP BY col``: the NULL rows form a group of their own; the alternative adds
  ``WHERE col IS NOT NULL``. For the outer SELECT the shown result says whether a NULL group
  is there at all (nothing runs when it is not). The reverse: ``WHERE col IS NOT NULL`` with
  ``GROUP BY col``; the alternative drops that condition and keeps the NULL group.
- ``AVG(col)`` skips NULLs; the alternative treats them as zero, ``AVG(COALESCE(col, 0))``.
  ``COUNT(col)`` skips NULLs; the alternative counts them, ``COUNT(*)``.
- ``col <> v``, ``NOT col = v``, ``col NOT IN (…)``, ``col NOT LIKE …`` silently drop the rows
  where col is NULL; the alternative adds ``OR col IS NULL``. So does a comparison of two
  columns (``ShippedDate >= RequiredDate``: an order not shipped yet is silently not late),
  for each side that holds NULLs and is not a key column.

For the last two, one COUNT of the rows in the query's scope where col is NULL comes first;
when there are none the alternative is not run.
"""

from __future__ import annotations

from typing import Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..sql.edit import conjuncts, count_star, reshape
from ..sql.scope import Ref, Scope
from ..sql.tree import edit_copy, expand_key, null_supplied, own_nodes, projection_for, selects, set_where
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon


class MissingValues:
    type = "missing_values"
    lexicon = Lexicon(phrases=("missing", "unknown", "null", "nulls", "blank", "blanks", "empty", "not recorded",
                               "unrecorded", "unspecified", "no value", "without a value", "as zero", "as 0",
                               "n/a", "known", "recorded", "non-null", "not null"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        for select in selects(ctx.tree):
            scope = Scope(select, ctx.profile)
            if not scope.by_alias:
                continue
            outer = null_supplied(select)
            for finder in (self._group, self._aggregates, self._filters):
                yield from finder(ctx, select, scope, outer)

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        assert site.select is not None  # the SELECT read
        alt_root, alt = edit_copy(tree, site.select)
        where_parts = conjuncts(site.select.args.get("where"))
        if site.form == "keep_null_group":
            set_where(alt, [p.copy() for p in where_parts if p is not site.node])
        elif site.form == "drop_null_group":
            set_where(alt, [p.copy() for p in where_parts] + [exp.Not(this=exp.Is(this=site.col.copy(),
                                                                                  expression=exp.Null()))])
        elif site.form == "aggregate":
            for node in own_nodes(alt, type(cast(exp.Expression, site.node))):  # the AVG or COUNT
                if node == site.node:
                    node.replace(site.new.copy())
        else:  # "filter": keep the rows where the filtered column is NULL
            set_where(alt, [exp.Paren(this=exp.Or(this=p.copy(), expression=exp.Is(this=site.col.copy(),
                                                                                    expression=exp.Null())))
                            if p is site.node else p.copy() for p in where_parts])
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        col_sql, column, nulls = site.sql(site.col), site.ref.column, site.nulls
        if site.form == "keep_null_group":
            return (f"the query leaves out rows with no {column} ({col_sql} IS NOT NULL); the "
                    f"alternative keeps them as a group of their own")
        if site.form == "drop_null_group":
            return (f"GROUP BY {col_sql} keeps the rows with no {column} as a group of their own "
                    f"(NULL); the alternative leaves them out")
        if site.form == "aggregate" and isinstance(site.node, exp.Avg):
            text = f"AVG({col_sql}) skips the {nulls} rows with no {column}; the alternative counts them as 0"
        elif site.form == "aggregate":
            text = (f"COUNT({col_sql}) skips the {nulls} rows where {column} is NULL; the "
                    f"alternative counts them too (COUNT(*))")
        else:
            assert site.node is not None  # the filter
            text = f"{site.sql(site.node)} also drops the {nulls} rows where {column} is NULL; the alternative keeps them"
        return text + values_note(shown, alt)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _nullable(ctx: ChoiceContext, scope: Scope, outer: set[str], col: exp.Expression) -> Ref | None:
        if not isinstance(col, exp.Column):
            return None
        ref = scope.resolve(col)
        if ref is None or ref.alias.lower() in outer:
            return None
        cp = ctx.profile.column(ref.table, ref.column)
        return ref if cp is not None and cp.may_have_nulls() else None

    @staticmethod
    def _nulls_in_scope(ctx: ChoiceContext, select: exp.Select, col: exp.Column,
                        drop: exp.Expression | None = None) -> int | None:
        """Fact: the rows in the query's scope where ``col`` is NULL (``drop``: a WHERE part left out)."""
        probe = reshape(select, [count_star()])
        parts = [c.copy() for c in conjuncts(select.args.get("where")) if c is not drop]
        parts.append(exp.Is(this=col.copy(), expression=exp.Null()))
        set_where(probe, parts)
        return ctx.count(probe, "nulls")

    # -- GROUP BY a nullable column -------------------------------------------------------
    def _group(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, outer: set[str]) -> Iterator[Site]:
        group = select.args.get("group")
        if not group:
            return
        where_parts = conjuncts(select.args.get("where"))
        for g in group.expressions:
            col = expand_key(select, g)
            ref = self._nullable(ctx, scope, outer, col)
            if ref is None:
                continue
            excluded = next((p for p in where_parts if isinstance(p, exp.Not) and isinstance(p.this, exp.Is)
                             and isinstance(p.this.expression, exp.Null) and p.this.this == col), None)
            if excluded is not None:
                yield ctx.site("keep_null_group", excluded, select, col=col, ref=ref, nulls=None)
                continue
            if select is ctx.tree:
                index = projection_for(select, g)
                if index is None:
                    index = projection_for(select, col)
                r = ctx.result
                if index is not None and not r.truncated and not any(
                        index < len(row) and row[index] is None for row in r.rows):
                    continue  # no NULL group in the shown result
            yield ctx.site("drop_null_group", g, select, col=col, ref=ref, nulls=None)

    # -- AVG(col), COUNT(col) -------------------------------------------------------------
    def _aggregates(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, outer: set[str]) -> Iterator[Site]:
        seen: list[exp.Avg | exp.Count] = []
        for p in select.expressions:
            for agg in own_nodes(p, (exp.Avg, exp.Count)):
                col = agg.this
                if any(agg == s for s in seen):
                    continue
                seen.append(agg)
                ref = self._nullable(ctx, scope, outer, col)
                if ref is None:
                    continue
                nulls = self._nulls_in_scope(ctx, select, col)
                if not nulls:
                    continue
                if isinstance(agg, exp.Avg):
                    new: exp.Expression = exp.Avg(this=exp.Coalesce(this=col.copy(), expressions=[exp.Literal.number(0)]))
                else:
                    new = exp.Count(this=exp.Star())
                yield ctx.site("aggregate", agg, select, col=col, ref=ref, nulls=nulls, new=new)

    # -- negative filters ----------------------------------------------------------------
    def _filters(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, outer: set[str]) -> Iterator[Site]:
        where_parts = conjuncts(select.args.get("where"))
        for part, col in [(p, c) for p in where_parts for c in _filtered_columns(ctx, scope, p)]:
            ref = self._nullable(ctx, scope, outer, col)
            if ref is None:
                continue
            nulls = self._nulls_in_scope(ctx, select, col, drop=part)
            if not nulls:
                continue
            yield ctx.site("filter", part, select, col=col, ref=ref, nulls=nulls)


def _filtered_columns(ctx: ChoiceContext, scope: Scope, part: exp.Expression) -> list[exp.Column]:
    """The columns whose NULLs ``part`` silently drops: a negation's column, or either side of
    a comparison of two non-key columns (``a.x >= a.y``)."""
    col = _negated_column(part)
    if col is not None:
        return [col]
    if isinstance(part, (exp.GT, exp.GTE, exp.LT, exp.LTE)) and isinstance(part.this, exp.Column) \
            and isinstance(part.expression, exp.Column):
        refs = [scope.resolve(part.this), scope.resolve(part.expression)]
        if any(r is None or ctx.profile.is_key_column(r.table, r.column) for r in refs):
            return []
        return [part.this, part.expression]
    return []


def _negated_column(part: exp.Expression) -> exp.Column | None:
    """The column of ``col <> v``, ``NOT col = v``, ``col NOT IN (…)``, ``col NOT LIKE …``."""
    if isinstance(part, exp.NEQ):
        for a, b in ((part.this, part.expression), (part.expression, part.this)):
            if isinstance(a, exp.Column) and not b.find(exp.Column):
                return a
        return None
    if isinstance(part, exp.Not):
        inner = part.this
        if isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, (exp.EQ, exp.In, exp.Like, exp.ILike)) and isinstance(inner.this, exp.Column):
            if isinstance(inner, exp.In) and inner.args.get("query") is not None:
                return None  # NOT IN (subquery) is the negation type's form
            other = inner.args.get("expression")
            if other is not None and other.find(exp.Column):
                return None
            return inner.this
        return None
    if isinstance(part, (exp.Like, exp.ILike)) and part.args.get("negate") and isinstance(part.this, exp.Column):
        return part.this
    return None


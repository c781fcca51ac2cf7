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

from sqlglot import exp

from ..answer import Choice
from ..sql.edit import count_star, reshape
from ._read import (Ref, Scope, conjuncts, edit_copy, expand_key, is_key_column, null_supplied, own_nodes,
                    projection_for, selects, set_where)
from .base import ChoiceContext, make_choice, values_note
from .lexicon import Lexicon


class MissingValues:
    type = "missing_values"
    lexicon = Lexicon(phrases=("missing", "unknown", "null", "nulls", "blank", "blanks", "empty", "not recorded",
                               "unrecorded", "unspecified", "no value", "without a value", "as zero", "as 0",
                               "n/a", "known", "recorded", "non-null", "not null"))

    def detect(self, ctx: ChoiceContext) -> list[Choice]:
        out: list[Choice] = []
        for select in selects(ctx.tree):
            scope = Scope(select, ctx.profile)
            if not scope.by_alias:
                continue
            outer = null_supplied(select)
            for finder in (self._group, self._aggregates, self._filters):
                out.extend(c for c in finder(ctx, select, scope, outer) if c is not None)
        return out

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _nullable(ctx: ChoiceContext, scope: Scope, outer: set[str], col: exp.Expression) -> Ref | None:
        if not isinstance(col, exp.Column):
            return None
        ref = scope.resolve(col)
        if ref is None or ref.alias.lower() in outer:
            return None
        cp = ctx.profile.column(ref.table, ref.column)
        return ref if cp is not None and cp.null_count > 0 else None

    @staticmethod
    def _nulls_in_scope(ctx: ChoiceContext, select: exp.Select, col: exp.Column,
                        drop: exp.Expression | None = None) -> int | None:
        probe = reshape(select, [count_star()])
        parts = [c.copy() for c in conjuncts(select.args.get("where")) if c is not drop]
        parts.append(exp.Is(this=col.copy(), expression=exp.Null()))
        set_where(probe, parts)
        return ctx.count(probe)

    # -- GROUP BY a nullable column -------------------------------------------------------
    def _group(self, ctx, select, scope, outer):
        group = select.args.get("group")
        if not group:
            return
        where_parts = conjuncts(select.args.get("where"))
        for g in group.expressions:
            col = expand_key(select, g)
            ref = self._nullable(ctx, scope, outer, col)
            if ref is None:
                continue
            col_sql = col.sql(dialect=ctx.dialect)
            excluded = next((p for p in where_parts if isinstance(p, exp.Not) and isinstance(p.this, exp.Is)
                             and isinstance(p.this.expression, exp.Null) and p.this.this == col), None)
            alt_root, alt = edit_copy(ctx.tree, select)
            if excluded is not None:
                set_where(alt, [p.copy() for p in where_parts if p is not excluded])
                text = (f"the query leaves out rows with no {ref.column} ({col_sql} IS NOT NULL); the "
                        f"alternative keeps them as a group of their own")
            else:
                if select is ctx.tree:
                    index = projection_for(select, g)
                    if index is None:
                        index = projection_for(select, col)
                    r = ctx.result
                    if index is not None and not r.truncated and not any(
                            index < len(row) and row[index] is None for row in r.rows):
                        continue  # no NULL group in the shown result
                set_where(alt, [p.copy() for p in where_parts] + [exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))])
                text = (f"GROUP BY {col_sql} keeps the rows with no {ref.column} as a group of their own "
                        f"(NULL); the alternative leaves them out")
            res = ctx.run(alt_root)
            if res is not None:
                yield make_choice(self, text, ctx, ctx.to_sql(alt_root), res)

    # -- AVG(col), COUNT(col) -------------------------------------------------------------
    def _aggregates(self, ctx, select, scope, outer):
        seen = []
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
                col_sql = col.sql(dialect=ctx.dialect)
                if isinstance(agg, exp.Avg):
                    new = exp.Avg(this=exp.Coalesce(this=col.copy(), expressions=[exp.Literal.number(0)]))
                    text = (f"AVG({col_sql}) skips the {nulls} rows with no {ref.column}; the alternative "
                            f"counts them as 0")
                else:
                    new = exp.Count(this=exp.Star())
                    text = (f"COUNT({col_sql}) skips the {nulls} rows where {ref.column} is NULL; the "
                            f"alternative counts them too (COUNT(*))")
                alt_root, alt = edit_copy(ctx.tree, select)
                for node in own_nodes(alt, type(agg)):
                    if node == agg:
                        node.replace(new.copy())
                res = ctx.run(alt_root)
                if res is not None:
                    yield make_choice(self, text + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res)

    # -- negative filters ----------------------------------------------------------------
    def _filters(self, ctx, select, scope, outer):
        where_parts = conjuncts(select.args.get("where"))
        for part, col in [(p, c) for p in where_parts for c in _filtered_columns(ctx, scope, p)]:
            ref = self._nullable(ctx, scope, outer, col)
            if ref is None:
                continue
            nulls = self._nulls_in_scope(ctx, select, col, drop=part)
            if not nulls:
                continue
            alt_root, alt = edit_copy(ctx.tree, select)
            new_parts = []
            for p in where_parts:
                if p is part:
                    new_parts.append(exp.Paren(this=exp.Or(this=p.copy(), expression=exp.Is(this=col.copy(), expression=exp.Null()))))
                else:
                    new_parts.append(p.copy())
            set_where(alt, new_parts)
            res = ctx.run(alt_root)
            if res is None:
                continue
            text = (f"{part.sql(dialect=ctx.dialect)} also drops the {nulls} rows where {ref.column} is NULL; "
                    f"the alternative keeps them")
            yield make_choice(self, text + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res)


def _filtered_columns(ctx, scope: Scope, part: exp.Expression) -> list[exp.Column]:
    """The columns whose NULLs ``part`` silently drops: a negation's column, or either side of
    a comparison of two non-key columns (``a.x >= a.y``)."""
    col = _negated_column(part)
    if col is not None:
        return [col]
    if isinstance(part, (exp.GT, exp.GTE, exp.LT, exp.LTE)) and isinstance(part.this, exp.Column) \
            and isinstance(part.expression, exp.Column):
        refs = [scope.resolve(part.this), scope.resolve(part.expression)]
        if any(r is None or is_key_column(ctx.profile, r.table, r.column) for r in refs):
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


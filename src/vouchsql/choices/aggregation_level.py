"""Aggregation level: rows, or group averages? (SpecBridge: "aggregation level").

Forms read:

- ``AVG(x / y)`` (the mean of each row's ratio): the alternative divides the totals,
  ``SUM(x) / SUM(y)``, so rows with a larger ``y`` weigh more (Figure 1's film example).
- the reverse, ``SUM(x) / SUM(y)`` or ``AVG(x) / AVG(y)``: the alternative is
  ``AVG(x / y)`` (``NULLIF(y, 0)`` where the profile shows ``y`` can be 0; ``* 1.0`` where both
  are integers, so the per-row ratio is not an integer division).
- an entity ranked by one row's value on the many side of a join (``SELECT p.name … JOIN c …
  ORDER BY c.x DESC LIMIT k``, no GROUP BY): the alternative groups by the entity and ranks
  it by ``AVG(c.x)`` (``SUM`` where the question says total, sum, combined or overall).
- an average pooled over rows that belong to an intermediate entity (``AVG(c.x)`` grouped
  by some g, with ``c`` joined to a table ``e`` whose key is not grouped and which has many
  ``c`` rows): the alternative averages each ``e``'s own average first, so every ``e``
  counts once (SpecBridge Figure 3).
"""

from __future__ import annotations

import re

from typing import Iterator, cast

import sqlglot
from sqlglot import exp

from ..answer import Result
from ..sql.edit import set_from
from ..sql.scope import Scope
from ..sql.tree import (edit_copy, expand_key, has_aggregate, limit_value, output_ident, output_name, own_nodes,
                        projection_for, selects, unalias)
from ..words import entity_word, name_forms
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon, mentions

_TOTAL_WORDS = ("total", "sum", "combined", "overall", "altogether", "in all")
_INNER_VALUE = "entity_avg"
_INNER_ALIAS = "per_entity"


class AggregationLevel:
    type = "aggregation_level"
    lexicon = Lexicon(phrases=("weighted", "unweighted", "pooled", "simple average", "each counts equally",
                               "counted equally", "count equally", "equally weighted", "single", "individual",
                               "per row", "each row", "ratio of the totals", "ratio of totals",
                               "average of the ratios", "average of ratios", "average of the averages",
                               "average of averages"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        for select in selects(ctx.tree):
            scope = Scope(select, ctx.profile)
            yield from self._ratios(ctx, select, scope)
        for finder in (self._ranked_by_row, self._pooled_average):
            site = finder(ctx)
            if site is not None:
                yield site

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        if site.form == "ratio":
            assert site.select is not None  # the SELECT of the ratio
            alt_root, alt = edit_copy(tree, site.select)
            hits = [n for n in own_nodes(alt, type(cast(exp.Expression, site.node))) if n == site.node]  # the AVG or the division
            if not hits:
                return None
            for n in hits:
                bare = isinstance(site.new, exp.Paren) and isinstance(n.parent, (exp.Select, exp.Alias))
                n.replace((site.new.this if bare else site.new).copy())
            return alt_root
        if site.form == "ranked_by_row":
            return self._group_ranking(tree, site)
        return self._average_of_averages(site)

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        if site.form == "ratio":
            return cast(str, site.text) + values_note(shown, alt)
        return cast(str, site.text)

    # -- AVG(x / y) ↔ SUM(x) / SUM(y) ----------------------------------------------------------
    def _ratios(self, ctx: ChoiceContext, select: exp.Select, scope: Scope) -> Iterator[Site]:
        for p in select.expressions:
            for avg in own_nodes(p, exp.Avg):
                arg = avg.this.this if isinstance(avg.this, exp.Paren) else avg.this
                if not isinstance(arg, exp.Div) or has_aggregate(arg):
                    continue
                num, den = arg.this, arg.expression
                if not num.find(exp.Column) or not den.find(exp.Column):
                    continue
                num_alt: exp.Expression = exp.Sum(this=num.copy())
                if self._integers(scope, num, den):
                    num_alt = exp.Mul(this=num_alt, expression=exp.Literal.number("1.0"))
                new: exp.Expression = exp.Paren(this=_div(num_alt, exp.Sum(this=den.copy()), ctx.dialect, like=arg))
                text = (f"{avg.sql(dialect=ctx.dialect)} averages each row's ratio (every row counts the same); "
                        f"the alternative divides the totals, SUM({num.sql(dialect=ctx.dialect)}) / "
                        f"SUM({den.sql(dialect=ctx.dialect)}), so rows with a larger "
                        f"{den.sql(dialect=ctx.dialect)} weigh more")
                yield ctx.site("ratio", avg, select, new=new, text=text)
            for div in own_nodes(p, exp.Div):
                parts = [_one_agg(div.this), _one_agg(div.expression)]
                if None in parts:
                    continue
                (num_agg, num_arg), (den_agg, den_arg) = cast("list[tuple[exp.Expression, exp.Expression]]", parts)
                if not num_arg.find(exp.Column) or not den_arg.find(exp.Column):
                    continue
                if num_arg.find(exp.Case, exp.If) or den_arg.find(exp.Case, exp.If):
                    continue  # a share of a total (SUM(CASE …) / SUM(x)), not a ratio of two measures
                num_refs, den_refs = scope.refs(num_arg), scope.refs(den_arg)
                if num_refs is not None and den_refs is not None and set(num_refs) == set(den_refs):
                    continue
                num, den = _unwrap_agg(div.this), _unwrap_agg(div.expression)
                if self._integers(scope, num, den):
                    num = exp.Mul(this=num, expression=exp.Literal.number("1.0"))
                if self._may_be_zero(scope, den):
                    den = exp.Nullif(this=den, expression=exp.Literal.number(0))
                new = exp.Avg(this=_div(num, den, ctx.dialect))
                text = (f"{div.sql(dialect=ctx.dialect)} divides totals (rows with a larger "
                        f"{den_arg.sql(dialect=ctx.dialect)} weigh more); the alternative averages each row's "
                        f"ratio, {new.sql(dialect=ctx.dialect)}, so every row counts the same")
                yield ctx.site("ratio", div, select, new=new, text=text)

    @staticmethod
    def _integers(scope: Scope, *nodes: exp.Expression) -> bool:
        for node in nodes:
            if any(isinstance(lit, exp.Literal) and not lit.is_string and "." in str(lit.this)
                   for lit in node.find_all(exp.Literal)):
                return False
            if node.find(exp.Cast):
                return False
            refs = scope.refs(node)
            if not refs or not all((cp := scope.column_profile(r)) is not None and cp.is_integer() for r in refs):
                return False
        return True

    @staticmethod
    def _may_be_zero(scope: Scope, den: exp.Expression) -> bool:
        if not isinstance(den, exp.Column):
            return True
        ref = scope.resolve(den)
        cp = scope.column_profile(ref) if ref else None
        if cp is None or not isinstance(cp.min, (int, float)) or not isinstance(cp.max, (int, float)):
            return True
        return cp.min <= 0 <= cp.max

    # -- ranking an entity by one row's value ---------------------------------------------
    def _ranked_by_row(self, ctx: ChoiceContext) -> Site | None:
        select = ctx.tree
        if (not isinstance(select, exp.Select) or select.args.get("group") or not select.args.get("joins")
                or limit_value(select) is None or select.args.get("order") is None):
            return None
        if any(own_nodes(p, exp.AggFunc) for p in select.expressions):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources:
            return None
        key = expand_key(select, select.args["order"].expressions[0].this)
        if not isinstance(key, exp.Column):
            return None
        c_ref = scope.resolve(key)
        c_profile = scope.column_profile(c_ref) if c_ref is not None else None
        if c_profile is None or not c_profile.is_number():
            return None
        assert c_ref is not None  # its profile was read
        entity_aliases = set()
        for p in select.expressions:
            refs = scope.refs(p)
            if refs is None or p.find(exp.Star):
                return None
            for r in refs:
                if r.alias.lower() == c_ref.alias.lower():
                    if r.column.lower() != c_ref.column.lower():
                        return None  # another column of the row-level table: not one entity
                else:
                    entity_aliases.add(r.alias.lower())
        if len(entity_aliases) != 1:
            return None
        p_alias = entity_aliases.pop()
        p_table = scope.table(p_alias)
        assert p_table is not None  # an alias of the scope
        p_key = ctx.profile.entity_key(p_table.qualified)
        if p_key is None or not scope.fans_out(p_alias):
            return None
        # "the highest order value" names one order: the row is the unit
        settled = next((f for f in sorted(name_forms(c_ref.table), key=len, reverse=True)
                        if mentions(ctx.question, f)), None)
        total = any(mentions(ctx.question, w) for w in _TOTAL_WORDS)
        name = "SUM" if total else "AVG"
        p_word, c_word = entity_word(p_table.name), entity_word(c_ref.table)
        text = (f"the query ranks each {p_word} by one {c_word}'s {c_ref.column} (a {p_word} appears once per "
                f"{c_word}); the alternative ranks each {p_word} by {name}({key.sql(dialect=ctx.dialect)}) "
                f"over its {c_word} rows")
        return ctx.site("ranked_by_row", key, select, settled_by=settled, scope=scope, c_ref=c_ref, total=total,
                        group=scope.column(p_alias, p_key, ctx.dialect), text=text)

    @staticmethod
    def _group_ranking(tree: exp.Expression, site: Site) -> exp.Expression:
        """Group by the entity and rank it by the aggregate of the row-level column."""
        agg_cls = exp.Sum if site.total else exp.Avg
        assert site.select is not None  # the ranking SELECT
        alt_root, alt = edit_copy(tree, site.select)
        places = list(alt.expressions) + [o.this for o in alt.args["order"].expressions]
        for place in places:
            for node in own_nodes(place, exp.Column):
                if node == site.node or site.scope.resolve(node) == site.c_ref:
                    node.replace(agg_cls(this=node.copy()))
        alt.set("group", exp.Group(expressions=[site.group.copy()]))
        alt.set("distinct", None)
        return alt_root

    # -- pooled average versus average of per-entity averages ------------------------------
    def _pooled_average(self, ctx: ChoiceContext) -> Site | None:
        select = ctx.tree
        group = select.args.get("group") if isinstance(select, exp.Select) else None
        if not group or select.args.get("having") or select.args.get("distinct") or select.args.get("offset"):
            return None
        assert isinstance(select, exp.Select)  # it has a GROUP BY
        scope = Scope(select, ctx.profile)
        if scope.other_sources or scope.has_using_or_natural():
            return None
        avg_index, avg = None, None
        group_exprs = [expand_key(select, g) for g in group.expressions]
        names = []
        for i, p in enumerate(select.expressions):
            aggs = own_nodes(p, exp.AggFunc)
            names.append(output_name(p).lower())
            if aggs:
                if avg is not None or len(aggs) != 1 or not isinstance(aggs[0], exp.Avg):
                    return None
                avg_index, avg = i, aggs[0]
            elif not any(unalias(p) == g for g in group_exprs):
                return None
        if avg is None or not isinstance(avg.this, exp.Column) or len(set(names)) != len(names):
            return None
        if len(group_exprs) != len(select.expressions) - 1:
            return None  # a grouping column not shown: the outer query could not group by it
        c_ref = scope.resolve(avg.this)
        if c_ref is None:
            return None
        grouped = set()
        for g in group_exprs:
            ref = scope.resolve(g) if isinstance(g, exp.Column) else None
            if ref is not None:
                grouped.add((ref.alias.lower(), ref.column.lower()))
                key = ctx.profile.entity_key(ref.table)
                if key and ctx.profile.is_unique(ref.table, ref.column):
                    grouped.add((ref.alias.lower(), key.lower()))  # a unique column groups its entity
        entity = None
        for e in scope.edges():
            for near, far in ((e.left, e.right), (e.right, e.left)):
                if near.alias.lower() != c_ref.alias.lower():
                    continue
                far_key = ctx.profile.entity_key(far.table)
                if (far_key and far_key.lower() == far.column.lower()
                        and (far.alias.lower(), far_key.lower()) not in grouped
                        and not ctx.profile.is_unique(near.table, near.column)):
                    entity = far
                    break
            if entity:
                break
        if entity is None:
            return None
        # "the average order total" averages orders: pooling is what it asks
        settled = _average_of(ctx.question, c_ref.table)
        order_keys = []
        for o in (cast(exp.Order, select.args.get("order")).expressions if select.args.get("order") else []):
            idx = projection_for(select, o.this)
            if idx is None:
                return None
            order_keys.append(exp.Ordered(this=exp.Literal.number(idx + 1), desc=bool(o.args.get("desc"))))
        e_words = entity_word(entity.table)
        text = (f"{avg.sql(dialect=ctx.dialect)} pools every {entity_word(c_ref.table)} row, so a {e_words} with more rows "
                f"weighs more; the alternative averages each {e_words}'s own average first, so every {e_words} "
                f"counts once")
        return ctx.site("average_of_averages", avg, select, settled_by=settled, avg_index=avg_index,
                        order_keys=order_keys, text=text,
                        entity_column=scope.column(entity.alias, entity.column, ctx.dialect))

    @staticmethod
    def _average_of_averages(site: Site) -> exp.Expression:
        """Average per entity in a derived table, then average those averages per group."""
        select, avg, avg_index = site.select, site.node, site.avg_index
        assert select is not None and avg is not None  # the grouping SELECT and its AVG
        group = select.args["group"]
        inner = select.copy()
        inner_exprs = []
        for i, p in enumerate(select.expressions):
            if i == avg_index:
                inner_exprs.append(exp.alias_(avg.copy(), _INNER_VALUE))
            else:
                inner_exprs.append(exp.alias_(unalias(p).copy(), output_ident(p)))
        inner.set("expressions", inner_exprs)
        inner.set("group", exp.Group(expressions=[g.copy() for g in group.expressions] + [site.entity_column.copy()]))
        for arg in ("order", "limit", "offset"):
            inner.set(arg, None)
        outer_exprs = []
        for i, p in enumerate(select.expressions):
            if i == avg_index:
                proj = p.copy()
                target = next(n for n in own_nodes(proj, exp.Avg) if n == avg)
                new_avg = exp.Avg(this=exp.column(_INNER_VALUE))
                if target is proj:
                    proj = new_avg
                else:
                    target.replace(new_avg)
                outer_exprs.append(proj)
            else:
                outer_exprs.append(exp.Column(this=output_ident(p)))
        outer = exp.Select(expressions=outer_exprs)
        alias = exp.TableAlias(this=exp.to_identifier(_INNER_ALIAS))
        set_from(outer, exp.From(this=exp.Subquery(this=inner, alias=alias)))
        outer.set("group", exp.Group(expressions=[exp.Column(this=output_ident(p)) for i, p in enumerate(select.expressions)
                                                  if i != avg_index]))
        if site.order_keys:
            outer.set("order", exp.Order(expressions=[o.copy() for o in site.order_keys]))
        if select.args.get("limit"):
            outer.set("limit", select.args["limit"].copy())
        return outer


def _average_of(question: str, table: str) -> str | None:
    """"average order …" / "mean invoice …": the words that say the rows of ``table`` are
    what is averaged."""
    forms = sorted(name_forms(table), key=len, reverse=True)
    alts = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in forms)
    m = re.search(rf"(?<!\w)(average|mean)\s+({alts})(?!\w)", question or "", re.I)
    return " ".join(m.group(0).lower().split()) if m else None


def _unwrap_agg(node: exp.Expression) -> exp.Expression:
    """``node`` with its one SUM/AVG replaced by the aggregate's argument (a copy)."""
    if isinstance(node, (exp.Sum, exp.Avg)):
        return cast(exp.Expression, node.this).copy()
    out = node.copy()
    for agg in own_nodes(out, (exp.Sum, exp.Avg)):
        agg.replace(agg.this.copy())
    return out


def _div(num: exp.Expression, den: exp.Expression, dialect: str, like: exp.Div | None = None) -> exp.Div:
    """A division with the flags the dialect's parser gives ``a / b`` (sqlglot otherwise
    writes SQLite's ``/`` as a float division with a CAST)."""
    if like is None:
        like = _DIV_FLAGS.get(dialect)
        if like is None:
            like = _DIV_FLAGS[dialect] = cast(exp.Div, sqlglot.parse_one("a / b", read=dialect))
    div = exp.Div(this=num, expression=den)
    for flag in ("typed", "safe"):
        if like.args.get(flag) is not None:
            div.set(flag, like.args[flag])
    return div


_DIV_FLAGS: dict[str, exp.Div] = {}


def _one_agg(node: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """(the aggregate, its argument) when ``node`` holds exactly one SUM or AVG and no other
    aggregate, with nothing but arithmetic around it."""
    aggs = own_nodes(node, exp.AggFunc)
    if len(aggs) != 1 or not isinstance(aggs[0], (exp.Sum, exp.Avg)) or isinstance(aggs[0].this, exp.Distinct):
        return None
    return aggs[0], aggs[0].this

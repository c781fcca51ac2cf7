"""Negation: no matching record, or some non-matching record? (SpecBridge Table S1).

Read only when the question negates (not, never, no, without, none, n't). Forms:

- ``p.key NOT IN (SELECT c.fk FROM c WHERE cond)`` and ``NOT EXISTS (SELECT … FROM c WHERE
  <correlation> AND cond)`` read "no related row matches"; the alternative reads "some related
  row does not match": ``p.key IN (SELECT c.fk FROM c WHERE NOT (cond))`` (``EXISTS`` with
  ``NOT (cond)``).
  The subquery may join several tables (inner joins); the equalities that join them are kept,
  only its filters are negated.
- ``c.col <> v`` (also ``NOT c.col = v``, ``NOT IN (…)``, ``NOT LIKE``) on the many side of a
  join whose output columns all come from the one side p: it keeps every p with at least
  one non-matching c row; the alternative keeps the p with no matching c row:
  ``p.key NOT IN (SELECT x.fk FROM x … WHERE c.col = v)``, where x is the table p joins to
  and the subquery keeps the joins from x on (c may be x, or further along the joins). Read
  only when p joins the rest by one equality and the joins can repeat p's rows.
- the anti-join ``p LEFT JOIN c ON <p = c> AND cond WHERE c.col IS NULL`` (col never NULL in
  c, and c read nowhere else) reads "no related row matches cond"; the alternative reads
  "some related row does not match": ``p.key IN (SELECT c.fk FROM c WHERE NOT (cond))``.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..sql.edit import column, conjuncts, from_node, set_from
from ..sql.scope import Edge, Scope
from ..sql.tree import edit_copy, own_nodes, selects, set_where, twin, written_ident
from ..words import entity_word
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon

if TYPE_CHECKING:
    from ..db.profile import TableProfile

_TRIGGER = re.compile(r"(?<!\w)(not|never|no|without|none)(?!\w)|n't(?!\w)", re.I)


class Negation:
    type = "negation"
    lexicon = Lexicon(phrases=("at all", "none of", "not any", "at least one", "some", "any other", "never"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        if not _TRIGGER.search(ctx.question or ""):
            return
        for select in selects(ctx.tree):
            for part in conjuncts(select.args.get("where")):
                site = (self._none_to_some(ctx, select, part) or self._some_to_none(ctx, select, part)
                        or self._anti_join(ctx, select, part))
                if site is not None:
                    yield site

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        if site.form == "none_to_some":
            alt_root = tree.copy()
            alt_part = twin(alt_root, tree, site.node)
            if alt_part is None:
                return None
            new_inner = site.inner.copy()
            new_sub = new_inner.args["query"].this if isinstance(new_inner, exp.In) else new_inner.this
            set_where(new_sub, [p.copy() for p in site.correlated] + [exp.Not(this=exp.Paren(this=site.cond.copy()))])
            alt_part.replace(new_inner)
            return alt_root
        assert site.select is not None  # the SELECT of the condition
        alt_root, alt = edit_copy(tree, site.select)
        where = conjuncts(site.select.args.get("where"))
        if site.form == "some_to_none":
            kept = [p.copy() for p in where if p is not site.node]
            kept.append(exp.Not(this=exp.In(this=site.key.copy(), query=exp.Subquery(this=site.sub.copy()))))
            set_where(alt, kept)
            return alt_root
        # "anti_join": drop the LEFT JOIN, read its condition in an IN subquery
        sub = exp.Select(expressions=[site.c_col.copy()])
        set_from(sub, exp.From(this=site.join.this.copy()))
        set_where(sub, [exp.Not(this=exp.Paren(this=site.cond.copy()))])
        alt.set("joins", [j.copy() for j in site.select.args["joins"] if j is not site.join] or None)
        new_part = exp.In(this=site.key.copy(), query=exp.Subquery(this=sub))
        set_where(alt, [new_part if p is site.node else p.copy() for p in where])
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        assert site.node is not None  # the condition
        if site.form == "none_to_some":
            text = (f"the query keeps rows with no {site.c_word} where {site.sql(site.cond)}; the "
                    f"alternative reads the negation as some {site.c_word} that does not match")
        elif site.form == "some_to_none":
            text = (f"{site.sql(site.node)} keeps every {site.p_word} with at least one {site.c_word} that does "
                    f"not match; the alternative keeps each {site.p_word} with no matching {site.c_word}")
        else:
            text = (f"the LEFT JOIN with {site.sql(site.node)} keeps each {site.p_word} with no {site.c_word} "
                    f"where {site.sql(site.cond)}; the alternative reads the negation as some {site.c_word} that "
                    f"does not match")
        return text + values_note(shown, alt)

    # -- NOT IN / NOT EXISTS  →  IN / EXISTS with NOT (cond) -------------------------------
    def _none_to_some(self, ctx: ChoiceContext, select: exp.Select, part: exp.Expression) -> Site | None:
        if not isinstance(part, exp.Not):
            return None
        inner = part.this.this if isinstance(part.this, exp.Paren) else part.this
        if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery):
            sub = inner.args["query"].this
        elif isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
            sub = inner.this
        else:
            return None
        if not isinstance(sub, exp.Select) or sub.args.get("group") or not _inner_joins(sub):
            return None
        sub_scope = Scope(sub, ctx.profile)
        if sub_scope.other_sources or not sub_scope.by_alias or sub_scope.has_using_or_natural():
            return None
        parts = conjuncts(sub.args.get("where"))
        edges = {id(e.node) for e in sub_scope.edges()}
        # The condition negated is what the subquery's rows must match: its filters, not the
        # equalities that join its tables (those stay as they are).
        local = [p for p in parts if _local(sub_scope, p) and id(p) not in edges]
        if not local:
            return None
        correlated = [p for p in parts if not any(p is q for q in local)]
        cond = exp.and_(*[p.copy() for p in local])
        table = cast("TableProfile", sub_scope.table(sub_scope.order[0])).name  # the related rows: the subquery's first table
        return ctx.site("none_to_some", part, select, inner=inner, correlated=correlated, cond=cond,
                        c_word=entity_word(table))

    # -- c.col <> v over a join  →  p.key NOT IN (SELECT c.fk … WHERE c.col = v) -------------
    def _some_to_none(self, ctx: ChoiceContext, select: exp.Select, part: exp.Expression) -> Site | None:
        positive = _positive(part)
        if positive is None or not select.args.get("joins") or not _inner_joins(select):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources or scope.has_using_or_natural():
            return None
        aliases = scope.aliases_in(part)
        if aliases is None or len(aliases) != 1:
            return None
        c_alias = aliases.pop()
        shown_aliases = set()
        for p in select.expressions:
            found = scope.aliases_in(p)
            if found is None or p.find(exp.Star):
                return None
            shown_aliases |= found
        if len(shown_aliases) != 1 or c_alias in shown_aliases:
            return None
        p_alias = next(iter(shown_aliases))
        edges = scope.edges()
        p_edges = [e for e in edges if p_alias in (e.left.alias.lower(), e.right.alias.lower())]
        if len(p_edges) != 1:
            return None  # p joined to the rest by more (or less) than one equality: do not guess
        edge = p_edges[0]
        p_end, x_end = (edge.left, edge.right) if edge.left.alias.lower() == p_alias else (edge.right, edge.left)
        if not scope.fans_out(p_alias):
            return None  # one related row per entity: "not" has one reading
        sub = self._related(scope, select, p_alias, edge)
        if sub is None:
            return None
        conds = [positive]
        x_node = scope.by_alias[x_end.alias.lower()][0]
        x_col = column(written_ident(x_node), x_end.column, ctx.dialect)
        cp = ctx.profile.column(x_end.table, x_end.column)
        if cp is None or cp.may_have_nulls():
            conds.append(exp.Not(this=exp.Is(this=x_col.copy(), expression=exp.Null())))
        sub.set("expressions", [x_col])
        set_where(sub, conjuncts(sub.args.get("where")) + conds)
        key = scope.column(p_end.alias, p_end.column, ctx.dialect)
        # x: the rows related to p
        return ctx.site("some_to_none", part, select, sub=sub, key=key, p_word=entity_word(p_end.table),
                        c_word=entity_word(x_end.table))

    # -- LEFT JOIN c ON <edge> AND cond WHERE c.col IS NULL  →  IN (SELECT … WHERE NOT (cond)) --
    def _anti_join(self, ctx: ChoiceContext, select: exp.Select, part: exp.Expression) -> Site | None:
        if not (isinstance(part, exp.Is) and isinstance(part.expression, exp.Null)
                and isinstance(part.this, exp.Column)):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources or scope.has_using_or_natural():
            return None
        ref = scope.resolve(part.this)
        if ref is None:
            return None
        c_alias = ref.alias.lower()
        join = next((j for j in select.args.get("joins") or [] if j.this.alias_or_name.lower() == c_alias), None)
        if join is None or (join.side or "").upper() != "LEFT" or join.args.get("on") is None:
            return None
        cp = ctx.profile.column(ref.table, ref.column)
        if cp is None or cp.may_have_nulls():
            return None  # a NULL there need not mean "no matching row"
        on_parts = conjuncts(join.args["on"])
        edges = [e for e in scope.edges() if any(e.node is c for c in on_parts)
                 and c_alias in (e.left.alias.lower(), e.right.alias.lower())]
        if len(edges) != 1:
            return None
        edge = edges[0]
        c_end, p_end = (edge.left, edge.right) if edge.left.alias.lower() == c_alias else (edge.right, edge.left)
        local = [c for c in on_parts if c is not edge.node]
        if not local or any(scope.aliases_in(c) != {c_alias} or c.find(exp.Select) for c in local):
            return None  # no condition on the related rows: "no related row at all" has one reading
        # c must be read nowhere else: the alternative drops its join.
        for node in own_nodes(select, exp.Column):
            if node.find_ancestor(exp.Join) is join or node.find_ancestor(exp.Is) is part:
                continue
            r = scope.resolve(node)
            if r is None or r.alias.lower() == c_alias:
                return None
        return ctx.site("anti_join", part, select, join=join, cond=exp.and_(*[c.copy() for c in local]),
                        c_col=column(written_ident(join.this), c_end.column, ctx.dialect),
                        key=scope.column(p_end.alias, p_end.column, ctx.dialect),
                        p_word=entity_word(p_end.table), c_word=entity_word(c_end.table))

    @staticmethod
    def _related(scope: Scope, select: exp.Select, p_alias: str, edge: Edge) -> exp.Select | None:
        """``SELECT … FROM`` every table of ``select`` but p, joined as in ``select`` (the
        join to p dropped): the rows related to p. ``None`` when the joins cannot be kept
        without p (a join condition that also reads p, or a table joined only in WHERE)."""
        f = from_node(select)
        assert f is not None  # a SELECT with joins
        sources = [f.this] + [j.this for j in select.args.get("joins") or []]
        ons = [None] + [j.args.get("on") for j in select.args.get("joins") or []]
        sub = exp.Select()
        placed: set[str] = set()
        for node, on in zip(sources, ons):
            alias = node.alias_or_name.lower()
            if alias == p_alias:
                continue
            parts = [c for c in conjuncts(on) if c is not edge.node]
            for c in parts:
                refs = scope.aliases_in(c)
                if refs is None or p_alias in refs or not refs <= placed | {alias}:
                    return None
            if not placed:
                # Conditions on the first table kept (from its join to p) restrict which of its
                # rows are related: they go to the subquery's WHERE.
                sub.set("where", exp.Where(this=exp.and_(*[c.copy() for c in parts])) if parts else None)
                set_from(sub, exp.From(this=node.copy()))
            else:
                if not parts:
                    return None
                sub.append("joins", exp.Join(this=node.copy(), on=exp.and_(*[c.copy() for c in parts])))
            placed.add(alias)
        if any(e.node is not edge.node and p_alias in (e.left.alias.lower(), e.right.alias.lower())
               for e in scope.edges()):
            return None
        if not placed:
            return None
        # Join equalities written in WHERE (FROM a, b WHERE a.x = b.y) are not read here.
        for c in conjuncts(select.args.get("where")):
            if any(c is e.node for e in scope.edges()):
                return None
        return sub


def _inner_joins(select: exp.Select) -> bool:
    """Every join of ``select`` is an inner join (``JOIN … ON``, or a comma join)."""
    for join in select.args.get("joins") or []:
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if side or kind not in ("", "INNER", "CROSS") or join.args.get("using"):
            return False
        if kind == "CROSS" and join.args.get("on") is not None:
            return False
    return True


def _local(scope: Scope, part: exp.Expression) -> bool:
    cols = list(part.find_all(exp.Column))
    return bool(cols) and all(scope.resolve(c) is not None for c in cols) and not part.find(exp.Select)


def _positive(part: exp.Expression) -> exp.Expression | None:
    if isinstance(part, exp.NEQ) and not (part.this.find(exp.Column) and part.expression.find(exp.Column)):
        return exp.EQ(this=part.this.copy(), expression=part.expression.copy())
    if isinstance(part, exp.Not):
        inner = part.this.this if isinstance(part.this, exp.Paren) else part.this
        if isinstance(inner, (exp.EQ, exp.Like, exp.ILike)) or (
                isinstance(inner, exp.In) and inner.args.get("query") is None):
            return inner.copy()
        return None
    if isinstance(part, (exp.Like, exp.ILike)) and part.args.get("negate"):
        positive = part.copy()
        positive.set("negate", None)
        return positive
    return None

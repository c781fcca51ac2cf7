"""Population scope: keep entities with no related rows? (SpecBridge: "population scope").

Form read: the outer SELECT groups by columns of one table P and aggregates over tables
joined to it with inner joins (``JOIN … ON``, or ``FROM a, b WHERE a.x = b.y``). Entities of P
with no related rows vanish from such a result. The alternative keeps them: the joins are
rewritten as ``LEFT JOIN``s starting from P (each table placed once a join condition links it
to the tables before it, so a query written from the many side is turned around), WHERE
conditions on the joined tables move into their ``ON`` so they do not undo the outer join,
and ``COUNT(*)`` becomes ``COUNT(<last joined table>.<key>)`` so the kept entities count
zero. SUM and AVG stay as they are (NULL for an entity with no rows).

The profile rules the choice out when a single join's key overlap shows every P key has
related rows (and no filter narrows the related side); then nothing runs.

Entities with no related rows are no reading of the question, and nothing is offered, when
- the query ranks P's groups highest first by a COUNT or SUM of the related rows, for the
  top of the ranking (a filled LIMIT, or "most", "top", "best" in the question): an entity
  with none would rank last ("the most purchased tracks" are not the tracks never bought);
- the question names a value of one of P's columns ("each sales agent": Title 'Sales
  Support Agent') and the entities the inner join keeps are exactly those with that value:
  the ones a LEFT JOIN adds are outside the question's scope (one COUNT each, two at most).
Wording settles it too: "inner join", "only … with/who/that", "that have", "with at least one".
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..sql.edit import conjuncts, set_from
from ..sql.scope import Scope
from ..sql.tree import edit_copy, expand_key, limit_value, own_nodes, set_where
from ..words import entity_word, named_values
from .base import ChoiceContext, Site
from .lexicon import Lexicon

if TYPE_CHECKING:
    from ..db.profile import TableProfile

MAX_SCOPES = 2  # named values tried per query (one COUNT each)
_TOP_WORDS = re.compile(r"(?<!\w)(most|top|best|highest|largest|biggest|greatest|maximum|leading)(?!\w)", re.I)


class PopulationScope:
    type = "population_scope"
    lexicon = Lexicon(phrases=("including those with none", "including those without", "even those without",
                               "even if", "with no", "without any", "zero", "none", "at all", "who have",
                               "that have", "which have", "who has", "that has", "which has", "with at least one", "only those", "including empty",
                               "inner join", "inner joins", "inner joined", "inner joining", "left join", "left joins",
                               "outer join", "outer joins"),
                      patterns=(r"(?<!\w)only\s+(?:\w+\s+){0,4}?(?:with|who|that|which|having)(?!\w)",))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        site = self._grouped(ctx)
        if site is not None:
            yield site

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        """LEFT JOINs from P in the placed order, the filters on joined tables moved into their
        ON, ``COUNT(*)`` counting the last joined table's key."""
        assert site.select is not None  # the SELECT whose joins change
        alt_root, alt = edit_copy(tree, site.select)
        nodes, placed = site.nodes, site.placed
        set_from(alt, exp.From(this=nodes[placed[0]].copy()))
        new_joins = []
        for a in placed[1:]:
            conds = [c.copy() for c in site.ons.get(a, [])] + [m.copy() for m in site.moved.get(a, [])]
            new_joins.append(exp.Join(this=nodes[a].copy(), on=exp.and_(*conds), side="LEFT"))
        alt.set("joins", new_joins)
        set_where(alt, [k.copy() for k in site.kept])
        for node in own_nodes(alt, exp.Count):
            if node.this is None or isinstance(node.this, exp.Star) or (
                    isinstance(node.this, exp.Literal) and not node.this.is_string):
                node.replace(exp.Count(this=site.counted.copy()))
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        extra = alt.row_count - shown.row_count
        gained = f" ({extra} more row{'s' if extra != 1 else ''})" if extra > 0 else ""
        return (f"the inner join drops every {entity_word(site.p_table)} with no matching row in {site.related}; a "
                f"LEFT JOIN keeps them, counting 0{gained}")

    def _grouped(self, ctx: ChoiceContext) -> Site | None:
        select = ctx.tree
        if not isinstance(select, exp.Select) or not select.args.get("group") or not select.args.get("joins"):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources or scope.has_using_or_natural() or len(scope.by_alias) < 2:
            return None
        joins = select.args["joins"]
        for join in joins:
            kind = (join.kind or "").upper()
            if (join.side or "") or kind not in ("", "INNER", "CROSS"):
                return None
            if kind == "CROSS" and join.args.get("on") is not None:
                return None
        p_alias = self._grouped_table(select, scope)
        if p_alias is None or not any(own_nodes(p, exp.AggFunc) for p in select.expressions):
            return None
        order = scope.order
        # Every condition that links two tables (in an ON, or in WHERE for FROM a, b) is a join
        # condition; the rest of WHERE is filters.
        edge_ids = {id(e.node) for e in scope.edges()}
        pool: list[tuple[exp.Expression, set[str]]] = []
        for join in joins:
            for c in conjuncts(join.args.get("on")):
                aliases = scope.aliases_in(c)
                if aliases is None:
                    return None
                pool.append((c, aliases))
        kept, filters = [], []
        for part in conjuncts(select.args.get("where")):
            aliases = scope.aliases_in(part)
            if aliases is None:
                return None
            if id(part) in edge_ids:
                pool.append((part, aliases))
            elif aliases - {p_alias}:
                filters.append((part, aliases))
            else:
                kept.append(part)
        # The outer joins start from P: place each table once a join condition links it to the
        # tables placed before it (preferring the written order).
        placed = [p_alias]
        ons: dict[str, list[exp.Expression]] = {}
        remaining = [a for a in order if a != p_alias]
        while remaining:
            nxt = next((a for a in remaining
                        if any(a in al and al - {a} and al - {a} <= set(placed) for _, al in pool)), None)
            if nxt is None:
                return None  # a table linked to the others by no join condition: do not guess
            placed.append(nxt)
            remaining.remove(nxt)
        pos = {a: i for i, a in enumerate(placed)}
        for c, aliases in pool:
            last = max(aliases, key=pos.__getitem__)
            if last == p_alias:
                return None  # a join condition on P alone (JOIN … ON p.x = 1): keep out
            ons.setdefault(last, []).append(c)
        moved: dict[str, list[exp.Expression]] = {}
        for c, aliases in filters:
            moved.setdefault(max(aliases, key=pos.__getitem__), []).append(c)
        if not filters and self._all_matched(ctx, scope, p_alias):
            return None
        if self._ranks_by_related(ctx, select, scope, p_alias):
            return None
        if self._named_scope(ctx, select, scope, p_alias):
            return None

        last_alias = placed[-1]
        last_key = self._key(scope, last_alias)
        if last_key is None:
            return None
        return ctx.site("left_join", select, select, nodes={a: scope.by_alias[a][0] for a in order}, placed=placed,
                        ons=ons, moved=moved, kept=kept, counted=scope.column(last_alias, last_key, ctx.dialect),
                        # aliases of the scope: each names a table
                        p_table=cast("TableProfile", scope.table(p_alias)).name,
                        related=", ".join(cast("TableProfile", scope.table(a)).name for a in placed[1:]))

    @staticmethod
    def _grouped_table(select: exp.Select, scope: Scope) -> str | None:
        aliases = set()
        for g in select.args["group"].expressions:
            g = expand_key(select, g)
            if not isinstance(g, exp.Column):
                return None
            ref = scope.resolve(g)
            if ref is None:
                return None
            aliases.add(ref.alias.lower())
        return aliases.pop() if len(aliases) == 1 else None

    @staticmethod
    def _key(scope: Scope, alias: str) -> str | None:
        tp = scope.table(alias)
        if tp is None:
            return None
        if tp.primary_key:
            return tp.primary_key[0]
        for e in scope.edges():
            for near in (e.left, e.right):
                if near.alias.lower() == alias:
                    return near.column
        return None

    @staticmethod
    def _ranks_by_related(ctx: ChoiceContext, select: exp.Select, scope: Scope, p_alias: str) -> bool:
        """Ranked highest first by a COUNT or SUM over the related tables, for the top of the
        ranking: an entity with no related rows would rank last."""
        order = select.args.get("order")
        if order is None or not order.expressions or not order.expressions[0].args.get("desc"):
            return False
        key = expand_key(select, order.expressions[0].this)
        if not isinstance(key, (exp.Count, exp.Sum)):
            return False
        aliases = scope.aliases_in(key)
        if aliases is None or p_alias in aliases:
            return False
        k = limit_value(select)
        if select.args.get("limit") is not None:
            return k is not None and ctx.result.row_count >= k
        return bool(_TOP_WORDS.search(ctx.question or ""))

    @staticmethod
    def _named_scope(ctx: ChoiceContext, select: exp.Select, scope: Scope, p_alias: str) -> bool:
        """The question names a value of a P column, and the kept entities are exactly the
        ones with it."""
        tp = scope.table(p_alias)
        key = ctx.profile.entity_key(tp.qualified) if tp is not None else None
        if tp is None or key is None or tp.sampled:
            return False
        named = [(cp, v, n) for cp in tp.columns for v, n in named_values(ctx.question, cp, tp.row_count)]
        if not named:
            return False
        target = scope.column(p_alias, key, ctx.dialect)

        def kept(extra: exp.Expression | None) -> int | None:
            root, probe = edit_copy(ctx.tree, select)
            for arg in ("group", "having", "order", "limit", "offset", "distinct"):
                probe.set(arg, None)
            probe.set("expressions", [exp.Count(this=exp.Distinct(expressions=[target.copy()]))])
            if extra is not None:
                set_where(probe, conjuncts(probe.args.get("where")) + [extra])
            return ctx.count(root, "kept_entities" if extra is None else "kept_named")

        total = kept(None)
        if not total:
            return False
        for cp, value, n in named[:MAX_SCOPES]:
            if n != total:
                continue  # the kept entities cannot be exactly the named ones
            inside = kept(exp.EQ(this=scope.column(p_alias, cp.name, ctx.dialect),
                                 expression=exp.Literal.string(value)))
            if inside == total:
                return True
        return False

    @staticmethod
    def _all_matched(ctx: ChoiceContext, scope: Scope, p_alias: str) -> bool:
        """True when the profile shows every key of P has a related row (one join only)."""
        edges = scope.edges()
        if len(scope.by_alias) != 2 or len(edges) != 1:
            return False
        e = edges[0]
        p_end, c_end = (e.left, e.right) if e.left.alias.lower() == p_alias else (e.right, e.left)
        pair = ctx.profile.join_pair(p_end.table, p_end.column, c_end.table, c_end.column)
        if pair is None or pair.estimated:
            return False
        cp = ctx.profile.column(p_end.table, p_end.column)
        if cp is None or cp.may_have_nulls():
            return False  # rows with a NULL key have no related rows either
        p_distinct = pair.left_distinct if (pair.left_table.lower(), pair.left_column.lower()) == (
            p_end.table.lower(), p_end.column.lower()) else pair.right_distinct
        return pair.overlap >= p_distinct

"""Population scope: keep entities with no related rows? (SpecBridge: "population scope").

Form read: the outer SELECT groups by columns of one table P and aggregates over tables
joined to it with inner joins (``JOIN … ON``). Entities of P with no related rows vanish from
such a result. The alternative keeps them: every join becomes a ``LEFT JOIN`` (P first; a
two-table join written the other way round is turned around), WHERE conditions on the joined
tables move into their ``ON`` so they do not undo the outer join, and ``COUNT(*)`` becomes
``COUNT(<last joined table>.<key>)`` so the kept entities count zero. SUM and AVG stay as
they are (NULL for an entity with no rows).

The profile rules the choice out when a single join's key overlap shows every P key has
related rows (and no filter narrows the related side); then nothing runs.
"""

from __future__ import annotations

from sqlglot import exp

from ..answer import Choice
from ._read import Scope, conjuncts, edit_copy, entity_word, expand_key, from_node, own_nodes, set_from, set_where
from .base import ChoiceContext, make_choice
from .lexicon import Lexicon


class PopulationScope:
    type = "population_scope"
    lexicon = Lexicon(phrases=("including those with none", "including those without", "even those without",
                               "even if", "with no", "without any", "zero", "none", "at all", "who have",
                               "that have", "which have", "with at least one", "only those", "including empty"))

    def detect(self, ctx: ChoiceContext) -> list[Choice]:
        choice = self._grouped(ctx)
        return [choice] if choice is not None else []

    def _grouped(self, ctx: ChoiceContext) -> Choice | None:
        select = ctx.tree
        if not isinstance(select, exp.Select) or not select.args.get("group") or not select.args.get("joins"):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources or scope.has_using_or_natural() or len(scope.by_alias) < 2:
            return None
        joins = select.args["joins"]
        for join in joins:
            if (join.side or "") or (join.kind or "").upper() not in ("", "INNER") or join.args.get("on") is None:
                return None
        if any(s for s in scope.edges() if any(s.node is c for c in conjuncts(select.args.get("where")))):
            return None  # joins written in WHERE: no ON to move conditions into
        p_alias = self._grouped_table(select, scope)
        if p_alias is None or not any(own_nodes(p, exp.AggFunc) for p in select.expressions):
            return None
        order = scope.order
        swap = p_alias != order[0]
        if swap and len(order) != 2:
            return None
        where_parts = conjuncts(select.args.get("where"))
        moved: dict[str, list[exp.Expression]] = {}
        kept = []
        for part in where_parts:
            aliases = scope.aliases_in(part)
            if aliases is None:
                return None
            others = aliases - {p_alias}
            if not others:
                kept.append(part)
                continue
            last = max(others, key=order.index)
            moved.setdefault(last, []).append(part)
        if not moved and self._all_matched(ctx, scope, p_alias):
            return None

        alt_root, alt = edit_copy(ctx.tree, select)
        alt_joins = alt.args["joins"]
        if swap:
            driving = from_node(alt).this
            joined = alt_joins[0].this
            set_from(alt, exp.From(this=joined.copy()))
            alt_joins[0].set("this", driving.copy())
        for join in alt_joins:
            join.set("side", "LEFT")
            join.set("kind", None)
            alias = join.this.alias_or_name.lower()
            if alias in moved:
                join.set("on", exp.and_(join.args["on"], *[m.copy() for m in moved[alias]]))
        set_where(alt, [k.copy() for k in kept])
        last_alias = alt_joins[-1].this.alias_or_name.lower()
        last_key = self._key(ctx, scope, last_alias)
        if last_key is None:
            return None
        counted = exp.column(last_key, table=scope.written_alias(last_alias))
        for node in own_nodes(alt, exp.Count):
            if node.this is None or isinstance(node.this, exp.Star) or (
                    isinstance(node.this, exp.Literal) and not node.this.is_string):
                node.replace(exp.Count(this=counted.copy()))
        res = ctx.run(alt_root)
        if res is None:
            return None
        p_table = scope.table(p_alias).name
        related = ", ".join(scope.table(a).name for a in order if a != p_alias)
        extra = res.row_count - ctx.result.row_count
        gained = f" ({extra} more row{'s' if extra != 1 else ''})" if extra > 0 else ""
        text = (f"the inner join drops every {entity_word(p_table)} with no matching row in {related}; a LEFT "
                f"JOIN keeps them, counting 0{gained}")
        return make_choice(self, text, ctx, ctx.to_sql(alt_root), res)

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
    def _key(ctx: ChoiceContext, scope: Scope, alias: str) -> str | None:
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
        if cp is None or cp.null_count:
            return False  # rows with a NULL key have no related rows either
        p_distinct = pair.left_distinct if (pair.left_table.lower(), pair.left_column.lower()) == (
            p_end.table.lower(), p_end.column.lower()) else pair.right_distinct
        return pair.overlap >= p_distinct

"""Negation: no matching record, or some non-matching record? (SpecBridge Table S1).

Read only when the question negates (not, never, no, without, none, n't). Forms:

- ``p.key NOT IN (SELECT c.fk FROM c WHERE cond)`` and ``NOT EXISTS (SELECT … FROM c WHERE
  <correlation> AND cond)`` read "no related row matches"; the alternative reads "some related
  row does not match": ``p.key IN (SELECT c.fk FROM c WHERE NOT (cond))`` (``EXISTS`` with
  ``NOT (cond)``).
- ``c.col <> v`` (also ``NOT c.col = v``, ``NOT IN (…)``, ``NOT LIKE``) on the many side of a
  join whose output columns all come from the one side p: it keeps every p with at least
  one non-matching c row; the alternative keeps the p with no matching c row:
  ``p.key NOT IN (SELECT c.fk FROM c WHERE c.col = v)``.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ..answer import Choice
from ._read import Scope, conjuncts, edit_copy, is_unique, selects, set_where, twin, entity_word
from .base import ChoiceContext, make_choice, values_note
from .lexicon import Lexicon

_TRIGGER = re.compile(r"(?<!\w)(not|never|no|without|none)(?!\w)|n't(?!\w)", re.I)


class Negation:
    type = "negation"
    lexicon = Lexicon(phrases=("at all", "none of", "not any", "at least one", "some", "any other", "never"))

    def detect(self, ctx: ChoiceContext) -> list[Choice]:
        if not _TRIGGER.search(ctx.question or ""):
            return []
        out: list[Choice] = []
        for select in selects(ctx.tree):
            for part in conjuncts(select.args.get("where")):
                choice = self._none_to_some(ctx, part) or self._some_to_none(ctx, select, part)
                if choice is not None:
                    out.append(choice)
        return out

    # -- NOT IN / NOT EXISTS  →  IN / EXISTS with NOT (cond) -------------------------------
    def _none_to_some(self, ctx: ChoiceContext, part: exp.Expression) -> Choice | None:
        if not isinstance(part, exp.Not):
            return None
        inner = part.this.this if isinstance(part.this, exp.Paren) else part.this
        if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery):
            sub = inner.args["query"].this
        elif isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
            sub = inner.this
        else:
            return None
        if not isinstance(sub, exp.Select) or sub.args.get("joins") or sub.args.get("group"):
            return None
        sub_scope = Scope(sub, ctx.profile)
        if sub_scope.other_sources or not sub_scope.by_alias:
            return None
        parts = conjuncts(sub.args.get("where"))
        local = [p for p in parts if _local(sub_scope, p)]
        if not local:
            return None
        correlated = [p for p in parts if not any(p is q for q in local)]
        cond = exp.and_(*[p.copy() for p in local])
        alt_root = ctx.tree.copy()
        alt_part = twin(alt_root, ctx.tree, part)
        if alt_part is None:
            return None
        new_inner = inner.copy()
        new_sub = new_inner.args["query"].this if isinstance(new_inner, exp.In) else new_inner.this
        set_where(new_sub, [p.copy() for p in correlated] + [exp.Not(this=exp.Paren(this=cond))])
        alt_part.replace(new_inner)
        res = ctx.run(alt_root)
        if res is None:
            return None
        table = next(iter(sub_scope.by_alias.values()))[1].name
        text = (f"the query keeps rows with no {entity_word(table)} where {cond.sql(dialect=ctx.dialect)}; the "
                f"alternative reads the negation as some {entity_word(table)} that does not match")
        return make_choice(self, text + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res)

    # -- c.col <> v over a join  →  p.key NOT IN (SELECT c.fk … WHERE c.col = v) -------------
    def _some_to_none(self, ctx: ChoiceContext, select: exp.Select, part: exp.Expression) -> Choice | None:
        positive = _positive(part)
        if positive is None or not select.args.get("joins"):
            return None
        scope = Scope(select, ctx.profile)
        if scope.other_sources:
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
        edge = next((e for e in scope.edges() if {e.left.alias.lower(), e.right.alias.lower()} == {p_alias, c_alias}), None)
        if edge is None:
            return None
        p_end, c_end = (edge.left, edge.right) if edge.left.alias.lower() == p_alias else (edge.right, edge.left)
        if is_unique(ctx.profile, c_end.table, c_end.column):
            return None  # one related row per entity: "not" has one reading
        c_node = scope.by_alias[c_alias][0]
        sub = exp.Select(expressions=[exp.column(c_end.column, table=c_node.alias_or_name)])
        sub.set("from_" if "from_" in exp.Select.arg_types else "from", exp.From(this=c_node.copy()))
        conds = [positive]
        cp = ctx.profile.column(c_end.table, c_end.column)
        if cp is None or cp.null_count:
            conds.append(exp.Not(this=exp.Is(this=exp.column(c_end.column, table=c_node.alias_or_name),
                                             expression=exp.Null())))
        set_where(sub, conds)
        alt_root, alt = edit_copy(ctx.tree, select)
        kept = [p.copy() for p in conjuncts(select.args.get("where")) if p is not part]
        key = exp.column(p_end.column, table=p_end.alias)
        kept.append(exp.Not(this=exp.In(this=key, query=exp.Subquery(this=sub))))
        set_where(alt, kept)
        res = ctx.run(alt_root)
        if res is None:
            return None
        p_table, c_table = p_end.table, c_end.table
        p_word, c_word = entity_word(p_table), entity_word(c_table)
        text = (f"{part.sql(dialect=ctx.dialect)} keeps every {p_word} with at least one {c_word} that does not "
                f"match; the alternative keeps each {p_word} with no matching {c_word}")
        return make_choice(self, text + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res)


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

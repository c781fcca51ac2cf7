"""Counting unit: count rows, or distinct entities? (SpecBridge: "counting unit").

Forms read, per SELECT of the tree (the COUNTs among its own output columns):

- ``COUNT(*)`` / ``COUNT(1)`` over joins that can repeat the counted table's rows: the
  alternative is ``COUNT(DISTINCT t.key)``. The counted table is the first table whose single
  key is not grouped on (the driving table unless the query groups by it), or the one the
  question names. The profile rules a join out when it only reaches unique columns (a
  many-to-one join cannot repeat rows), so nothing runs.
- ``COUNT(t.key)`` over such joins, and ``COUNT(t.fk)`` on a foreign-key column (one row per
  child, so the referenced entity repeats): the alternative is ``COUNT(DISTINCT …)``.
- the reverse, ``COUNT(DISTINCT t.attribute)`` on a non-key column that is not unique, where
  the question names the table and not the attribute ("how many tracks", counted by distinct
  name): rows sharing a value count once; the alternative counts ``DISTINCT t.key``.

Every alternative replaces the COUNT node (and the same COUNT in ORDER BY or HAVING).
"""

from __future__ import annotations

from sqlglot import exp

from ..answer import Choice
from ._read import (Ref, Scope, edit_copy, expand_key, is_key_column, is_unique, name_forms, own_nodes,
                    selects, words_of, entity_word)
from .base import ChoiceContext, make_choice, values_note
from .lexicon import Lexicon, mentions


class CountingUnit:
    type = "counting_unit"
    lexicon = Lexicon(phrases=("distinct", "different", "unique", "how many times", "number of times", "rows",
                               "records", "entries", "occurrences", "instances"))

    def detect(self, ctx: ChoiceContext) -> list[Choice]:
        out = []
        for select in selects(ctx.tree):
            scope = Scope(select, ctx.profile)
            if not scope.by_alias:
                continue
            counts = [c for p in select.expressions for c in own_nodes(p, exp.Count)]
            for count in counts:
                choice = self._one(ctx, select, scope, count)
                if choice is not None:
                    out.append(choice)
        return out

    def _one(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count) -> Choice | None:
        arg = count.this
        if isinstance(arg, exp.Distinct):
            return self._reverse(ctx, select, scope, count)
        if arg is None or isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string):
            return self._rows(ctx, select, scope, count)
        if isinstance(arg, exp.Column):
            return self._column(ctx, select, scope, count)
        return None

    def _rows(self, ctx, select, scope, count) -> Choice | None:
        if scope.other_sources:
            return None  # a derived table may be what is counted; its rows have no key to read
        grouped = _grouped(select, scope)
        candidates = []
        for alias in scope.order:
            tp = scope.table(alias)
            key = ctx.profile.entity_key(tp.name)
            if key and (alias, key.lower()) not in grouped:
                candidates.append((alias, tp.name, key))
        if not candidates:
            return None
        named = [c for c in candidates if any(mentions(ctx.question, f) for f in name_forms(c[1]))]
        alias, table, key = (named or candidates)[0]
        if not scope.fans_out(alias):
            return None
        target = exp.column(key, table=scope.written_alias(alias))
        what = (f"{count.sql(dialect=ctx.dialect)} counts joined rows, and the joins repeat {table} rows; "
                f"COUNT(DISTINCT {target.sql(dialect=ctx.dialect)}) counts each {entity_word(table)} once")
        return self._alternative(ctx, select, count, target, what)

    def _column(self, ctx, select, scope, count) -> Choice | None:
        ref = scope.resolve(count.this)
        if ref is None:
            return None
        if is_unique(ctx.profile, ref.table, ref.column):
            if not scope.fans_out(ref.alias):
                return None
            what = (f"{count.sql(dialect=ctx.dialect)} counts joined rows, and the joins repeat {ref.table} rows; "
                    f"the DISTINCT count counts each {entity_word(ref.table)} once")
        elif is_key_column(ctx.profile, ref.table, ref.column):
            what = (f"{count.sql(dialect=ctx.dialect)} counts {ref.table} rows, so the same {ref.column} is "
                    f"counted once per row; the DISTINCT count counts each {ref.column} once")
        else:
            return None
        return self._alternative(ctx, select, count, count.this.copy(), what)

    def _reverse(self, ctx, select, scope, count) -> Choice | None:
        inner = count.this.expressions
        if len(inner) != 1 or not isinstance(inner[0], exp.Column):
            return None
        ref: Ref | None = scope.resolve(inner[0])
        if ref is None or is_unique(ctx.profile, ref.table, ref.column) or is_key_column(ctx.profile, ref.table, ref.column):
            return None
        key = ctx.profile.entity_key(ref.table)
        if key is None:
            return None
        names_table = any(mentions(ctx.question, f) for f in name_forms(ref.table))
        names_column = any(mentions(ctx.question, f) for f in name_forms(ref.column))
        if not names_table or names_column:
            return None
        target = exp.column(key, table=ref.alias)
        what = (f"{count.sql(dialect=ctx.dialect)} counts distinct {words_of(ref.column)} values, so "
                f"{ref.table} rows that share one count once; COUNT(DISTINCT {target.sql(dialect=ctx.dialect)}) "
                f"counts every {entity_word(ref.table)}")
        return self._alternative(ctx, select, count, target, what)

    def _alternative(self, ctx, select, count, target: exp.Expression, what: str) -> Choice | None:
        alt_root, alt = edit_copy(ctx.tree, select)
        new = exp.Count(this=exp.Distinct(expressions=[target]))
        replaced = 0
        for node in own_nodes(alt, exp.Count):
            if node == count:
                node.replace(new.copy())
                replaced += 1
        if not replaced:
            return None
        res = ctx.run(alt_root)
        if res is None:
            return None
        return make_choice(self, what + values_note(ctx, res), ctx, ctx.to_sql(alt_root), res)


def _grouped(select: exp.Select, scope: Scope) -> set[tuple[str, str]]:
    out = set()
    group = select.args.get("group")
    for g in group.expressions if group else []:
        g = expand_key(select, g)
        if isinstance(g, exp.Column):
            ref = scope.resolve(g)
            if ref is not None:
                out.add((ref.alias.lower(), ref.column.lower()))
                key = scope.profile.entity_key(ref.table)
                if key and is_unique(scope.profile, ref.table, ref.column):
                    # A unique column (a name) groups one row of its table, as its key would.
                    out.add((ref.alias.lower(), key.lower()))
    return out


"""Counting unit: count rows, or distinct entities? (SpecBridge: "counting unit").

Forms read, per SELECT of the tree (the COUNTs among its own output columns):

- ``COUNT(*)`` / ``COUNT(1)`` over joins that can repeat the counted table's rows: the
  alternative is ``COUNT(DISTINCT t.key)``. The counted table is the first table whose single
  key is not grouped on (the driving table unless the query groups by it), or the one the
  question names. The profile rules a join out when it only reaches unique columns (a
  many-to-one join cannot repeat rows), so nothing runs.
- ``COUNT(t.key)`` over such joins, and ``COUNT(t.fk)`` on a foreign-key column (one row per
  child, so the referenced entity repeats): the alternative is ``COUNT(DISTINCT …)``. A
  foreign key is read only when the question names the entity it refers to ("the number of
  tracks in each playlist" for ``COUNT(pt.TrackId)``): "the best-selling artists" counted by
  ``COUNT(il.TrackId)`` counts sales, and distinct tracks sold is no reading of it.
- the reverse, ``COUNT(DISTINCT t.attribute)`` on a non-key column that is not unique, where
  the question names the table and not the attribute ("how many tracks", counted by distinct
  name): rows sharing a value count once; the alternative counts ``DISTINCT t.key``.

The question's counted noun decides what ``COUNT(*)`` counts: the noun right after "how
many", "number of", "most" (:func:`vouchsql.counting.counted_table`). When it is a table the joins do
not repeat (the many side: "how many tracks" over albums joined to tracks), counting rows is
right and nothing is offered. When the counted table is not read at all ("how many
customers bought a laptop?" over orders and order lines), the alternative counts the
distinct values of the one column read that refers to it (``COUNT(DISTINCT o.customer_id)``).
A ``COUNT(DISTINCT k)`` grouped by ``k`` (or by a column a join or ``USING`` makes equal to
it) is always 1 and is never offered.

Whether the joins repeat the counted rows is read from the joins' shape, then measured on the
data by :func:`vouchsql.counting.repetition`, the one measure the ``question_shape`` and
``join_fanout`` checks read too: where the data shows no repetition nothing is offered, and
the description gives the measured rows and keys.

Every alternative replaces the COUNT node (and the same COUNT in ORDER BY or HAVING).
"""

from __future__ import annotations

from typing import Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..sql.scope import Edge, Ref, Scope
from ..sql.tree import edit_copy, expand_key, own_nodes, selects
from ..counting import Repetition, counted_table, repetition
from ..words import entity_word, name_forms, words_of
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon, mentions


class CountingUnit:
    type = "counting_unit"
    lexicon = Lexicon(phrases=("distinct", "different", "unique", "how many times", "number of times", "rows",
                               "records", "entries", "occurrences", "instances"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        for select in selects(ctx.tree):
            scope = Scope(select, ctx.profile)
            if not scope.by_alias:
                continue
            counts = [c for p in select.expressions for c in own_nodes(p, exp.Count)]
            for count in counts:
                site = self._one(ctx, select, scope, count)
                if site is not None:
                    yield site

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        """Every COUNT equal to the site's (in the projections, ORDER BY, HAVING) counts
        ``DISTINCT target`` instead."""
        assert site.select is not None  # the SELECT of the COUNT
        alt_root, alt = edit_copy(tree, site.select)
        new = exp.Count(this=exp.Distinct(expressions=[site.target]))
        replaced = 0
        for node in own_nodes(alt, exp.Count):
            if node == site.node:
                node.replace(new.copy())
                replaced += 1
        return alt_root if replaced else None

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        return cast(str, site.what) + values_note(shown, alt)

    def _one(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count) -> Site | None:
        arg = count.this
        if isinstance(arg, exp.Distinct):
            return self._reverse(ctx, select, scope, count)
        if arg is None or isinstance(arg, exp.Star) or (isinstance(arg, exp.Literal) and not arg.is_string):
            return self._rows(ctx, select, scope, count)
        if isinstance(arg, exp.Column):
            return self._column(ctx, select, scope, count)
        return None

    def _rows(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count) -> Site | None:
        if scope.other_sources:
            return None  # a derived table may be what is counted; its rows have no key to read
        read = {tp.name.lower() for _, tp in scope.by_alias.values()}
        asked = counted_table(ctx.question, sorted(t.name for t in ctx.profile.tables))
        if asked is not None and asked.lower() not in read:
            return self._unread(ctx, select, scope, count, asked)
        grouped = _grouped(select, scope)
        candidates = []
        for alias in scope.order:
            tp = scope.table(alias)
            assert tp is not None  # an alias of the scope
            key = ctx.profile.entity_key(tp.qualified)
            if key and (alias, key.lower()) not in grouped:
                candidates.append((alias, tp.qualified, key))
        if not candidates:
            return None
        counted = counted_table(ctx.question, sorted({tp.qualified for _, tp in scope.by_alias.values()}))
        if counted is not None:
            # The question says what it counts: a table the joins repeat is the choice; the
            # many side (or a grouped table) is counted right by counting rows.
            hits = [c for c in candidates if c[1].lower() == counted.lower()]
            if not hits:
                return None
            alias, table, key = hits[0]
        else:
            named = [c for c in candidates if any(mentions(ctx.question, f) for f in name_forms(c[1]))]
            alias, table, key = (named or candidates)[0]
        target = scope.column(alias, key, ctx.dialect)
        repeated = _repeated(ctx, select, scope, alias, target)
        if repeated is None:
            return None
        what = (f"{count.sql(dialect=ctx.dialect)} counts joined rows, and the joins repeat {table} rows{repeated}; "
                f"COUNT(DISTINCT {target.sql(dialect=ctx.dialect)}) counts each {entity_word(table)} once")
        return self._alternative(ctx, select, count, target, what)

    def _unread(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count,
                asked: str) -> Site | None:
        """"How many customers bought …" answered by COUNT(*) over rows of another table: the
        alternative counts the distinct values of the one column read that refers to the
        counted table (``COUNT(DISTINCT o.customer_id)``)."""
        refs = []
        for alias, (_, tp) in scope.by_alias.items():
            for cp in tp.columns:
                ref = Ref(scope.written_alias(alias), tp.qualified, cp.name)
                # The referenced table by its own name, as the question names it (a foreign
                # key's table is keyed ``schema.table`` outside the default schema).
                referenced = ctx.profile.find(ctx.profile.referenced_table(ref.table, ref.column) or "")
                if referenced is not None and referenced.name.lower() == asked.lower():
                    refs.append(ref)
        if len(refs) != 1:
            return None  # none, or several roads to the counted table: do not guess
        ref = refs[0]
        target = scope.column(ref.alias, ref.column, ctx.dialect)
        one = entity_word(asked)
        many = max(name_forms(one), key=len)
        rows = "joined rows" if select.args.get("joins") else f"{ref.table} rows"
        what = (f"the question counts {many}, but {count.sql(dialect=ctx.dialect)} counts {rows}; "
                f"COUNT(DISTINCT {target.sql(dialect=ctx.dialect)}) counts each {one} once")
        return self._alternative(ctx, select, count, target, what)

    def _column(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count) -> Site | None:
        ref = scope.resolve(count.this)
        if ref is None:
            return None
        if ctx.profile.is_unique(ref.table, ref.column):
            repeated = _repeated(ctx, select, scope, ref.alias, count.this)
            if repeated is None:
                return None
            what = (f"{count.sql(dialect=ctx.dialect)} counts joined rows, and the joins repeat {ref.table} rows{repeated}; "
                    f"the DISTINCT count counts each {entity_word(ref.table)} once")
        elif ctx.profile.is_key_column(ref.table, ref.column):
            target = ctx.profile.referenced_table(ref.table, ref.column)
            forms = name_forms(target) if target else name_forms(_stem(ref.column))
            if not any(mentions(ctx.question, f) for f in forms):
                return None  # the question does not speak of the referenced entity: rows are what it counts
            counted = counted_table(ctx.question, sorted({tp.qualified for _, tp in scope.by_alias.values()}))
            if counted is not None and counted.lower() == ref.table.lower():
                return None  # "how many invoice lines": the rows are the counted entity
            what = (f"{count.sql(dialect=ctx.dialect)} counts {ref.table} rows, so the same {ref.column} is "
                    f"counted once per row; the DISTINCT count counts each {ref.column} once")
        else:
            return None
        return self._alternative(ctx, select, count, count.this.copy(), what)

    def _reverse(self, ctx: ChoiceContext, select: exp.Select, scope: Scope, count: exp.Count) -> Site | None:
        inner = count.this.expressions
        if len(inner) != 1 or not isinstance(inner[0], exp.Column):
            return None
        ref: Ref | None = scope.resolve(inner[0])
        if ref is None or ctx.profile.is_unique(ref.table, ref.column) or ctx.profile.is_key_column(ref.table, ref.column):
            return None
        key = ctx.profile.entity_key(ref.table)
        if key is None:
            return None
        names_table = any(mentions(ctx.question, f) for f in name_forms(ref.table))
        names_column = any(mentions(ctx.question, f) for f in name_forms(ref.column))
        if not names_table or names_column:
            return None
        target = scope.column(ref.alias, key, ctx.dialect)
        what = (f"{count.sql(dialect=ctx.dialect)} counts distinct {words_of(ref.column)} values, so "
                f"{ref.table} rows that share one count once; COUNT(DISTINCT {target.sql(dialect=ctx.dialect)}) "
                f"counts every {entity_word(ref.table)}")
        return self._alternative(ctx, select, count, target, what)

    @staticmethod
    def _alternative(ctx: ChoiceContext, select: exp.Select, count: exp.Count, target: exp.Expression,
                     what: str) -> Site | None:
        scope = Scope(select, ctx.profile)
        ref = scope.resolve(target) if isinstance(target, exp.Column) else None
        if ref is not None and (ref.alias.lower(), ref.column.lower()) in _grouped(select, scope, keys=False):
            return None  # COUNT(DISTINCT k) grouped by k is 1 in every group
        return ctx.site("count_distinct", count, select, target=target, what=what)


def _repeated(ctx: ChoiceContext, select: exp.Select, scope: Scope, alias: str, key: exp.Expression) -> str | None:
    """Whether the joins repeat the rows of the table at ``alias``, by the one measure the
    count checks read too (:func:`vouchsql.counting.repetition`): None where they cannot
    (no join reaches a column that is not unique on its far side) or where the data shows
    they do not; else the measured repetition, for the description ("" where the probe could
    not measure it and only the joins' shape says they may)."""
    if not scope.fans_out(alias):
        return None
    rep: Repetition | None = repetition(ctx.prober, select, key) if isinstance(key, exp.Column) else None
    if rep is None:
        return ""
    if not rep.repeats:
        return None
    return f" ({rep.rows:,} joined rows carry {rep.entities:,} distinct keys)"


def _grouped(select: exp.Select, scope: Scope, keys: bool = True) -> set[tuple[str, str]]:
    """(alias, column) pairs, lower case, the SELECT groups by: a column resolved in the
    scope, every column of that name when ``JOIN … USING`` makes them equal (an unqualified
    ``GROUP BY AlbumId``), and every column an inner join's equality makes equal to a grouped
    one. With ``keys``, a unique column (a name) also groups its table's key, as the key
    would."""
    out: set[tuple[str, str]] = set()
    group = select.args.get("group")
    using = {c.name.lower() for j in select.args.get("joins") or [] for c in j.args.get("using") or []
             if isinstance(c, (exp.Column, exp.Identifier))}
    for g in group.expressions if group else []:
        g = expand_key(select, g)
        if not isinstance(g, exp.Column):
            continue
        ref = scope.resolve(g)
        if ref is None and not g.table and g.name.lower() in using:
            for alias, (_, tp) in scope.by_alias.items():
                cp = tp.column(g.name)
                if cp is not None:
                    out.add((alias, cp.name.lower()))
            continue
        if ref is not None:
            out.add((ref.alias.lower(), ref.column.lower()))
            key = scope.profile.entity_key(ref.table)
            if keys and key and scope.profile.is_unique(ref.table, ref.column):
                # A unique column (a name) groups one row of its table, as its key would.
                out.add((ref.alias.lower(), key.lower()))
    inner = [e for e in scope.edges() if not _outer(select, e)]
    changed = True
    while changed:
        changed = False
        for e in inner:
            a = (e.left.alias.lower(), e.left.column.lower())
            b = (e.right.alias.lower(), e.right.column.lower())
            for x, y in ((a, b), (b, a)):
                if x in out and y not in out:
                    out.add(y)
                    changed = True
    return out


def _outer(select: exp.Select, edge: Edge) -> bool:
    """Whether the equality sits in an outer join's ON (its two sides need not be equal)."""
    node: exp.Expr | None = edge.node
    while node is not None and not isinstance(node, (exp.Join, exp.Select)):
        node = node.parent
    return isinstance(node, exp.Join) and (node.side or "").upper() in ("LEFT", "RIGHT", "FULL")


def _stem(column: str) -> str:
    """``TrackId`` → ``Track``, ``customer_id`` → ``customer``: the entity a key column names."""
    words = words_of(column).split()
    if len(words) > 1 and words[-1] in ("id", "key", "code", "no", "number"):
        words = words[:-1]
    return "_".join(words)

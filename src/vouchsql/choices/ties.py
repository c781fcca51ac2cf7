"""Ties at a cut-off: one tied row, or all of them (SpecBridge: "ties and selection").

Forms read:

- ``ORDER BY key LIMIT k`` (any SELECT of the tree, no DISTINCT): when rows tie
  with the k-th on the ranking key, the alternative drops the LIMIT and keeps every row whose
  key reaches the k-th value: ``WHERE key >= v`` (``<=`` ascending; ``HAVING`` for an
  aggregate key). ``v`` is the literal k-th value when the shown result carries it exactly
  (an integer or a string), else a subquery ``(SELECT key … ORDER BY key LIMIT 1 OFFSET k-1)``.
  Trailing ORDER BY keys that only break ties (a text column or a unique key) are ignored:
  the question ranks by the first key, and a name order is the silent choice itself.
  Values tie when they are equal after the normalisation results are compared by
  (:func:`vouchsql.agreement.normalise_value`: a float or decimal rounded to 4 decimals), so
  SQLite's REAL sums 43.62 and 43.61999999999999 tie as PostgreSQL's NUMERIC 43.62 do. When a
  cut-off ties only after that rounding, its bound is the edge of the range of values that round
  to the same value (``key >= 43.61995`` for 43.62, ``<= 43.62005`` ascending), a plain numeric
  literal in every dialect; an exact tie keeps the bound above.
- ``ORDER BY key LIMIT k OFFSET m`` (also ``LIMIT m, k``): a page of the ranking has two
  cut-offs, and a tie at either one is a tie. When the (m+1)-th row ties with the m-th, or the
  (m+k)-th with the next, the alternative drops LIMIT and OFFSET and keeps every row whose key
  lies between the page's first and last values (``WHERE key <= first AND key >= last``
  descending, by literals or ``LIMIT 1 OFFSET`` subqueries). One probe (``LIMIT k + 2 OFFSET
  m - 1``) reads both cut-offs.
- a bare column beside ``MAX(x)``/``MIN(x)`` without GROUP BY (SQLite returns one arbitrary
  row): the alternative returns every row with ``x = (SELECT MAX(x) …)``.
- ``ROW_NUMBER() OVER (… ORDER BY key)`` kept with ``rn = 1``, ``rn <= k`` or ``rn < k`` (in an
  outer WHERE, or QUALIFY): row numbers split ties arbitrarily; the alternative numbers with
  ``RANK()``, which keeps every row tied at the cut-off. It *differs* when it returns more rows.

In a subquery compared with ``=`` (``WHERE id = (SELECT id … ORDER BY x DESC LIMIT 1)``) the
comparison becomes ``IN`` once the LIMIT is gone, so every tied row can come through.
``WHERE x = (SELECT MAX(x) …)`` already returns every tied row, so it raises nothing. A shown
result with fewer than k rows cut nothing, so nothing runs. The alternative *differs* when it
returns more rows than the shown query.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Iterator, cast

from sqlglot import exp

from ..agreement import _QUANTUM, NAN, normalise_value
from ..answer import Result
from ..sql.edit import conjuncts
from ..sql.scope import Scope
from ..sql.tree import (edit_copy, expand_key, has_aggregate, has_window, limit_value, offset_value, own_nodes,
                        projection_for, selects, set_having, set_where, twin, unalias)
from ..words import show
from .base import ChoiceContext, Site
from .lexicon import Lexicon

if TYPE_CHECKING:
    from ..db.profile import Profile

_PROBE_KEY = "vouch_tie_key"


class Ties:
    type = "ties"
    lexicon = Lexicon(phrases=("all", "every", "ties", "tie", "tied", "including ties", "with ties",
                               "exactly one", "only one", "just one", "a single", "any one", "one of the"))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        for select in selects(ctx.tree):
            if isinstance(select.parent, exp.Union):
                continue
            site = self._limit(ctx, select) or self._bare_extreme(ctx, select)
            if site is not None:
                yield site
        yield from self._row_number(ctx)

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        if site.form == "row_number":
            alt_root = tree.copy()
            node = twin(alt_root, tree, site.node)
            if node is None:
                return None
            node.replace(exp.Rank())
            return alt_root
        assert site.select is not None  # the other forms' sites are in a SELECT
        alt_root, alt = edit_copy(tree, site.select)
        if site.form == "bare_extreme":
            assert site.node is not None  # the aggregate
            target = alt.expressions[site.index]
            value = site.node.this.copy()
            if isinstance(target, exp.Alias):
                target.set("this", value)
            else:
                target.replace(value)
            sub = site.select.copy()
            sub.set("expressions", [site.node.copy()])
            sub.set("order", None)
            set_where(alt, conjuncts(alt.args.get("where"))
                      + [exp.EQ(this=site.node.this.copy(), expression=exp.Subquery(this=sub))])
            alt.set("order", None)
            return alt_root
        # "limit" and "page": drop the cut, keep every row whose key reaches the cut-off value(s)
        alt.set("limit", None)
        if site.form == "page":
            alt.set("offset", None)
        conds = [c.copy() for c in site.conds]
        if site.aggregate:
            set_having(alt, conjuncts(alt.args.get("having")) + conds)
        else:
            set_where(alt, conjuncts(alt.args.get("where")) + conds)
        _equals_to_in(alt)  # last: it replaces the node holding alt
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        return cast(str, getattr(self, f"_describe_{site.form}")(site, shown, alt))

    # -- ROW_NUMBER() OVER (… ORDER BY key) kept at rn = 1 / rn <= k ----------------------
    def _row_number(self, ctx: ChoiceContext) -> Iterator[Site]:
        for win in list(ctx.tree.find_all(exp.Window)):
            if not isinstance(win.this, exp.RowNumber) or win.args.get("order") is None:
                continue
            alias = win.parent
            if isinstance(alias, exp.Alias) and alias.this is win:
                name = alias.alias.lower()
                kept = any(_keeps_top(c, name) for s in selects(ctx.tree)
                           for c in conjuncts(s.args.get("where")) + conjuncts(s.args.get("qualify")))
            else:  # QUALIFY ROW_NUMBER() OVER (…) = 1
                kept = any(_keeps_top(c, None, win) for s in selects(ctx.tree) for c in conjuncts(s.args.get("qualify")))
            if kept:
                keys = ", ".join(o.sql(dialect=ctx.dialect) for o in win.args["order"].expressions)
                yield ctx.site("row_number", win.this, compare="more_rows", keys=keys)

    @staticmethod
    def _describe_row_number(site: Site, shown: Result, alt: Result) -> str:
        return (f"ROW_NUMBER() numbers rows tied on {site.keys} in an arbitrary order, so keeping the first rows "
                f"drops the others tied with them; RANK() keeps every tied row ({alt.row_count} rows instead of "
                f"{shown.row_count})")

    # -- ORDER BY … LIMIT k ---------------------------------------------------------------
    def _limit(self, ctx: ChoiceContext, select: exp.Select) -> Site | None:
        k = limit_value(select)
        order = select.args.get("order")
        if k is None or order is None or select.args.get("distinct"):
            return None
        m = offset_value(select)
        if m is None:
            return None  # an OFFSET that is not a number: do not guess
        scope = Scope(select, ctx.profile)
        keys = order.expressions
        ranking = [keys[0]] + [o for o in keys[1:] if not _breaks_ties(scope, select, o.this)]
        if len(ranking) != 1:
            return None
        ordered = keys[0]
        key = expand_key(select, ordered.this)
        if isinstance(key, exp.Literal) or has_window(key) or not key.find(exp.Column, exp.AggFunc):
            return None
        aggregate = has_aggregate(key)
        if aggregate and not select.args.get("group"):
            return None
        if isinstance(key, exp.Column) and not select.args.get("group"):
            ref = scope.resolve(key)
            if ref is not None and _cannot_tie(ctx.profile, ref.table, ref.column) and not scope.fans_out(ref.alias):
                return None  # a unique key cannot tie
        desc = bool(ordered.args.get("desc"))
        if m:
            return self._page(ctx, select, key, k, m, desc, aggregate)
        is_root = select is ctx.tree
        result = ctx.result
        index = projection_for(select, ordered.this) if is_root else None
        if index is None and is_root and isinstance(key, exp.Column):
            # SELECT * and friends: the key is the one result column of that name.
            hits = [i for i, c in enumerate(result.columns) if c.lower() == key.name.lower()]
            index = hits[0] if len(hits) == 1 else None
        value = None
        if is_root:
            if result.row_count < k and not result.truncated:
                return None  # nothing was cut
            if index is not None and result.row_count >= k and index < len(result.rows[k - 1]):
                value = result.rows[k - 1][index]
                if value is None:
                    return None  # NULL at the cut-off: not a tie on a value
        exact, rounded = _exact(value), False
        if not exact:
            # The k-th value is not in the shown result, or is a float that is not exact as a
            # literal: one probe, LIMIT k + 1, says whether the row past the cut ties.
            probed = self._probe(ctx, select, key, k)
            if probed is None:
                return None
            value, tied, rounded = probed
            if not tied:
                return None
            exact = _exact(value)
        compare = exp.GTE if desc else exp.LTE
        if rounded:
            bound = _rounded_bound(value, compare)
        else:
            bound = _literal(value) if exact else _kth(select, key, desc, k - 1)
        cond = compare(this=key.copy(), expression=bound)
        return ctx.site("limit", key, select, compare="more_rows" if is_root else "result", conds=[cond],
                        aggregate=aggregate, k=k, desc=desc, is_root=is_root, index=index, value=value,
                        key_sql=key.sql(dialect=ctx.dialect))

    @staticmethod
    def _describe_limit(site: Site, shown: Result, alt: Result) -> str:
        k, value, index, key_sql = site.k, site.value, site.index, site.key_sql
        if site.is_root and index is not None and value is not None:
            tied = sum(1 for r in alt.rows if index < len(r) and _same(r[index], value))
            extreme = "highest" if site.desc else "lowest"
            if tied <= 1 and alt.row_count <= k:
                return f"no other row ties with the {_ordinal(k)} at {key_sql} = {show(value)}"
            if k == 1:
                return (f"LIMIT 1 returns one row, but {tied} rows tie for the {extreme} {key_sql} "
                        f"({show(value)}); the alternative returns every tied row ({alt.row_count} rows)")
            return (f"LIMIT {k} cuts through a tie: {tied} rows share the value at the cut-off "
                    f"({key_sql} = {show(value)}); the alternative keeps every row tied with the "
                    f"{_ordinal(k)} ({alt.row_count} rows instead of {k})")
        if site.is_root:
            return (f"LIMIT {k} keeps {shown.row_count} rows by {key_sql}; keeping every row tied with "
                    f"the {_ordinal(k)} returns {alt.row_count} rows")
        return (f"a subquery keeps {k} row{'s' if k > 1 else ''} by {key_sql} (LIMIT {k}); keeping "
                f"every row tied at its cut-off changes the result")

    def _page(self, ctx: ChoiceContext, select: exp.Select, key: exp.Expression, k: int, m: int, desc: bool,
              aggregate: bool) -> Site | None:
        """``LIMIT k OFFSET m``: a tie at the page's top (rows m and m+1) or bottom (rows m+k
        and m+k+1) cut-off. The alternative keeps every row whose key lies between the page's
        first and last values."""
        if select is ctx.tree:
            probe_root, probe = edit_copy(ctx.tree, select)
        else:
            probe = probe_root = select.copy()
        probe.set("expressions", [p.copy() for p in select.expressions] + [exp.alias_(key.copy(), _PROBE_KEY)])
        probe.set("limit", exp.Limit(expression=exp.Literal.number(k + 2)))
        probe.set("offset", exp.Offset(expression=exp.Literal.number(m - 1)))
        # Fact: the page with one row either side, its ranking key last.
        res = ctx.probe(probe_root, "page_rows")
        if res is None or res.row_count < 2:
            return None  # the page is empty: nothing to tie with
        values = [r[-1] for r in res.rows]
        page = values[1:1 + k]
        if any(v is None for v in page):
            return None
        first, last = page[0], page[-1]
        top_tie = _same(values[0], first)
        bottom_tie = len(values) > k + 1 and _same(values[k + 1], last)
        if not (top_tie or bottom_tie):
            return None

        def cond(compare: type[exp.LTE] | type[exp.GTE], value: Any, outside: Any, position: int) -> exp.Expression:
            # A cut-off tied only after rounding (``outside``: the row past it) takes the
            # rounded range's edge; else the value itself, as a literal or a subquery.
            if outside is not None and outside != value and _same(outside, value):
                bound = _rounded_bound(value, compare)
            else:
                bound = _literal(value) if _exact(value) else _kth(select, key, desc, position)
            return compare(this=key.copy(), expression=bound)

        upper, lower = (exp.LTE, exp.GTE) if desc else (exp.GTE, exp.LTE)
        conds = [cond(upper, first, values[0], m),
                 cond(lower, last, values[k + 1] if len(values) > k + 1 else None, m + len(page) - 1)]
        is_root = select is ctx.tree
        return ctx.site("page", key, select, compare="more_rows" if is_root else "result", conds=conds,
                        aggregate=aggregate, k=k, m=m, page=page, top_tie=top_tie, bottom_tie=bottom_tie,
                        key_sql=key.sql(dialect=ctx.dialect))

    @staticmethod
    def _describe_page(site: Site, shown: Result, alt: Result) -> str:
        k, m, page, key_sql = site.k, site.m, site.page, site.key_sql
        first, last = page[0], page[-1]
        if len(page) == 1:
            return (f"LIMIT {k} OFFSET {m} keeps the {_ordinal(m + 1)} row by {key_sql} ({show(first)}), but other "
                    f"rows tie with it; the alternative keeps every row tied at {show(first)} "
                    f"({alt.row_count} rows instead of 1)")
        where = " and ".join(w for w, hit in ((f"its top ({show(first)})", site.top_tie),
                                              (f"its bottom ({show(last)})", site.bottom_tie)) if hit)
        return (f"LIMIT {k} OFFSET {m} keeps rows {m + 1} to {m + len(page)} by {key_sql}, but rows outside "
                f"the page tie with {where}; the alternative keeps every row tied with the page "
                f"({alt.row_count} rows instead of {len(page)})")

    @staticmethod
    def _probe(ctx: ChoiceContext, select: exp.Select, key: exp.Expression, k: int) -> tuple[Any, bool, bool] | None:
        """(the k-th key value, whether the row past the cut ties with it, whether only after
        rounding), from the fact ``cutoff_rows``: the SELECT with its key as an extra column and
        LIMIT k + 1; ``None`` when nothing was cut, the k-th value is NULL or the probe cannot
        run (a correlated subquery)."""
        if select is ctx.tree:
            probe_root, probe = edit_copy(ctx.tree, select)
        else:
            probe = probe_root = select.copy()
        probe.set("expressions", [p.copy() for p in select.expressions] + [exp.alias_(key.copy(), _PROBE_KEY)])
        probe.set("limit", exp.Limit(expression=exp.Literal.number(k + 1)))
        res = ctx.probe(probe_root, "cutoff_rows")
        if res is None or res.row_count < k:
            return None
        value = res.rows[k - 1][-1]
        if value is None:
            return None
        if res.row_count <= k:
            return value, False, False
        past = res.rows[k][-1]
        if past == value:
            return value, True, False
        return value, _same(past, value), True

    # -- SELECT name, MAX(x) without GROUP BY -----------------------------------------------
    def _bare_extreme(self, ctx: ChoiceContext, select: exp.Select) -> Site | None:
        if select is not ctx.tree or select.args.get("group") or select.args.get("limit") \
                or select.args.get("distinct"):
            return None
        aggs = [a for p in select.expressions for a in own_nodes(p, exp.AggFunc)]
        if len(aggs) != 1 or not isinstance(aggs[0], (exp.Max, exp.Min)):
            return None
        agg = aggs[0]
        index = next((i for i, p in enumerate(select.expressions) if unalias(p) is agg), None)
        if index is None or isinstance(agg.this, exp.Distinct) or not agg.this.find(exp.Column):
            return None
        others = [p for i, p in enumerate(select.expressions) if i != index]
        if not others or not any(p.find(exp.Column) for p in others) or any(p.find(exp.Star) for p in others):
            return None
        if ctx.result.row_count != 1:
            return None
        return ctx.site("bare_extreme", agg, select, compare="more_rows", index=index)

    @staticmethod
    def _describe_bare_extreme(site: Site, shown: Result, alt: Result) -> str:
        agg = site.node
        assert agg is not None  # the MAX or MIN
        word = "highest" if isinstance(agg, exp.Max) else "lowest"
        return (f"{site.sql(agg)} returns the other columns of one arbitrary row, but "
                f"{alt.row_count} rows share the {word} {site.sql(agg.this)}; the alternative returns every tied row")


def _exact(value: Any) -> bool:
    """A cut-off value a literal states exactly (an integer or a string, not a float)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    """Two key values tie: equal, or two numbers, one of them a float or decimal, equal after
    the normalisation results are compared by (:func:`normalise_value`, 4 decimals). Integers
    and text compare as they are; NULL and NaN tie with nothing."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    if not (_rounds(a) or _rounds(b)) or not (_numeric(a) and _numeric(b)):
        return False
    na, nb = normalise_value(a), normalise_value(b)
    return na is not NAN and na == nb


def _cannot_tie(profile: Profile, table: str, column: str) -> bool:
    """A unique key cannot tie: a unique column of integers or text. Distinct floats or
    decimals (43.62 and 43.620000000000005) may still tie once rounded."""
    cp = profile.column(table, column)
    if cp is not None and cp.is_number() and not cp.is_integer():
        return False
    return profile.is_unique(table, column)


def _rounds(value: Any) -> bool:
    return isinstance(value, (float, Decimal))


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _rounded_bound(value: Any, compare: type[exp.LTE] | type[exp.GTE]) -> exp.Expression:
    """The edge of the range of values that normalise as ``value`` does (its 4-decimal rounding
    ± half a unit): the lower edge for ``key >= …``, the upper one for ``key <= …``; a numeric
    literal, written in full."""
    centre = Decimal(repr(normalise_value(value)))
    half = _QUANTUM / 2
    edge = centre - half if compare is exp.GTE else centre + half
    return exp.Literal.number(format(edge, "f"))


def _literal(value: Any) -> exp.Expression:
    return exp.Literal.number(value) if isinstance(value, int) else exp.Literal.string(value)


def _kth(select: exp.Select, key: exp.Expression, desc: bool, position: int) -> exp.Expression:
    """``(SELECT key … ORDER BY key LIMIT 1 OFFSET position)``: the ranking's value at a
    0-based position, when no literal states it exactly."""
    sub = select.copy()
    sub.set("expressions", [key.copy()])
    sub.set("order", exp.Order(expressions=[exp.Ordered(this=key.copy(), desc=desc)]))
    sub.set("limit", exp.Limit(expression=exp.Literal.number(1)))
    sub.set("offset", exp.Offset(expression=exp.Literal.number(position)) if position else None)
    return exp.Subquery(this=sub)


def _keeps_top(cond: exp.Expression, name: str | None, window: exp.Window | None = None) -> bool:
    """``rn = 1``, ``rn <= k``, ``rn < k`` (or mirrored): a filter that keeps the first rows
    numbered by ROW_NUMBER (``name``: its output alias; ``window``: the window itself)."""
    def is_rn(node: exp.Expression) -> bool:
        if window is not None:
            return node is window
        return isinstance(node, exp.Column) and node.name.lower() == name

    if isinstance(cond, (exp.EQ, exp.LT, exp.LTE)):
        left, right = cond.this, cond.expression
        if is_rn(left) and isinstance(right, exp.Literal) and not right.is_string:
            return not isinstance(cond, exp.EQ) or right.this == "1"
    if isinstance(cond, (exp.EQ, exp.GT, exp.GTE)):
        left, right = cond.this, cond.expression
        if is_rn(right) and isinstance(left, exp.Literal) and not left.is_string:
            return not isinstance(cond, exp.EQ) or left.this == "1"
    return False


def _equals_to_in(sub: exp.Select) -> None:
    """``x = (SELECT … LIMIT 1)`` compares with one row; once the LIMIT is gone the subquery
    may return several tied rows, so the comparison becomes ``x IN (SELECT …)``."""
    wrapper = sub.parent
    if not isinstance(wrapper, exp.Subquery) or wrapper.args.get("alias"):
        return
    eq = wrapper.parent
    if not isinstance(eq, exp.EQ):
        return
    other = eq.expression if eq.this is wrapper else eq.this
    if other is wrapper or other.find(exp.Select):
        return
    eq.replace(exp.In(this=other.copy(), query=wrapper.copy()))


def _breaks_ties(scope: Scope, select: exp.Select, key: exp.Expression) -> bool:
    """A trailing ORDER BY key that only orders rows tied on the ranking: a text column
    (a name or title) or a unique key."""
    key = expand_key(select, key)
    if not isinstance(key, exp.Column):
        return False
    ref = scope.resolve(key)
    if ref is None:
        return False
    cp = scope.profile.column(ref.table, ref.column)
    return scope.profile.is_unique(ref.table, ref.column) or cp is None or not cp.is_number()


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"

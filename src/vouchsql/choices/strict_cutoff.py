"""Strict or inclusive cutoff (SpecBridge: "strict cutoff"; Appendix D's filter choices).

Forms read, per SELECT of the tree, in WHERE and HAVING conjuncts: ``expr > v``, ``>=``,
``<``, ``<=`` and ``expr BETWEEN a AND b`` against a literal the question itself mentions
(the number, or the string, as written in the question: a cutoff the question does not state
is a filter, not the question's cutoff). The alternative flips the strictness (``>`` ↔ ``>=``,
``<`` ↔ ``<=``; BETWEEN → both ends excluded).

A comparison of two columns (``o.ShippedDate >= o.RequiredDate``: "which orders are late?")
is a cutoff too, the other column being the line: in WHERE, when neither is a key column and
some rows sit exactly on it (the two are equal), the alternative flips the strictness.

A half-open range (``expr >= a AND expr < b``, the usual way to write a period) is not read.
For a WHERE condition one COUNT of the rows sitting exactly on the boundary comes first; with
none, the alternative is not run. A HAVING condition is checked by running the alternative.
"""

from __future__ import annotations

from typing import Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..sql.edit import conjuncts, count_star, reshape
from ..sql.scope import Ref, Scope
from ..sql.tree import edit_copy, literal_value, selects, set_having, set_where
from ..words import question_numbers, show
from .base import ChoiceContext, Site, values_note
from .lexicon import Lexicon

_FLIP: dict[type[exp.Expr], type[exp.Expression]] = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT}
_LOWER = (exp.GT, exp.GTE)


class StrictCutoff:
    type = "strict_cutoff"
    lexicon = Lexicon(
        phrases=("at least", "at most", "more than", "less than", "fewer than", "greater than", "above", "below",
                 "over", "under", "or more", "or less", "or fewer", "or higher", "or lower", "or above", "or below",
                 "or greater", "or over", "or under", "or later", "or earlier", "or older", "or younger", "or after",
                 "or before", "and after", "and before", "and later", "and earlier", "onward*", "exceed*",
                 "no more than", "no less than", "no fewer than", "not more than", "not less than", "strictly",
                 "inclusive", "inclusively", "exclusive", "minimum of", "maximum of", "up to", "between", "beyond",
                 "upwards of", "and up", "and above", "and below", ">=", "<=", "≥", "≤"),
        patterns=(r"(?<!\w)\w+er\s+than(?!\w)",),
        unless=(r"(rather|other|sooner) than",))

    def sites(self, ctx: ChoiceContext) -> Iterator[Site]:
        numbers = question_numbers(ctx.question)
        for select in selects(ctx.tree):
            for clause in ("where", "having"):
                parts = conjuncts(select.args.get(clause))
                for part in parts:
                    site = self._site(ctx, select, clause, parts, part, numbers)
                    if site is not None:
                        yield site

    def _site(self, ctx: ChoiceContext, select: exp.Select, clause: str, parts: list[exp.Expression],
              part: exp.Expression, numbers: list[float]) -> Site | None:
        if type(part) in _FLIP and clause == "where" and _column_pair(ctx, select, part):
            new: exp.Expression = _FLIP[type(part)](this=part.this.copy(), expression=part.expression.copy())
            boundary: exp.Expression = exp.EQ(this=part.this.copy(), expression=part.expression.copy())
            where_text = f"{part.this.sql(dialect=ctx.dialect)} = {part.expression.sql(dialect=ctx.dialect)}"
        elif type(part) in _FLIP:
            sides = _literal_side(part)
            if sides is None:
                return None
            expr, lit = sides
            value = literal_value(lit)
            if not _mentioned(value, ctx.question, numbers) or _half_open(parts, part, expr):
                return None
            new = _FLIP[type(part)](this=part.this.copy(), expression=part.expression.copy())
            boundary = exp.EQ(this=expr.copy(), expression=lit.copy())
            where_text = f"{expr.sql(dialect=ctx.dialect)} = {show(value)}"
        elif isinstance(part, exp.Between):
            expr, low, high = part.this, part.args.get("low"), part.args.get("high")
            lo, hi = literal_value(low), literal_value(high)
            if lo is None or hi is None or not expr.find(exp.Column, exp.AggFunc):
                return None
            assert low is not None and high is not None  # their literal values are read
            if not (_mentioned(lo, ctx.question, numbers) or _mentioned(hi, ctx.question, numbers)):
                return None
            new = exp.Paren(this=exp.and_(exp.GT(this=expr.copy(), expression=low.copy()),
                                          exp.LT(this=expr.copy(), expression=high.copy())))
            boundary = exp.Paren(this=exp.or_(exp.EQ(this=expr.copy(), expression=low.copy()),
                                              exp.EQ(this=expr.copy(), expression=high.copy())))
            where_text = f"{expr.sql(dialect=ctx.dialect)} = {show(lo)} or {show(hi)}"
        else:
            return None

        on_boundary = None
        if clause == "where":
            # Fact: the rows sitting exactly on the boundary (none: the strictness changes nothing).
            probe = reshape(select, [count_star()])
            set_where(probe, [p.copy() for p in parts if p is not part] + [boundary])
            on_boundary = ctx.count(probe, "on_boundary")
            if not on_boundary:
                return None
        return ctx.site("flip", part, select, clause=clause, new=new, where_text=where_text,
                        on_boundary=on_boundary)

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None:
        assert site.select is not None  # the SELECT of the condition
        alt_root, alt = edit_copy(tree, site.select)
        parts = conjuncts(site.select.args.get(site.clause))
        new_parts = [site.new.copy() if p is site.node else p.copy() for p in parts]
        (set_where if site.clause == "where" else set_having)(alt, new_parts)
        return alt_root

    def describe(self, site: Site, shown: Result, alt: Result) -> str:
        on_boundary = site.on_boundary
        strict = isinstance(site.node, (exp.GT, exp.LT))
        if on_boundary:
            count_text = f"{on_boundary} row{'s sit' if on_boundary != 1 else ' sits'}"
        else:
            count_text = "groups sit" if site.clause == "having" else "rows sit"
        assert site.node is not None  # the condition
        return (f"{count_text} exactly on the cutoff ({site.where_text}); {site.sql(site.node)} "
                f"{'leaves them out' if strict else 'keeps them'}, the alternative "
                f"{site.sql(site.new)} {'keeps them' if strict else 'leaves them out'}") + values_note(shown, alt)


def _column_pair(ctx: ChoiceContext, select: exp.Select, part: exp.Expression) -> bool:
    """``a.x > b.y``: two plain columns, neither a key (``t1.id < t2.id`` pairs rows, it is no cutoff)."""
    left, right = part.this, part.expression
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
        return False
    scope = Scope(select, ctx.profile)
    refs = [scope.resolve(left), scope.resolve(right)]
    if any(r is None for r in refs):
        return False
    return not any(ctx.profile.is_key_column(r.table, r.column) for r in cast("list[Ref]", refs))  # none is None


def _literal_side(part: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    left, right = part.this, part.expression
    if literal_value(right) is not None and literal_value(left) is None and left.find(exp.Column, exp.AggFunc):
        return left, right
    if literal_value(left) is not None and literal_value(right) is None and right.find(exp.Column, exp.AggFunc):
        return right, left
    return None


def _mentioned(value: float | str | None, question: str, numbers: list[float]) -> bool:
    if isinstance(value, float):
        return any(abs(n - value) < 1e-9 for n in numbers)
    if isinstance(value, str):
        return len(value.strip()) >= 2 and value.lower() in (question or "").lower()
    return False


def _half_open(parts: list[exp.Expression], part: exp.Expression, expr: exp.Expression) -> bool:
    """``expr >= a AND expr < b``: a period written the usual way, not a cutoff."""
    def direction(p: exp.Expression) -> tuple[str, bool] | None:
        sides = _literal_side(p) if type(p) in _FLIP else None
        if sides is None or sides[0] != expr:
            return None
        lower = isinstance(p, _LOWER) == (sides[0] is p.this)
        return ("lower" if lower else "upper", isinstance(p, (exp.GTE, exp.LTE)))

    mine = direction(part)
    if mine is None:
        return False
    for other in parts:
        if other is part:
            continue
        theirs = direction(other)
        if theirs is None or theirs[0] == mine[0]:
            continue
        lower_inclusive = (mine if mine[0] == "lower" else theirs)[1]
        upper_inclusive = (mine if mine[0] == "upper" else theirs)[1]
        if lower_inclusive and not upper_inclusive:
            return True
    return False


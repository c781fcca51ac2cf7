"""The eight planted errors of IES Appendix B that need no model, as edits of a correct
case's SQL or answer text. Each plant returns a :class:`Planted` or ``None`` when the case
has nothing to plant into (no join to rewire, no date to shift…)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, cast

from sqlglot import exp

from ..answer import Result
from ..checks.uncited_number import numbers_in
from ..db.base import Database
from ..db.profile import Profile, StandIn, key_overlap
from ..rules import RHO_MIN
from ..sql.edit import base_tables
from ..sql.inspect import ColumnRef, Inspection

STAND_IN_CODE = -1


@dataclass
class PlantContext:
    db: Database
    profile: Profile
    tree: exp.Expression
    inspection: Inspection
    result: Result
    answer_text: str
    question: str = ""


@dataclass
class Planted:
    kind: str
    sql: str
    answer_text: str | None  # None: rewrite the text from the planted SQL's rows
    note: str
    own_check: str | None
    patch_profile: Callable[[Profile], None] | None = field(default=None, repr=False)


def _sql(ctx: PlantContext, tree: exp.Expression) -> str:
    return tree.sql(dialect=ctx.db.dialect)


def _outer(tree: exp.Expr) -> exp.Select | None:
    while isinstance(tree, exp.Union):
        tree = tree.left
    return tree if isinstance(tree, exp.Select) else None


def fake_table(ctx: PlantContext) -> Planted | None:
    tree = ctx.tree.copy()
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and ctx.profile.table(table.name) is not None:
            new = table.name + "_archive"
            while ctx.profile.table(new) is not None:
                new += "_old"
            old = table.name
            table.set("this", exp.to_identifier(new))
            if not table.alias:  # keep qualified references such as Album.Title resolving
                table.set("alias", exp.TableAlias(this=exp.to_identifier(old)))
            return Planted("fake_table", _sql(ctx, tree), ctx.answer_text,
                           f"table {old} renamed to {new}", "missing_table")
    return None


def bad_join(ctx: PlantContext) -> Planted | None:
    select = _outer(ctx.inspection.qualified)
    if select is None or not ctx.inspection.joins:
        return None
    aliases = {t.alias_or_name: t.name for t in base_tables(select)}
    tables = ctx.profile  # key_overlap measures the two tables as it needs them
    for eq in select.find_all(exp.EQ):
        left, right = eq.left, eq.right
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        lt, rt = aliases.get(left.table), aliases.get(right.table)
        if not lt or not rt or lt == rt:
            continue
        target = ctx.profile.table(rt)
        for col in target.columns if target else []:
            if col.name.lower() == right.name.lower() or col.distinct_count == 0:
                continue
            assert target is not None  # the loop runs over its columns only when there is one
            pair = key_overlap(ctx.db, tables, lt, left.name, target.name, col.name)
            if pair is None or pair.rho is None or pair.rho >= RHO_MIN:
                continue
            tree = ctx.inspection.qualified.copy()
            for node in tree.find_all(exp.EQ):
                if node.sql() == eq.sql():
                    node.set("expression", exp.column(col.name, table=right.table))
                    break
            return Planted("bad_join", _sql(ctx, tree), None,
                           f"join {lt}.{left.name} = {rt}.{right.name} rewired to {rt}.{col.name} "
                           f"(ρ = {pair.rho:.2f})", "bad_join")
    return None


def stand_in(ctx: PlantContext) -> Planted | None:
    """A −1 code written into a numeric result column and recorded as that column's
    stand-in (IES App. B simulates it the same way). The original query is wrapped, so an
    ORDER BY … LIMIT inside it cannot sort the planted row away."""
    columns = ctx.result.columns
    if len(ctx.inspection.outputs) != len(columns) or not ctx.result.rows \
            or len({c.lower() for c in columns}) != len(columns):
        return None
    for i, out in enumerate(ctx.inspection.outputs):
        value = next((row[i] for row in ctx.result.rows if isinstance(row[i], (int, float))
                      and not isinstance(row[i], bool) and row[i] != STAND_IN_CODE), None)
        if value is None or not out.sources:
            continue
        inner = exp.column(columns[i], table="vouch_t", quoted=True)
        case = exp.Case(ifs=[exp.If(this=exp.EQ(this=inner.copy(), expression=exp.Literal.number(value)),
                                    true=exp.Literal.number(STAND_IN_CODE))], default=inner.copy())
        projections = [exp.alias_(case, c, quoted=True) if j == i else exp.column(c, table="vouch_t", quoted=True)
                       for j, c in enumerate(columns)]
        # The case's SQL is a query (it ran), so it can be a subquery.
        wrapped = exp.select(*projections).from_(cast(exp.Query, ctx.tree.copy()).subquery("vouch_t"))
        sources = list(out.sources)

        def patch(profile: Profile, sources: list[ColumnRef] = sources) -> None:
            for ref in sources:
                col = profile.column(ref.table, ref.column)
                if col is not None and not any(s.value == STAND_IN_CODE for s in col.stand_ins):
                    col.stand_ins.append(StandIn(value=STAND_IN_CODE, count=1, share=0.01, reason="planted"))

        return Planted("stand_in", _sql(ctx, wrapped), None,
                       f"{value!r} in '{columns[i]}' written as {STAND_IN_CODE}", "stand_in_value", patch)
    return None


def wrong_number(ctx: PlantContext) -> Planted | None:
    cells: list[float] = []
    for row in ctx.result.rows:
        for c in row:
            if isinstance(c, (int, float)) and not isinstance(c, bool):
                cells.extend((float(c), float(c) * 100))
    cells.append(float(ctx.result.row_count))
    given = {n.value for n in numbers_in(ctx.question)}
    for n in numbers_in(ctx.answer_text):
        # Plant into a number the result supplies: the check ignores numbers from the
        # question and the integers 1–5, so changing those would test nothing.
        if (n.decimals == 0 and 1 <= n.value <= 5) or n.value in given:
            continue
        step = 10 ** -n.decimals
        new = n.value * 1.37 + 7 * max(step, 1)
        while any(abs(new - c) <= step for c in cells):
            new += 11 * max(step, 1)
        text = f"{new:,.{n.decimals}f}" if "," in n.text else f"{new:.{n.decimals}f}"
        planted = ctx.answer_text.replace(n.text, text, 1)
        return Planted("wrong_number", ctx.tree.sql(dialect=ctx.db.dialect), planted,
                       f"{n.text} changed to {text} in the text", "uncited_number")
    return None


_DATE = re.compile(r"^(\d{4})(-\d{2}(-\d{2})?.*)?$")


def wrong_time_window(ctx: PlantContext) -> Planted | None:
    """IES App. B: "a year or date in the filter shifted by one year" — the whole window, so a
    range moves as a range (``>= '2012-01-01' AND < '2013-01-01'`` becomes 2013's, never the
    empty ``>= '2013-01-01' AND < '2013-01-01'`` that shifting only the first bound made)."""
    tree = ctx.tree.copy()
    shifted: list[str] = []
    for lit in list(tree.find_all(exp.Literal)):
        if not any(isinstance(p, (exp.Where, exp.Having, exp.Join)) for p in _parents(lit)):
            continue
        text = lit.this
        if lit.is_string and _DATE.match(text):
            lit.replace(exp.Literal.string(f"{int(text[:4]) + 1}{text[4:]}"))
            shifted.append(f"'{text}'")
        elif not lit.is_string and text.isdigit() and 1900 <= int(text) <= 2100:
            lit.replace(exp.Literal.number(int(text) + 1))
            shifted.append(text)
    if not shifted:
        return None
    return Planted("wrong_time_window", _sql(ctx, tree), None,
                   f"the time window shifted by one year ({', '.join(shifted)})", None)


def _parents(node: exp.Expr) -> Iterator[exp.Expr]:
    while node.parent is not None:
        node = node.parent
        yield node


def wrong_aggregate(ctx: PlantContext) -> Planted | None:
    tree = ctx.tree.copy()
    for node in tree.find_all(exp.Sum, exp.Avg, exp.Count):
        if isinstance(node, exp.Sum):
            node.replace(exp.Avg(this=node.this.copy()))
            return Planted("wrong_aggregate", _sql(ctx, tree), None, "SUM → AVG", None)
        if isinstance(node, exp.Avg):
            node.replace(exp.Sum(this=node.this.copy()))
            return Planted("wrong_aggregate", _sql(ctx, tree), None, "AVG → SUM", None)
        arg = node.this
        if isinstance(arg, exp.Distinct):
            node.replace(exp.Count(this=arg.expressions[0].copy()))
            return Planted("wrong_aggregate", _sql(ctx, tree), None, "COUNT(DISTINCT x) → COUNT(x)", None)
        if arg is not None and not isinstance(arg, exp.Star):
            node.replace(exp.Count(this=exp.Distinct(expressions=[arg.copy()])))
            return Planted("wrong_aggregate", _sql(ctx, tree), None, "COUNT(x) → COUNT(DISTINCT x)", None)
    return None


_FLIPS = {exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE}


def intent_flip(ctx: PlantContext) -> Planted | None:
    tree = ctx.tree.copy()
    for ordered in tree.find_all(exp.Ordered):
        ordered.set("desc", not ordered.args.get("desc"))
        return Planted("intent_flip", _sql(ctx, tree), None, "sort direction reversed", None)
    for node in tree.find_all(exp.Max, exp.Min):
        cls = exp.Min if isinstance(node, exp.Max) else exp.Max
        node.replace(cls(this=node.this.copy()))
        return Planted("intent_flip", _sql(ctx, tree), None, f"{node.key.upper()} → {cls.key.upper()}", None)
    for comparison in tree.find_all(*_FLIPS):
        comparison.replace(_FLIPS[type(comparison)](this=comparison.left.copy(), expression=comparison.right.copy()))
        return Planted("intent_flip", _sql(ctx, tree), None, "comparison reversed", None)
    return None


def partial_answer(ctx: PlantContext) -> Planted | None:
    tree = ctx.tree.copy()
    select = _outer(tree)
    if select is None:
        return None
    if ctx.result.row_count >= 2 and not ctx.result.truncated:
        half = math.ceil(ctx.result.row_count / 2)
        # A query: _outer found its SELECT.
        wrapped = exp.select("*").from_(cast(exp.Query, tree).subquery("vouch_full")).limit(half)
        return Planted("partial_answer", _sql(ctx, wrapped), None, f"only {half} of {ctx.result.row_count} rows", None)
    if len(select.expressions) >= 2:
        select.set("expressions", select.expressions[:-1])
        return Planted("partial_answer", _sql(ctx, tree), None, "the last column left out", None)
    return None


PLANTS: dict[str, Callable[[PlantContext], Planted | None]] = {
    "fake_table": fake_table,
    "bad_join": bad_join,
    "stand_in": stand_in,
    "wrong_number": wrong_number,
    "wrong_time_window": wrong_time_window,
    "wrong_aggregate": wrong_aggregate,
    "intent_flip": intent_flip,
    "partial_answer": partial_answer,
}
DETERMINISTIC = ("fake_table", "bad_join", "stand_in", "wrong_number")

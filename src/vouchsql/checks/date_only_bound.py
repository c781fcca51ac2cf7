"""Cap: a date-only bound (``'1997-12-31'``) on a column whose values carry a time of day,
written so that the rows of that day after midnight fall on the wrong side of it.

A date-only literal compared with a timestamp (or with timestamp text, as SQLite stores it) is
that day's midnight, or a string shorter than every value of that day, so

- ``c <= 'D'`` and ``c BETWEEN … AND 'D'`` leave out the rows of day D after midnight (on
  SQLite's text, every row of day D: ``'1997-12-31 00:00:00.000' > '1997-12-31'``);
- ``c > 'D'`` keeps them, though "after D" excludes day D;
- ``c = 'D'`` and ``c IN ('D', …)`` miss them.

``c >= 'D'`` and ``c < 'D'`` (the half-open range) are right and never read, nor is a bound
inside an OR or NOT. Each form found in a WHERE (or an inner join's ON) on a column of a base
table is measured in two steps, and fires only when the answer changes:

1. one COUNT of the same FROM, joins and WHERE with the bound replaced by ``c > 'D' AND
   c < 'D+1'``: the rows the bound puts on the wrong side. A DATE column, date-only text, or
   timestamps at midnight on an engine that compares them as timestamps give 0: silent;
2. where there are such rows, the query itself with the bound written as the day it names
   (``c < 'D+1'``; ``c >= 'D+1'``; ``c >= 'D' AND c < 'D+1'``), compared with the shown
   answer as agreement compares results. The same answer (the rows moved, but not what the
   question asked: a top 3 that the lost rows do not reach) is silent.

A probe that cannot run (a correlated subquery) is "not measured".
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, cast

from sqlglot import exp

from ..agreement import results_match
from ..answer import CheckResult
from ..errors import VouchError
from ..sql.edit import conjuncts, count_star, reshape
from ..sql.scope import Scope
from ..sql.tree import selects, twin
from . import evidence as ev
from .base import CheckContext, report, unparsed

_DAY = re.compile(r"\d{4}-\d\d-\d\d")
# (operator, the literal on the right) -> what the bound gets wrong about day D
_UPPER, _AFTER, _EQUAL = "leaves out", "keeps", "misses"
_RIGHT: dict[type[exp.Expr], str] = {exp.LTE: _UPPER, exp.GT: _AFTER, exp.EQ: _EQUAL}
_LEFT: dict[type[exp.Expr], str] = {exp.GTE: _UPPER, exp.LT: _AFTER, exp.EQ: _EQUAL}  # 'D' >= c is c <= 'D'
_WHY = {_UPPER: "the rows of {day} itself fall after the bound and are left out",
        _AFTER: "the rows of {day} itself fall after the bound and are kept",
        _EQUAL: "the rows of {day} do not equal it and are missed"}


def _day(node: exp.Expression | None) -> str | None:
    """The day of a date-only literal (``'1997-12-31'``, ``DATE '1997-12-31'``), if valid."""
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.DATE):
        node = node.this
    if isinstance(node, exp.Literal) and node.is_string and _DAY.fullmatch(node.this):
        try:
            day = dt.date.fromisoformat(node.this)
        except ValueError:
            return None
        return node.this if day < dt.date.max else None  # the day after must exist
    return None


def _bounds(part: exp.Expression) -> list[tuple[exp.Column, str, str]]:
    """(column, day, what the bound gets wrong) for each date-only bound ``part`` states."""
    if isinstance(part, exp.Between) and isinstance(part.this, exp.Column):
        day, low = _day(part.args.get("high")), _day(part.args.get("low"))
        # BETWEEN 'D+1' AND 'D' keeps nothing anyway; the probe would count day D
        return [(part.this, day, _UPPER)] if day and not (low and low > day) else []
    if isinstance(part, exp.In) and isinstance(part.this, exp.Column) and part.expressions:
        days = [_day(v) for v in part.expressions]
        return [(part.this, d, _EQUAL) for d in days if d] if all(days) else []
    for table, col, lit in ((_RIGHT, part.args.get("this"), part.args.get("expression")),
                            (_LEFT, part.args.get("expression"), part.args.get("this"))):
        wrong = table.get(type(part))
        if wrong and isinstance(col, exp.Column) and _day(lit):
            return [(col, cast(str, _day(lit)), wrong)]  # a day: tested just above
    return []


def _where_parts(select: exp.Select) -> list[exp.Expression]:
    """The conjuncts of the WHERE and of the inner joins' ON: where replacing one by another
    condition filters the same rows (an outer join's ON does not filter its preserved side)."""
    parts = conjuncts(select.args.get("where"))
    for j in select.args.get("joins") or []:
        if not j.side and (j.kind or "").upper() in ("", "INNER"):
            parts += conjuncts(j.args.get("on"))
    return parts


def _next_day(day: str) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()


def _the_day(col: exp.Column, day: str) -> exp.Expr:
    """``col >= 'D' AND col < 'D+1'``: the whole day ``day``."""
    return exp.and_(exp.GTE(this=col.copy(), expression=exp.Literal.string(day)),
                    exp.LT(this=col.copy(), expression=exp.Literal.string(_next_day(day))))


def _fixed(part: exp.Expression, col: exp.Column, day: str, wrong: str) -> exp.Expr:
    """``part`` written as the day it names (the half-open form)."""
    before_next = exp.LT(this=col.copy(), expression=exp.Literal.string(_next_day(day)))
    if wrong == _UPPER:
        if isinstance(part, exp.Between):  # the range's own low end stays
            return exp.and_(exp.GTE(this=col.copy(), expression=part.args["low"].copy()), before_next)
        return before_next
    if wrong == _AFTER:
        return exp.GTE(this=col.copy(), expression=exp.Literal.string(_next_day(day)))
    if isinstance(part, exp.In):  # every day of the list, each whole
        # every value is a day (_bounds reads an IN list only then)
        return exp.or_(*[exp.Paren(this=_the_day(col, cast(str, d))) for d in (_day(v) for v in part.expressions)])
    return _the_day(col, day)


def _replaced(ctx: CheckContext, part: exp.Expression, by: exp.Expr) -> tuple[exp.Expression, exp.Select | None]:
    """A copy of the whole tree with ``part`` replaced by ``by``, and the copy's twin of ``part``'s SELECT."""
    assert ctx.tree is not None  # run() reads only a parsed tree
    copy_root = ctx.tree.copy()
    twin_part = twin(copy_root, ctx.tree, part)
    if twin_part is None:  # pragma: no cover - copies keep their shape
        raise ValueError("copied tree lost its shape")
    twin_part.replace(exp.Paren(this=by))
    return copy_root, by.find_ancestor(exp.Select)


class DateOnlyBound:
    name = "date_only_bound"
    kind = "cap"
    Evidence = ev.DateOnlyBoundEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        dialect = ctx.probe.dialect
        findings: list[dict[str, Any]] = []
        not_measured: list[str] = []
        same: list[str] = []
        for select in selects(ctx.tree):
            scope = None
            for part in _where_parts(select):
                for col, day, wrong in _bounds(part):
                    scope = scope or Scope(select, ctx.profile)
                    if scope.resolve(col) is None:  # not a base table's column (a CTE's, a derived table's)
                        continue
                    written = part.sql(dialect=dialect)
                    rows = self._rows_on_the_day(ctx, part, col, day)
                    if rows == 0:
                        continue
                    fix = _fixed(part, col, day, wrong)
                    changed = None if rows is None else self._answer_changes(ctx, part, fix)
                    if changed is None:
                        not_measured.append(written)
                    elif changed:
                        findings.append({"sql": written, "column": col.sql(dialect=dialect), "day": day,
                                         "effect": wrong, "rows": rows, "fix": fix.sql(dialect=dialect)})
                    else:
                        same.append(written)
        if findings:
            detail = "; ".join(f"{f['sql']}: {f['column']} stores a time with each date and a date-only bound is "
                               f"the start of its day, so {_WHY[f['effect']].format(day=f['day'])} ({f['rows']} "
                               f"row{'s' if f['rows'] != 1 else ''} under the query's other conditions), and the "
                               f"answer changes; write {f['fix']}" for f in findings)
            return report(self, True, detail, bounds=findings, not_measured=not_measured, same_answer=same)
        if not_measured:
            return report(self, False, f"not measured: {'; '.join(not_measured)} (the probe could not run, or the "
                                       f"answer is cut at the row cap)", bounds=[], not_measured=not_measured,
                          same_answer=same)
        if same:
            return report(self, False, f"{'; '.join(same)}: rows of the bound's day fall on the wrong side of it, "
                                       f"but the answer is the same with the whole day", bounds=[], not_measured=[],
                          same_answer=same)
        return report(self, False, "no date-only bound that a time of day puts on the wrong side",
                      bounds=[], not_measured=[], same_answer=[])

    @staticmethod
    def _rows_on_the_day(ctx: CheckContext, part: exp.Expression, col: exp.Column, day: str) -> int | None:
        """How many rows of day ``day`` after its start the query's FROM, joins and other
        conditions keep: the rows the bound puts on the wrong side. None if it cannot run."""
        window = exp.and_(exp.GT(this=col.copy(), expression=exp.Literal.string(day)),
                          exp.LT(this=col.copy(), expression=exp.Literal.string(_next_day(day))))
        _, select = _replaced(ctx, part, window)
        assert select is not None  # part is a condition of a SELECT's WHERE or ON
        probe = reshape(select, [count_star()])
        try:
            rows = ctx.probe.rows(probe, max_rows=1)
        except VouchError:
            return None
        return int(rows[0][0] or 0) if rows else 0

    @staticmethod
    def _answer_changes(ctx: CheckContext, part: exp.Expression, fix: exp.Expr) -> bool | None:
        """Whether the query with ``part`` written as ``fix`` answers otherwise than the shown
        SQL; None where that cannot be told (it fails, or a side is cut at the row cap)."""
        shown = ctx.result
        if shown is None or shown.error is not None:
            return None
        tree, _ = _replaced(ctx, part, fix)
        fixed = ctx.probe.run(tree)
        if fixed.error is not None:
            return None
        match = results_match(shown, fixed)
        return None if not match.determined else not match.matched

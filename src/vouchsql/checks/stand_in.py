"""Veto: a stand-in code (−1 for unknown, 99999999, …) that the profile found reaches the
answer — returned as a value, or averaged/summed into one (IES §3.2 names the first; the
second is Vouch's, as is 0 read as a code where a column's other values are far from it).
The evidence also carries the paper's own reading (a nonzero code returned as a value), which
the ``paper`` check set scores.

A returned value is read from the result itself. For an aggregate, the check runs the
query's own FROM and WHERE with ``AND column = code`` to see whether code rows are really
included, so a query that already filters them out (``WHERE age >= 0``) does not fire."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..agreement import normalise_value
from ..answer import CheckResult
from ..errors import VouchError
from ..sql.edit import count_star, reshape
from ..sql.inspect import ColumnRef
from . import evidence as ev
from .base import CheckContext, report

_AGGREGATES_HIT = {"sum", "avg", "min", "max", "stddev", "variance"}


def _code_rows(ctx: CheckContext, output_index: int, source: str, code: float) -> int | None:
    """Rows with ``column = code`` that feed the aggregate in output ``output_index``: the
    aggregate over a column named ``source`` (``MAX(income) + MAX(age)`` has two), else the
    first aggregate over any column (an alias from a subquery: ``AVG(a)``); never one over no
    column (``SUM(1) + MAX(age)``)."""
    assert ctx.inspection is not None  # run() reads only an inspected SQL
    select = ctx.inspection.qualified
    if not isinstance(select, exp.Select):
        return None
    projection = select.expressions[output_index]
    read = [(agg, column) for agg in projection.find_all(exp.AggFunc) for column in agg.find_all(exp.Column)]
    if not read:
        return None
    agg, column = next((pair for pair in read if pair[1].name.lower() == source.lower()), read[0])
    is_code = exp.EQ(this=column.copy(), expression=exp.Literal.number(code))
    probe = reshape(select, [count_star()]).where(is_code, copy=False)
    # Aggregates skip NULL inputs: a code row whose argument is NULL there (AVG(NULLIF(age, -1)),
    # AVG(CASE WHEN age >= 0 THEN age END)) does not feed the aggregate.
    argument = agg.this.expressions[0] if isinstance(agg.this, exp.Distinct) and agg.this.expressions else agg.this
    if isinstance(argument, exp.Expression) and not isinstance(argument, exp.Star):
        probe = probe.where(exp.Not(this=exp.Is(this=argument.copy(), expression=exp.Null())), copy=False)
    try:
        return int(ctx.probe.rows(probe)[0][0])
    except VouchError:
        return None


def _aggregated_inside(ctx: CheckContext, column: str) -> bool:
    """Whether a SUM/AVG/MIN/MAX/… somewhere in the SQL reads a column of this name."""
    assert ctx.tree is not None  # an inspected SQL has its tree
    for agg in ctx.tree.find_all(exp.AggFunc):
        if agg.key in _AGGREGATES_HIT and any(c.name.lower() == column.lower() for c in agg.find_all(exp.Column)):
            return True
    return False


class StandInValue:
    name = "stand_in_value"
    kind = "veto"
    Evidence = ev.StandInEvidence
    feeds = ("grounded",)

    def run(self, ctx: CheckContext) -> CheckResult:
        insp, result = ctx.inspection, ctx.result
        if insp is None or result.error is not None:
            return report(self, False, "not measured: no result to read")
        if len(insp.outputs) != len(result.columns):
            return report(self, False, "not measured: the output columns could not be traced")
        hits: list[dict[str, Any]] = []
        hit_outputs: set[int] = set()  # by position: two outputs may share a name
        unread: list[str] = []  # aggregates over carrying columns whose code rows could not be counted
        carriers = 0
        paper_carriers, paper_hit = 0, 0  # the paper's g_val: nonzero codes, returned as values
        for i, out in enumerate(insp.outputs):
            codes: list[tuple[ColumnRef, float | int]] = []
            for ref in out.sources:
                col = ctx.profile.column(ref.table, ref.column)
                codes.extend((ref, s.value) for s in (col.stand_ins if col else []))
            if not codes:
                continue
            carriers += 1
            values = {normalise_value(row[i]) for row in result.rows}
            paper_codes = [code for _, code in codes if code != 0]
            paper_carriers += bool(paper_codes)
            paper_hit += any(normalise_value(code) in values for code in paper_codes)
            before = len(hits)
            for ref, code in codes:
                if normalise_value(code) in values:
                    hits.append({"column": result.columns[i], "source": str(ref), "code": code,
                                 "how": "returned as a value"})
                elif out.aggregate is None and _aggregated_inside(ctx, ref.column):
                    unread.append(result.columns[i])  # aggregated in a CTE or subquery the probe cannot reach
                elif out.aggregate in _AGGREGATES_HIT:
                    n = _code_rows(ctx, i, ref.column, code)
                    if n is None:
                        unread.append(result.columns[i])
                    elif n:
                        hits.append({"column": result.columns[i], "source": str(ref), "code": code,
                                     "how": f"{out.aggregate} over {n} rows holding the code", "rows": n})
            if len(hits) > before:
                hit_outputs.add(i)
        paper: dict[str, Any] = {"paper_grounded": 1 - paper_hit / paper_carriers if paper_carriers else None,
                 "paper_fired": paper_hit > 0}
        if hits:
            words = "; ".join(f"{h['source']} uses {h['code']:g} for unknown, {h['how']} in '{h['column']}'"
                              for h in hits)
            # GROUNDED's stand-in share: the carrying columns no code reaches.
            share = 1 - len(hit_outputs) / carriers
            return report(self, True, words, hits=hits, carriers=carriers, terms={"grounded": share}, **paper)
        if unread:
            # The aggregate sits where the probe cannot reach it (a CTE, a subquery, a UNION):
            # whether a code feeds it is unknown, so no GROUNDED part either way.
            return report(self, False, f"not measured: could not count the stand-in code rows feeding "
                                       f"{', '.join(repr(c) for c in unread)}", carriers=carriers, **paper)
        if carriers:
            return report(self, False, f"{carriers} returned column(s) come from columns with stand-in codes, "
                                       f"but no code reaches the answer", carriers=carriers, terms={"grounded": 1.0},
                          **paper)
        return report(self, False, "no returned column carries a stand-in code", carriers=0)

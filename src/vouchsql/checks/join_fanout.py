"""Signal: a join repeats rows of the entity being counted or aggregated, so COUNT, SUM or
COUNT(col) see each entity several times. Measured by :func:`vouchsql.counting.repetition`
(the one measure the ``count_unit`` reading and the ``counting_unit`` choice read too): within
each group of the query's own FROM, WHERE and GROUP BY, the rows that carry an entity key
against the distinct keys (a LEFT JOIN's NULL rows carry none, so ``COUNT(c.key)`` over them
repeats nothing).

Which entity an aggregate is over: the table of its column; for ``COUNT(*)`` the table the
question counts ("how many customers", "the most albums"), else the driving table. Counting
related rows is what a query grouped by an entity means, so ``COUNT(*)`` grouped by columns
of the counted table, and ``COUNT(t.col)`` or ``AVG(t.col)`` grouped by ``t``'s key, are not
measured: "tracks per album" counts the joined Track rows of each album."""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..answer import CheckResult
from ..counting import counted_table, repetition
from ..sql.edit import column
from ._joins import alias_for, driving_alias, grouped_columns, grouped_entities, outer_select, tables_by_alias
from . import evidence as ev
from .base import CheckContext, report

_AGGS = {"count", "sum", "avg"}


class JoinFanout:
    name = "join_fanout"
    kind = "signal"
    Evidence = ev.JoinFanoutEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        select = outer_select(ctx)
        if select is None:
            return report(self, False, "no join in the outer query")
        tables = tables_by_alias(select, ctx.profile)
        grouped = grouped_columns(select)
        entities = grouped_entities(ctx, select)
        counted = counted_table(ctx.question, sorted(set(tables.values())))
        fired: list[dict[str, Any]] = []
        measured: list[dict[str, Any]] = []
        assert ctx.inspection is not None  # outer_select found a SELECT in it
        for i, out in enumerate(ctx.inspection.outputs):
            if out.aggregate not in _AGGS:
                continue
            agg = next(out.expression.find_all(exp.AggFunc))
            if agg.find(exp.Distinct):
                continue
            star = (isinstance(agg.this, exp.Star) or agg.this is None
                    or (isinstance(agg.this, exp.Literal) and not agg.this.is_string))
            if star and out.aggregate != "count":
                continue
            if star:
                if counted is not None:
                    table: str | None = counted
                else:
                    drive = driving_alias(select)
                    table = tables.get(drive.lower()) if drive else None
                alias = alias_for(select, table, ctx.profile) if table else None
                # Grouped by the counted table, COUNT(*) counts its related rows: what it means.
                if table is None or alias is None or (counted is None and any(a == alias.lower() for a, _ in grouped)):
                    continue
            else:
                names = {r.table for r in out.sources}
                if len(names) != 1:
                    continue
                table = names.pop()
                alias = alias_for(select, table, ctx.profile)
                if alias is None:
                    continue
                # Grouped by the entity itself, COUNT(t.col) counts its related rows and AVG
                # is unchanged by repetition: both are what the query means.
                if alias.lower() in entities and out.aggregate in ("count", "avg"):
                    continue
            key = ctx.profile.entity_key(table)
            if key is None:
                continue
            if star and alias.lower() in entities and counted is not None:
                continue  # "how many albums" grouped by album: one album per group, by design
            rep = repetition(ctx.probe, select, column(alias, key, ctx.probe.dialect))
            if rep is None:
                continue
            item = {"output": ctx.result.columns[i] if i < len(ctx.result.columns) else out.name,
                    "aggregate": out.aggregate, "entity": table, "key": key, "rows": rep.rows,
                    "entities": rep.entities, "factor": rep.factor,
                    "within_groups": bool(select.args.get("group"))}
            measured.append(item)
            if rep.repeats:
                fired.append(item)
        if fired:
            words = "; ".join(f"{f['aggregate'].upper()} in '{f['output']}' sees {f['rows']:,} joined rows for "
                              f"{f['entities']:,} {f['entity']}{' (counted within each group)' if f['within_groups'] else ''} "
                              f"({f['factor']:.2f}× repetition)" for f in fired)
            return report(self, True, f"the joins repeat the aggregated entity: {words}", fanouts=fired)
        if measured:
            return report(self, False, "the joins do not repeat the aggregated entity", fanouts=measured)
        return report(self, False, "no aggregate over joined rows to measure")

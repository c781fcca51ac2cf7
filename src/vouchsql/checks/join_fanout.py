"""Signal: a join repeats rows of the entity being counted or aggregated, so COUNT, SUM or
COUNT(col) see each entity several times. Measured by running the query's own FROM and
WHERE: rows against distinct entity keys."""

from __future__ import annotations

from sqlglot import exp

from ..sql.edit import count_distinct, count_star, column, driving_table, reshape
from ._joins import alias_for, outer_select, run_counts
from . import evidence as ev
from .base import CheckContext, report

_AGGS = {"count", "sum", "avg"}


def _grouped_by(select: exp.Select, alias: str, key: str) -> bool:
    group = select.args.get("group")
    return bool(group) and any(isinstance(g, exp.Column) and g.table == alias and g.name.lower() == key.lower()
                               for g in group.expressions)


class JoinFanout:
    name = "join_fanout"
    kind = "signal"
    Evidence = ev.JoinFanoutEvidence

    def run(self, ctx: CheckContext):
        select = outer_select(ctx)
        if select is None:
            return report(self, False, "no join in the outer query")
        fired, measured = [], []
        for i, out in enumerate(ctx.inspection.outputs):
            if out.aggregate not in _AGGS:
                continue
            agg = next(out.expression.find_all(exp.AggFunc))
            if agg.find(exp.Distinct):
                continue
            star = isinstance(agg.this, exp.Star) or agg.this is None
            tables = {r.table for r in out.sources}
            if star:
                drive = driving_table(select)
                tables = {drive.name} if drive is not None else set()
            if len(tables) != 1:
                continue
            table = tables.pop()
            alias, key = alias_for(select, table), ctx.profile.entity_key(table)
            if alias is None or key is None:
                continue
            # Grouped by the entity itself, COUNT(*) counts its related rows and AVG is
            # unchanged by repetition: both are what the query means.
            if _grouped_by(select, alias, key) and (star or out.aggregate == "avg"):
                continue
            counts = run_counts(ctx, reshape(select, [count_star(), count_distinct(column(alias, key))]))
            if not counts or not counts[1]:
                continue
            rows, entities = int(counts[0]), int(counts[1])
            item = {"output": ctx.result.columns[i] if i < len(ctx.result.columns) else out.name,
                    "aggregate": out.aggregate, "entity": table, "key": key, "rows": rows,
                    "entities": entities, "factor": round(rows / entities, 3)}
            measured.append(item)
            if rows > entities:
                fired.append(item)
        if fired:
            words = "; ".join(f"{f['aggregate'].upper()} in '{f['output']}' sees {f['rows']:,} joined rows for "
                              f"{f['entities']:,} {f['entity']} ({f['factor']:.2f}× repetition)" for f in fired)
            return report(self, True, f"the joins repeat the aggregated entity: {words}", fanouts=fired)
        if measured:
            return report(self, False, "the joins do not repeat the aggregated entity", fanouts=measured)
        return report(self, False, "no aggregate over joined rows to measure")

"""Signal: the inner joins keep only a small part of the driving table's rows, so the
answer silently describes a subset. Measured without the WHERE filters (those drop rows on
purpose), keeping the WHERE's join equalities."""

from __future__ import annotations

from sqlglot import exp

from ..sql.edit import count_distinct, column, driving_table, join_equalities, reshape
from ._joins import outer_select, run_counts
from . import evidence as ev
from .base import CheckContext, report

DROP_SHARE = 0.30


def _has_inner_join(select: exp.Select) -> bool:
    for join in select.args.get("joins") or []:
        outer = (join.side or "").upper() in ("LEFT", "RIGHT", "FULL")
        if not outer and (join.args.get("on") is not None or join.args.get("using")):
            return True
    return bool(join_equalities(select.args.get("where")))


class JoinDrop:
    name = "join_drop"
    kind = "signal"
    Evidence = ev.JoinDropEvidence

    def run(self, ctx: CheckContext):
        select = outer_select(ctx)
        if select is None or not _has_inner_join(select):
            return report(self, False, "no inner join in the outer query")
        drive = driving_table(select)
        key = ctx.profile.entity_key(drive.name) if drive is not None else None
        table = ctx.profile.table(drive.name) if drive is not None else None
        if key is None or table is None or not table.row_count:
            return report(self, False, "not measured: the driving table has no single-column key")
        counts = run_counts(ctx, reshape(select, [count_distinct(column(drive.alias_or_name, key))], where="joins"))
        if not counts:
            return report(self, False, "not measured: the probe query failed")
        kept, total = int(counts[0]), table.row_count
        share = 1 - kept / total
        evidence = {"table": table.name, "rows": total, "kept": kept, "dropped_share": round(share, 4)}
        if share >= DROP_SHARE:
            return report(self, True, f"the joins keep {kept:,} of {total:,} {table.name} rows; "
                                      f"{share:.0%} are dropped before any filter", **evidence)
        return report(self, False, f"the joins keep {kept:,} of {total:,} {table.name} rows", **evidence)

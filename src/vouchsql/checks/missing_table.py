"""Veto: the SQL reads a table the database does not have (IES §3.2, Appendix C: CTE names,
the SQLite catalogue and table-valued functions are not tables)."""

from __future__ import annotations

from . import evidence as ev
from .base import CheckContext, report, unparsed


class MissingTable:
    name = "missing_table"
    kind = "veto"
    Evidence = ev.MissingTableEvidence
    feeds = ("grounded",)

    def run(self, ctx: CheckContext):
        if ctx.inspection is None:
            return unparsed(self)
        missing = [t for t in ctx.inspection.tables if not ctx.profile.has_table(t)]
        if missing:
            known = ", ".join(t.name for t in ctx.profile.tables[:12])
            return report(self, True, f"the SQL reads {', '.join(missing)}, which the database does not have "
                                      f"(its tables: {known}{'…' if len(ctx.profile.tables) > 12 else ''})",
                          tables=missing, terms={"grounded": 0.0})
        return report(self, False, f"all {len(ctx.inspection.tables)} tables exist", tables=ctx.inspection.tables,
                      terms={"grounded": 1.0})

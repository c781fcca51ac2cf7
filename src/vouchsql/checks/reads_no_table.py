"""Veto: the SQL reads no table at all (``SELECT 42``, ``SELECT 1 + 1``, ``VALUES (3)``, a
CTE over constants, numbers from ``generate_series``), so its answer is the same whatever the
database holds: it cannot answer a question about the data, however often it is sampled.

Reading the catalogue (``sqlite_master``) or any other table-valued source counts as reading:
only SQL computed from constants alone fires."""

from __future__ import annotations

from sqlglot import exp

from ..answer import CheckResult
from . import evidence as ev
from .base import CheckContext, report, unparsed

# Table-valued functions that make rows out of their constant arguments.
_GENERATORS = {"generate_series", "range", "unnest", "generate_subscripts"}


def reads_something(tree: exp.Expression) -> bool:
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for t in tree.find_all(exp.Table):
        if isinstance(t.this, exp.Identifier):
            if t.name.lower() in ctes and not t.db:
                continue  # a CTE reads what its own body reads, checked on its own
            return True
        func = t.this
        name = (func.name if isinstance(func, exp.Anonymous) else getattr(func, "key", "")).lower()
        if isinstance(func, (exp.GenerateSeries, exp.Unnest)) or name in _GENERATORS:
            continue
        return True  # read_csv(…), a JSON table function…: a source the check does not judge
    return False


class ReadsNoTable:
    name = "reads_no_table"
    kind = "veto"
    Evidence = ev.ReadsNoTableEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None or ctx.inspection is None:
            return unparsed(self)
        if reads_something(ctx.tree):
            tables = ctx.inspection.tables
            return report(self, False, f"the SQL reads {len(tables)} table(s)" if tables
                          else "the SQL reads the catalogue or a table function", tables=tables)
        return report(self, True, "the SQL reads no table: its answer is computed from constants alone and "
                                  "would be the same whatever the database holds", tables=[])

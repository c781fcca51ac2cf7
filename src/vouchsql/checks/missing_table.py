"""Veto: the SQL reads a table the database does not have (IES §3.2, Appendix C: CTE names,
the SQLite catalogue and table-valued functions are not tables)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from ..answer import CheckResult
from . import evidence as ev
from .base import CheckContext, report, unparsed


_ENGINE_NAMES = {"postgresql": "PostgreSQL"}


class MissingTable:
    name = "missing_table"
    kind = "veto"
    Evidence = ev.MissingTableEvidence
    feeds = ("grounded",)

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.inspection is None:
            return unparsed(self)
        missing = [t for t in ctx.inspection.tables if not ctx.profile.has_table(t)]
        folded = _folded_away(ctx)
        if folded and not missing:
            engine = ctx.probe.engine
            how = "lower" if folded[0][2] == "lower" else "upper"
            said = "; ".join(f"{written} is read as {as_read}, and the table is \"{stored}\""
                             for written, stored, _, as_read in folded)
            return report(self, True, f"{_ENGINE_NAMES.get(engine, engine)} folds an unquoted table name to {how} case: {said}; "
                                      f"write the name in double quotes as the database spells it",
                          tables=[w for w, *_ in folded], terms={"grounded": 0.0})
        if missing:
            known = ", ".join(t.name for t in ctx.profile.tables[:12])
            return report(self, True, f"the SQL reads {', '.join(missing)}, which the database does not have "
                                      f"(its tables: {known}{'…' if len(ctx.profile.tables) > 12 else ''})",
                          tables=missing, terms={"grounded": 0.0})
        return report(self, False, f"all {len(ctx.inspection.tables)} tables exist", tables=ctx.inspection.tables,
                      terms={"grounded": 1.0})


def _folded_away(ctx: CheckContext) -> list[tuple[str, str, str, str]]:
    """The tables the SQL names unquoted that the engine will not find: a dialect that folds
    unquoted names (PostgreSQL, to lower case) reads ``Track`` as ``track``, and the catalogue
    holds only ``"Track"``. The profile's lookup is case-blind, so without this the check
    would say the table exists while the engine says it does not. (written, stored, "lower" or
    "upper", as the engine reads it) for each."""
    if ctx.tree is None or not ctx.probe.dialect:
        return []
    strategy = Dialect.get_or_raise(ctx.probe.dialect).NORMALIZATION_STRATEGY
    if strategy not in (NormalizationStrategy.LOWERCASE, NormalizationStrategy.UPPERCASE):
        return []
    fold = str.lower if strategy is NormalizationStrategy.LOWERCASE else str.upper
    assert ctx.inspection is not None  # run() reads only an inspected SQL
    read = {t.lower() for t in ctx.inspection.tables}
    out = []
    for table in ctx.tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier) or ident.quoted or table.name.lower() not in read:
            continue
        written = ".".join(p.name for p in table.parts)
        found = ctx.profile.find(written)
        if found is None or found.name == fold(table.name):
            continue
        if any(t.name == fold(table.name) and t.schema_name == found.schema_name for t in ctx.profile.tables):
            continue  # both spellings exist: the unquoted name reads the folded one
        entry = (table.name, found.name, "lower" if fold is str.lower else "upper", fold(table.name))
        if entry not in out:
            out.append(entry)
    return out

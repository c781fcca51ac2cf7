"""Veto: the shown SQL breaks a recorded routing rule (IES §10 "Definitions as checks",
Appendix D): for a kind of question (its words), tables that must or must not be read.

A rule such as "usage questions follow the issue transactions; the storage-reporting tables
answer only storage questions" is tested on the tables the shown SQL reads, independently of
how the answer was produced, and the detail names the rule. With no definitions in effect
(:mod:`vouchsql.definitions`) the check reports "not measured" and never fires.
"""

from __future__ import annotations

from typing import Any

from ..answer import CheckResult
from ..in_effect import definitions_in_effect
from ..errors import UserInputError
from . import evidence as ev
from .base import CheckContext, report, unparsed


class DefinitionRule:
    name = "definition_rule"
    kind = "veto"
    Evidence = ev.DefinitionRuleEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        try:
            defs = definitions_in_effect(ctx.probe.config)
        except UserInputError as exc:
            return report(self, False, f"not measured: {exc.message}")
        if defs is None or not defs.rules:
            return report(self, False, "not measured: no recorded routing rules", rules=[])
        if ctx.inspection is None:
            return unparsed(self, rules=[])
        tables = ctx.inspection.tables
        applicable = defs.rules_for(ctx.question)
        broken: list[dict[str, Any]] = []
        for rule in applicable:
            found = rule.broken_by(tables)
            if found:
                broken.append({"rule": rule.name, "note": rule.note, **found})
        if broken:
            parts = []
            for b in broken:
                what = []
                if b["read"]:
                    what.append(f"reads {', '.join(b['read'])}")
                if b["not_read"]:
                    what.append(f"does not read {', '.join(b['not_read'])}")
                note = f" — {b['note']}" if b["note"] else ""
                parts.append(f"rule {b['rule']}: the SQL {' and '.join(what)}{note}")
            return report(self, True, "; ".join(parts), rules=[b["rule"] for b in broken], broken=broken,
                          tables=tables)
        names = [r.name for r in applicable]
        detail = (f"the SQL keeps {len(names)} applicable rule(s): {', '.join(names)}" if names
                  else f"none of the {len(defs.rules)} rule(s) applies to this question")
        return report(self, False, detail, rules=[], applicable=names, tables=tables)

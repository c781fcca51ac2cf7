"""Cap (a veto where the readings are equal): the question reads like a question whose SQL a
person verified (a Cortex Analyst ``verified_queries`` entry, or ``[[verified_queries]]`` in
Vouch's definitions file), and the shown answer returns other rows than the verified SQL.

"Reads like" is the readings of :mod:`vouchsql.question.reading`, not shared words: the same
entities, named values (and whether they are joined by or/and), numbers, years, aggregate,
direction, row count and negation, and more than half the columns. "How many singers are from France?" and "How many singers are from
the Netherlands?" share every word but one and do not match. Where every part of the reading
agrees the check vetoes; where only the columns differ a little it caps. An answer that
returns the verified rows says so (positive evidence, not fired). The verified SQL runs
read-only and bounded like any candidate; one that no longer runs is reported, never guessed.
"""

from __future__ import annotations

from typing import Any

from ..agreement import results_match
from ..answer import CheckResult, Result
from ..in_effect import definitions_in_effect
from ..errors import UserInputError, VouchError
from ..question.reading import likeness, read_question
from . import evidence as ev
from .base import CheckContext, report

SHOWN_ROWS = 10


class VerifiedQuery:
    name = "verified_query"
    kind = "cap"
    Evidence = ev.VerifiedQueryEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        try:
            defs = definitions_in_effect(ctx.probe.config)
        except UserInputError as exc:
            return report(self, False, f"not measured: {exc.message}")
        if defs is None or not defs.verified:
            return report(self, False, "not measured: no verified queries in the definitions")
        index = ctx.probe.values(ctx.question)
        reading = read_question(ctx.question, ctx.profile, index, defs)
        best = None
        for v in defs.verified:
            alike = likeness(reading, read_question(v.question, ctx.profile, index, defs))
            if alike.matched and (best is None or (alike.exact, len(alike.same)) > (best[1].exact, len(best[1].same))):
                best = (v, alike)
        if best is None:
            return report(self, False, f"no verified query reads like this question ({len(defs.verified)} compared)",
                          reading=reading.describe())
        v, alike = best
        said: dict[str, Any] = dict(name=v.name, question=v.question, sql=v.sql, source=v.source or None, strength=alike.strength,
                    differ=list(alike.differ), reading=reading.describe())
        try:
            sql = ctx.probe.logical_sql(v.sql, list(defs.logical_tables)) if v.logical else v.sql
        except VouchError as exc:
            return report(self, False, f"not measured: {exc.message}", **said)
        verified = ctx.probe.run(sql)
        if verified.error is not None:
            return report(self, False, f"not measured: verified query {v.name} no longer runs "
                          f"({verified.error.message})", error=verified.error.message, **said)
        shown: dict[str, Any] = dict(columns=verified.columns, rows=verified.rows[:SHOWN_ROWS], row_count=verified.row_count)
        if not ctx.result.ok:
            return report(self, False, "not measured: the shown SQL returned no result", **said, **shown)
        if results_match(ctx.result, verified).matched:
            return report(self, False, f"agrees with verified query {v.name} ('{v.question}'; {alike.strength})",
                          agrees=True, **said, **shown)
        got = report(self, True, f"returns other rows than verified query {v.name} ('{v.question}'; "
                     f"{alike.strength}): the verified answer has {verified.row_count} row(s)"
                     + (f", first {_first(verified)}" if verified.rows else ""), agrees=False, **said, **shown)
        return got.model_copy(update={"kind": "veto"}) if alike.exact else got


def _first(result: Result) -> str:
    row = result.rows[0]
    return ", ".join(f"{c} = {v!r}" for c, v in zip(result.columns, row))

"""The checks that read only the shown result and the number of candidates."""

from __future__ import annotations

from ..answer import CheckResult
from . import evidence as ev
from .base import CheckContext, report


class NoResult:
    """Veto: the shown SQL did not produce a result (rejected, failed or timed out)."""

    name = "no_result"
    kind = "veto"
    Evidence = ev.NoResultEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        err = ctx.result.error
        if err is not None:
            return report(self, True, f"the shown SQL did not run: {err.message}", error_kind=err.kind)
        return report(self, False, "the shown SQL ran")


class ThinEvidence:
    """Cap: with fewer than two candidates, agreement cannot be measured."""

    name = "thin_evidence"
    kind = "cap"
    Evidence = ev.ThinEvidenceEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        k = len(ctx.candidates)
        if k < 2:
            return report(self, True, f"only {k} candidate answer, so agreement is unmeasured; "
                                      f"pass more --sql samples to measure it", candidates=k)
        return report(self, False, f"{k} candidates", candidates=k)


class EmptyResult:
    name = "empty_result"
    kind = "signal"
    Evidence = ev.RowCountEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        r = ctx.result
        fired = r.error is None and r.row_count == 0
        return report(self, fired, "the shown query returned no rows" if fired else f"{r.row_count} rows",
                      row_count=r.row_count)


class TruncatedResult:
    name = "truncated_result"
    kind = "signal"
    Evidence = ev.RowCountEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        r = ctx.result
        if r.truncated:
            return report(self, True, f"the result was cut off at {r.row_count:,} rows (the row cap); "
                                      f"agreement on it is a bound", row_count=r.row_count)
        return report(self, False, "the result is complete", row_count=r.row_count)

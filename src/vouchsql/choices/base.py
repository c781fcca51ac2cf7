"""The protocol every choice detector shares, and the context it reads.

A detector is a small object with a ``type`` (the SpecBridge choice type it reads), a
``lexicon`` (the words that settle its choice, :mod:`.lexicon`) and
``detect(ctx) -> list[Choice]``. It reads the shown SQL's tree, finds a form of its choice it
can read reliably, builds the other interpretation as an edit of a *copy* of that tree, runs
it read-only through :meth:`ChoiceContext.run` and returns the choice with the alternative's
result and whether it differs from the shown result. A form it cannot read gives nothing;
detectors never raise for odd SQL (:func:`vouchsql.choices.detect_choices` also guards).

Detection is meant to be cheap (about the cost of running the shown query once more): a
detector first rules a choice out from the profile (no NULLs in a column, every entity has
related rows, nothing cut by the LIMIT) and, where a filter decides it, with one COUNT over
the boundary rows, before it runs an alternative. :class:`ChoiceContext` keeps a budget of
database time; once it is spent, later detectors are skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlglot import exp

from ..agreement import results_match
from ..answer import Choice, Result
from ..db.base import Database
from ..db.profile import Profile
from ..errors import VouchError
from ..sql.inspect import Inspection
from .lexicon import Lexicon

# Database time the detectors may spend: a multiple of the shown query's own time, with a
# floor so that a sub-millisecond query still gets its probes. An alternative is expected to
# cost about what the shown query cost, and is not started when that would pass the budget.
BUDGET_FACTOR = 2.0
MIN_BUDGET_MS = 50.0
# One alternative may run this many times the shown query's time (within these bounds, s).
TIMEOUT_FACTOR = 4.0
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1.0, 30.0


@dataclass
class ChoiceContext:
    question: str
    db: Database
    profile: Profile
    sql: str  # the shown SQL as given
    result: Result  # the shown result
    tree: exp.Expression  # the shown SQL, parsed; detectors edit copies of it
    inspection: Inspection | None = None
    all_choices: bool = False
    budget_ms: float | None = None
    spent_ms: float = 0.0
    queries: int = 0
    cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.budget_ms is None:
            self.budget_ms = max(BUDGET_FACTOR * (self.result.elapsed_ms or 0.0), MIN_BUDGET_MS)

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def over_budget(self) -> bool:
        return self.spent_ms >= (self.budget_ms or 0.0)

    def _timeout(self) -> float:
        shown_s = (self.result.elapsed_ms or 0.0) / 1000
        return min(max(TIMEOUT_FACTOR * shown_s, MIN_TIMEOUT_S), MAX_TIMEOUT_S, self.db.config.timeout)

    def to_sql(self, tree: exp.Expression) -> str:
        return tree.sql(dialect=self.dialect)

    def run(self, tree: exp.Expression | str) -> Result | None:
        """Run an alternative read-only. ``None`` when the budget cannot cover it or it failed."""
        if self.spent_ms + (self.result.elapsed_ms or 0.0) > (self.budget_ms or 0.0) and self.queries:
            return None
        if self.over_budget:
            return None
        sql = tree if isinstance(tree, str) else self.to_sql(tree)
        result = self.db.execute(sql, timeout=self._timeout(), from_tree=not isinstance(tree, str))
        self.spent_ms += result.elapsed_ms
        self.queries += 1
        return result if result.ok else None

    def count(self, tree: exp.Expression) -> int | None:
        """Run a one-value probe (``SELECT COUNT(*) …``); ``None`` when it cannot run."""
        if self.over_budget:
            return None
        start = time.perf_counter()
        try:
            rows = self.db.query(self.to_sql(tree), timeout=self._timeout(), max_rows=1, from_tree=True)
        except VouchError:
            return None
        finally:
            self.spent_ms += (time.perf_counter() - start) * 1000
            self.queries += 1
        if not rows or rows[0][0] is None:
            return 0
        try:
            return int(rows[0][0])
        except (TypeError, ValueError):
            return None

    def differs(self, alt: Result) -> bool:
        return not results_match(self.result, alt).matched


class Detector(Protocol):
    type: str
    lexicon: Lexicon

    def detect(self, ctx: ChoiceContext) -> list[Choice]: ...


def values_note(ctx: ChoiceContext, alt: Result) -> str:
    """`` (120 vs 97)`` when the shown and the alternative result are each one value."""
    from ._read import show

    shown = ctx.result
    if shown.row_count == 1 and alt.row_count == 1 and len(shown.rows[0]) == 1 and len(alt.rows[0]) == 1:
        return f" ({show(shown.rows[0][0])} vs {show(alt.rows[0][0])})"
    return ""


def make_choice(detector: Detector, description: str, ctx: ChoiceContext, alt_sql: str, alt: Result,
                differs: bool | None = None, settled_by: str | None = None) -> Choice:
    return Choice(type=detector.type, description=description, sql=alt_sql, result=alt,
                  differs=ctx.differs(alt) if differs is None else differs, settled_by=settled_by)

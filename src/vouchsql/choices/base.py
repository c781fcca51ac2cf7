"""The protocol every choice detector shares, and the context it reads.

A detector is a small object with a ``type`` (the SpecBridge choice type it reads), a
``lexicon`` (the words that settle its choice, :mod:`.lexicon`) and
``detect(ctx) -> list[Choice]``. It reads the shown SQL's tree, finds a form of its choice it
can read reliably, builds the other interpretation as an edit of a *copy* of that tree, runs
it read-only through :meth:`ChoiceContext.run` and returns the choice with the alternative's
result and whether it differs from the shown result. A form it cannot read gives nothing;
detectors never raise for odd SQL (:func:`vouchsql.choices.detect_choices` also guards).

Detection is meant to be cheap (about the cost of running the shown query a few times more):
a detector first rules a choice out from the profile (no NULLs in a column, every entity has
related rows, nothing cut by the LIMIT) and, where a filter decides it, with one COUNT over
the boundary rows, before it runs an alternative. :class:`ChoiceContext` keeps the budget.

The budget is counted in queries and in rows read, never in time, so the same input gives
the same choices on any machine under any load. A query's cost is the rows of the tables it
reads, from the profile (a table read twice counts twice); the detectors may read
``BUDGET_FACTOR`` times what the shown query reads (at least ``MIN_BUDGET_ROWS``) in at most
``MAX_QUERIES`` queries. A query the budget cannot cover is not started.
"""

from __future__ import annotations

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

BUDGET_FACTOR = 8
MIN_BUDGET_ROWS = 1_000_000
MAX_QUERIES = 40


@dataclass(frozen=True)
class Budget:
    """What the detectors may spend: rows read (``None``: derived from the shown query) and queries."""
    rows: int | None = None
    queries: int = MAX_QUERIES


def rows_read(tree: exp.Expression, profile: Profile) -> int:
    """The rows of every table ``tree`` reads, by the profile: the deterministic cost of a query.
    Names the profile does not know (a CTE's, a derived table's) cost nothing themselves; the
    tables inside them are counted where they are read."""
    total = 0
    for table in tree.find_all(exp.Table):
        known = profile.table(table.name) if table.name else None
        total += known.row_count if known is not None else 0
    return total


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
    budget: Budget = field(default_factory=Budget)
    budget_rows: int = 0  # set from ``budget`` (and the shown query's cost when it gives none)
    spent_rows: int = 0
    queries: int = 0
    cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.budget_rows = self.budget.rows if self.budget.rows is not None else max(
            BUDGET_FACTOR * rows_read(self.tree, self.profile), MIN_BUDGET_ROWS)

    @property
    def dialect(self) -> str:
        return self.db.dialect

    @property
    def over_budget(self) -> bool:
        return self.queries >= self.budget.queries or self.spent_rows >= self.budget_rows

    def _afford(self, tree: exp.Expression | None) -> bool:
        """Charge one query reading ``tree``'s tables, when the budget covers it."""
        cost = rows_read(tree, self.profile) if tree is not None else 0
        if self.queries >= self.budget.queries or self.spent_rows + cost > self.budget_rows:
            return False
        self.queries += 1
        self.spent_rows += cost
        return True

    def to_sql(self, tree: exp.Expression) -> str:
        return tree.sql(dialect=self.dialect)

    def run(self, tree: exp.Expression | str) -> Result | None:
        """Run an alternative read-only. ``None`` when the budget cannot cover it or it failed."""
        if isinstance(tree, str):
            try:
                parsed = self.db.parse(tree)
            except VouchError:
                return None
            if not self._afford(parsed):
                return None
            result = self.db.execute(tree)
        else:
            if not self._afford(tree):
                return None
            result = self.db.execute(self.to_sql(tree), from_tree=True)
        return result if result.ok else None

    def count(self, tree: exp.Expression) -> int | None:
        """Run a one-value probe (``SELECT COUNT(*) …``); ``None`` when it cannot run."""
        if not self._afford(tree):
            return None
        try:
            rows = self.db.query(self.to_sql(tree), max_rows=1, from_tree=True)
        except VouchError:
            return None
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

"""Open calculation choices (SpecBridge Table S1): the ordered registry of detectors.

A detector is a pure rewrite pass (``sites``, ``rewrite``, ``describe``: :mod:`.base`); the
one runner (:mod:`.runner`) executes, decides *differs*, settles by wording, drops
duplicates and keeps the budget. A new choice type is one module with a detector, one line
here, a golden file of results (tests/fixtures/choices/<type>.json) and one of rewrites
(tests/choices_rewrite/<type>.yaml). The
order is the order choices are reported in, and the order in which they get the detection
budget: the types that most often change an answer come first.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from sqlglot import exp

from ..answer import Choice, Result
from ..db.base import Database
from ..db.profile import Profile
from ..errors import VouchError
from ..sql.inspect import Inspection
from .aggregation_level import AggregationLevel
from ..probe import Budget
from .base import ChoiceContext, Detector, Site
from .counting_unit import CountingUnit
from .lexicon import Lexicon
from .missing_values import MissingValues
from .negation import Negation
from .population_scope import PopulationScope
from .quantifier import Quantifier
from .runner import EXPECTED_ERRORS, run_detectors as _run
from .strict_cutoff import StrictCutoff
from .ties import Ties

CHOICES: tuple[Detector, ...] = (
    Ties(),
    CountingUnit(),
    PopulationScope(),
    MissingValues(),
    StrictCutoff(),
    AggregationLevel(),
    Quantifier(),
    Negation(),
)


# Strict mode (``VOUCH_STRICT_DETECTORS=1``, or set ``STRICT`` as the test suite does): a
# detector's unexpected error is raised, not logged, so a crashing detector fails its test.
STRICT = os.environ.get("VOUCH_STRICT_DETECTORS", "").strip().lower() in {"1", "true", "yes", "on"}


def run_detectors(ctx: ChoiceContext, detectors: Sequence[Detector] = CHOICES,
                  failed: list[str] | None = None) -> list[Choice]:
    """Every choice the detectors find, settled or not, differing or not (``all_choices``
    decides what is kept): :func:`.runner.run_detectors`. A detector that meets an expected
    error (:data:`EXPECTED_ERRORS`) reports nothing; one that fails otherwise is logged as a
    warning and named in ``failed`` (raised in :data:`STRICT` mode)."""
    return _run(ctx, detectors, failed)


def reported(choice: Choice) -> bool:
    """A choice is reported (raised to the user, named in the verdict) when its alternative
    changes the result and the wording leaves it open."""
    return choice.differs and not choice.settled_by


def detect_choices(question: str, db: Database, sql: str, result: Result, *, tree: exp.Expression | None = None,
                   profile: Profile | None = None, inspection: Inspection | None = None,
                   all_choices: bool = False, detectors: Sequence[Detector] = CHOICES,
                   budget: Budget | None = None, stats: dict[str, Any] | None = None) -> list[Choice]:
    """The open calculation choices of the shown SQL. By default only the reported ones
    (the alternative differs and no word settles it); with ``all_choices`` every choice a
    detector read, with ``differs`` and ``settled_by`` telling them apart. ``budget``
    overrides what the detectors may spend (:class:`~.base.Budget`; by default
    ``BUDGET_FACTOR`` times the rows the shown query reads, in at most ``MAX_QUERIES``
    queries); ``stats`` receives ``choices_queries``, ``choices_rows`` and, when a detector
    failed, ``choices_failed``."""
    if result is None or not result.ok:
        return []
    if tree is None:
        try:
            tree = db.parse(sql)
        except VouchError:  # unparseable SQL has no choices to read
            return []
    ctx = ChoiceContext(question=question or "", db=db, profile=profile or db.profile(), sql=sql, result=result,
                        tree=tree, inspection=inspection, all_choices=all_choices, budget=budget or Budget())
    failed: list[str] = []
    choices = run_detectors(ctx, detectors, failed)
    if stats is not None:
        stats["choices_queries"] = ctx.queries
        stats["choices_rows"] = ctx.spent_rows
        if failed:
            stats["choices_failed"] = failed
    return choices if all_choices else [c for c in choices if reported(c)]


__all__ = ["CHOICES", "EXPECTED_ERRORS", "Budget", "ChoiceContext", "Detector", "Lexicon", "Site", "detect_choices", "reported", "run_detectors"]

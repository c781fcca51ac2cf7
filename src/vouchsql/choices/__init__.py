"""Open calculation choices (SpecBridge Table S1): the ordered registry of detectors.

A new choice type is one module with a detector (see :mod:`.base`) and one line here. The
order is the order choices are reported in, and the order in which they get the detection
budget: the types that most often change an answer come first.
"""

from __future__ import annotations

import logging
from typing import Sequence

from sqlglot import exp

from ..answer import Choice, Result
from ..db.base import Database
from ..db.profile import Profile
from ..sql.inspect import Inspection
from .aggregation_level import AggregationLevel
from .base import ChoiceContext, Detector
from .counting_unit import CountingUnit
from .lexicon import Lexicon
from .missing_values import MissingValues
from .negation import Negation
from .population_scope import PopulationScope
from .quantifier import Quantifier
from .strict_cutoff import StrictCutoff
from .ties import Ties

log = logging.getLogger(__name__)

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


def run_detectors(ctx: ChoiceContext, detectors: Sequence[Detector] = CHOICES) -> list[Choice]:
    """Every choice the detectors find, settled or not, differing or not (``all_choices``
    decides what is kept). Wording that settles a type skips its detector unless
    ``ctx.all_choices`` asks to see settled choices too."""
    found: list[Choice] = []
    seen_sql: set[str] = set()
    for detector in detectors:
        words = detector.lexicon.match(ctx.question)
        if words and not ctx.all_choices:
            continue
        if ctx.over_budget:
            log.debug("choice detection budget spent before %s", detector.type)
            break
        try:
            choices = detector.detect(ctx)
        except Exception:  # noqa: BLE001 - detection must never break a check; a form it cannot read gives nothing
            log.debug("choice detector %s failed", detector.type, exc_info=True)
            choices = []
        for choice in choices:
            if choice.sql in seen_sql:
                continue
            seen_sql.add(choice.sql)
            choice.settled_by = choice.settled_by or words  # a detector may read settling words of its own
            found.append(choice)
    return found


def reported(choice: Choice) -> bool:
    """A choice is reported (raised to the user, named in the verdict) when its alternative
    changes the result and the wording leaves it open."""
    return choice.differs and not choice.settled_by


def detect_choices(question: str, db: Database, sql: str, result: Result, *, tree: exp.Expression | None = None,
                   profile: Profile | None = None, inspection: Inspection | None = None,
                   all_choices: bool = False, detectors: Sequence[Detector] = CHOICES,
                   budget_ms: float | None = None, stats: dict | None = None) -> list[Choice]:
    """The open calculation choices of the shown SQL. By default only the reported ones
    (the alternative differs and no word settles it); with ``all_choices`` every choice a
    detector read, with ``differs`` and ``settled_by`` telling them apart. ``budget_ms``
    overrides the database time the detectors may spend (default: twice the shown query's
    time, at least ``MIN_BUDGET_MS``); ``stats`` receives ``choices_sql_ms`` and
    ``choices_queries``."""
    if result is None or not result.ok:
        return []
    if tree is None:
        try:
            tree = db.parse(sql)
        except Exception:  # noqa: BLE001 - unparseable SQL has no choices to read
            return []
    ctx = ChoiceContext(question=question or "", db=db, profile=profile or db.profile(), sql=sql, result=result,
                        tree=tree, inspection=inspection, all_choices=all_choices, budget_ms=budget_ms)
    choices = run_detectors(ctx, detectors)
    if stats is not None:
        stats["choices_sql_ms"] = round(ctx.spent_ms, 3)
        stats["choices_queries"] = ctx.queries
    return choices if all_choices else [c for c in choices if reported(c)]


__all__ = ["CHOICES", "ChoiceContext", "Detector", "Lexicon", "detect_choices", "reported", "run_detectors"]

"""The one runner of the detectors: it owns execution, *differs*, settling by wording,
de-duplication and the budget, so a detector is only its pure parts (:mod:`.base`).

For each detector in order: wording that settles its type skips it (unless every choice is
asked for); a spent budget stops the run. Each site it finds is rewritten, the rewritten
SQL run read-only (charged to the budget; a query it cannot cover is not started), and the
choice built with ``differs`` decided by the site's ``compare`` rule. A choice whose SQL an
earlier one already gave is dropped. A detector that meets an expected error (rejected SQL,
a rewrite sqlglot cannot build or print) reports nothing; any other error is a bug, logged
and named in ``failed``, or raised in strict mode.
"""

from __future__ import annotations

import logging
import sys
from typing import Sequence, cast

from sqlglot.errors import SqlglotError

from ..agreement import results_match
from ..answer import Choice, Result
from ..errors import VouchError
from .base import ChoiceContext, Detector, SelfRunning, Site

log = logging.getLogger("vouchsql.choices")

# Errors a detector may meet on odd SQL: a rewrite sqlglot cannot build or print, a
# statement the gate or the engine refuses. Anything else is a bug in the detector.
EXPECTED_ERRORS = (VouchError, SqlglotError)


def _strict() -> bool:
    # Read from the package at call time, so a test (or VOUCH_STRICT_DETECTORS) can set it.
    return bool(getattr(sys.modules.get("vouchsql.choices"), "STRICT", False))


def differs(site: Site, shown: Result, alt: Result) -> bool:
    """Whether the alternative's answer differs from the shown one, by the site's rule."""
    if site.compare == "more_rows":
        return alt.row_count > shown.row_count
    return not results_match(shown, alt).matched


def run_site(ctx: ChoiceContext, detector: Detector, site: Site) -> Choice | None:
    """Rewrite one site, run it, and word the choice; ``None`` when the rewrite cannot be
    built, the budget cannot cover it, or it fails."""
    if site.settled_by and not ctx.all_choices:
        return None  # the detector read words that settle it: nothing to run by default
    alt_tree = detector.rewrite(ctx.tree, site)
    if alt_tree is None:
        return None
    alt = ctx.run(alt_tree)
    if alt is None:
        return None
    return Choice(type=detector.type, description=detector.describe(site, ctx.result, alt),
                  sql=ctx.to_sql(alt_tree), result=alt, differs=differs(site, ctx.result, alt),
                  settled_by=site.settled_by)


def _choices_of(ctx: ChoiceContext, detector: Detector) -> list[Choice]:
    if not hasattr(detector, "sites"):  # a detector that runs itself (``detect(ctx)``)
        return list(cast(SelfRunning, detector).detect(ctx))
    out: list[Choice] = []
    for site in detector.sites(ctx):
        choice = run_site(ctx, detector, site)
        if choice is not None:
            out.append(choice)
    return out


def run_detectors(ctx: ChoiceContext, detectors: Sequence[Detector], failed: list[str] | None = None) -> list[Choice]:
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
            choices = _choices_of(ctx, detector)
        except EXPECTED_ERRORS:
            log.debug("choice detector %s could not read this SQL", detector.type, exc_info=True)
            choices = []
        except Exception:
            if _strict():
                raise
            log.warning("choice detector %s failed; its choice is not reported", detector.type, exc_info=True)
            if failed is not None:
                failed.append(detector.type)
            choices = []
        for choice in choices:
            if choice.sql in seen_sql:
                continue
            seen_sql.add(choice.sql)
            choice.settled_by = choice.settled_by or words  # a detector may read settling words of its own
            found.append(choice)
    return found

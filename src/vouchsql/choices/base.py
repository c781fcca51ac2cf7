"""The protocol every choice detector shares, the context it reads, and the budget.

A detector is a *rewrite pass* (like a rule of sqlglot's optimizer), in three pure parts:

- ``sites(ctx)`` yields a :class:`Site` for each place in the shown SQL where its choice
  arises, in a form it can read reliably. It reads the parsed tree, the cached profile, the
  question and the shown result. Where only data can say whether the choice is there (rows
  tied at a cut-off, NULLs in scope, rows on a boundary) it asks the context for a named
  *fact* (:meth:`ChoiceContext.count`, :meth:`ChoiceContext.probe`): one small query the
  runner charges to the budget, or, in the SQL-to-SQL goldens, a value the fixture gives.
- ``rewrite(tree, site)`` returns the other interpretation as a new tree built from a copy
  of the shown tree (``None`` when it cannot be built). No database.
- ``describe(site, shown, alt)`` words the choice from the site and the two results.

The runner (:mod:`.runner`) owns the rest: it runs the rewritten SQL read-only, decides
whether it *differs* (``Site.compare``), applies the settling wording, drops duplicates and
keeps the budget. A detector never runs its alternative itself and never raises for odd SQL.

Detection is meant to be cheap (about the cost of running the shown query a few times more):
a detector first rules a choice out from the profile (no NULLs in a column, every entity has
related rows, nothing cut by the LIMIT) and, where a filter decides it, with one COUNT over
the boundary rows, before an alternative runs. Every query goes through the context's
:class:`~vouchsql.probe.Probe`, which keeps the budget (queries and rows read, never time:
see :mod:`vouchsql.probe`); a query the budget cannot cover is not started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, runtime_checkable

from sqlglot import exp

from ..agreement import results_match
from ..answer import Choice, Result
from ..db.base import Database
from ..db.profile import Profile
from ..probe import Budget, Probe
from ..sql.inspect import Inspection
from ..words import show
from .lexicon import Lexicon


@dataclass
class Site:
    """Where one choice arises in the shown SQL: what ``sites`` found and all that ``rewrite``
    and ``describe`` need. ``node`` and ``select`` are nodes of the shown tree (read, never
    edited); ``data`` holds the detector's own readings (values, facts, SQL texts), also
    readable as attributes (``site.k``).

    ``compare`` is how the runner decides *differs*: ``"result"`` (the alternative's result
    does not match the shown one) or ``"more_rows"`` (it returns more rows: ties).
    ``settled_by``: words of the question the detector itself reads as settling the choice;
    such a site is rewritten and run only when every choice is asked for."""
    form: str
    node: exp.Expression | None = None
    select: exp.Select | None = None
    data: dict[str, Any] = field(default_factory=dict)
    compare: str = "result"
    settled_by: str | None = None
    dialect: str = "sqlite"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "data":
            raise AttributeError(name)
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    def sql(self, node: exp.Expression) -> str:
        """``node`` as SQL text in the site's dialect (for descriptions)."""
        return node.sql(dialect=self.dialect)


@runtime_checkable
class Detector(Protocol):
    """A rewrite pass: see the module docstring."""
    type: str
    lexicon: Lexicon

    def sites(self, ctx: "ChoiceContext") -> Iterable[Site]: ...

    def rewrite(self, tree: exp.Expression, site: Site) -> exp.Expression | None: ...

    def describe(self, site: Site, shown: Result, alt: Result) -> str: ...


class SelfRunning(Protocol):
    """An old-style detector that runs itself: ``detect(ctx)`` gives its choices."""
    type: str
    lexicon: Lexicon

    def detect(self, ctx: "ChoiceContext") -> Iterable[Choice]: ...


@dataclass
class ChoiceContext:
    """What the detectors read (the question, the shown SQL and result, the profile) and the
    probe every query goes through. ``db`` is ``None`` in the SQL-to-SQL goldens: then
    ``dialect_name`` names the dialect and ``facts`` answers the detectors' named facts (a
    count, or the rows of a probe), so finding sites and rewriting run without a database."""
    question: str
    db: Database | None
    profile: Profile
    sql: str  # the shown SQL as given
    result: Result  # the shown result
    tree: exp.Expression  # the shown SQL, parsed; detectors rewrite copies of it
    inspection: Inspection | None = None
    all_choices: bool = False
    budget: Budget = field(default_factory=Budget)
    cache: dict[str, Any] = field(default_factory=dict)
    dialect_name: str | None = None
    facts: dict[str, Any] | None = None
    prober: Probe = field(init=False)

    def __post_init__(self) -> None:
        self.prober = Probe(self.db, self.profile, budget=self.budget, shown=self.tree,
                            dialect=self.dialect_name, facts=self.facts)

    @property
    def dialect(self) -> str:
        return self.prober.dialect

    # The ledger, as the runner and the benchmarks read it.
    @property
    def budget_rows(self) -> int:
        return self.prober.budget_rows

    @property
    def queries(self) -> int:
        return self.prober.queries

    @property
    def spent_rows(self) -> int:
        return self.prober.spent_rows

    @property
    def over_budget(self) -> bool:
        return self.prober.over_budget

    def to_sql(self, tree: exp.Expression) -> str:
        return tree.sql(dialect=self.dialect)

    def site(self, form: str, node: exp.Expression | None = None, select: exp.Select | None = None, *,
             compare: str = "result", settled_by: str | None = None, **data: Any) -> Site:
        """A :class:`Site` in this context's dialect."""
        return Site(form=form, node=node, select=select, data=data, compare=compare, settled_by=settled_by,
                    dialect=self.dialect)

    # -- facts (a detector asks for them; the runner runs the alternatives) -----------------
    def run(self, tree: exp.Expression | str) -> Result | None:
        """Run a query read-only. ``None`` when the budget cannot cover it or it failed."""
        if self.db is None:
            return None
        result = self.prober.run(tree)
        return result if result.ok else None

    def probe(self, tree: exp.Expression, fact: str) -> Result | None:
        """The rows of a probe query: the fact named ``fact`` (``None`` when it cannot be read).
        Without a database, the fact's rows as the goldens give them."""
        return self.prober.result(tree, fact)

    def count(self, tree: exp.Expression, fact: str = "count") -> int | None:
        """A one-value probe (``SELECT COUNT(*) …``): the fact named ``fact``; ``None`` when it
        cannot run. Without a database, the fact's value as the goldens give it."""
        return self.prober.count(tree, fact)

    def differs(self, alt: Result) -> bool:
        return not results_match(self.result, alt).matched


def values_note(shown: Result, alt: Result) -> str:
    """`` (120 vs 97)`` when the shown and the alternative result are each one value."""
    if shown.row_count == 1 and alt.row_count == 1 and len(shown.rows[0]) == 1 and len(alt.rows[0]) == 1:
        return f" ({show(shown.rows[0][0])} vs {show(alt.rows[0][0])})"
    return ""


def make_choice(detector: Detector | SelfRunning, description: str, ctx: ChoiceContext, alt_sql: str, alt: Result,
                differs: bool | None = None, settled_by: str | None = None) -> Choice:
    """A choice built by a detector that runs itself (an old-style ``detect(ctx)``)."""
    return Choice(type=detector.type, description=description, sql=alt_sql, result=alt,
                  differs=ctx.differs(alt) if differs is None else differs, settled_by=settled_by)

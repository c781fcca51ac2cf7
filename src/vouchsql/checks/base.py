"""The protocol every check shares, and the context it reads.

A check is a small object with a ``name``, a ``kind`` (``veto``, ``cap`` or ``signal``), an
``Evidence`` model (:mod:`.evidence`), the score ``feeds`` it measures (``grounded``,
``schema``, ``complete``, ``retrieve``; most checks feed none) and ``run(ctx) -> CheckResult``. It reads the context and
asks the data for facts only through ``ctx.probe`` (:mod:`vouchsql.probe`: one time limit,
one deterministic budget for all the checks of one answer), and reads the dialect, the engine,
the settings and how the engine writes a table's name from it too; it never changes anything
and never raises for a bad answer (it reports). With ``db=None`` and ``facts`` recorded from a
live run (``record=True``), every check runs again with no engine and reports the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlglot import exp

from ..answer import Candidate, CheckResult, Result
from ..db.base import Database
from ..db.profile import Profile
from ..probe import Budget, Probe
from ..sql.inspect import Inspection
from .evidence import Evidence

# The terms of IES eq. 1 a check can measure; the rules read only these. COMPLETE and
# RETRIEVE come from the question–SQL alignment, or COMPLETE from a judge model.
TERMS = ("grounded", "schema", "complete", "retrieve")

# What the checks of one answer may spend on probes, all together: rows read as for the
# choice detectors (8 × the shown query's, at least a million) in at most 60 queries. On the
# development data (`vouch eval predictions` over the 4,820 Spider answers) no answer's checks
# ran more than 11.
CHECK_BUDGET = Budget(queries=60)


@dataclass
class CheckContext:
    question: str
    db: Database | None  # None: the facts come from ``facts`` (a record of a live run)
    profile: Profile
    shown: Candidate
    candidates: list[Candidate]
    tree: exp.Expression | None  # None when the shown SQL did not pass the gate
    inspection: Inspection | None
    answer_text: str | None = None
    hint: str | None = None
    # A judge model's COMPLETE: (share covered, [(part, covered)…]), or None (no judge asked)
    judged_complete: tuple[float, list[tuple[str, bool]]] | None = None
    # A judge model's unsupported claims: [(claim, about the answer?)…], or None (no judge asked)
    judged_claims: list[tuple[str, bool]] | None = None
    cache: dict[str | tuple[Any, ...], Any] = field(default_factory=dict)  # shared by checks within one run
    budget: Budget | None = None  # None: CHECK_BUDGET
    facts: dict[str, Any] | None = None  # without a database: what a recording probe kept
    record: bool = False  # keep every fact read in ``probe.recorded``
    probe: Probe = field(init=False)  # built from db, profile, tree, budget and facts

    def __post_init__(self) -> None:
        self.probe = Probe(self.db, self.profile, budget=self.budget or CHECK_BUDGET, shown=self.tree,
                           facts=self.facts, record=self.record)

    @property
    def result(self) -> Result:
        return self.shown.result


class Check(Protocol):
    # Read-only members: a check declares them as class attributes of narrower types (its
    # own Evidence model, ``feeds = ()``), which a mutable protocol member would refuse.
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def Evidence(self) -> type[Evidence]: ...  # noqa: N802 (the checks' class attribute)
    @property
    def feeds(self) -> tuple[str, ...]: ...

    def run(self, ctx: CheckContext) -> CheckResult: ...


def report(check: Check, fired: bool, detail: str, *, terms: dict[str, float] | None = None,
           **evidence: Any) -> CheckResult:
    """The check's result. ``evidence`` is validated against ``check.Evidence`` (a key the
    model does not declare is a bug in the check); ``terms`` are the score terms measured,
    each one the check declares in ``feeds``."""
    evidence = check.Evidence.model_validate(evidence).model_dump(mode="json", exclude_unset=True)
    terms = terms or {}
    undeclared = set(terms) - set(getattr(check, "feeds", ()))
    if undeclared:
        raise ValueError(f"check {check.name} reports terms it does not feed: {sorted(undeclared)}")
    return CheckResult(name=check.name, kind=check.kind, fired=fired, detail=detail,
                       evidence=evidence,
                       terms={t: round(float(v), 6) for t, v in terms.items()})


def unparsed(check: Check, **evidence: Any) -> CheckResult:
    """What a check that reads the SQL reports when the shown SQL did not pass the gate."""
    return report(check, False, "not measured: the SQL could not be parsed", **evidence)

"""The protocol every check shares, and the context it reads.

A check is a small object with a ``name``, a ``kind`` (``veto``, ``cap`` or ``signal``) and
``run(ctx) -> CheckResult``. It reads the context and may run read-only SQL through
``ctx.db``; it never changes anything and never raises for a bad answer (it reports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlglot import exp

from ..answer import Candidate, CheckResult, Result
from ..db.base import Database
from ..db.profile import Profile
from ..sql.inspect import Inspection


@dataclass
class CheckContext:
    question: str
    db: Database
    profile: Profile
    shown: Candidate
    candidates: list[Candidate]
    tree: exp.Expression | None  # None when the shown SQL did not pass the gate
    inspection: Inspection | None
    answer_text: str | None = None
    hint: str | None = None
    cache: dict[str, Any] = field(default_factory=dict)  # shared by checks within one run

    @property
    def result(self) -> Result:
        return self.shown.result


class Check(Protocol):
    name: str
    kind: str

    def run(self, ctx: CheckContext) -> CheckResult: ...


def report(check: Check, fired: bool, detail: str, **evidence: Any) -> CheckResult:
    return CheckResult(name=check.name, kind=check.kind, fired=fired, detail=detail, evidence=evidence)


def unparsed(check: Check, **evidence: Any) -> CheckResult:
    """What a check that reads the SQL reports when the shown SQL did not pass the gate."""
    return report(check, False, "not measured: the SQL could not be parsed", **evidence)

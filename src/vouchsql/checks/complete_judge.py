"""Cap: a judge model found that the answer covers less than half of the question (IES §3.2
COMPLETE, §3.4's cap at COMPLETE < 0.5).

The judge runs only where a model is given and asked for it (``vouch ask`` with
``judge_complete``, ``vouch eval confidence --model``); its share and the parts it listed
arrive in the context. Without a judge this check measures nothing, and COMPLETE comes from
the deterministic question–SQL alignment (``question_shape``, ``question_filters``).
"""

from __future__ import annotations

from typing import Any

from ..answer import CheckResult
from ..errors import UserInputError
from ..score import COMPLETE_MIN, JUDGE_COMPLETE
from . import evidence as ev
from .base import CheckContext, report


class CompleteJudge:
    name = JUDGE_COMPLETE
    kind = "cap"
    Evidence = ev.CompleteJudgeEvidence
    feeds = ("complete",)

    def run(self, ctx: CheckContext) -> CheckResult:
        judged = ctx.judged_complete
        if judged is None:
            return report(self, False, "not measured: no judge model was asked")
        share, parts = judged
        listed: list[dict[str, Any]] = [{"part": part, "covered": covered} for part, covered in parts]
        missed = [p["part"] for p in listed if not p["covered"]]
        if share < COMPLETE_MIN:
            return report(self, True, f"the judge found {len(missed)} of {len(listed)} parts of the question "
                                      f"not covered: {'; '.join(missed)}", parts=listed, terms={"complete": share})
        detail = (f"the judge found {len(listed) - len(missed)} of {len(listed)} parts of the question covered"
                  + (f" (not: {'; '.join(missed)})" if missed else ""))
        return report(self, False, detail, parts=listed, terms={"complete": share})


def from_parts(parts: Any) -> tuple[float, list[tuple[str, bool]]] | None:
    """A judge's parts as given by a caller (``[[part, covered], …]``) → (share, parts)."""
    if parts is None:
        return None
    try:
        listed = [(str(part), covered) for part, covered in parts]
    except (TypeError, ValueError):
        raise UserInputError("judged_parts must be a list of [part, covered] pairs") from None
    if not listed or not all(isinstance(c, bool) for _, c in listed):
        raise UserInputError("judged_parts must list at least one [part, covered] pair, covered true or false")
    return sum(c for _, c in listed) / len(listed), listed

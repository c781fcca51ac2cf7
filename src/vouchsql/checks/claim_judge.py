"""Cap: a judge model found a claim in the written answer that its result does not support,
about the answer itself (IES §3.2, TDD-H's checklist: "the judge reports an unsupported
claim"; §3.4: v2 and agreement-first count only "a judge issue about the answer").

The judge runs only where a model is given and asked for it (``vouch ask`` with
``judge_claims``, ``vouch eval confidence --model``); its claims arrive in the context. Every
claim is kept in the evidence with whether it is about the answer or commentary, so the
designed score can count all of them (as the paper's designed score does) while this check
fires — and agreement-first caps — only on a claim about the answer.
"""

from __future__ import annotations

from typing import Any

from ..answer import CheckResult
from ..errors import UserInputError
from ..score import JUDGE_CLAIMS
from . import evidence as ev
from .base import CheckContext, report


class ClaimJudge:
    name = JUDGE_CLAIMS
    kind = "cap"
    Evidence = ev.ClaimJudgeEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        judged = ctx.judged_claims
        if judged is None:
            return report(self, False, "not measured: no judge model was asked")
        claims: list[dict[str, Any]] = [{"claim": claim, "about_answer": about} for claim, about in judged]
        core = [c["claim"] for c in claims if c["about_answer"]]
        if core:
            return report(self, True, f"the judge found {len(core)} claim(s) about the answer that the result does "
                                      f"not support: {'; '.join(core)}", claims=claims, about_answer=len(core))
        if claims:
            return report(self, False, f"the judge found {len(claims)} unsupported claim(s) in the commentary, none "
                                       "about the answer", claims=claims, about_answer=0)
        return report(self, False, "the judge found every claim supported by the result", claims=[], about_answer=0)


def from_claims(claims: Any) -> list[tuple[str, bool]] | None:
    """A judge's claims as given by a caller (``[[claim, about_answer], …]``) → the pairs."""
    if claims is None:
        return None
    try:
        listed = [(str(claim), about) for claim, about in claims]
    except (TypeError, ValueError):
        raise UserInputError("judged_claims must be a list of [claim, about_answer] pairs") from None
    if not all(isinstance(a, bool) for _, a in listed):
        raise UserInputError("judged_claims: about_answer must be true or false")
    return listed

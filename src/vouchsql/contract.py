"""The request a check takes, shared by every surface: :func:`vouchsql.check`, ``vouch check``,
``POST /api/check`` and the MCP tool ``check_sql``. One model, so that an option added here
reaches all of them and a test can compare their schemas (tests/test_contract.py); each
surface adds only how it names the database (``db`` over HTTP, ``database`` over MCP).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Optional, cast

from pydantic import BaseModel, ConfigDict, Field

from .rules import RULE_NAMES

if TYPE_CHECKING:
    import os

    from .answer import Answer
    from .db import Database

_Pairs = list[tuple[str, bool]]  # what judged_parts and judged_claims hold once validated

MAX_SQL_CHARS = 20_000
MAX_CANDIDATES = 16


class CheckFields(BaseModel):
    """What a check is asked: the question, the SQL answers and the evidence given with them."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4000, description="the question the SQL answers, word for word")
    candidates: list[str] = Field(min_length=1, max_length=MAX_CANDIDATES, description=(
        "SQL answers to the question: candidates[0] is the answer checked; the others are independent "
        "samples (3 in all is a good number) used to measure agreement"))
    answer_text: Optional[str] = Field(None, max_length=8000,
                                       description="the written answer, whose numbers must come from the result")
    hint: Optional[str] = Field(None, max_length=4000, description="evidence or a definition given with the question")
    rule: Optional[Literal[tuple(RULE_NAMES)]] = Field(  # type: ignore[valid-type]
        None, description="the scoring rule (default: the server's or the settings' rule)")
    all_choices: bool = Field(False, description="also return choices that do not change the result or that the "
                                                 "wording settles")
    judged_parts: Optional[list[tuple[str, bool]]] = Field(None, max_length=50, description=(
        "optional: the question's parts and whether candidates[0] covers each, as [[part, covered], ...] "
        "(a completeness judgement of your own; without it Vouch aligns question and SQL itself)"))
    judged_claims: Optional[list[tuple[str, bool]]] = Field(None, max_length=50, description=(
        "optional: claims in answer_text that the result does not support, as [[claim, about_answer], ...] "
        "(a judgement of your own; a claim about the answer caps the score)"))

    def candidate_problem(self) -> str | None:
        """What is wrong with a candidate that the schema cannot say, as ``candidates.N: …``."""
        for i, sql in enumerate(self.candidates):
            if not sql.strip():
                return f"candidates.{i}: the SQL is empty"
            if len(sql) > MAX_SQL_CHARS:
                return f"candidates.{i}: longer than {MAX_SQL_CHARS} characters"
        return None

    def run(self, db: "str | os.PathLike[str] | Database", default_rule: str) -> Answer:
        """:func:`vouchsql.check` on ``db`` with these fields."""
        from . import api

        # The fields' validation made each item a (str, bool) pair; tuple() loses that for mypy.
        return api.check(db, self.question, list(self.candidates), answer_text=self.answer_text, hint=self.hint,
                         rule=self.rule or default_rule, all_choices=self.all_choices,
                         judged_parts=cast(_Pairs, [tuple(p) for p in self.judged_parts]) if self.judged_parts else None,
                         judged_claims=cast(_Pairs, [tuple(c) for c in self.judged_claims])
                         if self.judged_claims is not None else None)

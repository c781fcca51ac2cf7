"""The ordered registry of checks. A new check is one module and one line here."""

from __future__ import annotations

from ..answer import CheckResult
from .asked_columns import AskedColumns
from .bad_join import BadJoin
from .claim_judge import ClaimJudge
from .complete_judge import CompleteJudge
from .date_only_bound import DateOnlyBound
from .base import Check, CheckContext
from .definition_rule import DefinitionRule
from .join_drop import JoinDrop
from .join_fanout import JoinFanout
from .join_key_meaning import JoinKeyMeaning
from .merged_entities import MergedEntities
from .missing_table import MissingTable
from .null_comparison import NullComparison
from .null_sort_key import NullSortKey
from .numbers_as_text import NumbersAsText
from .one_row_groups import OneRowGroups
from .question_filters import QuestionFilters
from .question_shape import QuestionShape
from .reads_no_table import ReadsNoTable
from .severity import earned
from .result_shape import EmptyResult, NoResult, ThinEvidence, TruncatedResult
from .stand_in import StandInValue
from .uncited_number import UncitedNumber
from .unjoined_table import UnjoinedTable
from .unmatched_literal import UnmatchedLiteral
from .verified_query import VerifiedQuery

CHECKS: tuple[Check, ...] = (
    NoResult(),
    MissingTable(),
    ReadsNoTable(),
    NullComparison(),
    OneRowGroups(),
    NullSortKey(),
    NumbersAsText(),
    BadJoin(),
    JoinKeyMeaning(),
    StandInValue(),
    UncitedNumber(),
    ThinEvidence(),
    EmptyResult(),
    TruncatedResult(),
    JoinFanout(),
    UnjoinedTable(),
    DateOnlyBound(),
    UnmatchedLiteral(),
    JoinDrop(),
    DefinitionRule(),
    VerifiedQuery(),
    QuestionShape(),
    QuestionFilters(),
    MergedEntities(),
    AskedColumns(),
    CompleteJudge(),
    ClaimJudge(),
)


def run_checks(ctx: CheckContext, checks: tuple[Check, ...] = CHECKS) -> list[CheckResult]:
    """Each check's result, with the kind its measured precision earns (:mod:`.severity`)."""
    return [earned(check.run(ctx)) for check in checks]


__all__ = ["CHECKS", "Check", "CheckContext", "run_checks"]

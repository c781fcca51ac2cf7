"""The evidence each check reports, as pydantic models.

A check names its model as ``Evidence``; :func:`vouchsql.checks.base.report` validates what
the check reports against it (unknown keys are refused), so a renamed key fails the check's
own golden tests instead of silently changing what a rule reads. In the JSON contract the
evidence stays an object (``CheckResult.evidence``); the scoring rules never read it: they
read the score terms a check feeds (``CheckResult.terms``).
"""

# No ``from __future__ import annotations`` (see vouchsql/answer.py): pydantic would compile
# each field's annotation from its string at every start.

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Evidence(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoEvidence(Evidence):
    pass


class NoResultEvidence(Evidence):
    error_kind: str | None = None


class MissingTableEvidence(Evidence):
    tables: list[str] | None = None  # the tables read (none missing) or the missing ones


class JoinOverlap(Evidence):
    left: str
    right: str
    form: str
    rho: float | None = None
    overlap: int | None = None
    left_distinct: int | None = None
    right_distinct: int | None = None
    estimated: bool = False


class BadJoinEvidence(Evidence):
    joins: list[JoinOverlap] = []  # the pairs below the cutoff when fired, else every pair


class StandInHit(Evidence):
    column: str
    source: str
    code: Any
    how: str
    rows: int | None = None


class StandInEvidence(Evidence):
    hits: list[StandInHit] = []
    carriers: int | None = None  # returned columns whose sources have stand-in codes
    # The paper's narrower g_val (IES §3.2): only a nonzero code returned as a value counts,
    # over the returned columns whose sources hold one; None when no such column is returned.
    paper_grounded: float | None = None
    paper_fired: bool = False


class UncitedNumberEvidence(Evidence):
    uncited: list[str] = []
    cited: list[str] = []


class ThinEvidenceEvidence(Evidence):
    candidates: int | None = None


class JudgedPart(Evidence):
    part: str
    covered: bool


class CompleteJudgeEvidence(Evidence):
    parts: list[JudgedPart] = []  # the question's parts as the judge listed them


class JudgedClaim(Evidence):
    claim: str
    about_answer: bool


class ClaimJudgeEvidence(Evidence):
    claims: list[JudgedClaim] = []  # every unsupported claim the judge listed
    about_answer: int = 0  # how many of them are about the answer (the rest: commentary)


class RowCountEvidence(Evidence):
    row_count: int | None = None


class JoinFanoutEvidence(Evidence):
    fanouts: list[dict[str, Any]] = []


class JoinDropEvidence(Evidence):
    table: str | None = None
    rows: int | None = None
    kept: int | None = None
    dropped_share: float | None = None


class DefinitionRuleEvidence(Evidence):
    rules: list[str] = []
    broken: list[dict[str, Any]] = []
    applicable: list[str] = []
    tables: list[str] = []


class VerifiedQueryEvidence(Evidence):
    name: str | None = None  # the verified query that reads like the question
    question: str | None = None  # its question
    sql: str | None = None  # its SQL as written
    source: str | None = None  # file:line
    strength: str | None = None
    differ: list[str] = []  # the parts of the two readings that differ
    reading: dict[str, Any] = {}  # this question's reading
    agrees: bool | None = None  # the shown answer returns the verified query's rows
    columns: list[str] = []  # the verified answer (its first rows)
    rows: list[list[Any]] = []
    row_count: int | None = None
    error: str | None = None  # the verified query no longer runs


class JoinKeyPair(Evidence):
    left: str
    right: str
    form: str
    verdict: Literal["follows", "different_entities", "not_measured"]
    reason: str
    left_key: str | None = None  # the key the left column holds values of (its root), when known
    right_key: str | None = None
    should_take: list[str] = []  # for different entities: the links the join could have taken


class JoinKeyMeaningEvidence(Evidence):
    pairs: list[JoinKeyPair] = []  # every distinct equi-join pair with its verdict


class UnjoinedTableEvidence(Evidence):
    unjoined: list[str] = []  # tables joined to the rest by no condition, as written


class NullComparisonEvidence(Evidence):
    comparisons: list[str] = []  # the comparisons that can never be true, as SQL
    not_measured: list[str] = []  # NOT IN subqueries that could not be probed


class NumbersAsTextEvidence(Evidence):
    columns: list[str] = []  # the text columns holding numbers that the SQL compares or ranks
    uses: list[str] = []  # each comparison, MIN/MAX or ORDER BY … LIMIT on them, as SQL
    as_numbers: str | None = None  # the answer with those columns read as numbers, in brief
    shown: str | None = None  # the shown answer, in brief


class NullSortKey(Evidence):
    order: str  # the ORDER BY … LIMIT as written
    column: str  # the sort key, as SQL
    kept_null: int  # rows the LIMIT keeps whose key is NULL
    known_left_out: int  # rows with a known key the LIMIT leaves out
    limit: int


class NullSortKeyEvidence(Evidence):
    keys: list[NullSortKey] = []
    not_measured: list[str] = []  # ORDER BY … LIMIT that could not be probed


class OneRowGroup(Evidence):
    kind: str  # "never" (a HAVING no count of one row meets) or "order" (ORDER BY a count of 1, then LIMIT)
    table: str  # the table whose primary key the SELECT groups by
    condition: str  # the comparison or the ORDER BY key, as SQL
    problem: str


class OneRowGroupsEvidence(Evidence):
    findings: list[OneRowGroup] = []


class DateOnlyBound(Evidence):
    sql: str  # the condition as written
    column: str
    day: str  # the bound's day, YYYY-MM-DD
    effect: Literal["leaves out", "keeps", "misses"]  # what the bound does to that day's rows after midnight
    rows: int  # how many such rows the query's other conditions keep
    fix: str  # the half-open form that means the day


class DateOnlyBoundEvidence(Evidence):
    bounds: list[DateOnlyBound] = []
    not_measured: list[str] = []  # bounds whose probe could not run, as SQL
    same_answer: list[str] = []  # bounds that put rows on the wrong side without changing the answer


class UnmatchedLiteral(Evidence):
    sql: str  # the comparison, as SQL
    column: str  # table.column
    literal: str  # the string as the SQL writes it
    # "near": the column holds a close form of it (``stored``) and the answer changes when the
    # query uses that form; "absent": nothing close is held and the answer is empty, 0 or NULL;
    # "excludes_nothing": a <>, NOT IN or NOT LIKE leaves out a value nothing close to which is held
    finding: str = "near"
    stored: str | None = None  # the closest value the column holds (None when absent)
    near: str | None = None  # how it is close: case, spacing, punctuation, plural, number, date, …
    rows: int = 0  # how many rows hold the stored value
    # where the question's own words side: "stored" (it names the held form: the SQL is wrong),
    # "written" (it names the SQL's form: a question for the user), "neither" or "both"
    question: str | None = None
    answer: str | None = None  # the shown answer, in brief
    answer_with_stored: str | None = None  # the answer with the stored value in its place
    together: list[str] = []  # the other comparisons written as stored in the same rerun ("near" only)


class UnmatchedLiteralEvidence(Evidence):
    literals: list[UnmatchedLiteral] = []
    not_measured: list[str] = []  # comparisons whose probe the engine refused
    same_answer: list[str] = []  # unheld values whose closest held form gives the same answer


class ReadsNoTableEvidence(Evidence):
    tables: list[str] = []  # the database's tables the SQL reads


class QuestionShapeFinding(Evidence):
    part: str  # "direction", "aggregate", "entity", "count_unit" or "alphabetical"
    words: str  # the question's words
    sql: str  # the SQL clause, or its absence


class QuestionShapeEvidence(Evidence):
    findings: list[QuestionShapeFinding] = []
    measured: list[str] = []  # the parts of the question's shape read and checked


class QuestionFinding(Evidence):
    kind: str  # value, year, month, comparison, column_comparison, id, rows
    words: str  # the question's words
    expected: str  # what those words ask of the SQL
    sql: str | None = None  # the SQL clause that disagrees, or None when the SQL has none
    problem: str


class QuestionFiltersEvidence(Evidence):
    findings: list[QuestionFinding] = []
    measured: list[str] = []  # the question's words read and found in the SQL
    not_measured: list[str] = []  # words read but not checkable against this SQL or database


class MergedEntitiesEvidence(Evidence):
    column: str | None = None  # the grouped label, Table.column
    key: str | None = None  # the table's key the query does not group by
    merged: int | None = None  # groups of the result holding more than one key
    examples: list[str] = []


class AskedColumn(Evidence):
    kind: str  # "sort_key" (a column returned only to sort or rank) or "star" (every column returned)
    column: str  # the returned expression, as SQL
    words: str  # the question's words about it (the ordering span), or "" for a star
    problem: str


class AskedColumnsEvidence(Evidence):
    findings: list[AskedColumn] = []
    spans: list[str] = []  # the question's ordering spans, as written

"""The data model shared by the library, the CLI and (later) the HTTP layer.

Everything a user sees is one of these pydantic models, so the JSON contract is their
``model_dump(mode="json")``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel as _PydanticModel, ConfigDict, Field


class BaseModel(_PydanticModel):
    # Every field is always present in the JSON, so the schema marks every field required.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


class ResultError(BaseModel):
    kind: str
    message: str


class Result(BaseModel):
    """The outcome of running one SQL statement. ``error`` is set instead of raising when a
    caller asked for a result object (for example a candidate that fails to run)."""

    columns: list[str] = Field(default_factory=list)
    rows: list[list[Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    elapsed_ms: float = 0.0
    error: ResultError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


CheckKind = Literal["veto", "cap", "signal"]


class CheckResult(BaseModel):
    name: str
    kind: CheckKind
    fired: bool
    detail: str
    evidence: dict[str, Any] = Field(default_factory=dict)


class Candidate(BaseModel):
    sql: str
    result: Result
    cluster: int | None = None


class Shown(BaseModel):
    sql: str
    result: Result


class Choice(BaseModel):
    type: str
    description: str
    sql: str
    result: Result | None = None
    differs: bool = False
    settled_by: str | None = None


class Verdict(BaseModel):
    rule: str
    score: float
    gate: Literal["pass", "flag", "abstain"]
    reasons: list[str] = Field(default_factory=list)


class Agreement(BaseModel):
    value: float | None
    lower_bound: float | None = None
    truncated_pairs: int = 0


class Answer(BaseModel):
    question: str
    shown: Shown
    candidates: list[Candidate] = Field(default_factory=list)
    agreement: float | None = None
    agreement_bounds: Agreement | None = None
    choices: list[Choice] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    verdict: Verdict
    answer_text: str | None = None
    hint: str | None = None

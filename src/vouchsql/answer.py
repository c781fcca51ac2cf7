"""The data model shared by the library, the CLI and the HTTP layer.

Everything a user sees is one of these pydantic models, so the JSON contract is their
``model_dump(mode="json")``.
"""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its string (~10 M instructions, ~2.5 ms of each start for this
# module and checks/evidence.py together); Python 3.11 evaluates them as written.

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel as _PydanticModel, ConfigDict, Field

from .factories import new_list

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult


class BaseModel(_PydanticModel):
    # Every field is always present in the JSON, so the schema marks every field required.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)


class ResultError(BaseModel):
    kind: str
    message: str


class Result(BaseModel):
    """The outcome of running one SQL statement. ``error`` is set instead of raising when a
    caller asked for a result object (for example a candidate that fails to run)."""

    columns: list[str] = Field(default_factory=new_list)
    rows: list[list[Any]] = Field(default_factory=new_list)
    row_count: int = 0
    truncated: bool = False
    # Why the result was cut off: "rows" (the max_rows cap), "bytes" (max_result_bytes
    # reached while fetching) or "cell" (a single value was cut to fit). None when complete.
    truncated_reason: Literal["rows", "bytes", "cell"] | None = None
    elapsed_ms: float = 0.0
    error: ResultError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def _repr_html_(self) -> str:  # Jupyter (display.py)
        from .display import result_html

        return result_html(self)

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> "RenderResult":  # rich's REPL
        from .display import rich_lines
        from .render import print_result

        yield from rich_lines(print_result, self, console, options)


CheckKind = Literal["veto", "cap", "signal"]


class CheckResult(BaseModel):
    name: str
    kind: CheckKind
    fired: bool
    detail: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    # The score terms this check measured (IES eq. 1: ``grounded``, ``schema``), in [0, 1].
    terms: dict[str, float] = Field(default_factory=dict)


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


class Reason(BaseModel):
    """One reason the verdict names: a stable ``code`` (``agreement``, a check's name, a score
    term, ``thin_evidence``, ``open_choice:<type>``) and what it says."""
    code: str
    detail: str


class Verdict(BaseModel):
    rule: str
    score: float
    gate: Literal["pass", "flag", "abstain"]
    reasons: list[str] = Field(default_factory=new_list)
    # The same reasons, structured: ``reasons`` keeps the short strings of the first release.
    reason_codes: list[Reason] = Field(default_factory=new_list)


class Agreement(BaseModel):
    value: float | None
    lower_bound: float | None = None
    truncated_pairs: int = 0


class Premise(BaseModel):
    """The assess step's verdict on the question itself (PremiseSQL): valid, or one of the
    nine typed flaws (``vouchsql.premise.TAXONOMY``) with a reason and a clarifying question."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `check` never makes one

    is_valid: bool
    flaw_code: str | None = None
    reason: str = ""
    clarification: str | None = None


class StageUsage(BaseModel):
    """Model calls of one stage. ``calls`` counts prompts answered (a repair is a call);
    ``requests`` counts requests sent to the provider (retries included; 0 when answered from
    the response cache); ``cached`` counts calls answered from the cache or a cassette.
    ``latency_ms`` (summed over calls) and ``wall_ms`` (the stage's elapsed time) are timings."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `check` never makes one

    calls: int = 0
    requests: int = 0
    cached: int = 0
    repairs: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    wall_ms: float = 0.0


class Usage(BaseModel):
    """What answering cost: the model, the prompts by content hash, calls per stage
    (``assess``, ``generate``, ``write``) and the number of sequential rounds of calls."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `check` never makes one

    model: str
    prompts: dict[str, str] = Field(default_factory=dict)
    stages: dict[str, StageUsage] = Field(default_factory=dict)
    total: StageUsage = Field(default_factory=StageUsage)
    rounds: int = 0


class PromptSchema(BaseModel):
    """Which tables ``ask``'s prompts held (:mod:`vouchsql.prompting.retrieval`). ``full``: the
    whole schema, as it fit the ``schema_tokens`` budget; else ``tables`` were shown with
    their profile, most relevant first, ``listed`` by name only, and ``omitted`` more not at
    all (``dropped`` among them: tables an applying routing rule forbids). ``why`` says why
    each shown table was chosen; ``tokens`` is the schema text's estimated size."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `check` never makes one

    full: bool
    tables: list[str] = Field(default_factory=new_list)
    listed: list[str] = Field(default_factory=new_list)
    omitted: int = 0
    dropped: list[str] = Field(default_factory=new_list)
    total_tables: int = 0
    tokens: int = 0
    budget: int = 0
    why: dict[str, str] = Field(default_factory=dict)


class Interpretation(BaseModel):
    """One interpretation ``ask`` computed. ``text`` is the full request with exactly this
    interpretation (what phase 1 asked); ``clause`` the one sentence phase 2 appends to the
    request, word for word, when the user picks it. ``stated`` and ``assumptions`` come from
    the shown sample. The shown interpretation's answer is the top-level Answer (its
    ``answer`` is null); every other one carries its own checked ``answer``."""

    model_config = ConfigDict(defer_build=True)  # built on first use: `check` never makes one

    text: str
    clause: str = ""
    stated: str | None = None
    assumptions: list[str] = Field(default_factory=new_list)
    shown: bool = False
    picked: bool = False
    same_result_as: int | None = None
    answer: "Answer | None" = None


class Answer(BaseModel):
    question: str
    shown: Shown
    candidates: list[Candidate] = Field(default_factory=new_list)
    agreement: float | None = None
    agreement_bounds: Agreement | None = None
    choices: list[Choice] = Field(default_factory=new_list)
    checks: list[CheckResult] = Field(default_factory=new_list)
    verdict: Verdict
    # The written answer, whose numbers must come from the result: the one given to ``check``,
    # or the one ``ask`` wrote. The field to read.
    answer_text: str | None = None
    hint: str | None = None
    # Set by ``ask`` / ``refine`` (null or empty from ``check``):
    premise: Premise | None = None
    interpretations: list[Interpretation] = Field(default_factory=new_list)
    # ``ask``'s reply, kept in the JSON from the first release: ``answer_text`` when it
    # answered, the notice when it did not (a flawed premise). Derived only by :meth:`reply`.
    text: str | None = None
    usage: Usage | None = None
    # Set by ``ask`` / ``refine``: the tables the prompts' schema held.
    prompt_schema: PromptSchema | None = None

    def _repr_html_(self) -> str:  # Jupyter: the gate, the reasons, the readings side by side (display.py)
        from .display import answer_html

        return answer_html(self)

    def __rich_console__(self, console: "Console", options: "ConsoleOptions"
                         ) -> "RenderResult":  # rich's REPL: what `vouch check` / `vouch ask` print
        from .display import rich_lines
        from .render import print_answer, print_ask_answer

        yield from rich_lines(print_ask_answer if self.interpretations or self.premise else print_answer,
                              self, console, options)

    def reply(self, notice: str | None = None) -> "Answer":
        """Make this ``ask``'s reply: ``text`` becomes ``answer_text``, or ``notice`` when
        nothing was answered. Returns the same Answer."""
        self.text = self.answer_text if notice is None else notice
        return self


"""The methods of SpecBridge §4.1 and §7 (Table 5), each answering one request through a model.

Every method returns a :class:`Response`: the queries it returns (the main one first), what it
said (stated interpretations, assumptions, a question back to the user), whether its
*structured output* says a choice is open, and what it cost (calls, requests, tokens, counted
by :class:`vouchsql.llm.LLM` for this request alone; a call answered from the response cache
is still a call of the method).

- ``decide_then_answer`` — Vouch's ``ask`` (:mod:`vouchsql.pipeline.asking`) at SpecBridge's
  budget: the decide call (premise, interpretations), then each interpretation — or the clear
  request — in its own call; K samples each (``--k``, default 1 as in the paper). So a clear
  request costs two calls, an open one 1 + its interpretations.
- ``decide_then_answer_vouch`` — the same with Vouch's saving: the decide call's own SQL
  answers a clear request (one call). Returned: the shown answer,
  then each interpretation's shown answer whose result differs. Choices raised by Vouch's
  deterministic detectors are recorded but not scored here (that is the ``detectors`` method).
- ``decide_then_search`` — the decide call; for an open request two more calls list the
  interpretations and then any missing (the ``interpretations`` and ``missing`` prompts, in
  the manner of DtP), and each is answered in its own call (§7.1's option).
- ``plain`` — one call: SQL, the consequential assumptions, SQL of any other supported
  interpretation (the ``plain`` prompt; §4.1's default prompt, not the AMBROSIA authors' own
  text, which Vouch does not ship).
- ``three_samples`` — ``plain`` three times (samples 0–2 at the sampling temperature); every
  query of the three is returned, the first sample's main query first.
- ``decide_then_pick`` — DtP: one call lists the interpretations (always, no decide step), each
  is answered in its own call.
- ``single_answer`` — the main query of ``plain`` with its stated interpretation, alternatives
  dropped (as production assistants answer; the same call as ``plain``, so from the response
  cache when both run).
- ``clarifying_question`` — the decide call; where it finds a choice open it returns no SQL and
  asks the user to choose; otherwise one more call answers.

The structured "names the choice" reading: decide-based methods and DtP when they list two or
more interpretations, ``plain`` / ``three_samples`` when they return an alternative, never for
``single_answer``. A judge model reads the words instead when one is given
(:func:`judge_named`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, cast

from ..errors import ModelError
from ..llm import LLM, BadOutput, Request, llm_from_config, load_prompt
from ..prompting import data_text as data
from ..prompting.context import definitions_text, schema_text
from ..llm.jsonparse import require

if TYPE_CHECKING:
    from ..pipeline.asking import Sample
    from ..premise import Assessment

METHODS = ("decide_then_answer", "decide_then_search", "plain", "three_samples", "decide_then_pick",
           "single_answer", "clarifying_question", "decide_then_answer_vouch")
MODEL_FREE = ("detectors",)
ALL_METHODS = METHODS + MODEL_FREE
MAX_TOKENS = 2048
MAX_INTERPRETATIONS = 4  # as the decide step (SpecBridge §7.1: "at most four")


@dataclass
class Response:
    method: str
    request: str
    returned: list[str] = field(default_factory=list)  # SQL, the main query first
    stated: list[str] = field(default_factory=list)  # what each returned query computes, as said
    assumptions: list[str] = field(default_factory=list)
    open_flag: bool = False  # the structured output says a choice is open
    asked: str | None = None  # a question back to the user instead of SQL
    calls: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def main(self) -> str | None:
        return self.returned[0] if self.returned else None

    def words(self) -> str:
        """What the response said, for a judge (the SQL is left out: the judge reads words)."""
        lines = [f"Computed: {s}" for s in self.stated if s]
        lines += [f"Assumption: {a}" for a in self.assumptions]
        if self.asked:
            lines.append(f"Question to the user: {self.asked}")
        return "\n".join(lines) or "(the response says nothing beyond its SQL)"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------
# Model plumbing
# ---------------------------------------------------------------------------------------
@dataclass
class Context:
    """What every method needs for one database: the model spec, settings, prompt texts."""

    db: Any
    model: Any
    k: int = 1
    temperature: float = 0.7
    _schema: str | None = None

    def schema(self) -> str:
        if self._schema is None:
            self._schema = schema_text(self.db.profile(), self.db.dialect)
        return self._schema

    def llm(self) -> LLM:
        """A fresh LLM per request, so its accounting is this request's alone (the response
        cache on disk is shared, as it is between runs)."""
        return llm_from_config(self.model, self.db.config)

    def messages(self, prompt: str, request: str, **more: str) -> list[dict[str, str]]:
        return load_prompt(prompt).messages(request=request, schema=self.schema(), dialect=self.db.dialect,
                                            definitions=definitions_text(None), hint="(none)", **more)


def _sql(value: Any) -> str:
    from ..pipeline.asking import clean_sql

    return clean_sql(str(value or ""))


def _read_plain(d: dict[str, Any]) -> dict[str, Any]:
    sql = require(d, "sql", str, nullable=True)
    alts = d.get("alternatives") or []
    if not isinstance(alts, list):
        raise BadOutput("field 'alternatives' must be a list")
    out = []
    for a in alts:
        if isinstance(a, dict) and a.get("sql"):
            out.append({"sql": _sql(a["sql"]), "interpretation": str(a.get("interpretation") or "").strip()})
    assumptions = d.get("assumptions") or []
    if isinstance(assumptions, str):
        assumptions = [assumptions]
    return {"sql": _sql(sql), "interpretation": str(d.get("interpretation") or "").strip(),
            "assumptions": [str(a).strip() for a in assumptions if str(a).strip()], "alternatives": out}


def _read_list(d: dict[str, Any]) -> list[tuple[str, str]]:
    raw = d.get("interpretations")
    if not isinstance(raw, list):
        raise BadOutput("field 'interpretations' must be a list")
    out = []
    for item in raw:
        if isinstance(item, str) and item.strip():
            out.append((item.strip(), item.strip()))
        elif isinstance(item, dict) and str(item.get("request") or "").strip():
            out.append((str(item["request"]).strip(), str(item.get("clause") or item["request"]).strip()))
    return out


def _account(resp: Response, llm: LLM) -> Response:
    total = llm.usage({}).total
    resp.calls, resp.requests = total.calls, total.requests
    resp.input_tokens, resp.output_tokens = total.input_tokens, total.output_tokens
    return resp


def _answer_each(ctx: Context, llm: LLM, requests: list[str]) -> list[dict[str, Any]]:
    """Each request answered in its own generate call (one sample each; K with ``--k``,
    drawn as ask draws them), in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    from ..pipeline.asking import validate_sample

    def one(text: str) -> dict[str, Any]:
        req = Request.of(ctx.messages("generate", text), temperature=ctx.temperature, max_tokens=MAX_TOKENS)
        drawn = llm.complete_json_samples(req, range(ctx.k), stage="generate", validate=validate_sample)
        first = drawn[0]
        return {"sql": first.sql, "interpretation": first.interpretation or "", "assumptions": first.assumptions}

    if not requests:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(requests))) as pool:
        return list(pool.map(one, requests))


def _dedupe(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen, out = set(), []
    for request, clause in items:
        if request.lower() not in seen:
            seen.add(request.lower())
            out.append((request, clause))
    return out[:MAX_INTERPRETATIONS]


def _decide(ctx: Context, llm: LLM, request: str) -> tuple[Assessment, Sample | None]:
    from ..pipeline.asking import validate_decision

    messages = load_prompt("decide").messages(question=request, schema=ctx.schema(), dialect=ctx.db.dialect,
                                              definitions=definitions_text(None), hint="(none)")
    return cast("tuple[Assessment, Sample | None]", llm.complete_json(
        Request.of(messages, temperature=0.0, max_tokens=MAX_TOKENS), stage="assess", validate=validate_decision))


# ---------------------------------------------------------------------------------------
# The methods
# ---------------------------------------------------------------------------------------
def decide_then_answer(ctx: Context, request: str, *, decide_writes_sql: bool = False,
                       name: str = "decide_then_answer") -> Response:
    from ..pipeline.asking import ask

    answer = ask(ctx.db, request, model=ctx.model, k=ctx.k, decide_writes_sql=decide_writes_sql)
    resp = Response(name, request)
    u = answer.usage
    if u is not None:
        resp.calls, resp.requests = u.total.calls, u.total.requests
        resp.input_tokens, resp.output_tokens = u.total.input_tokens, u.total.output_tokens
    if "model_error" in answer.verdict.reasons:
        resp.error = next((c.detail for c in answer.checks if c.name == "model_error"), "model error")
        return resp
    if answer.premise is not None and not answer.premise.is_valid:
        resp.asked = answer.premise.clarification
        resp.extra["flaw_code"] = answer.premise.flaw_code
        return resp
    interps = answer.interpretations
    resp.open_flag = len(interps) >= 2
    if answer.shown.sql:
        resp.returned.append(answer.shown.sql)
        resp.stated.append((interps[0].stated if interps else None) or "")
        resp.assumptions = list(interps[0].assumptions) if interps else []
    for interp in interps[1:]:
        if interp.answer is not None and interp.same_result_as is None and interp.answer.shown.sql:
            resp.returned.append(interp.answer.shown.sql)
            resp.stated.append(interp.stated or interp.text)
    resp.extra["detector_choices"] = [{"type": c.type, "sql": c.sql} for c in answer.choices]
    resp.extra["interpretations"] = [i.text for i in interps]
    return resp


def decide_then_search(ctx: Context, request: str) -> Response:
    llm = ctx.llm()
    resp = Response("decide_then_search", request)
    try:
        assessment, _ = _decide(ctx, llm, request)
        if not assessment.premise.is_valid:
            resp.asked = assessment.premise.clarification
            return _account(resp, llm)
        if not assessment.interpretations:
            # SpecBridge: the decide call decides; the answer is one more call.
            answers = _answer_each(ctx, llm, [request])
        else:
            resp.open_flag = True
            listed = _read_list_call(ctx, llm, "interpretations", request)
            text = "\n".join(f"- {data.escaped(r, data.TEXT_LIMIT)}" for r, _ in listed) or "(none)"
            more = _read_list_call(ctx, llm, "missing", request, listed=text)
            readings = _dedupe(listed + more) or _dedupe([(r.request, r.clause) for r in assessment.interpretations])
            resp.extra["interpretations"] = [r for r, _ in readings]
            answers = _answer_each(ctx, llm, [r for r, _ in readings])
        _fill(resp, answers)
    except ModelError as exc:
        resp.error = exc.message
    return _account(resp, llm)


def plain(ctx: Context, request: str, *, sample: int = 0, name: str = "plain") -> Response:
    llm = ctx.llm()
    resp = Response(name, request)
    try:
        req = Request.of(ctx.messages("plain", request), temperature=ctx.temperature if sample else 0.0,
                         max_tokens=MAX_TOKENS, sample=sample)
        got = llm.complete_json(req, stage="plain", validate=_read_plain)
        if got["sql"]:
            resp.returned.append(got["sql"])
            resp.stated.append(got["interpretation"])
        resp.assumptions = got["assumptions"]
        if name != "single_answer":
            for alt in got["alternatives"]:
                resp.returned.append(alt["sql"])
                resp.stated.append(alt["interpretation"])
            resp.open_flag = bool(got["alternatives"])
    except ModelError as exc:
        resp.error = exc.message
    return _account(resp, llm)


def three_samples(ctx: Context, request: str) -> Response:
    samples = [plain(ctx, request, sample=s) for s in range(3)]
    resp = Response("three_samples", request)
    for s in samples:
        for sql, stated in zip(s.returned, s.stated):
            if sql not in resp.returned:
                resp.returned.append(sql)
                resp.stated.append(stated)
        resp.assumptions += [a for a in s.assumptions if a not in resp.assumptions]
        resp.open_flag = resp.open_flag or s.open_flag
        resp.calls += s.calls
        resp.requests += s.requests
        resp.input_tokens += s.input_tokens
        resp.output_tokens += s.output_tokens
        resp.error = resp.error or s.error
    return resp


def decide_then_pick(ctx: Context, request: str) -> Response:
    llm = ctx.llm()
    resp = Response("decide_then_pick", request)
    try:
        readings = _dedupe(_read_list_call(ctx, llm, "interpretations", request)) or [(request, request)]
        resp.open_flag = len(readings) >= 2
        resp.extra["interpretations"] = [r for r, _ in readings]
        _fill(resp, _answer_each(ctx, llm, [r for r, _ in readings]))
    except ModelError as exc:
        resp.error = exc.message
    return _account(resp, llm)


def single_answer(ctx: Context, request: str) -> Response:
    return plain(ctx, request, name="single_answer")


def clarifying_question(ctx: Context, request: str) -> Response:
    llm = ctx.llm()
    resp = Response("clarifying_question", request)
    try:
        assessment, _ = _decide(ctx, llm, request)
        if not assessment.premise.is_valid:
            resp.asked = assessment.premise.clarification or assessment.premise.reason
        elif assessment.interpretations:
            resp.open_flag = True
            options = "; ".join(f"({i + 1}) {r.clause}" for i, r in enumerate(assessment.interpretations))
            resp.asked = f"Your request could mean different things. Which do you mean: {options}?"
            resp.extra["interpretations"] = [r.request for r in assessment.interpretations]
        else:
            _fill(resp, _answer_each(ctx, llm, [request]))  # SpecBridge: one more call answers
    except ModelError as exc:
        resp.error = exc.message
    return _account(resp, llm)


def _fill(resp: Response, answers: list[dict[str, Any]]) -> None:
    for i, a in enumerate(answers):
        if a["sql"] and a["sql"] not in resp.returned:
            resp.returned.append(a["sql"])
            resp.stated.append(a["interpretation"])
        if i == 0:
            resp.assumptions = list(a["assumptions"])


def _read_list_call(ctx: Context, llm: LLM, prompt: str, request: str, **more: str) -> list[tuple[str, str]]:
    req = Request.of(ctx.messages(prompt, request, **more), temperature=0.0, max_tokens=MAX_TOKENS)
    return cast("list[tuple[str, str]]", llm.complete_json(req, stage=prompt, validate=_read_list))


def decide_then_answer_vouch(ctx: Context, request: str) -> Response:
    """Vouch's own budget: the decide call's SQL answers a clear request (one call, not two)."""
    return decide_then_answer(ctx, request, decide_writes_sql=True, name="decide_then_answer_vouch")


RUNNERS: dict[str, Callable[[Context, str], Response]] = {
    "decide_then_answer": decide_then_answer, "decide_then_search": decide_then_search, "plain": plain,
    "three_samples": three_samples, "decide_then_pick": decide_then_pick, "single_answer": single_answer,
    "clarifying_question": clarifying_question, "decide_then_answer_vouch": decide_then_answer_vouch,
}


def second_answer(ctx: Context, request: str) -> Response:
    """The two-turn experiment's second answer, the same for every method (§7.2): the
    phase-2 request answered in one generate call."""
    llm = ctx.llm()
    resp = Response("second_answer", request)
    try:
        _fill(resp, _answer_each(ctx, llm, [request]))
    except ModelError as exc:
        resp.error = exc.message
    return _account(resp, llm)


# ---------------------------------------------------------------------------------------
# The judge of "named"
# ---------------------------------------------------------------------------------------
def _read_named(d: dict[str, Any]) -> bool:
    return cast(bool, require(d, "names_choice", bool))


def judge_named(llm: LLM, request: str, choice_type: str, interpretation_a: str, interpretation_b: str,
                response: Response) -> bool | None:
    """Whether the response's words say the set's choice is open (SpecBridge §3's judge, which
    does not know which model answered); None when the judge fails."""
    messages = load_prompt("judge_named").messages(
        request=data.escaped(request, data.LONG_LIMIT), choice_type=choice_type,
        interpretation_a=data.escaped(interpretation_a, data.LONG_LIMIT),
        interpretation_b=data.escaped(interpretation_b, data.LONG_LIMIT),
        response=data.escaped(response.words(), data.LONG_LIMIT))
    try:
        return cast(bool, llm.complete_json(Request.of(messages, temperature=0.0, max_tokens=512), stage="judge_named",
                                            validate=_read_named))
    except ModelError:
        return None


__all__ = ["METHODS", "MODEL_FREE", "ALL_METHODS", "RUNNERS", "Context", "Response", "judge_named",
           "second_answer"]

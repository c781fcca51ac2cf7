"""The model-backed stages: ``ask`` (phase 1) and ``refine`` (phase 2). (The module is
``asking``, not ``ask``: a submodule named ``ask`` would replace the ``ask`` function on the
package the first time it is imported.)

ask, at the call budget of SpecBridge's Decide-then-answer (§7.1, issue 14): a clear request
costs at most 2 calls, an open one with n interpretations at most 1 + n, at any K, on an
endpoint that returns several choices per request (OpenAI-compatible ``n``):

1. assess (1 call, prompt ``decide``): the premise verdict, the interpretations of an open
   calculation choice (:mod:`vouchsql.premise`) and, when none is open, the SQL that answers
   the request — sample 0. A flawed question stops here: gate ``abstain``, no SQL.
2. generate (1 call per interpretation, all in parallel): the other K − 1 samples of a clear
   request, or the K samples of each interpretation, drawn in ONE request per interpretation
   (``n``); where the endpoint has no ``n`` (Anthropic) the samples are parallel calls, so
   the rounds stay the same and the calls are 1 + (K − 1) or 1 + n·K. Every candidate then
   runs read-only, and the shown answer is the first member of the largest result cluster
   (:func:`vouchsql.agreement.shown_index`), or sample 0 with ``shown = first``.
3. the answer text comes from a template over the shown result (no call) unless model prose
   is asked for (``prose=True``, ``--prose``): then write, 1 call per interpretation, in
   parallel, one more round.
4. judge (only with ``judge_complete`` / ``judge_claims``): one call each per answer, outside
   the budget above.

Then each interpretation's executed samples are vouched for by
:func:`vouchsql.pipeline.checking.vouch` — the code behind ``vouch check``, not a copy — with
the shown candidate first and the written text as ``answer_text``, so every check, the
choice detectors and the scoring rule apply; no query runs twice.
A model failure that outlasts the retries gives an Answer with gate ``abstain`` and reason
``model_error``: never a pass, never a crash. A replay cassette that lacks a request raises.

refine (phase 2, SpecBridge §7.3) keeps the request word for word and appends the picked
interpretation's clause; it never rewrites the request. It skips assess (the premise and the
interpretations are the first answer's) and costs one generate call (K samples in one
request where the endpoint has ``n``), plus the write call with model prose.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from ..agreement import results_match, shown_index
from ..answer import (Answer, CheckResult, Interpretation, Premise, PromptSchema, Reason, Result, ResultError, Shown,
                      Usage, Verdict)
from ..db import Database, connect
from ..definitions import Definitions, definitions_in_effect, load_definitions, use_definitions
from ..errors import ModelError, UserInputError
from ..llm import LLM, BadOutput, Model, ReplayMiss, Request, llm_from_config, load_prompt, prompt_hashes
from ..prompting import data_text as data
from ..prompting.context import definitions_text, result_text, rows_caption, template_text
from ..llm.jsonparse import require
from ..prompting.retrieval import SchemaContext, schema_for_prompt
from ..llm.judges import judge_claims, judge_completeness
from ..premise import Assessment, flaw_name, validate_assessment
from ..score import RULES
from .checking import JudgedClaims, JudgedComplete, vouch

MODEL_ENV = "VOUCH_MODEL"
GENERATE_MAX_TOKENS = 2048
DECIDE_MAX_TOKENS = 2048
WRITE_MAX_TOKENS = 1024
# Fields that differ between two runs of the same question even when every reply comes from
# the cache: timings and the cache accounting. :func:`comparable` drops them.
VOLATILE_FIELDS = frozenset({"elapsed_ms", "latency_ms", "wall_ms", "requests", "cached", "retries"})

Progress = Callable[[str], None]
J = TypeVar("J")  # what one job of a round is given
R = TypeVar("R")  # what one job of a round returns


@dataclass
class Sample:
    sql: str
    interpretation: str | None = None
    assumptions: list[str] = field(default_factory=list)


def validate_sample(data: dict[str, Any]) -> Sample:
    sql = require(data, "sql", str, nullable=True)
    stated = data.get("interpretation")
    assumptions = data.get("assumptions") or []
    if isinstance(assumptions, str):
        assumptions = [assumptions]
    if not isinstance(assumptions, list):
        raise BadOutput("field 'assumptions' must be a list of strings")
    return Sample(sql=clean_sql(sql or ""), interpretation=str(stated).strip() if stated else None,
                  assumptions=[str(a).strip() for a in assumptions if str(a).strip()])


def validate_decision(data: dict[str, Any]) -> "tuple[Assessment, Sample | None]":
    """The decide reply: the assessment, and for a valid request with no open choice, the SQL
    that answers it (None when the model gave none: the generate call then draws all K)."""
    assessment = validate_assessment(data)
    if not assessment.premise.is_valid or assessment.interpretations or not data.get("sql"):
        return assessment, None
    sample = validate_sample(data)
    return assessment, sample if sample.sql else None


def clean_sql(sql: str) -> str:
    text = sql.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip().rstrip(";").strip()


# -- the public entry points ---------------------------------------------------------------

def ask(db: "str | os.PathLike[str] | Database", question: str, *, model: "str | Model | None" = None,
        k: int | None = None, definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None" = None,
        hint: str | None = None, no_prose: bool = False, record: "str | os.PathLike[str] | None" = None,
        base_url: str | None = None, rule: str | None = None, progress: Progress | None = None,
        prose: bool = False, assess: bool = True, decide_writes_sql: bool = True, **settings: Any) -> Answer:
    """Answer ``question`` over ``db`` with a model and vouch for the answer (phase 1). The
    answer text comes from a template unless ``prose`` asks for a model-written one (one more
    call per interpretation); ``no_prose`` is the template, kept for older callers.
    ``assess=False`` skips the assess step: no premise verdict, no interpretations, the
    question answered as asked with K generate samples (the IES study's protocol, §3.1).
    ``decide_writes_sql=False`` draws a clear request's first sample from the generate call
    too, as SpecBridge's Decide-then-answer does (one decide call, then one call per
    interpretation); by default the decide call's own SQL is that sample, saving a call."""
    if not question or not question.strip():
        raise UserInputError("the question is empty")
    no_prose = _template_only(prose, no_prose)
    with _session(db, model, k, definitions, hint, no_prose, record, base_url, rule, progress, settings) as run:
        return run.ask(question, assess=assess, decide_writes_sql=decide_writes_sql)


def refine(answer: Answer, pick: int, *, db: "str | os.PathLike[str] | Database", model: "str | Model | None" = None,
           k: int | None = None, definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None" = None,
           hint: str | None = None, no_prose: bool = False, record: "str | os.PathLike[str] | None" = None,
           base_url: str | None = None, rule: str | None = None, progress: Progress | None = None,
           prose: bool = False, **settings: Any) -> Answer:
    """Phase 2: the request, word for word, plus the clause of interpretation ``pick``
    (1 = the first listed), answered with K new samples. ``model`` defaults to the one that
    wrote ``answer``."""
    interps = answer.interpretations
    if len(interps) < 2:
        raise UserInputError("this answer lists no interpretations to pick from (the question left no choice open)")
    if not isinstance(pick, int) or not 1 <= pick <= len(interps):
        raise UserInputError(f"pick {pick!r}: choose an interpretation from 1 to {len(interps)}")
    clause = interps[pick - 1].clause.strip()
    if not clause:
        raise UserInputError(f"interpretation {pick} has no clause to append")
    refined = append_clause(base_request(answer), clause)
    no_prose = _template_only(prose, no_prose)
    if model is None and answer.usage is not None:
        model = answer.usage.model
    with _session(db, model, k, definitions, hint, no_prose, record, base_url, rule, progress, settings) as run:
        return run.refine(answer, refined, pick - 1)


def _template_only(prose: bool, no_prose: bool) -> bool:
    if prose and no_prose:
        raise UserInputError("prose and no_prose contradict each other: ask for model prose or the template, not both")
    return not prose


def append_clause(request: str, clause: str) -> str:
    """SpecBridge §7.3: the request unchanged, then the clause."""
    return request + ("" if request[-1:].isspace() else " ") + clause


def base_request(answer: Answer) -> str:
    """The user's request before any pick: a refined answer's question minus its clause."""
    for interp in answer.interpretations:
        if interp.picked and interp.clause and answer.question.endswith(interp.clause):
            return answer.question[: -len(interp.clause)].rstrip(" ")
    return answer.question


def comparable(answer: Answer | dict[str, Any]) -> Any:
    """The Answer's JSON without :data:`VOLATILE_FIELDS` (timings and cache accounting), so
    two runs of the same question can be compared for equality."""
    data = answer.model_dump(mode="json") if isinstance(answer, Answer) else answer

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(data)


@contextmanager
def _session(db: "str | os.PathLike[str] | Database", model: "str | Model | None", k: int | None,
             definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None", hint: str | None,
             no_prose: bool, record: "str | os.PathLike[str] | None", base_url: str | None, rule: str | None,
             progress: Progress | None, settings: dict[str, Any]) -> Iterator[_Run]:
    owned = not isinstance(db, Database)
    database = db if isinstance(db, Database) else connect(db, **settings)
    try:
        config = database.config if owned else database.config.with_overrides(**settings)
        spec = model or os.environ.get(MODEL_ENV)
        if not spec:
            raise UserInputError(f"no model given: pass --model provider:model (or set {MODEL_ENV}), "
                                 f"for example openai:gpt-4o-mini")
        if k is not None and (not isinstance(k, int) or k < 1):
            raise UserInputError(f"k must be a whole number >= 1, got {k!r}")
        if rule is not None and rule not in RULES:
            raise UserInputError(f"unknown scoring rule {rule!r}; choose one of {', '.join(RULES)}")
        defs = load_definitions(definitions) if definitions is not None else definitions_in_effect(config)
        llm = llm_from_config(spec, config, record=record, base_url=base_url)
        run = _Run(db=database, llm=llm, k=k or config.samples, definitions=defs, hint=hint, no_prose=no_prose,
                   rule=rule or config.rule, temperature=config.temperature, concurrency=config.concurrency,
                   progress=progress or (lambda stage: None), shown=config.shown,
                   judge_complete=config.judge_complete, judge_claims=config.judge_claims,
                   schema_tokens=config.schema_tokens)
        try:
            with use_definitions(defs):
                yield run
        finally:
            llm.save_cassette()
    finally:
        if owned:
            database.close()


# -- one run ---------------------------------------------------------------------------------

class _Failed(Exception):
    def __init__(self, stage: str, error: ModelError) -> None:
        super().__init__(error.message)
        self.stage, self.error = stage, error


@dataclass
class _Target:
    """One interpretation being answered: its request text and, as the run proceeds, its
    samples, their results, the shown index and the written text."""

    text: str
    clause: str = ""
    samples: list[Sample] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    shown: int = 0
    prose: str | None = None
    seed: Sample | None = None  # sample 0 from the decide call (a clear request), if it gave SQL

    def ordered(self) -> list[Sample]:
        rest = [s for i, s in enumerate(self.samples) if i != self.shown]
        return [self.samples[self.shown], *rest]


@dataclass
class _Run:
    db: Database
    llm: LLM
    k: int
    definitions: Definitions | None
    hint: str | None
    no_prose: bool
    rule: str
    temperature: float
    concurrency: int
    progress: Progress
    shown: str = "largest"  # which sample is shown and scored: "largest" cluster's first, or "first"
    judge_complete: bool = False  # ask the judge for COMPLETE (one more call per answer)
    judge_claims: bool = False  # ask the judge for unsupported claims (one more call per written answer)
    schema_tokens: int = 8000  # the schema text's budget: a larger schema gets retrieved tables
    _schema: SchemaContext | None = None  # the prompts' schema text, built once per run
    _query: str = ""  # what the schema is retrieved for: the question (or the refined request)
    _known: dict[str, Result] = field(default_factory=dict)  # SQL run in this ask → its result

    # -- phases ------------------------------------------------------------------------------
    def ask(self, question: str, assess: bool = True, decide_writes_sql: bool = True) -> Answer:
        premise = None
        self._query = question
        if not assess:
            try:
                targets = [_Target(question)]
                answers = self._answer(targets)
            except _Failed as failed:
                return self._model_error(question, failed, None)
            return self._assemble(question, None, targets, answers)
        try:
            self.progress("assessing the question")
            with self._stage("assess"):
                decision = self.llm.complete_json(self._decide_request(question), stage="assess",
                                                  validate=validate_decision)
            assessment, seed = decision
            premise = assessment.premise
            if not premise.is_valid:
                return self._flawed(question, premise)
            if assessment.interpretations:
                targets = [_Target(r.request, r.clause) for r in assessment.interpretations]
            else:
                # Decide-then-answer: a clear request's first sample is the decide call's SQL
                # (unless the caller follows SpecBridge's budget: a generate call draws it).
                targets = [_Target(question, seed=seed if decide_writes_sql else None)]
            answers = self._answer(targets)
        except _Failed as failed:
            return self._model_error(question, failed, premise)
        return self._assemble(question, premise, targets, answers)

    def _decide_request(self, question: str) -> Request:
        messages = load_prompt("decide").messages(question=question, schema=self.schema_text(),
                                                  dialect=self.db.dialect, definitions=self.definitions_text(),
                                                  hint=self.hint or "(none)")
        return Request.of(messages, temperature=0.0, max_tokens=DECIDE_MAX_TOKENS)

    def refine(self, parent: Answer, refined: str, picked: int) -> Answer:
        self._query = refined
        try:
            target = _Target(refined, parent.interpretations[picked].clause)
            answer = self._answer([target])[0]
        except _Failed as failed:
            return self._model_error(refined, failed, parent.premise)
        interps = []
        for i, interp in enumerate(parent.interpretations):
            entry = interp.model_copy(update={"answer": None, "shown": i == picked, "picked": i == picked,
                                              "same_result_as": None})
            if i == picked:
                shown = target.samples[target.shown]
                entry.stated, entry.assumptions = shown.interpretation, shown.assumptions
            interps.append(entry)
        answer.premise = parent.premise
        answer.interpretations = interps
        answer.usage = self._usage()
        answer.prompt_schema = self._prompt_schema()
        return answer

    def _answer(self, targets: list[_Target]) -> list[Answer]:
        self._generate(targets)
        self._execute(targets)
        self._write(targets)
        judged = self._judge(targets)
        claims = self._judge_claims(targets)
        self.progress("vouching")
        return [self._vouch(t, judged.get(ti), claims.get(ti)) for ti, t in enumerate(targets)]

    # -- stages ------------------------------------------------------------------------------
    def _generate(self, targets: list[_Target]) -> None:
        """One draw per interpretation, all in one round: the K samples (or K − 1 beside the
        decide call's) in one request where the endpoint returns several choices."""
        n = len(targets)
        self.progress(f"writing SQL: {self.k} sample{'s' if self.k != 1 else ''}"
                      + (f" for each of {n} interpretations" if n > 1 else ""))
        prompt = load_prompt("generate")
        common = dict(schema=self.schema_text(), dialect=self.db.dialect, definitions=self.definitions_text(),
                      hint=self.hint or "(none)")
        jobs: dict[int, tuple[Request, range]] = {}
        for ti, t in enumerate(targets):
            t.samples = [Sample(sql="") for _ in range(self.k)]
            first = 0
            if t.seed is not None:
                t.samples[0], first = t.seed, 1
            if first >= self.k:
                continue
            request = Request.of(prompt.messages(request=t.text, **common), temperature=self.temperature,
                                 max_tokens=GENERATE_MAX_TOKENS, sample=first)
            jobs[ti] = (request, range(first, self.k))
        if not jobs:
            return
        results = self._parallel("generate", jobs, lambda job: self.llm.complete_json_samples(
            job[0], job[1], stage="generate", validate=validate_sample))
        for ti, drawn in results.items():
            for s, sample in drawn.items():
                targets[ti].samples[s] = sample

    def _execute(self, targets: list[_Target]) -> None:
        self.progress("running the SQL read-only")
        for t in targets:
            for sample in t.samples:
                if sample.sql not in self._known:
                    self._known[sample.sql] = self.db.execute(sample.sql)
            t.results = [self._known[s.sql] for s in t.samples]
            # "first": sample 0, as IES §3.1 scores it (A is then sample 0's agreement, and
            # the entropy-vs-A contrast of its Proposition 1 can appear); "largest": Vouch's.
            t.shown = shown_index(t.results) if self.shown == "largest" else 0

    def _write(self, targets: list[_Target]) -> None:
        jobs: dict[int, Request] = {}
        prompt = load_prompt("write")
        for ti, t in enumerate(targets):
            result = t.results[t.shown]
            if self.no_prose or result.error is not None:
                t.prose = template_text(result)
                continue
            sample = t.samples[t.shown]
            stated = data.string(sample.interpretation, data.TEXT_LIMIT) if sample.interpretation else "(not stated)"
            messages = prompt.messages(question=t.text, interpretation=stated,
                                       sql=data.escaped(sample.sql, data.LONG_LIMIT), row_count=rows_caption(result),
                                       result=result_text(result, self.db.dialect))
            jobs[ti] = Request.of(messages, temperature=0.0, max_tokens=WRITE_MAX_TOKENS)
        if not jobs:
            return
        self.progress("writing the answer")
        texts = self._parallel("write", jobs, lambda req: self.llm.complete_text(req, stage="write"))
        for ti, text in texts.items():
            targets[ti].prose = text

    def _vouch(self, t: _Target, judged: JudgedComplete | None = None, claims: JudgedClaims | None = None) -> Answer:
        ordered = t.ordered()
        answer = vouch(self.db, t.text, [s.sql for s in ordered], [self._known[s.sql] for s in ordered],
                       answer_text=t.prose, hint=self.hint, rule=self.rule, judged_complete=judged,
                       judged_claims=claims)
        answer.reply()
        _name_broken_rules(answer)
        return answer

    def _judge(self, targets: list[_Target]) -> dict[int, JudgedComplete]:
        """COMPLETE by the judge (IES §3.2), one call per answer with a result, in one round."""
        if not self.judge_complete:
            return {}
        jobs = {ti: ti for ti, t in enumerate(targets) if t.results[t.shown].error is None}
        if not jobs:
            return {}
        self.progress("judging completeness")

        def call(ti: int) -> JudgedComplete:
            t = targets[ti]
            return judge_completeness(self.llm, t.text, t.prose or "", t.results[t.shown], self.db.dialect)

        return self._parallel("judge", jobs, call)

    def _judge_claims(self, targets: list[_Target]) -> dict[int, JudgedClaims]:
        """The written answer's unsupported claims by the judge (IES §3.2, TDD-H), one call per
        answer with a result and a text, in one round."""
        if not self.judge_claims:
            return {}
        jobs = {ti: ti for ti, t in enumerate(targets) if t.results[t.shown].error is None and t.prose}
        if not jobs:
            return {}
        self.progress("judging the answer's claims")

        def call(ti: int) -> JudgedClaims:
            t = targets[ti]
            assert t.prose is not None  # the jobs hold only answers with a text
            return judge_claims(self.llm, t.text, t.prose, t.results[t.shown], self.db.dialect)

        return self._parallel("judge", jobs, call)

    def _parallel(self, stage: str, jobs: dict[int, J], call: Callable[[J], R]) -> dict[int, R]:
        """One round: every job at once (up to the concurrency limit). The first model
        failure fails the round; a replay miss is raised as it is."""
        self.llm.accounting.begin_round()
        out: dict[int, R] = {}
        failure: ModelError | None = None
        with self._stage(stage), ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(jobs)))) as pool:
            futures = {pool.submit(call, req): key for key, req in jobs.items()}
            for future in as_completed(futures):
                try:
                    out[futures[future]] = future.result()
                except ReplayMiss:
                    for f in futures:
                        f.cancel()
                    raise
                except ModelError as exc:
                    failure = failure or exc
                    for f in futures:
                        f.cancel()
        if failure is not None:
            raise _Failed(stage, failure)
        return out

    @contextmanager
    def _stage(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            if stage == "assess":
                self.llm.accounting.begin_round()
            yield
        except ReplayMiss:
            raise
        except ModelError as exc:
            raise _Failed(stage, exc) from None
        finally:
            self.llm.accounting.add(stage, wall_ms=(time.perf_counter() - start) * 1000)

    # -- building answers ----------------------------------------------------------------------
    def _assemble(self, question: str, premise: Premise | None, targets: list[_Target],
                  answers: list[Answer]) -> Answer:
        interps = []
        for i, (t, a) in enumerate(zip(targets, answers)):
            shown = t.samples[t.shown]
            same = next((j for j in range(i) if _same_result(answers[j], a)), None)
            interps.append(Interpretation(text=t.text, clause=t.clause, stated=shown.interpretation,
                                          assumptions=shown.assumptions, shown=i == 0, same_result_as=same,
                                          answer=None if i == 0 else a))
        top = answers[0].model_copy(update={"question": question})
        if any(x.same_result_as is None for x in interps[1:]):
            reason = Reason(code="open_choice:interpretation",
                            detail="the interpretations of the request give different answers")
            top.verdict = top.verdict.model_copy(update={"reasons": [*top.verdict.reasons, "open_choice:interpretation"],
                                                         "reason_codes": [*top.verdict.reason_codes, reason]})
        top.premise, top.interpretations, top.usage = premise, interps, self._usage()
        top.prompt_schema = self._prompt_schema()
        return top

    def _flawed(self, question: str, premise: Premise) -> Answer:
        code = premise.flaw_code
        detail = f"{code} {flaw_name(code)}: {premise.reason}".strip()
        text = f"Not answered: {premise.reason}".strip()
        if premise.clarification:
            text += ("" if text.endswith((".", "!", "?")) else ".") + f" {premise.clarification}"
        return _no_sql_answer(question, self.rule, f"premise_flaw:{code}",
                              CheckResult(name="premise", kind="veto", fired=True, detail=detail,
                                          evidence={"flaw_code": code, "clarification": premise.clarification}),
                              "no SQL was run: the question's premise is flawed",
                              premise=premise, usage=self._usage(),
                              prompt_schema=self._prompt_schema()).reply(notice=text)

    def _model_error(self, question: str, failed: _Failed, premise: Premise | None) -> Answer:
        err = failed.error
        return _no_sql_answer(question, self.rule, "model_error",
                              CheckResult(name="model_error", kind="veto", fired=True, detail=err.message,
                                          evidence={"stage": failed.stage, "kind": err.kind}),
                              f"no answer: the model failed at the {failed.stage} stage",
                              premise=premise, usage=self._usage(), prompt_schema=self._prompt_schema())

    def _usage(self) -> Usage:
        stages = self.llm.accounting.stages
        used = {"assess": "decide", "generate": "generate", "write": "write"}
        return self.llm.usage(prompt_hashes(*[p for st, p in used.items() if st in stages]))

    # -- context for the prompts -------------------------------------------------------------
    def schema_text(self) -> str:
        """The whole schema with its profile where it fits ``schema_tokens``; else the tables
        retrieved for the question (:mod:`vouchsql.prompting.retrieval`). One text for every
        prompt of the run: the interpretations of one question share its tables."""
        if self._schema is None:
            self._schema = schema_for_prompt(self.db, self._query, budget=self.schema_tokens, hint=self.hint,
                                             definitions=self.definitions)
        return self._schema.text

    def _prompt_schema(self) -> PromptSchema | None:
        return self._schema.record() if self._schema is not None else None

    def definitions_text(self) -> str:
        return definitions_text(self.definitions)


def _no_sql_answer(question: str, rule: str, reason: str, check: CheckResult, message: str, **extra: Any) -> Answer:
    return Answer(question=question, shown=Shown(sql="", result=Result(error=ResultError(kind="not_run", message=message))),
                  checks=[check], verdict=Verdict(rule=rule, score=0.0, gate="abstain", reasons=[reason],
                                                  reason_codes=[Reason(code=reason, detail=check.detail)]), **extra)


def _same_result(a: Answer, b: Answer) -> bool:
    ra, rb = a.shown.result, b.shown.result
    return ra.error is None and rb.error is None and results_match(ra, rb).matched


def _name_broken_rules(answer: Answer) -> None:
    """The verdict names each broken routing rule (``definition_rule:NAME``), not only the check."""
    check = next((c for c in answer.checks if c.name == "definition_rule" and c.fired), None)
    if check is None:
        return
    named = [f"definition_rule:{r}" for r in check.evidence.get("rules", [])] or ["definition_rule"]
    reasons = []
    for reason in answer.verdict.reasons:
        reasons.extend(named if reason == "definition_rule" else [reason])
    answer.verdict.reasons = reasons
    codes: list[Reason] = []
    for given in answer.verdict.reason_codes:
        codes.extend([Reason(code=n, detail=given.detail) for n in named] if given.code == "definition_rule"
                     else [given])
    answer.verdict.reason_codes = codes


__all__ = ["ask", "refine", "append_clause", "base_request", "comparable", "clean_sql", "validate_sample",
           "validate_decision",
           "VOLATILE_FIELDS"]

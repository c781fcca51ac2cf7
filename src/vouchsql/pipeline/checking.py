"""``check``: run the candidates read-only (:func:`check_candidates`), then vouch for them
(:func:`vouch`): cluster the results, measure agreement, inspect the shown SQL, run the
checks and the choice detectors, and score. The model-backed ``ask``
(:mod:`.asking`) hands its executed samples to :func:`vouch`, the same code."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..agreement import agreement, cluster, strict_clusters
from ..answer import Answer, Candidate, CheckResult, Choice, Reason, Result, Shown, Verdict
from ..checks import CHECKS, CheckContext, run_checks
from ..choices import detect_choices, reported
from ..db.base import Database
from ..db.profile import Profile, quiet_gc
from ..in_effect import definitions_in_effect
from ..errors import SQLRejected, UserInputError
from ..score import RULES, ScoreInput, score
from ..sql.gate import TOO_DEEP
from ..sql.inspect import inspect_sql, referenced_tables

# A judge model's COMPLETE, (share covered, [(part, covered)…]), and its unsupported claims,
# [(claim, about the answer?)…] (the CheckContext fields they fill)
JudgedComplete = tuple[float, list[tuple[str, bool]]]
JudgedClaims = list[tuple[str, bool]]


@dataclass
class Timings:
    """Where the time of one check went, in milliseconds (bench/check.py reports these)."""

    execute_ms: float = 0.0  # running the K candidates
    profile_ms: float = 0.0
    checks_ms: float = 0.0  # all checks, including the SQL they run themselves
    check_sql_ms: float = 0.0  # the part of checks_ms spent in the database
    total_ms: float = 0.0
    stages: dict[str, Any] = field(default_factory=dict)


def check_candidates(db: Database, question: str, candidates: list[str], *, answer_text: str | None = None,
                     hint: str | None = None, rule: str | None = None, all_choices: bool = False,
                     timings: Timings | None = None, judged_complete: JudgedComplete | None = None,
                     judged_claims: JudgedClaims | None = None) -> Answer:
    """Run each candidate read-only (identical texts once) and :func:`vouch` for them."""
    _require(db, question, candidates, rule)
    t = timings or Timings()
    mark = time.perf_counter()
    # Identical SQL texts run once: K samples often repeat the same query word for word.
    by_text: dict[str, Result] = {}
    results = [by_text[sql] if sql in by_text else by_text.setdefault(sql, db.execute(sql)) for sql in candidates]
    t.execute_ms = _ms(mark)
    answer = vouch(db, question, candidates, results, answer_text=answer_text, hint=hint, rule=rule,
                   all_choices=all_choices, timings=t, judged_complete=judged_complete, judged_claims=judged_claims)
    t.total_ms += t.execute_ms
    return answer


def _require(db: Database, question: str, candidates: list[str], rule: str | None) -> str:
    rule = rule or db.config.rule
    if rule not in RULES:
        raise UserInputError(f"unknown scoring rule {rule!r}; choose one of {', '.join(RULES)}")
    if not question or not question.strip():
        raise UserInputError("the question is empty; give the question the SQL answers")
    if not candidates:
        raise UserInputError("no SQL to check; give at least one candidate (--sql)")
    # A definitions file that cannot be read is the caller's to fix, not a rule check that
    # quietly measures nothing.
    definitions_in_effect(db.config)
    return rule


def vouch(db: Database, question: str, candidates: list[str], results: list[Result], *,
          answer_text: str | None = None, hint: str | None = None, rule: str | None = None,
          all_choices: bool = False, timings: Timings | None = None, judged_complete: JudgedComplete | None = None,
          judged_claims: JudgedClaims | None = None) -> Answer:
    """Vouch for candidates already run: ``results[i]`` is what ``candidates[i]`` returned,
    the first is the shown answer. Runs only the checks' and detectors' own read-only SQL.
    ``judged_complete``: a judge model's COMPLETE as ``(share, [(part, covered)…])``
    (:func:`vouchsql.llm.judges.judge_completeness`), read by the ``complete_judge`` check;
    ``judged_claims``: the unsupported claims a judge found, ``[(claim, about_answer)…]``
    (:func:`vouchsql.llm.judges.judge_claims`), read by the ``claim_judge`` check."""
    rule = _require(db, question, candidates, rule)
    if len(results) != len(candidates):
        raise UserInputError(f"{len(candidates)} candidates but {len(results)} results")
    # One check makes many short-lived objects beside a large live catalogue: collecting
    # cycles in the middle of it rescans the catalogue, so it waits until the check is done.
    with quiet_gc():
        return _vouch(db, question, candidates, results, rule, answer_text, hint, all_choices, timings,
                      judged_complete, judged_claims)


def _vouch(db: Database, question: str, candidates: list[str], results: list[Result], rule: str,
           answer_text: str | None, hint: str | None, all_choices: bool, timings: Timings | None,
           judged_complete: JudgedComplete | None, judged_claims: JudgedClaims | None = None) -> Answer:
    t = timings or Timings()
    start = time.perf_counter()
    tree: exp.Expression | None
    try:
        tree = db.as_engine_reads(db.parse(candidates[0]), candidates[0])
        reads = referenced_tables(tree, db.default_schema)[0]
    except SQLRejected:
        tree, reads = None, []
    except RecursionError:
        raise SQLRejected(TOO_DEEP, kind="rejected") from None
    # Only what the shown SQL reads, and the tables one join away, is measured.
    profile = db.profile_for(reads)
    t.profile_ms = _ms(start)

    ids = cluster(results)
    agree = agreement(results)
    cands = [Candidate(sql=sql, result=r, cluster=c) for sql, r, c in zip(candidates, results, ids)]
    shown = cands[0]
    try:
        checks, choices = _inspect(db, question, profile, tree, shown, cands, answer_text, hint, all_choices, t,
                                   judged_complete, judged_claims)
    except RecursionError:
        # The gate bounds nesting, but a flat chain the engine accepts (2,000 ANDs) is still a
        # tree 2,000 levels deep to the checks that walk it: no vouching without the checks.
        raise SQLRejected(TOO_DEEP, kind="rejected") from None

    verdict = _verdict(rule, agree.value, strict_clusters(results), checks, choices)
    t.total_ms = _ms(start)
    return Answer(question=question, shown=Shown(sql=shown.sql, result=shown.result), candidates=cands,
                  agreement=agree.value, agreement_bounds=agree, choices=choices, checks=checks, verdict=verdict,
                  answer_text=answer_text, hint=hint)


def _inspect(db: Database, question: str, profile: Profile, tree: exp.Expression | None, shown: Candidate,
             cands: list[Candidate], answer_text: str | None, hint: str | None, all_choices: bool, t: Timings,
             judged_complete: JudgedComplete | None = None, judged_claims: JudgedClaims | None = None
             ) -> tuple[list[CheckResult], list[Choice]]:
    """The checks and the choice detectors on the shown SQL (``tree``, None where it did not
    parse): every stage that walks its tree."""
    inspection = inspect_sql(tree, profile, db.dialect) if tree is not None else None

    mark = time.perf_counter()
    sql_before = db.query_ms
    ctx = CheckContext(question=question, db=db, profile=profile, shown=shown, candidates=cands,
                       tree=tree, inspection=inspection, answer_text=answer_text, hint=hint,
                       judged_complete=judged_complete, judged_claims=judged_claims)
    checks: list[CheckResult] = run_checks(ctx, CHECKS)
    t.checks_ms = _ms(mark)
    t.check_sql_ms = round(db.query_ms - sql_before, 3)

    mark = time.perf_counter()
    choices = detect_choices(question, db, shown.sql, shown.result, tree=tree, profile=profile,
                             inspection=inspection, all_choices=all_choices, stats=t.stages) if tree is not None else []
    t.stages["choices_ms"] = _ms(mark)
    return checks, choices


def _verdict(rule: str, agreement_value: float | None, strict: list[int], checks: list[CheckResult],
             choices: list[Choice], check_set: str = "vouch") -> Verdict:
    verdict = score(rule, ScoreInput(agreement=agreement_value or 0.0, k=len(strict), checks=checks,
                                     strict_clusters=strict, check_set=check_set))
    # An open choice is named in the reasons but never scored: the score and gate stay as they are.
    for choice in {c.type: c for c in choices if reported(c)}.values():
        verdict.reasons.append(f"open_choice:{choice.type}")
        verdict.reason_codes.append(Reason(code=f"open_choice:{choice.type}", detail=choice.description))
    return verdict


def rescore(answer: Answer, rule: str, *, strict: list[int] | None = None, check_set: str = "vouch") -> Verdict:
    """The verdict another scoring rule (or check set) gives the same evidence (no query is
    rerun). ``strict``: the candidates' :func:`~vouchsql.agreement.strict_clusters`, when the
    caller scores several rules and has them already."""
    if strict is None:
        strict = strict_clusters([c.result for c in answer.candidates])
    return _verdict(rule, answer.agreement, strict, answer.checks, answer.choices, check_set)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)

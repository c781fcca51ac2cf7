"""The public entry points. The CLI and the HTTP layer call these and nothing deeper."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .db import Database, connect
from .settings import Config, load_config

if TYPE_CHECKING:
    from .answer import Answer
    from .db.doctor import Prescription
    from .definitions import Definitions
    from .llm import Model

DEMO_FILENAME = "vouch_demo.sqlite"


def demo_path(config: Config | None = None) -> Path:
    return (config or load_config()).cache_path / "demo" / DEMO_FILENAME


def build_demo(out: "str | os.PathLike[str] | None" = None, *, seed: int | None = None,
               config: Config | None = None, force: bool = False) -> Path:
    """Build the demo database (deterministic for a seed) and return its path. A file at
    ``out`` is replaced only when it is a Vouch demo database, or with ``force``; the default
    path, in Vouch's cache folder, is always rebuilt."""
    from .demo import DEFAULT_SEED, build_demo as _build

    path = Path(out) if out else demo_path(config)
    return _build(path, seed=DEFAULT_SEED if seed is None else seed, force=force or not out)


def check(db: "str | os.PathLike[str] | Database", question: str, candidates: "list[str] | str", *,
          answer_text: str | None = None, hint: str | None = None, rule: str | None = None,
          all_choices: bool = False, judged_parts: "list[tuple[str, bool]] | None" = None,
          judged_claims: "list[tuple[str, bool]] | None" = None,
          definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None" = None,
          **settings: Any) -> Answer:
    """Vouch for a SQL answer without a model. ``candidates[0]`` is the answer being
    checked; further candidates are independent samples used for agreement.
    ``judged_parts``: the question's parts and whether the answer covers each, as a judge of
    your own listed them (IES §3.2 COMPLETE); without it COMPLETE comes from the alignment.
    ``judged_claims``: the claims of ``answer_text`` its result does not support, each with
    whether it is about the answer, as a judge of your own listed them (``claim_judge``).
    ``definitions``: recorded definitions (any file ``load_definitions`` reads, a dict, or
    ``Definitions``), as :func:`ask` takes them; they hold for this check whether ``db`` is a
    path or an open Database (default: the ``definitions`` setting)."""
    from contextlib import nullcontext

    from .checks.claim_judge import from_claims
    from .checks.complete_judge import from_parts
    from .pipeline import check_candidates

    if isinstance(candidates, str):
        candidates = [candidates]
    defs: Definitions | None = None
    if definitions is not None:
        # Imported only when definitions are given: vouchsql.definitions and the semantic layer
        # it reads cost ≈ 60 M instructions of a ``vouch check`` start-up (vouchsql/in_effect.py).
        from .definitions import load_definitions, use_definitions

        defs = load_definitions(definitions)  # a file that cannot be read is the caller's error, before connecting
    owned = not isinstance(db, Database)
    database = db if isinstance(db, Database) else connect(db, **settings)
    try:
        with use_definitions(defs) if defs is not None else nullcontext():
            return check_candidates(database, question, list(candidates), answer_text=answer_text,
                                    hint=hint, rule=rule, all_choices=all_choices,
                                    judged_complete=from_parts(judged_parts),
                                    judged_claims=from_claims(judged_claims))
    finally:
        if owned:
            database.close()


def ask(db: "str | os.PathLike[str] | Database", question: str, *, model: "str | Model | None" = None,
        k: int | None = None, definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None" = None,
        **options: Any) -> Answer:
    """Answer ``question`` with a model (``provider:model``, e.g. ``openai:gpt-4o-mini``) and
    vouch for the answer: premise, interpretations, K samples each, the checks of ``check``,
    an answer text from a template (``prose=True``: written by the model, one more call).
    Options: ``hint``, ``prose``, ``record`` (cassette path),
    ``base_url``, ``rule``, ``progress`` (a callable given each stage's name), and settings
    (``cache_dir``, ``max_retries``, …). See :mod:`vouchsql.pipeline.asking`."""
    from .pipeline.asking import ask as _ask

    return _ask(db, question, model=model, k=k, definitions=definitions, **options)


def refine(answer: Answer, pick: int, *, db: "str | os.PathLike[str] | Database", model: "str | Model | None" = None,
           **options: Any) -> Answer:
    """Phase 2: keep ``answer``'s request word for word and append the clause of
    interpretation ``pick`` (1 = the first listed); answer that with K new samples."""
    from .pipeline.asking import refine as _refine

    return _refine(answer, pick, db=db, model=model, **options)


def refine_request(question: str, interpretations: Iterable[tuple[str, str]], pick: int, *,
                   db: "str | os.PathLike[str] | Database", model: "str | Model | None" = None,
                   **options: Any) -> Answer:
    """Phase 2 from what a page or an agent keeps of phase 1: the request and its
    interpretations as ``(text, clause)`` pairs. Phase 2 reads nothing else of the first
    answer, so its results need not come back."""
    from .answer import Answer, Interpretation, Result, Shown, Verdict

    parent = Answer(question=question, shown=Shown(sql="", result=Result()),
                    verdict=Verdict(rule="", score=0.0, gate="abstain"),
                    interpretations=[Interpretation(text=text, clause=clause) for text, clause in interpretations])
    return refine(parent, pick, db=db, model=model, **options)


def doctor(db: "str | os.PathLike[str] | Database", *, reader: str = "vouch_reader",
           **settings: Any) -> Prescription | None:
    """What code the database holds is within a reader's reach, and the statements that make
    a least-privilege reader (a ``db.doctor.Prescription``; ``None`` for an engine without
    roles). The database is opened whatever it holds, to be read: see docs/security.md."""
    from .db.doctor import prescribe

    owned = not isinstance(db, Database)
    database = db if isinstance(db, Database) else connect(db, **{**settings, "trusted_objects": "*"})
    try:
        return prescribe(database, reader=reader)
    finally:
        if owned:
            database.close()


__all__ = ["connect", "check", "doctor", "ask", "refine", "refine_request", "Database", "build_demo", "demo_path"]

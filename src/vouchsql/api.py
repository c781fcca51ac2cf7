"""The public entry points. The CLI and the HTTP layer call these and nothing deeper."""

from __future__ import annotations

import os
from pathlib import Path

from .db import Database, connect
from .settings import Config, load_config

DEMO_FILENAME = "vouch_demo.sqlite"


def demo_path(config: Config | None = None) -> Path:
    return (config or load_config()).cache_path / "demo" / DEMO_FILENAME


def build_demo(out: "str | os.PathLike | None" = None, *, seed: int | None = None,
               config: Config | None = None) -> Path:
    """Build the demo database (deterministic for a seed) and return its path."""
    from .demo import DEFAULT_SEED, build_demo as _build

    path = Path(out) if out else demo_path(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    return _build(path, seed=DEFAULT_SEED if seed is None else seed)





def check(db: "str | os.PathLike | Database", question: str, candidates: "list[str] | str", *,
          answer_text: str | None = None, hint: str | None = None, rule: str | None = None,
          all_choices: bool = False, **settings):
    """Vouch for a SQL answer without a model. ``candidates[0]`` is the answer being
    checked; further candidates are independent samples used for agreement."""
    from .pipeline import check_candidates

    if isinstance(candidates, str):
        candidates = [candidates]
    owned = not isinstance(db, Database)
    database = connect(db, **settings) if owned else db
    try:
        return check_candidates(database, question, list(candidates), answer_text=answer_text,
                                hint=hint, rule=rule, all_choices=all_choices)
    finally:
        if owned:
            database.close()

__all__ = ["connect", "check", "Database", "build_demo", "demo_path"]

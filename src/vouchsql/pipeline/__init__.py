"""One home for the stages that answer and vouch, as peers:

- :mod:`.checking` — ``check_candidates`` (run the SQL, then vouch) and ``vouch`` (vouch for
  candidates already run): agreement, checks, choice detectors, the scoring rule;
- :mod:`.asking` — ``ask`` (phase 1) and ``refine`` (phase 2) with a model; each hands its
  executed samples to ``vouch``.

The CLI and the HTTP server call :mod:`vouchsql.api`, never these modules directly. The
model-backed stages are imported on first use, so ``check`` never loads the model layer.
"""

from __future__ import annotations

from typing import Any

from .checking import Timings, check_candidates, rescore, vouch


def __getattr__(name: str) -> Any:
    if name in ("ask", "refine"):
        from . import asking

        return getattr(asking, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Timings", "ask", "check_candidates", "refine", "rescore", "vouch"]

"""The definitions in effect for a check, read without importing :mod:`vouchsql.definitions`
where none can be in effect.

Definitions are in effect when :func:`vouchsql.definitions.use_definitions` set them (a
context variable of that module) or when the settings name a file. Where the settings name
none and that module was never imported, nothing can have set them: the checks and the
pipeline then need neither it nor the semantic-layer readers it imports
(:mod:`vouchsql.semantic`: seven dataclasses and their patterns), ≈ 60 M instructions of a
``vouch check`` start-up (``bench/startup.py --instructions``).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from .definitions import Definitions
    from .settings import Config


def definitions_in_effect(config: Config | None = None) -> Definitions | None:
    """:func:`vouchsql.definitions.definitions_in_effect`, imported only where definitions may
    be in effect."""
    if "vouchsql.definitions" not in sys.modules and not getattr(config, "definitions", None):
        return None
    from .definitions import definitions_in_effect as in_effect

    return in_effect(config)

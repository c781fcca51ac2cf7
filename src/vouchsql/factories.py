"""Default factories for pydantic fields.

pydantic reads the signature of every ``default_factory`` when it builds a model (to see
whether the factory takes the validated data). For the builtin ``list`` that signature is
its text signature, which :mod:`inspect` parses with :mod:`tokenize` and :mod:`ast`: the
first such read compiles tokenize's large pattern, and with the 26 list fields of the
models every ``vouch check`` builds that came to ≈ 20 M instructions of its start-up
(``bench/startup.py --instructions``). A Python function's signature is read from its code.
"""

from __future__ import annotations

from typing import Any


def new_list() -> list[Any]:
    """A new empty list: ``Field(default_factory=new_list)`` instead of ``default_factory=list``."""
    return []

"""Vouch: answers questions over SQL databases and vouches for each answer only as far as
the evidence allows."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`vouch --help` never needs it)

__version__ = "0.1.0"

# Imported on first use (PEP 562), so that ``vouch --help`` does not load pydantic and sqlglot.
_LAZY = {
    "Answer": "answer", "CheckResult": "answer", "Choice": "answer", "Result": "answer", "Verdict": "answer",
    "ask": "api", "build_demo": "api", "check": "api", "connect": "api", "doctor": "api",
    "refine": "api",
    "Database": "db",
    "ExecutionError": "errors", "ModelError": "errors", "QueryTimeout": "errors", "SQLRejected": "errors",
    "UntrustedCode": "errors", "UserInputError": "errors", "VouchError": "errors",
}

__all__ = [
    "connect", "check", "ask", "refine", "doctor", "build_demo", "Database", "Answer", "Result", "CheckResult", "Choice", "Verdict",
    "VouchError", "UserInputError", "UntrustedCode", "SQLRejected", "ExecutionError", "QueryTimeout", "ModelError",
    "__version__",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # for type checkers and IDEs: the same names, imported eagerly
    from .answer import Answer, CheckResult, Choice, Result, Verdict
    from .api import ask, build_demo, check, connect, doctor, refine
    from .db import Database
    from .errors import (ExecutionError, ModelError, QueryTimeout, SQLRejected, UntrustedCode, UserInputError,
                         VouchError)

"""Vouch: answers questions over SQL databases and vouches for each answer only as far as
the evidence allows."""

from .answer import Answer, CheckResult, Choice, Result, Verdict
from .api import ask, build_demo, check, connect, refine
from .db import Database
from .errors import (ExecutionError, ModelError, QueryTimeout, SQLRejected, UserInputError,
                     VouchError)

__version__ = "0.1.0"

__all__ = [
    "connect", "check", "ask", "refine", "build_demo", "Database", "Answer", "Result", "CheckResult", "Choice", "Verdict",
    "VouchError", "UserInputError", "SQLRejected", "ExecutionError", "QueryTimeout", "ModelError",
    "__version__",
]

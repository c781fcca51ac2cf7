"""One error hierarchy, split by who must act.

- ``UserInputError``: the caller gave something unusable (a missing file, an unknown URL
  scheme, an empty query). Fix the input.
- ``SQLRejected``: the SQL is not a single read-only SELECT. Rewrite the SQL.
- ``ExecutionError``: the database refused or failed the query (syntax the engine rejects,
  a missing column, the time limit). Look at the SQL or raise the limit.
- ``ModelError``: a language-model provider failed (used by the model-backed pipeline).

Every error carries a short machine-readable ``kind`` and a one-line message; the CLI prints
the message and exits with ``exit_code``, never a traceback.
"""

from __future__ import annotations

from typing import Any


class VouchError(Exception):
    kind = "error"
    exit_code = 1

    def __init__(self, message: str, *, kind: str | None = None, **fields: object) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.fields = fields

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message}


class UserInputError(VouchError):
    kind = "bad_input"
    exit_code = 2


class UntrustedCode(UserInputError):
    """A server database holds code that a query can run (a user function, a view over one,
    a foreign table …) and that no one has marked as reviewed: docs/security.md."""

    kind = "untrusted_code"


class SQLRejected(VouchError):
    """The statement gate refused the SQL before it reached the engine."""

    kind = "rejected"
    exit_code = 2


class ProbeSkipped(VouchError):
    """A fact a check or a choice detector did not measure (vouchsql.probe): its query was
    not started because the probe's budget could not cover it, or there is no database and
    the fixture does not give it. The finding that needed it is "not measured"."""

    kind = "not_measured"


class ExecutionError(VouchError):
    kind = "execution"
    exit_code = 1


class QueryTimeout(ExecutionError):
    kind = "timeout"


class ReadOnlyViolation(ExecutionError):
    """The engine itself refused a write; the gate should normally stop these first."""

    kind = "read_only"


class ModelError(VouchError):
    kind = "model"
    exit_code = 1

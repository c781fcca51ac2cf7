"""A guard for SQL another system wrote: :func:`vouchsql.check` in front of an existing
text-to-SQL stack, so an answer whose SQL is vetoed never reaches the user as fact.

``Guard(db).require(question, sql, samples)`` checks the SQL and raises :class:`Withheld` when
the gate is one the guard blocks (by default ``abstain``: a veto fired or the evidence says
no); otherwise it returns the Answer, whose verdict reasons and open choices the caller shows.
Adapters for two stacks people run, each importing its library only when called:

- :func:`langchain_tool`: a LangChain tool that checks each query before the wrapped SQL tool
  (``QuerySQLDatabaseTool`` or any tool taking ``{"query": sql}``) runs it;
- :func:`vanna_runner`: a Vanna 2 ``SqlRunner`` that checks ``args.sql`` before the wrapped
  runner's ``run_sql``;
- :func:`llamaindex_query_engine`: a LlamaIndex query engine over a text-to-SQL engine
  (``NLSQLTableQueryEngine`` and the others that run SQL through a ``SQLDatabase``) that checks
  each generated query against the question before the database runs it.

See docs/agents.md.
"""

from __future__ import annotations

import contextvars
import os
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from .errors import UserInputError, VouchError

TYPE_CHECKING = False
if TYPE_CHECKING:  # the stacks' libraries are imported only by the adapter that wraps them
    from langchain_core.tools import StructuredTool
    from llama_index.core.query_engine import CustomQueryEngine
    from llama_index.core.utilities.sql_wrapper import SQLDatabase
    from vanna.capabilities.sql_runner import RunSqlToolArgs, SqlRunner
    from vanna.core.tool import ToolContext

    from .answer import Answer
    from .db import Database
    from .definitions import Definitions


class Withheld(VouchError):
    """The guard blocked the SQL: ``answer`` says why (its verdict's reasons and choices)."""

    kind = "withheld"

    def __init__(self, answer: "Answer") -> None:
        reasons = "; ".join(r.detail for r in answer.verdict.reason_codes) or ", ".join(answer.verdict.reasons)
        super().__init__(f"Vouch withheld this answer (gate {answer.verdict.gate}, score {answer.verdict.score}): "
                         f"{reasons or 'no reason given'}")
        self.answer = answer


@dataclass
class Guard:
    """``db``: a path, URL or open :class:`~vouchsql.db.Database` (then the caller closes it).
    ``block``: the gates that withhold the SQL; ``("abstain", "flag")`` lets only ``pass``
    through, which needs agreeing samples (one SQL alone is capped at ``flag``).
    ``settings``: settings for each check (``timeout``, ``max_rows`` …). ``definitions``: recorded
    definitions (a file of any format ``load_definitions`` reads — Vouch's, a Cortex semantic
    model, a dbt project, WrenAI MDL — a dict, or ``Definitions``), as :func:`vouchsql.check`
    and :func:`vouchsql.ask` take them: their rules and verified queries are checked on every
    SQL (a ``definitions`` key in ``settings`` works too; the keyword wins)."""

    db: "str | os.PathLike[str] | Database"
    block: tuple[str, ...] = ("abstain",)
    settings: dict[str, Any] = field(default_factory=dict)
    definitions: "str | os.PathLike[str] | dict[str, Any] | Definitions | None" = None

    def __post_init__(self) -> None:
        unknown = set(self.block) - {"pass", "flag", "abstain"}
        if unknown:
            raise UserInputError(f"block: unknown gate(s) {sorted(unknown)}; gates are pass, flag and abstain")
        if self.definitions is not None:
            from .definitions import load_definitions

            load_definitions(self.definitions)  # a file that cannot be read fails here, not at the first check

    def check(self, question: str, sql: str, samples: "list[str] | tuple[str, ...]" = (), *,
              answer_text: str | None = None, hint: str | None = None) -> "Answer":
        """The Answer for ``sql`` (``samples``: independent SQL for the same question)."""
        from . import api

        settings = dict(self.settings)
        definitions = settings.pop("definitions", None)
        if self.definitions is not None:
            definitions = self.definitions
        return api.check(self.db, question, [sql, *samples], answer_text=answer_text, hint=hint,
                         definitions=definitions, **settings)

    def blocks(self, answer: "Answer") -> bool:
        return answer.verdict.gate in self.block

    def require(self, question: str, sql: str, samples: "list[str] | tuple[str, ...]" = (), **kwargs: Any) -> "Answer":
        """:meth:`check`, raising :class:`Withheld` when the gate is blocked."""
        answer = self.check(question, sql, samples, **kwargs)
        if self.blocks(answer):
            raise Withheld(answer)
        return answer

    def wrap(self, text_to_sql: Callable[[str], str], *, k: int = 1) -> Callable[[str], "Answer"]:
        """A function ``question -> Answer`` over ``text_to_sql(question) -> sql``, called ``k``
        times (the first SQL is the answer, the rest its samples); raises :class:`Withheld`."""
        if k < 1:
            raise UserInputError("k must be at least 1")

        def guarded(question: str) -> "Answer":
            sqls = [text_to_sql(question) for _ in range(k)]
            return self.require(question, sqls[0], sqls[1:])

        guarded.__name__ = getattr(text_to_sql, "__name__", "guarded")
        return guarded


def summary(answer: "Answer") -> str:
    """One paragraph an agent or a user can read: the gate, the reasons, the open choices."""
    lines = [f"Vouch: {answer.verdict.gate} (score {answer.verdict.score})."]
    lines += [f"- {r.detail}" for r in answer.verdict.reason_codes]
    for c in answer.choices:
        if c.differs:
            lines.append(f"- open choice ({c.type}): {c.description}; its SQL: {c.sql}")
    return "\n".join(lines)


def langchain_tool(guard: Guard, inner: Any, question: str, *, name: str | None = None) -> StructuredTool:
    """A LangChain ``StructuredTool`` for one question: each ``query`` is checked, then run by
    ``inner`` (``inner.invoke({"query": query})``, as ``QuerySQLDatabaseTool`` takes it) with
    Vouch's summary appended; a blocked query is not run and the tool says why instead."""
    from langchain_core.tools import StructuredTool

    def run(query: str) -> str:
        try:
            answer = guard.require(question, query)
        except Withheld as exc:
            return f"Not run. {summary(exc.answer)}\nDo not present an answer as fact; fix the SQL or ask the user."
        return f"{inner.invoke({'query': query})}\n\n{summary(answer)}"

    return StructuredTool.from_function(
        run, name=name or getattr(inner, "name", "sql_db_query"),
        description=(getattr(inner, "description", "") + " Each query is checked by Vouch against the question; "
                     "a vetoed query is not run. Show the user Vouch's reasons and open choices."))


def vanna_runner(guard: Guard, inner: Any, question_of: Callable[[Any], str] | None = None) -> SqlRunner:
    """A Vanna 2 ``SqlRunner`` that checks ``args.sql`` before ``inner.run_sql(args, context)``.
    ``question_of(context)`` gives the user's question (default: ``context.metadata["question"]``,
    set it with a ``ToolContextEnricher``). A blocked query raises :class:`Withheld`, which Vanna
    reports to the agent as the tool's error; the Answer is left in
    ``context.metadata["vouch"]`` either way."""
    import asyncio

    from vanna.capabilities.sql_runner import SqlRunner

    def default_question(context: Any) -> str:
        question = (getattr(context, "metadata", None) or {}).get("question")
        if not question:
            raise UserInputError("no question in context.metadata['question']; pass question_of to vanna_runner")
        return cast(str, question)  # what a ToolContextEnricher set: the user's question

    get_question = question_of or default_question

    class VouchGuardedRunner(SqlRunner):
        async def run_sql(self, args: RunSqlToolArgs, context: ToolContext) -> Any:
            question = get_question(context)
            answer = await asyncio.to_thread(guard.check, question, args.sql)
            if getattr(context, "metadata", None) is not None:
                context.metadata["vouch"] = answer.model_dump(mode="json")
            if guard.blocks(answer):
                raise Withheld(answer)
            return await inner.run_sql(args, context)

    return VouchGuardedRunner()


# The question a LlamaIndex query engine is answering, and the Answers of the SQL it ran: set by
# llamaindex_query_engine around each query, read by the guarded SQLDatabase's run_sql.
_LLAMA_QUESTION: contextvars.ContextVar[tuple[str, list[Answer]] | None] = contextvars.ContextVar(
    "vouch_llama_question", default=None)


def llamaindex_sql_database(guard: Guard, sql_database: SQLDatabase) -> SQLDatabase:
    """The LlamaIndex ``SQLDatabase`` ``sql_database`` (the same object's state, its own class),
    whose ``run_sql`` checks each statement against the question a
    :func:`llamaindex_query_engine` is answering and raises :class:`Withheld` instead of
    running a blocked one. Outside such an engine it refuses to run anything unchecked."""

    base = type(sql_database)

    # the class of the caller's object, known only at run time: mypy cannot take it as a base
    class VouchGuardedSQLDatabase(base):  # type: ignore[misc,valid-type]
        def run_sql(self, command: str, *args: Any, **kwargs: Any) -> tuple[str, dict[Any, Any]]:
            current = _LLAMA_QUESTION.get()
            if current is None:
                raise UserInputError("this SQLDatabase is guarded by Vouch: run it through llamaindex_query_engine, "
                                     "which knows the question each query answers")
            question, answers = current
            answer = guard.check(question, command)
            answers.append(answer)
            if guard.blocks(answer):
                raise Withheld(answer)
            return base.run_sql(self, command, *args, **kwargs)

    guarded = VouchGuardedSQLDatabase.__new__(VouchGuardedSQLDatabase)
    guarded.__dict__.update(sql_database.__dict__)
    return guarded


def llamaindex_query_engine(guard: Guard, engine: Any) -> CustomQueryEngine:
    """A LlamaIndex query engine in front of ``engine`` (``NLSQLTableQueryEngine``,
    ``SQLTableRetrieverQueryEngine`` …) built over a SQLDatabase from
    :func:`llamaindex_sql_database`: each query sets the question the database checks the
    generated SQL against. A blocked query is never run; the engine reports it as its SQL error
    ("Error: Vouch withheld this answer …", LlamaIndex's ``handle_sql_errors``), and the Answer
    of every SQL checked is in ``response.metadata["vouch"]`` (as JSON) with Vouch's summary."""
    from llama_index.core.query_engine import CustomQueryEngine

    class VouchGuardedQueryEngine(CustomQueryEngine):
        def custom_query(self, query_str: str) -> Any:
            answers: list[Answer] = []
            token = _LLAMA_QUESTION.set((query_str, answers))
            try:
                response = engine.query(query_str)
            finally:
                _LLAMA_QUESTION.reset(token)
            metadata = response.metadata if response.metadata is not None else {}
            metadata["vouch"] = [a.model_dump(mode="json") for a in answers]
            metadata["vouch_summary"] = "\n".join(summary(a) for a in answers)
            response.metadata = metadata
            return response

    return VouchGuardedQueryEngine()

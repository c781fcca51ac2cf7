"""The ``vouch mcp`` tools as plain functions over :mod:`vouchsql.api`: no MCP SDK here, so the
tools can be read, tested and benchmarked without a transport.

:class:`Tools` holds the configured databases (names → server-side targets; a client never
sends a path) and answers ``call(name, arguments) -> (payload, is_error)``. Every input is
validated by a pydantic model whose JSON schema is the tool's ``inputSchema``; every success
matches the tool's ``outputSchema``; every failure is ``{"error": {"kind", "message", ...}}``,
never a traceback. SQL runs only through :meth:`vouchsql.db.Database.execute` and
:func:`vouchsql.api.check`: the same read-only gate, engine policy, row, byte and time limits
as the CLI and ``vouch serve``.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contract import MAX_SQL_CHARS, CheckFields
from ..errors import ModelError, QueryTimeout, SQLRejected, UserInputError, VouchError
from ..settings import Config
from ..server.names import DB_NAME
from ..server.body import dumps, fit, hide_path

if TYPE_CHECKING:
    from ..db import Database
    from ..db.figures import TableProfile
    from ..db.profile import Profile

log = logging.getLogger("vouchsql.mcp")

DEFAULT_MAX_RESPONSE = 1024 * 1024  # an agent's context is small: results are cut to fit
DEFAULT_RUN_ROWS = 100
_CLIP = 80  # characters kept of a sample value in describe
MODEL_TOOLS = ("ask", "refine")

PROTOCOL = """\
How to answer a question about a database with Vouch:
1. Call describe(database) first (or with the tables you need) to see columns, keys, NULL shares, \
stand-in codes such as -1 for unknown, and how well join keys overlap.
2. Write K = 3 independent SQL queries for the question (different formulations, not copies), \
optionally try them with run_sql, then send them together to check_sql: candidates[0] is the answer \
you intend to give, the others are your independent samples.
3. Show the user the verdict (gate: pass, flag or abstain), every reason in verdict.reason_codes, and \
every choice in choices whose result differs, with its SQL and result: the user decides those, not you.
4. When the gate is flag or abstain, the answer is withheld: never present it as fact. Say what is \
uncertain and why, show the alternatives, and ask the user which reading they mean.
5. If you write a sentence with numbers, pass it as answer_text so Vouch checks each number against \
the result."""


# -- inputs --------------------------------------------------------------------------------

class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


DatabaseName = Field(min_length=1, max_length=64, description="a database name from list_databases")


class ListDatabasesInput(_Input):
    pass


class DescribeInput(_Input):
    database: str = DatabaseName
    tables: Optional[list[str]] = Field(None, max_length=100,
                                        description="only these tables (default: all, clipped to the first 40)")
    sample_values: int = Field(3, ge=0, le=10, description="most frequent values shown per column")


class RunSqlInput(_Input):
    database: str = DatabaseName
    sql: str = Field(min_length=1, max_length=MAX_SQL_CHARS, description="one read-only SELECT statement")
    max_rows: Optional[int] = Field(None, ge=1, description=f"rows to return (default {DEFAULT_RUN_ROWS}; "
                                                             f"at most the server's max_rows setting)")


class CheckSqlInput(CheckFields):
    """The check every surface takes (contract.py), on a database from list_databases."""

    database: str = DatabaseName


class AskInput(_Input):
    database: str = DatabaseName
    question: str = Field(min_length=1, max_length=4000, description="the user's question, word for word")
    k: Optional[int] = Field(None, ge=1, le=10, description="SQL samples per interpretation")
    hint: Optional[str] = Field(None, max_length=4000, description="evidence or a definition given with the question")
    prose: bool = Field(False, description="the model writes the answer text (one more call); default: a template")


class Reading(BaseModel):
    model_config = ConfigDict(extra="ignore")  # an interpretation as ask returned it

    text: str = Field(max_length=8000)
    clause: str = Field("", max_length=4000)


class RefineInput(_Input):
    database: str = DatabaseName
    question: str = Field(min_length=1, max_length=8000, description="the question of the ask answer, as returned")
    interpretations: list[Reading] = Field(min_length=2, max_length=20,
                                           description="that answer's interpretations, in order, as returned")
    pick: int = Field(ge=1, le=20, description="the interpretation the user picked, 1 = the first")
    k: Optional[int] = Field(None, ge=1, le=10, description="SQL samples")
    hint: Optional[str] = Field(None, max_length=4000, description="evidence or a definition given with the question")


# -- outputs -------------------------------------------------------------------------------

class DatabaseInfo(BaseModel):
    name: str
    engine: str
    tables: int
    views: int


class DatabasesOutput(BaseModel):
    databases: list[DatabaseInfo]
    ask_available: bool = Field(description="whether the ask tool is served (a model is configured)")


class ColumnOut(BaseModel):
    name: str
    type: str
    nullable: bool
    null_share: float = Field(description="share of rows where the column is NULL")
    distinct: int
    min: Any = None
    max: Any = None
    top_values: list[list[Any]] = Field(description="[value, count] pairs, most frequent first, values clipped")
    stand_ins: list[dict[str, Any]] = Field(description="codes that stand for 'unknown' (e.g. -1), with their share")


class TableOut(BaseModel):
    name: str
    is_view: bool
    row_count: int
    primary_key: list[str]
    foreign_keys: list[dict[str, Any]]
    columns: list[ColumnOut]


class JoinOut(BaseModel):
    left: str
    right: str
    source: str = Field(description="'declared' (a foreign key) or 'name' (matching column names)")
    rho: Optional[float] = Field(description="key overlap in [0, 1]; a join below 0.85 is vetoed by check_sql")


class DescribeOutput(BaseModel):
    database: str
    engine: str
    tables: list[TableOut]
    joins: list[JoinOut]
    more_tables: list[str] = Field(description="tables left out to keep this short: ask for them by name")


def _answer_schema() -> dict[str, Any]:
    from ..schemas import answer_schema

    schema = answer_schema()
    schema["type"] = "object"  # MCP wants an object schema; the $ref already says it
    return schema


def _result_schema() -> dict[str, Any]:
    from ..answer import Result

    return Result.model_json_schema(mode="serialization")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input: type[BaseModel]
    output_schema: Callable[[], dict[str, Any]]
    read_only: bool = True


SPECS: list[ToolSpec] = [
    ToolSpec("list_databases", "List databases",
             "The databases this server answers over, by name, with their engine and table counts, and whether "
             "the ask tool is available. Call it first; every other tool takes one of these names.",
             ListDatabasesInput, lambda: DatabasesOutput.model_json_schema(mode="serialization")),
    ToolSpec("describe", "Describe a database",
             "Tables, columns, types, keys, row counts, NULL shares, stand-in codes (such as -1 meaning "
             "unknown), join-key overlaps and the most frequent values of each column, from Vouch's cached "
             "profile, clipped. Read it before writing SQL: NULLs, stand-in codes, ties and many-to-many joins "
             "are where plausible SQL goes wrong.",
             DescribeInput, lambda: DescribeOutput.model_json_schema(mode="serialization")),
    ToolSpec("run_sql", "Run read-only SQL",
             "Run one read-only SELECT and return its columns and rows (time-, row- and size-limited; writes, "
             "several statements and file access are refused). Use it to explore. It says nothing about "
             "whether the SQL answers the question: for that, call check_sql before you answer.",
             RunSqlInput, _result_schema),
    ToolSpec("check_sql", "Check SQL answers",
             "Vouch for SQL answers to a question, without a model. Write K = 3 independent queries for the "
             "question and send them together: candidates[0] is the answer you will give, the rest are "
             "samples whose agreement is measured. Returns the verdict (gate pass, flag or abstain; score; "
             "reasons), the checks that fired (a bad join, a fan-out, a NULL group, a tie cut by LIMIT, a "
             "stand-in code, a number not in the result) and the open choices, each with its SQL and result. "
             "Show the user the verdict's reasons and every choice whose result differs; when the gate is not "
             "pass the answer is withheld: never present it as fact, say why and ask which reading they mean.",
             CheckSqlInput, _answer_schema),
    ToolSpec("ask", "Ask with Vouch's model",
             "Answer a question with the model this server was started with: premise check, interpretations, "
             "K samples each, the checks of check_sql and a written answer. Returns the same Answer as "
             "check_sql plus premise and interpretations. Show the verdict's reasons and the interpretations; "
             "when the gate is not pass, present nothing as fact.",
             AskInput, _answer_schema),
    ToolSpec("refine", "Answer with the picked reading",
             "Phase 2 after ask: when the user picks one of the answer's interpretations, send the answer's "
             "question and interpretations as ask returned them, and pick (1 = the first). The request is "
             "answered again, word for word plus that reading's clause, with new samples and the same checks. "
             "Show the new verdict and its reasons beside the old answer.",
             RefineInput, _answer_schema),
]


# -- errors ----------------------------------------------------------------------------------

class ToolFailure(Exception):
    """A refusal with a ``kind`` a client can branch on; becomes ``{"error": {...}}``."""

    def __init__(self, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.kind, self.message, self.extra = kind, message, extra

    def payload(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind, "message": self.message, **self.extra}}


def validation_failure(exc: ValidationError) -> ToolFailure:
    problems, details = [], []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        msg = str(err.get("msg", "invalid"))
        problems.append(f"{where}: {msg}")
        details.append({"loc": [str(p) for p in err.get("loc", ())], "msg": msg})
    return ToolFailure("bad_input", "invalid arguments: " + "; ".join(problems), details=details)


# -- the tools ----------------------------------------------------------------------------------

@dataclass
class Tools:
    """The tool functions over ``databases`` ({name: target}). ``model``: ``provider:model`` for
    ``ask`` (None: ask is not offered)."""

    databases: dict[str, str]
    config: Config
    model: Optional[str] = None
    max_response: int = DEFAULT_MAX_RESPONSE
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.databases:
            if not DB_NAME.match(name):
                raise UserInputError(f"database name {name!r} must be 1–64 letters, digits, '_', '.' or '-', "
                                     f"starting with a letter or digit")
        # Calls read the profile built at start (or the disk cache), never rebuild it per call.
        if self.config.no_cache:
            self.config = self.config.with_overrides(no_cache=False)
        self._profile_locks = {name: threading.Lock() for name in self.databases}
        # The databases each call has open, by the call's token (``call(..., token=)``), so
        # ``cancel(token)`` can stop a call that ran past its limit on the engine itself.
        self._local = threading.local()
        self._running: dict[object, list[Database]] = {}
        self._stopped: set[object] = set()
        self._running_lock = threading.Lock()

    @property
    def specs(self) -> list[ToolSpec]:
        return [s for s in SPECS if s.name not in MODEL_TOOLS or self.model]

    def warm(self) -> None:
        """Open each database once: a bad path fails the start, and its catalogue is read
        before the first call waits for it (tables are measured when a call reads them)."""
        from ..db import connect

        for name, target in self.databases.items():
            try:
                with connect(target, config=self.config) as db:
                    profile = db.catalogue()
            except VouchError as exc:
                raise UserInputError(f"database {name!r}: {exc.message}") from None
            self.meta[name] = {"engine": db.engine, "tables": sum(not t.is_view for t in profile.tables),
                               "views": sum(t.is_view for t in profile.tables)}

    # -- dispatch -----------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None,
             token: object | None = None) -> tuple[dict[str, Any], bool]:
        """Run tool ``name``: (its structured output, False) or ({"error": ...}, True).
        ``token`` names the call for :meth:`cancel`."""
        self._local.token = token
        try:
            return self._call(name, arguments)
        finally:
            self._local.token = None
            if token is not None:
                with self._running_lock:
                    self._running.pop(token, None)
                    self._stopped.discard(token)

    def cancel(self, token: object) -> None:
        """Stop call ``token`` on the engine: the statement it runs now is interrupted and the
        call's databases refuse every later one, so it ends at once (and frees its slot)."""
        with self._running_lock:
            self._stopped.add(token)
            dbs = list(self._running.get(token, ()))
        for db in dbs:
            db.cancel()

    def _call(self, name: str, arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
        try:
            spec = next((s for s in self.specs if s.name == name), None)
            if spec is None:
                known = ", ".join(s.name for s in self.specs)
                if name in MODEL_TOOLS:
                    raise ToolFailure("no_model", f"{name} needs a model: start vouch mcp with --model provider:model "
                                                  "(or VOUCH_MODEL); check_sql works without one")
                raise ToolFailure("unknown_tool", f"no tool named {name!r}; this server has: {known}")
            if arguments is not None and not isinstance(arguments, dict):
                raise ToolFailure("bad_input", "arguments must be a JSON object")
            try:
                args = spec.input.model_validate(arguments or {})
            except ValidationError as exc:
                raise validation_failure(exc) from None
            return getattr(self, f"_{name}")(args), False
        except ToolFailure as exc:
            return exc.payload(), True
        except ModelError as exc:
            return ToolFailure(exc.kind, exc.message).payload(), True
        except (UserInputError, SQLRejected, QueryTimeout) as exc:
            return ToolFailure(exc.kind, exc.message).payload(), True
        except VouchError as exc:
            return ToolFailure(exc.kind, exc.message).payload(), True
        except Exception:  # noqa: BLE001 - logged here (stderr); the client gets one line, never a traceback
            log.exception("tool %r failed", name)
            return ToolFailure("internal", "the server failed on this call; its log (stderr) has the details").payload(), True

    def _target(self, name: str) -> str:
        if name not in self.databases:
            known = ", ".join(self.databases) or "none"
            raise ToolFailure("unknown_database", f"no database named {name!r}; this server has: {known}",
                              databases=list(self.databases))
        return self.databases[name]

    def _open(self, name: str) -> Database:
        from ..db import connect

        target = self._target(name)
        try:
            db = connect(target, config=self.config)
        except VouchError as exc:
            log.error("database %r cannot be opened: %s", name, exc.message)
            raise ToolFailure("unavailable", f"database {name!r} cannot be opened now; the server log says why") from None
        token = getattr(self._local, "token", None)
        if token is not None:
            with self._running_lock:
                self._running.setdefault(token, []).append(db)
                stopped = token in self._stopped
            if stopped:  # cancelled while it was connecting
                db.cancel()
        try:
            with self._profile_locks[name]:
                db.catalogue()
        except BaseException:
            db.close()
            raise
        return db

    def _fit(self, data: Any, database: str) -> dict[str, Any]:
        """``data`` with the database's server-side path replaced by its name and result rows
        cut to fit the response limit (each cut result says ``truncated``, reason ``bytes``)."""
        data = hide_path(data, self.databases[database], database)
        body = fit(data, self.max_response)
        if body is None:
            raise ToolFailure("too_large", f"the answer does not fit the {self.max_response}-byte response limit "
                                           f"even without result rows")
        import json

        return cast("dict[str, Any]", json.loads(body))  # the JSON of the tool's output object

    # -- each tool ----------------------------------------------------------------------

    def _list_databases(self, _args: ListDatabasesInput) -> dict[str, Any]:
        out = []
        for name in self.databases:
            meta = self.meta.get(name) or {"engine": "unknown", "tables": 0, "views": 0}
            out.append({"name": name, **meta})
        return {"databases": out, "ask_available": bool(self.model)}

    def _describe(self, args: DescribeInput) -> dict[str, Any]:
        db = self._open(args.database)
        try:
            # Measured: the tables asked for (else the first MAX_DESCRIBED) and their join neighbours.
            names = args.tables or [t.qualified for t in db.catalogue().tables[:MAX_DESCRIBED]]
            profile = db.profile_for(names)
        finally:
            db.close()
        return self._fit(describe_profile(profile, args.database, args.tables, args.sample_values), args.database)

    def _run_sql(self, args: RunSqlInput) -> dict[str, Any]:
        max_rows = min(args.max_rows or DEFAULT_RUN_ROWS, self.config.max_rows)
        db = self._open(args.database)
        try:
            result = db.execute(args.sql, max_rows=max_rows)
        finally:
            db.close()
        if result.error is not None:
            raise ToolFailure(result.error.kind, result.error.message)
        return self._fit(result.model_dump(mode="json"), args.database)

    def _check_sql(self, args: CheckSqlInput) -> dict[str, Any]:

        problem = args.candidate_problem()
        if problem:
            raise ToolFailure("bad_input", f"invalid arguments: {problem}")
        db = self._open(args.database)
        try:
            answer = args.run(db, self.config.rule)
        finally:
            db.close()
        return self._fit(answer.model_dump(mode="json"), args.database)

    def _ask(self, args: AskInput) -> dict[str, Any]:
        from .. import api

        kwargs: dict[str, Any] = {"model": self.model}
        if args.k is not None:
            kwargs["k"] = args.k
        if args.hint:
            kwargs["hint"] = args.hint
        if args.prose:
            kwargs["prose"] = True
        db = self._open(args.database)
        try:
            answer = api.ask(db, args.question, **kwargs)
        finally:
            db.close()
        return self._fit(answer.model_dump(mode="json"), args.database)

    def _refine(self, args: RefineInput) -> dict[str, Any]:
        from .. import api

        if args.pick > len(args.interpretations):
            raise ToolFailure("bad_input", f"invalid arguments: pick {args.pick}: choose an interpretation from 1 "
                                           f"to {len(args.interpretations)}")
        kwargs: dict[str, Any] = {"model": self.model}
        if args.k is not None:
            kwargs["k"] = args.k
        if args.hint:
            kwargs["hint"] = args.hint
        db = self._open(args.database)
        try:
            answer = api.refine_request(args.question, [(i.text, i.clause) for i in args.interpretations],
                                        args.pick, db=db, **kwargs)
        finally:
            db.close()
        return self._fit(answer.model_dump(mode="json"), args.database)

    # -- resources ----------------------------------------------------------------------------

    def profile_json(self, name: str) -> str:
        """The database's cached profile as JSON (the resource ``vouch://profile/NAME``), with
        its server-side path and identity left out."""
        db = self._open(name)
        try:
            data = db.profile().model_dump(mode="json")
        finally:
            db.close()
        data["target"] = name
        data.pop("identity", None)
        return dumps(hide_path(data, self.databases[name], name)).decode("utf-8")


MAX_DESCRIBED = 40


def describe_profile(profile: Profile, database: str, tables: list[str] | None, sample_values: int,
                     max_tables: int = MAX_DESCRIBED) -> dict[str, Any]:
    """The agent-sized view of a profile: what to know to write SQL, clipped."""
    by_name = {t.qualified: t for t in profile.tables}
    if tables:
        lower = {t.qualified.lower(): t.qualified for t in profile.tables}
        missing = [t for t in tables if t not in by_name and t.lower() not in lower]
        if missing:
            raise ToolFailure("unknown_table", f"no table named {', '.join(map(repr, missing))} in {database!r}; "
                                               f"it has: {', '.join(by_name)}", tables=list(by_name))
        chosen = [by_name.get(t) or by_name[lower[t.lower()]] for t in tables]
        more: list[str] = []
    else:
        chosen, more = profile.tables[:max_tables], [t.qualified for t in profile.tables[max_tables:]]
    # measured, if the profile held it from the catalogue (each is one of its tables: never None)
    chosen = cast("list[TableProfile]", [profile.table(t.qualified) for t in chosen])
    names = {t.qualified for t in chosen}
    out_tables = []
    for t in chosen:
        columns = []
        for c in t.columns:
            columns.append({
                "name": c.name, "type": c.type, "nullable": c.nullable,
                "null_share": round(c.null_count / t.row_count, 4) if t.row_count else 0.0,
                "distinct": c.distinct_count, "min": _clip(c.min), "max": _clip(c.max),
                # A unique column's most frequent values say nothing: left out, to save the agent's context.
                "top_values": [] if t.row_count and c.distinct_count >= t.row_count
                else [[_clip(v), n] for v, n in c.top_values[:sample_values]],
                "stand_ins": [{"value": s.value, "share": s.share, "reason": s.reason} for s in c.stand_ins],
            })
        out_tables.append({"name": t.qualified, "is_view": t.is_view, "row_count": t.row_count,
                           "primary_key": list(t.primary_key),
                           "foreign_keys": [fk.model_dump(mode="json") for fk in t.foreign_keys],
                           "columns": columns})
    joins = [{"left": f"{j.left_table}.{j.left_column}", "right": f"{j.right_table}.{j.right_column}",
              "source": j.source, "rho": None if j.rho is None else round(j.rho, 4)}
             for j in profile.join_pairs if j.left_table in names or j.right_table in names]
    return {"database": database, "engine": profile.engine, "tables": out_tables, "joins": joins,
            "more_tables": more}


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _CLIP:
        return value[:_CLIP] + "…"
    return value


def tool_list(tools: Tools) -> list[dict[str, Any]]:
    """Each served tool as ``{name, title, description, inputSchema, outputSchema, readOnly}``."""
    return [{"name": s.name, "title": s.title, "description": s.description,
             "inputSchema": s.input.model_json_schema(), "outputSchema": copy.deepcopy(s.output_schema()),
             "readOnly": s.read_only} for s in tools.specs]

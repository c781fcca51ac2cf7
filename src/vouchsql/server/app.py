"""The FastAPI app: the JSON API over :func:`vouchsql.api.check` (and ``ask`` where a model is
configured), and the one web page in ``static/``.

Safety rules, each enforced here rather than left to the caller:

- Databases are addressed only by the names the server was started with; a request never
  carries a path or URL. An unknown name is a 404 that lists the known names.
- With a token set, every ``/api/`` request needs ``Authorization: Bearer <token>``
  (``/health``, the page and its static files, and the OpenAPI docs hold no data and stay
  open). ``server.cli`` refuses to listen off loopback without one.
- Request bodies are capped (413), POSTs must be JSON (415), and on loopback the ``Host``
  header must name loopback (a DNS-rebinding guard).
- Each request opens its database read-only in the worker thread that uses it (SQLite
  connections never cross threads) and closes it after. Every query is bounded by the query
  timeout setting and by what is left of the request's own time limit; a request past its
  limit is answered 504.
- Responses are bounded in bytes (``max_response``): serialised in the worker thread, inside
  the request's time limit, with result rows cut to fit (see ``body``); each query of a check
  gets a share of ``max_result_bytes``, so one request holds a bounded amount of data.
- Server-side paths never reach a client: SQLite's ``database_list`` pragma is refused by the
  engine, and any remaining mention of a database's path (a DuckDB view definition, an error
  message) is replaced by the database's name in every response.
- Errors are JSON ``{"error": {"kind", "message", ...}}``; a traceback never reaches a client.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Optional, cast, overload

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..answer import Answer
from ..db import Database, connect
from ..db.base import Fetch
from ..errors import ModelError, QueryTimeout, SQLRejected, UserInputError, VouchError
from ..contract import CheckFields
from ..settings import Config, load_config
from .access import refusal, send_error
from .names import DB_NAME, is_loopback as is_loopback  # is_loopback: imported from here by callers
from .body import fit, hide_path as _hide_path

log = logging.getLogger("vouchsql.server")

STATIC_DIR = Path(__file__).with_name("static")
DEFAULT_MAX_BODY = 64 * 1024
DEFAULT_MAX_RESPONSE = 32 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT = 120.0
# After the request's own limit, how long the async side waits for a worker thread to notice
# (its next query fails at once) before answering 504 and leaving the thread behind.
_GRACE_S = 2.0
_PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
             "frame-ancestors 'none'")


@dataclass
class ServerOptions:
    """What a server serves and how it guards it. ``databases`` maps the names clients use to
    the server-side targets (a file path or a database URL) that only the server sees."""

    databases: dict[str, str]
    token: str | None = None
    model: str | None = None
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    max_body: int = DEFAULT_MAX_BODY
    max_response: int = DEFAULT_MAX_RESPONSE
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_concurrent: int = 4
    # Host header allow-list (None: any). ``server.cli`` sets the loopback names when it
    # listens on loopback, so a page on another site cannot reach the API by DNS rebinding.
    allowed_hosts: list[str] | None = None


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.extra = status, kind, message, extra


def _error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"kind": kind, "message": message, **extra}}


# -- request bodies -----------------------------------------------------------------------

class CheckRequest(CheckFields):
    """The check every surface takes (contract.py), on a configured database."""

    db: str = Field(min_length=1, max_length=64, description="a configured database name (GET /api/databases)")


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    db: str = Field(min_length=1, max_length=64)
    question: str = Field(min_length=1, max_length=4000)
    k: Optional[int] = Field(None, ge=1, le=10, description="SQL samples per interpretation")
    hint: Optional[str] = Field(None, max_length=4000)
    prose: bool = Field(False, description="the model writes the answer text (one more call); default: a template")


class PickedReading(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the page sends the interpretation as /api/ask gave it

    text: str = Field(max_length=8000)
    clause: str = Field("", max_length=4000)


class RefineRequest(BaseModel):
    """Phase 2: the request ``/api/ask`` answered, its interpretations, and the one picked."""
    model_config = ConfigDict(extra="forbid")

    db: str = Field(min_length=1, max_length=64)
    question: str = Field(min_length=1, max_length=8000, description="the question of the answer being refined")
    interpretations: list[PickedReading] = Field(min_length=2, max_length=20,
                                                 description="the interpretations of that answer, in order")
    pick: int = Field(ge=1, le=20, description="the interpretation picked, 1 = the first")
    k: Optional[int] = Field(None, ge=1, le=10, description="SQL samples")
    hint: Optional[str] = Field(None, max_length=4000)


# -- the per-request database and its time limit ---------------------------------------------

class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.left() <= 0

    def message(self) -> str:
        return (f"the request ran past its {self.seconds:g} s limit and was stopped "
                f"(start the server with a larger --request-timeout)")


def _bound_by(db: Database, deadline: _Deadline, byte_cap: int | None = None) -> None:
    """Every query this connection runs from now on gets at most what is left of the
    request's time, and none starts once it is spent; with ``byte_cap``, none holds more
    bytes than that. ``_run`` is the one method every engine executes through (see
    ``db.base``), so this covers every engine."""
    run = db._run

    def bounded(sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        left = deadline.left()
        if left <= 0:
            raise QueryTimeout(deadline.message())
        caps = [b for b in (max_bytes, byte_cap) if b is not None]
        return run(sql, max_rows, min(timeout, left), min(caps) if caps else None)

    db._run = bounded  # type: ignore[method-assign]  # the per-request bound, on this connection only


class Databases:
    """The allow-list: configured names → server-side targets, opened per request."""

    def __init__(self, targets: dict[str, str], config: Config) -> None:
        for name in targets:
            if not DB_NAME.match(name):
                raise UserInputError(f"database name {name!r} must be 1–64 letters, digits, '_', '.' or '-', "
                                     f"starting with a letter or digit")
        self.targets = dict(targets)
        # Requests read the profile the server warmed (or the disk cache): never recompute
        # it per request even when the no_cache setting asked for a fresh one at start.
        self.config = config.with_overrides(no_cache=False) if config.no_cache else config
        self.meta: dict[str, dict[str, Any]] = {}
        self._profile_locks = {name: threading.Lock() for name in targets}

    @property
    def names(self) -> list[str]:
        return list(self.targets)

    def target(self, name: str) -> str:
        if name not in self.targets:
            known = ", ".join(self.names) or "none"
            raise ApiError(404, "unknown_database", f"no database named {name!r}; this server has: {known}",
                           databases=self.names)
        return self.targets[name]

    def warm(self, config: Config) -> None:
        """Open each database once at start: a bad path fails the start, not the first
        request, and the catalogue is read before anyone waits (each table is measured when
        a request first reads it, and cached)."""
        for name, target in self.targets.items():
            try:
                with connect(target, config=config) as db:
                    profile = db.catalogue()
                    self.meta[name] = {"engine": db.engine, "tables": len(profile.tables)}
            except VouchError as exc:
                raise UserInputError(f"database {name!r}: {exc.message}") from None

    def open(self, name: str) -> Database:
        try:
            db = connect(self.target(name), config=self.config)
        except VouchError as exc:  # the file went away or the server is down: say so, not where
            log.error("database %r cannot be opened: %s", name, exc.message)
            raise ApiError(503, "unavailable", f"database {name!r} cannot be opened now; the server log says why") from None
        with self._profile_locks[name]:  # one catalogue read at a time when the file changed
            db.catalogue()
        return db


# -- the ASGI guard: host, auth, content type, body size, headers ---------------------------

class _Guard:
    def __init__(self, app: ASGIApp, options: ServerOptions) -> None:
        self.app = app
        self.options = options
        self.allowed_hosts = ({h.lower() for h in options.allowed_hosts}
                              if options.allowed_hosts is not None else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path: str = scope.get("path", "")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method = scope.get("method", "GET")

        is_api = path.startswith("/api/")
        refused = refusal(scope, token=self.options.token, hosts=self.allowed_hosts, needs_token=is_api)
        if refused is not None:
            return await send_error(send, *refused)

        if method in ("POST", "PUT", "PATCH"):
            if is_api and not headers.get("content-type", "").split(";")[0].strip().lower().endswith("json"):
                return await _reply(scope, receive, send, 415, "unsupported_media_type",
                                    "send the request body as JSON (Content-Type: application/json)")
            limit = self.options.max_body
            declared = headers.get("content-length")
            if declared is not None:
                try:
                    too_big = int(declared) > limit
                except ValueError:
                    return await _reply(scope, receive, send, 400, "bad_request", "Content-Length is not a number")
                if too_big:
                    return await _reply(scope, receive, send, 413, "too_large",
                                        f"the request body is larger than the {limit}-byte limit")
            chunks, size = [], 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body = message.get("body", b"")
                size += len(body)
                if size > limit:
                    return await _reply(scope, receive, send, 413, "too_large",
                                        f"the request body is larger than the {limit}-byte limit")
                chunks.append(body)
                if not message.get("more_body", False):
                    break
            receive = _replay(b"".join(chunks), receive)

        extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
        if path == "/" or path.startswith("/static/"):
            extra += [(b"content-security-policy", _PAGE_CSP.encode()), (b"x-frame-options", b"DENY")]
        if is_api:
            extra.append((b"cache-control", b"no-store"))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the already-read body, then defers to the server."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reply(scope: Scope, receive: Receive, send: Send, status: int, kind: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
    response = JSONResponse(_error_body(kind, message), status_code=status, headers=headers)
    await response(scope, receive, send)


# -- the app --------------------------------------------------------------------------------

def create_app(options: ServerOptions, config: Config | None = None, *, warm: bool = True) -> FastAPI:
    """The app for ``options``. ``warm`` opens every database once now (so a bad path fails
    here, with the database's name) and builds or reads its profile."""
    config = config or load_config()
    dbs = Databases(options.databases, config)
    unknown = sorted(set(options.examples) - set(dbs.names))
    if unknown:
        raise UserInputError(f"examples given for unknown database(s): {', '.join(unknown)}")
    if warm:
        dbs.warm(config)
    # A plain thread semaphore, taken inside the worker: it works whatever event loop (or
    # loops, under a test client) the app runs on, and bounds open connections.
    slots = threading.BoundedSemaphore(max(1, options.max_concurrent))

    app = FastAPI(
        title="Vouch",
        version=__version__,
        description=("Vouch for SQL answers over configured databases. `POST /api/check` runs the model-free "
                     "checks on SQL; `POST /api/ask` answers a question with the configured model. "
                     "Errors are `{\"error\": {\"kind\", \"message\"}}`."),
    )
    app.state.options = options
    app.state.databases = dbs
    bearer = HTTPBearer(auto_error=False, description="VOUCH_TOKEN, when the server has one")

    # What run_on returns: the JSON response, or (``raw``) what ``fn`` returned.
    @overload
    async def run_on(name: str, fn: Callable[[Database], Any], *, queries: int = 1,
                     raw: Literal[False] = False) -> Response: ...
    @overload
    async def run_on(name: str, fn: Callable[[Database], Any], *, queries: int = 1, raw: Literal[True]) -> Any: ...

    async def run_on(name: str, fn: Callable[[Database], Any], *, queries: int = 1, raw: bool = False) -> Any:
        """Open ``name`` in a worker thread, run ``fn`` there within the request's limit and
        serialise what it returns there too, bounded in bytes (``raw``: return what ``fn``
        returns instead, for the server's own use). ``queries``: how many results the answer
        holds at most, so each query gets that share of ``max_result_bytes``."""
        target = dbs.target(name)  # 404 before any thread is used
        deadline = _Deadline(options.request_timeout)

        def job() -> Any:
            if not slots.acquire(timeout=max(0.0, deadline.left())):
                raise ApiError(503, "busy", f"the server is busy with {options.max_concurrent} requests; try again")
            try:
                db = dbs.open(name)
                try:
                    _bound_by(db, deadline, max(1, dbs.config.max_result_bytes // max(1, queries)))
                    data = fn(db)
                finally:
                    db.close()
            finally:
                slots.release()
            if raw:
                return data
            body = fit(_hide_path(data, target, name), options.max_response)
            if body is None:
                raise ApiError(500, "too_large", f"the answer does not fit the server's {options.max_response}-byte "
                                                 f"response limit even without result rows")
            return body

        try:
            with anyio.fail_after(options.request_timeout + _GRACE_S):
                result = await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
        except TimeoutError:
            raise ApiError(504, "timeout", deadline.message()) from None
        except ApiError:
            raise
        except ModelError as exc:
            raise ApiError(502, exc.kind, exc.message) from None
        except QueryTimeout as exc:
            raise ApiError(504, exc.kind, exc.message) from None
        except (UserInputError, SQLRejected) as exc:
            raise ApiError(400, exc.kind, exc.message) from None
        except VouchError as exc:
            raise ApiError(500, exc.kind, exc.message) from None
        except Exception:  # noqa: BLE001 - logged here; the client gets one line, never a traceback
            log.exception("request on database %r failed", name)
            raise ApiError(500, "internal", "the server failed on this request; the server log has the details") from None
        if deadline.passed:
            raise ApiError(504, "timeout", deadline.message())
        return result if raw else Response(result, media_type="application/json")

    # -- errors ----------------------------------------------------------------------
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(_error_body(exc.kind, exc.message, **exc.extra), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            if err.get("type") == "json_invalid":
                detail = (err.get("ctx") or {}).get("error", "")
                problems.append(f"the body is not valid JSON ({detail})" if detail else "the body is not valid JSON")
                continue
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {err.get('msg', 'invalid')}")
        message = "invalid request: " + "; ".join(problems) if problems else "invalid request body"
        details = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))} for e in exc.errors()]
        return JSONResponse(_error_body("bad_input", message, details=details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http")
        message = "no such endpoint; see /docs" if exc.status_code == 404 else str(exc.detail)
        return JSONResponse(_error_body(kind, message), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    # -- the page ------------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    # response_model=None on the routes that return a dict: FastAPI would otherwise read the
    # return annotation as a response model (validation, and a schema in the API docs).
    @app.get("/health", tags=["service"], summary="liveness; needs no token", response_model=None)
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__}

    # -- the API ----------------------------------------------------------------------------
    router = APIRouter(prefix="/api", dependencies=[Depends(bearer)])  # documents the token; _Guard enforces it

    @router.get("/info", tags=["service"], summary="databases, whether ask is available, and the limits",
                response_model=None)
    async def info() -> dict[str, Any]:
        available, kind, reason = _ask_status(options.model)
        return {
            "version": __version__,
            "databases": dbs.names,
            "auth": bool(options.token),
            "ask": {"available": available, "kind": kind, "reason": reason, "model": _model_label(options.model)},
            "limits": {"max_body_bytes": options.max_body, "request_timeout_s": options.request_timeout,
                       "query_timeout_s": dbs.config.timeout, "max_rows": dbs.config.max_rows},
        }

    # Each database's role powers, read at the first listing after start (``vouch serve`` has
    # refused a privileged role unless told to allow it, so what is left here is shown, not refused).
    roles: dict[str, Any] = {}

    @router.get("/databases", tags=["databases"],
                summary="the configured databases, by name, with a warning where the role can do more than read",
                response_model=None)
    async def databases() -> dict[str, Any]:
        for name in dbs.names:
            if name not in roles:
                try:
                    roles[name] = await run_on(name, lambda db: db.role_powers(), raw=True)
                except ApiError:  # unavailable now: list it without its role, and read it next time
                    continue

        def role_fields(name: str) -> dict[str, Any]:
            powers = roles.get(name)
            if powers is None:  # an embedded engine (read-only by construction), or not read yet
                return {"role": None, "warning": None}
            # The role's name, like the URL it comes from, stays on the server.
            return {"role": powers.model_dump(include={"powers", "can_write", "can_reach_server"}),
                    "warning": powers.warning(who="the role this database is opened as")}

        return {"databases": [
            {"name": name, **dbs.meta.get(name, {}), "examples": len(options.examples.get(name, [])),
             **role_fields(name)}
            for name in dbs.names]}

    @router.get("/profile/{name}", tags=["databases"], summary="the schema-and-data profile of a configured database")
    async def profile(name: str) -> Response:
        def work(db: Database) -> dict[str, Any]:
            data = db.profile().model_dump(mode="json")
            # The server-side path or URL is the server's business: clients know the name.
            data["target"] = name
            data["identity"] = hashlib.sha256(str(data.get("identity", "")).encode()).hexdigest()[:16]
            return data

        return await run_on(name, work)

    @router.get("/examples/{name}", tags=["databases"], summary="example questions and SQL for a database",
                response_model=None)
    async def examples(name: str) -> dict[str, Any]:
        dbs.target(name)
        return {"database": name, "examples": [_example(e) for e in options.examples.get(name, [])]}

    @router.post("/check", tags=["answers"], summary="vouch for SQL answers to a question (no model)",
                 responses={200: {"model": Answer, "description": "the `vouch check --json` Answer"},
                            404: {"description": "unknown database"}, 413: {"description": "body too large"},
                            422: {"description": "invalid body"}, 504: {"description": "past the time limit"}})
    async def check(body: CheckRequest) -> Response:

        problem = body.candidate_problem()
        if problem:
            raise ApiError(422, "bad_input", f"invalid request: {problem}")

        def work(db: Database) -> dict[str, Any]:
            return body.run(db, dbs.config.rule).model_dump(mode="json")

        # The candidates' results, the choices' results and their totals: one share each.
        return await run_on(body.db, work, queries=len(body.candidates) + 4)

    @router.post("/ask", tags=["answers"], summary="answer a question with the configured model",
                 responses={200: {"description": "the `vouch ask --json` Answer"},
                            503: {"description": "no model configured"}})
    async def ask(body: AskRequest) -> Response:
        available, kind, reason = _ask_status(options.model)
        dbs.target(body.db)
        if not available:
            raise ApiError(503, cast(str, kind), cast(str, reason))  # _ask_status names both when unavailable
        from .. import api

        kwargs: dict[str, Any] = {"model": options.model}
        if body.k is not None:
            kwargs["k"] = body.k
        if body.hint:
            kwargs["hint"] = body.hint
        if body.prose:
            kwargs["prose"] = True

        def work(db: Database) -> Any:
            answer = api.ask(db, body.question, **kwargs)
            return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer

        return await run_on(body.db, work, queries=(body.k or dbs.config.samples) + 4)

    @router.post("/refine", tags=["answers"], summary="phase 2: answer the request again with one interpretation picked",
                 responses={200: {"description": "the `vouch ask --json` Answer of the request plus the picked clause"},
                            503: {"description": "no model configured"}})
    async def refine(body: RefineRequest) -> Response:
        available, kind, reason = _ask_status(options.model)
        dbs.target(body.db)
        if not available:
            raise ApiError(503, cast(str, kind), cast(str, reason))  # _ask_status names both when unavailable
        if body.pick > len(body.interpretations):
            raise ApiError(422, "bad_input", f"invalid request: pick {body.pick}: choose an interpretation from 1 "
                                             f"to {len(body.interpretations)}")
        from .. import api

        # Phase 2 reads only the request and the interpretations' clauses: the page need not
        # send the results back (they would not fit the body limit).
        pairs = [(i.text, i.clause) for i in body.interpretations]
        kwargs: dict[str, Any] = {"model": options.model}
        if body.k is not None:
            kwargs["k"] = body.k
        if body.hint:
            kwargs["hint"] = body.hint

        def work(db: Database) -> dict[str, Any]:
            return api.refine_request(body.question, pairs, body.pick, db=db, **kwargs).model_dump(mode="json")

        return await run_on(body.db, work, queries=(body.k or dbs.config.samples) + 4)

    app.include_router(router)
    app.add_middleware(_Guard, options=options)
    return app


def _ask_status(model: str | None) -> tuple[bool, str | None, str | None]:
    """Whether ``POST /api/ask`` can answer: the model-backed ``vouchsql.api.ask`` must exist
    (it is imported lazily, so a build without it still serves ``check``) and a model must be
    configured."""
    if not model:
        return False, "no_model", ("no model is configured: start the server with --model provider:model "
                                   "or set VOUCH_MODEL; checking SQL works without one")
    return True, None, None


def _model_label(model: Any) -> str | None:
    """The model as clients see it: ``provider:model``, with a replay cassette's folder left out."""
    if not model:
        return None
    if not isinstance(model, str):  # a Model object (tests)
        return f"{getattr(model, 'provider', '?')}:{getattr(model, 'name', '?')}"
    provider, _, name = model.partition(":")
    return f"{provider}:{Path(name).name}" if provider.lower() == "replay" else model


def _example(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e.get(k) for k in ("title", "question", "sql", "alt_sql", "shows")}

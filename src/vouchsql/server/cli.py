"""``vouch serve`` and ``vouch demo --serve``. ``register(sub, common)`` adds the ``serve``
command to the CLI; ``add_demo_options`` and ``serve_demo`` are what the ``demo`` command
calls. FastAPI and uvicorn are imported only when a server really starts."""

from __future__ import annotations

import os
import re

from ..cli_parsers import add_command
from ..errors import UserInputError, VouchError
from .names import DB_NAME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable

    from rich.console import Console

    from ..db.privileges import RolePowers
    from ..settings import Config

TOKEN_ENV = "VOUCH_TOKEN"
MODEL_ENV = "VOUCH_MODEL"
MIN_TOKEN_CHARS = 16
ALLOW_PRIVILEGED_FLAG = "--allow-privileged-role"


def register(sub: argparse._SubParsersAction[Any],
             common: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser]) -> None:
    """``common``: the settings parser, or a function that returns it (then the arguments are
    added when the command is used, see :mod:`vouchsql.cli_parsers`)."""
    add_command(sub, "serve", common, _serve_args,
                help="serve the HTTP API and the web page (needs the [server] extra)",
                description="Serve the JSON API (/api/check, /api/ask, /api/databases, /api/profile/NAME, "
                            "/health, docs at /docs) and the web page at /. Clients name databases; they "
                            "never send paths. Off loopback a token is required: set VOUCH_TOKEN.")


def _serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", action="append", default=[], metavar="NAME=PATH",
                   help="a database to serve under NAME (repeatable); a bare PATH is served under its file name")
    p.add_argument(ALLOW_PRIVILEGED_FLAG, action="store_true",
                   help="serve a database whose role may write or reach the server's files (warned about on "
                        "the page); without it such a database is refused, see docs/security.md")
    _add_listen_options(p)
    p.set_defaults(handler=run_serve_command)


def add_demo_options(parser: argparse.ArgumentParser) -> None:
    """The ``vouch demo`` options for serving: ``--serve``, ``--host``, ``--port``, ``--model``."""
    parser.add_argument("--serve", action="store_true", help="serve the web page on the demo database with its examples")
    _add_listen_options(parser)


def _add_listen_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1",
                   help="interface to listen on (default 127.0.0.1; any other needs VOUCH_TOKEN)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--model", default=None, metavar="PROVIDER:MODEL",
                   help="model for /api/ask (default: VOUCH_MODEL); without one only check is served")
    p.add_argument("--request-timeout", type=float, default=None, metavar="SECONDS",
                   help="time limit of one request, all its queries and model calls together (default 120)")
    p.add_argument("--max-response-bytes", type=int, default=None, metavar="BYTES",
                   help="largest response body; result rows are cut to fit (default 33554432, 32 MiB)")


def parse_db_specs(specs: list[str]) -> dict[str, str]:
    """``NAME=PATH`` (or a bare path or URL, named after its file) → {name: target}."""
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep or not DB_NAME.match(name):  # a bare path, or a URL whose query holds '='
            target = spec
            from pathlib import Path

            stem = Path(spec.rstrip("/").split("?", 1)[0]).stem or "db"
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", stem).lstrip("_.-")[:64] or "db"
        if not target.strip():
            raise UserInputError(f"--db {spec!r}: no path after '='; write --db NAME=PATH")
        if name in out:
            raise UserInputError(f"two databases are named {name!r}; give each --db a distinct NAME=PATH")
        out[name] = target
    return out


def resolve_model(option: str | None, config: Config) -> str | None:
    return option or os.environ.get(MODEL_ENV) or None


def check_listen(host: str, token: str | None) -> None:
    """Refuse to start unguarded: off loopback a token is required, and any token given must
    be long enough to guess badly."""
    from . import is_loopback

    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UserInputError(f"{TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters; use a long random one "
                             f"(python -c \"import secrets; print(secrets.token_urlsafe(32))\")")
    if not is_loopback(host) and not token:
        raise UserInputError(f"refusing to listen on {host} without a token: set {TOKEN_ENV} to a long random "
                             f"string (clients send 'Authorization: Bearer <token>'), or listen on 127.0.0.1")


def check_roles(databases: dict[str, str], config: Config, *,
                allow_privileged: bool = False) -> dict[str, RolePowers]:
    """Open each database once and read its role's powers (``db.privileges``). A role that may
    write or reach the server's files is refused (UserInputError, exit 2) unless
    ``allow_privileged``; then those roles are returned, {name: RolePowers}, to be warned about."""
    from ..db import connect
    from ..db.privileges import DOCS

    privileged: dict[str, RolePowers] = {}
    for name, target in databases.items():
        try:
            with connect(target, config=config) as db:
                powers = db.role_powers()
        except VouchError as exc:
            raise UserInputError(f"database {name!r}: {exc.message}") from None
        if powers is not None and powers.privileged:
            privileged[name] = powers
    if privileged and not allow_privileged:
        named = "; ".join(f"database {name!r}: {powers.summary}" for name, powers in privileged.items())
        raise UserInputError(f"refusing to serve a database whose role can do more than read: {named}. Connect "
                             f"as a read-only role (see {DOCS}), or start with {ALLOW_PRIVILEGED_FLAG} to "
                             f"serve it anyway")
    return privileged


def serve(databases: dict[str, str], config: Config, host: str = "127.0.0.1", port: int = 8000, *,
          model: str | None = None, examples: dict[str, list[dict[str, Any]]] | None = None,
          request_timeout: float | None = None, allow_privileged_role: bool = False,
          max_response_bytes: int | None = None, console: Console | None = None) -> int:
    """Start the server and block until it stops. Returns an exit code."""
    from rich.console import Console
    from rich.text import Text

    out = console or Console()
    token = os.environ.get(TOKEN_ENV) or None
    check_listen(host, token)
    if not databases:
        raise UserInputError("no database to serve: give --db NAME=PATH (repeatable), or run 'vouch demo --serve'")
    if not (0 < port < 65536):
        raise UserInputError(f"--port {port} is not a port number (1–65535)")
    if request_timeout is not None and not (0 < request_timeout < float("inf")):
        raise UserInputError("--request-timeout must be a number of seconds > 0")
    if max_response_bytes is not None and not (64 * 1024 <= max_response_bytes <= 2**40):
        raise UserInputError("--max-response-bytes must be between 65536 and 2**40")
    try:
        import uvicorn

        from .access import loopback_hosts
        from .app import (DEFAULT_MAX_RESPONSE, DEFAULT_REQUEST_TIMEOUT, ServerOptions,
                          create_app, is_loopback)
    except ImportError as exc:
        raise UserInputError(f"the server needs FastAPI and uvicorn: pip install 'vouchsql[server]' ({exc})") from None

    options = ServerOptions(
        databases=databases, token=token, model=model, examples=examples or {},
        request_timeout=request_timeout or DEFAULT_REQUEST_TIMEOUT,
        max_response=max_response_bytes or DEFAULT_MAX_RESPONSE,
        allowed_hosts=sorted(loopback_hosts(host)) if is_loopback(host) else None,
    )
    out.print(f"Opening {len(databases)} database(s): {', '.join(databases)} …", highlight=False)
    err = Console(stderr=True, soft_wrap=True)
    for name, powers in check_roles(databases, config, allow_privileged=allow_privileged_role).items():
        err.print(Text("warning: ", style="bold yellow") + Text(f"database {name!r}: {powers.warning()}"),
                  highlight=False)
    app = create_app(options, config)
    shown = f"[{host}]" if ":" in host else host
    out.print(f"[bold green]Vouch[/] on http://{shown}:{port}/  (API docs: /docs)", highlight=False)
    if token:
        out.print(f"Token required: clients send 'Authorization: Bearer ${TOKEN_ENV}'.", highlight=False)
    if not model:
        out.print(f"No model configured: ask is off (--model PROVIDER:MODEL or {MODEL_ENV}); check works.",
                  highlight=False)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info",
                                           server_header=False, proxy_headers=False))
    try:
        server.run()
    except SystemExit:  # uvicorn exits (3) when it cannot bind; its log line above says why
        pass
    if not server.started:
        Console(stderr=True).print(f"error: could not listen on {shown}:{port} (see the message above)",
                                   highlight=False, markup=False)
        return 1
    return 0


def serve_demo(config: Config, host: str = "127.0.0.1", port: int = 8000, *, model: str | None = None,
               out: str | None = None, seed: int | None = None, request_timeout: float | None = None,
               max_response_bytes: int | None = None, console: Console | None = None) -> int:
    """Build the demo database and serve it as ``demo`` with its examples ready to click."""
    from .. import api
    from ..demo import EXAMPLES

    path = api.build_demo(out, seed=seed, config=config)
    return serve({"demo": str(path)}, config, host, port, model=resolve_model(model, config),
                 examples={"demo": EXAMPLES}, request_timeout=request_timeout,
                 max_response_bytes=max_response_bytes, console=console)


def run_serve_command(args: argparse.Namespace, config: Config, console: Console) -> int:
    return serve(parse_db_specs(args.db), config, args.host, args.port,
                 model=resolve_model(args.model, config), request_timeout=args.request_timeout,
                 allow_privileged_role=args.allow_privileged_role,
                 max_response_bytes=args.max_response_bytes, console=console)


def run_demo_serve(args: argparse.Namespace, config: Config, console: Console) -> int:
    """What ``vouch demo --serve`` runs (``args`` from a parser given ``add_demo_options``)."""
    return serve_demo(config, args.host, args.port, model=args.model, out=getattr(args, "out", None),
                      seed=getattr(args, "seed", None), request_timeout=args.request_timeout,
                      max_response_bytes=args.max_response_bytes, console=console)

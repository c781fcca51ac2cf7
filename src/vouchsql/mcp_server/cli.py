"""``vouch mcp``: registers the command; the SDK and the tools are imported only when it runs."""

from __future__ import annotations

import os

from ..cli_parsers import add_command
from ..errors import UserInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable

    from rich.console import Console

    from ..settings import Config


def register(sub: argparse._SubParsersAction[Any],
             common: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser]) -> None:
    add_command(sub, "mcp", common, _mcp_args,
                help="serve the databases to agents over the Model Context Protocol (needs the [mcp] extra)",
                description="An MCP server (stdio by default, or streamable HTTP) with the tools list_databases, "
                            "describe, run_sql, check_sql and, with a model, ask. Clients name databases; they "
                            "never send paths. Over HTTP off loopback a token is required: set VOUCH_TOKEN. "
                            "See docs/agents.md.")


def _mcp_args(p: argparse.ArgumentParser) -> None:
    from ..server.cli import ALLOW_PRIVILEGED_FLAG

    p.add_argument("--db", action="append", default=[], metavar="NAME=TARGET",
                   help="a database to serve under NAME (repeatable): a file path or a database URL")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: the agent starts vouch mcp itself) or streamable HTTP at /mcp")
    p.add_argument("--host", default="127.0.0.1", help="with --transport http: interface (default 127.0.0.1; "
                                                       "any other needs VOUCH_TOKEN)")
    p.add_argument("--port", type=int, default=8765, help="with --transport http: port (default 8765)")
    p.add_argument("--model", default=None, metavar="PROVIDER:MODEL",
                   help="model for the ask tool (default: VOUCH_MODEL); without one ask is not offered")
    p.add_argument("--call-timeout", type=float, default=120.0, metavar="SECONDS",
                   help="time limit of one tool call (default 120)")
    p.add_argument("--max-response-bytes", type=int, default=None, metavar="BYTES",
                   help="largest tool result; result rows are cut to fit (default 1048576)")
    p.add_argument(ALLOW_PRIVILEGED_FLAG, action="store_true",
                   help="serve a database whose role may write or reach the server's files (see docs/security.md)")
    p.set_defaults(handler=run_mcp_command)


def run_mcp_command(args: argparse.Namespace, config: Config, console: Console) -> int:
    import logging
    import sys

    from ..server.cli import TOKEN_ENV, check_listen, check_roles, parse_db_specs, resolve_model

    token = os.environ.get(TOKEN_ENV) or None
    if args.transport == "http":
        check_listen(args.host, token)
        if not (0 < args.port < 65536):
            raise UserInputError(f"--port {args.port} is not a port number (1–65535)")
    databases = parse_db_specs(args.db)
    if not databases:
        raise UserInputError("no database to serve: give --db NAME=TARGET (repeatable)")
    if not (0 < args.call_timeout < float("inf")):
        raise UserInputError("--call-timeout must be a number of seconds > 0")
    if args.max_response_bytes is not None and not (64 * 1024 <= args.max_response_bytes <= 2**40):
        raise UserInputError("--max-response-bytes must be between 65536 and 2**40")
    try:
        import anyio

        from .server import build_server, run_http, run_stdio
    except ImportError as exc:
        raise UserInputError(f"vouch mcp needs the MCP SDK: pip install 'vouchsql[mcp]' ({exc})") from None
    from .tools import DEFAULT_MAX_RESPONSE, Tools

    # stdout is the protocol's over stdio: everything else goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="vouch mcp: %(levelname)s %(message)s")
    for name, powers in check_roles(databases, config, allow_privileged=args.allow_privileged_role).items():
        print(f"vouch mcp: warning: database {name!r}: {powers.warning()}", file=sys.stderr)
    tools = Tools(databases, config, model=resolve_model(args.model, config),
                  max_response=args.max_response_bytes or DEFAULT_MAX_RESPONSE)
    tools.warm()
    server = build_server(tools, call_timeout=args.call_timeout)
    if args.transport == "stdio":
        anyio.run(run_stdio, server)
        return 0
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Vouch MCP on http://{shown}:{args.port}/mcp ({', '.join(databases)})"
          + ("; token required" if token else ""), file=sys.stderr, flush=True)
    if not run_http(server, args.host, args.port, token):
        print(f"error: could not listen on {shown}:{args.port}", file=sys.stderr)
        return 1
    return 0

"""Who may call a server, one implementation for ``vouch serve`` and ``vouch mcp``: the bearer
token (``VOUCH_TOKEN``, compared in constant time) and, on loopback, the ``Host`` header
(a page on another site cannot reach the server by DNS rebinding). Raw ASGI, so ``vouch mcp``
needs no FastAPI for it; ``vouch serve`` adds its own request bounds after it (server/app.py).
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

UNAUTHORIZED = "this server needs a token: send 'Authorization: Bearer <VOUCH_TOKEN>'"
BAD_HOST = "this server answers only requests addressed to its own loopback name"


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def loopback_hosts(host: str) -> set[str]:
    """The ``Host`` names (as :func:`host_name` reads them) a server on loopback ``host`` answers to."""
    return {*LOOPBACK_NAMES, host_name(host)}


def host_name(host: str) -> str:
    """The name in a ``Host`` header, without its port (``[::1]:8000`` → ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def token_ok(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def refusal(scope: Scope, *, token: str | None, hosts: set[str] | None,
            needs_token: bool = True) -> tuple[int, str, str, dict[str, str]] | None:
    """(status, kind, message, headers) when the request may not go on; None when it may.
    ``hosts``: the host names allowed (None: any)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    if hosts is not None and host_name(headers.get("host", "")) not in hosts:
        return 400, "bad_host", BAD_HOST, {}
    if needs_token and token and not token_ok(headers.get("authorization", ""), token):
        return 401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": 'Bearer realm="vouch"'}
    return None


async def send_error(send: Send, status: int, kind: str, message: str, headers: dict[str, str]) -> None:
    """The JSON error both servers answer with: ``{"error": {"kind", "message"}}``."""
    body = json.dumps({"error": {"kind": kind, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class AccessGuard:
    """ASGI middleware: every HTTP request whose path ``protects`` names needs the token, and,
    with ``hosts``, every request must be addressed to one of them."""

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: set[str] | None = None,
                 protects: Callable[[str], bool] = lambda path: True) -> None:
        self.app, self.token, self.hosts, self.protects = app, token, hosts, protects

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = refusal(scope, token=self.token, hosts=self.hosts, needs_token=self.protects(scope.get("path", "")))
            if refused is not None:
                await send_error(send, *refused)
                return
        await self.app(scope, receive, send)

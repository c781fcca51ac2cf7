"""Who may call a server (issue 28, item 3: one auth/host guard for `vouch serve` and `vouch mcp`)."""

from __future__ import annotations

import asyncio
import json

import pytest

from vouchsql.server.access import AccessGuard, host_name, loopback_hosts, refusal, token_ok

TOKEN = "s3cret-token-long-enough"


def _scope(path: str = "/api/check", **headers: str) -> dict:
    return {"type": "http", "path": path, "method": "POST",
            "headers": [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]}


@pytest.mark.parametrize("header, ok", [
    (f"Bearer {TOKEN}", True), (f"bearer {TOKEN} ", True), (f"Basic {TOKEN}", False),
    ("Bearer nope", False), ("", False), (TOKEN, False),
])
def test_token(header, ok):
    assert token_ok(header, TOKEN) is ok


@pytest.mark.parametrize("host, name", [("127.0.0.1:8000", "127.0.0.1"), ("[::1]:8000", "::1"), ("LOCALHOST", "localhost"),
                                        ("::1", "::1"), ("evil.example:80", "evil.example")])
def test_host_name(host, name):
    assert host_name(host) == name


def test_refusal_checks_the_host_first_then_the_token():
    hosts = loopback_hosts("127.0.0.1")
    assert hosts == {"127.0.0.1", "localhost", "::1"}
    assert refusal(_scope(host="evil.example", authorization=f"Bearer {TOKEN}"), token=TOKEN, hosts=hosts)[:2] == \
        (400, "bad_host")
    assert refusal(_scope(host="localhost:8000"), token=TOKEN, hosts=hosts)[:2] == (401, "unauthorized")
    assert refusal(_scope(host="localhost:8000", authorization=f"Bearer {TOKEN}"), token=TOKEN, hosts=hosts) is None
    assert refusal(_scope(host="localhost"), token=TOKEN, hosts=hosts, needs_token=False) is None
    assert refusal(_scope(host="anything"), token=None, hosts=None) is None


def test_the_guard_answers_a_refusal_in_json_and_passes_the_rest_on():
    reached: list[str] = []

    async def app(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = AccessGuard(app, token=TOKEN, hosts={"localhost"}, protects=lambda path: path.startswith("/api/"))

    def call(scope) -> tuple[int, dict, bytes]:
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        async def receive():
            return {"type": "http.request", "body": b""}

        asyncio.run(guard(scope, receive, send))
        return sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"]

    status, headers, body = call(_scope(host="localhost"))
    assert status == 401 and headers[b"www-authenticate"] == b'Bearer realm="vouch"'
    assert json.loads(body) == {"error": {"kind": "unauthorized", "message":
                                          "this server needs a token: send 'Authorization: Bearer <VOUCH_TOKEN>'"}}
    assert call(_scope("/", host="localhost"))[0] == 204  # the page itself needs no token
    assert call(_scope(host="localhost", authorization=f"Bearer {TOKEN}"))[0] == 204
    assert call(_scope("/", host="evil.example"))[0] == 400
    assert reached == ["/", "/api/check"]

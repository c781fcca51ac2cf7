"""Scripted model servers on loopback, for driving the REAL ``openai`` and ``anthropic`` SDKs
through ``base_url`` with no model and no network.

``ScriptedServer(handler, protocol="openai" | "anthropic")`` listens on 127.0.0.1 (a free
port) in a thread. Each POST becomes a :class:`Call` (its JSON body, messages, the stage named
by the system prompt's first line ``# Task: NAME``, arrival and finish times) and
``handler(call)`` returns the reply: a string (the assistant's text), a list of strings (one
choice each, for a request with OpenAI's ``n``) or a :class:`Reply` (status, delay, raw body). The server formats it as the protocol's JSON. ``calls`` keeps every
request, so a test can count them and read their timing.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# "# Task: assess (decide)": the decide prompt is the assess step that also answers a clear
# request; it is told apart here so a script can answer it with SQL.
_STAGE = re.compile(r"#\s*Task:\s*([a-z_]+)(?:\s*\(([a-z_]+)\))?")


@dataclass
class Reply:
    content: str | None = ""  # the assistant's text
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering
    body: Any = None  # raw body instead of a formatted one (dict → JSON, str → as is)
    input_tokens: int = 11
    output_tokens: int = 7  # per choice
    choices: "list[str] | None" = None  # several choices (OpenAI ``n``) instead of ``content``


@dataclass
class Call:
    index: int
    path: str
    body: dict
    started: float
    ended: float | None = None
    status: int | None = None

    @property
    def messages(self) -> list[dict]:
        msgs = list(self.body.get("messages") or [])
        system = self.body.get("system")
        if system:
            text = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
            msgs.insert(0, {"role": "system", "content": text})
        return [{"role": m["role"], "content": _text(m.get("content"))} for m in msgs]

    @property
    def stage(self) -> str | None:
        system = next((m["content"] for m in self.messages if m["role"] == "system"), "")
        m = _STAGE.search(system)
        return (m.group(2) or m.group(1)) if m else None

    @property
    def user(self) -> str:
        """The first user message (the prompt's filled-in template)."""
        return next((m["content"] for m in self.messages if m["role"] == "user"), "")

    @property
    def is_repair(self) -> bool:
        return sum(m["role"] == "user" for m in self.messages) > 1


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class ScriptedServer:
    def __init__(self, handler: Callable[[Call], "str | Reply"], protocol: str = "openai") -> None:
        assert protocol in {"openai", "anthropic"}
        self.handler = handler
        self.protocol = protocol
        self.calls: list[Call] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - the http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner._serve(self, raw)

            def log_message(self, *args):  # keep test output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if self.protocol == "openai" else root

    # -- what the tests read ---------------------------------------------------------------
    def stages(self) -> list[str | None]:
        return [c.stage for c in sorted(self.calls, key=lambda c: c.index)]

    def rounds(self) -> list[list[str | None]]:
        """Calls grouped into sequential rounds: a round starts with a call that arrived after
        every earlier call had been answered."""
        out: list[list[Call]] = []
        last_end = float("-inf")
        for call in sorted(self.calls, key=lambda c: c.started):
            if not out or call.started >= last_end:
                out.append([call])
            else:
                out[-1].append(call)
            last_end = max(last_end, call.ended or float("inf"))
        return [[c.stage for c in r] for r in out]

    # -- serving ---------------------------------------------------------------------------
    def _serve(self, http: BaseHTTPRequestHandler, raw: bytes) -> None:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with self._lock:
            call = Call(index=len(self.calls), path=http.path, body=body, started=time.monotonic())
            self.calls.append(call)
        try:
            reply = self.handler(call)
        except Exception as exc:  # a broken script answers 599, and the test sees why
            self.errors.append(f"{type(exc).__name__}: {exc}")
            reply = Reply(status=599, body={"error": {"message": f"script error: {exc}"}})
        if isinstance(reply, list):
            reply = Reply(choices=reply)
        if isinstance(reply, str) or reply is None:
            reply = Reply(content=reply)
        if reply.delay:
            time.sleep(reply.delay)
        payload = self._payload(call, reply)
        call.status = reply.status
        # Marked answered before the bytes go out, so the client's next request always
        # arrives after it (rounds() relies on that).
        call.ended = time.monotonic()
        try:
            http.send_response(reply.status)
            http.send_header("Content-Type", "application/json")
            http.send_header("Content-Length", str(len(payload)))
            http.end_headers()
            http.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    def _payload(self, call: Call, reply: Reply) -> bytes:
        if reply.body is not None:
            data = reply.body
        elif reply.status >= 400:
            data = _error_body(self.protocol, reply.status)
        elif self.protocol == "openai":
            texts = reply.choices if reply.choices is not None else [reply.content]
            out = reply.output_tokens * len(texts)
            data = {"id": f"chatcmpl-{call.index}", "object": "chat.completion", "created": 0,
                    "model": call.body.get("model", "scripted"),
                    "choices": [{"index": i, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)],
                    "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": out,
                              "total_tokens": reply.input_tokens + out}}
        else:
            data = {"id": f"msg_{call.index}", "type": "message", "role": "assistant",
                    "model": call.body.get("model", "scripted"),
                    "content": [{"type": "text", "text": reply.content or ""}] if reply.content else [],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}}
        return data.encode() if isinstance(data, str) else json.dumps(data).encode()


def _error_body(protocol: str, status: int) -> dict:
    kind = {429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}.get(status, "invalid_request_error")
    message = f"scripted HTTP {status}"
    if protocol == "openai":
        return {"error": {"message": message, "type": kind, "code": None, "param": None}}
    return {"type": "error", "error": {"type": kind, "message": message}}


# -- replies for the Vouch prompts -------------------------------------------------------------

def assess_reply(is_valid: bool = True, flaw_code: str | None = None, reason: str = "the schema has what it needs",
                 clarification: str | None = None, interpretations: list[tuple[str, str]] = ()) -> str:
    return json.dumps({"is_valid": is_valid, "flaw_code": flaw_code, "reason": reason,
                       "clarification": clarification,
                       "interpretations": [{"request": r, "clause": c} for r, c in interpretations]})


def sample_reply(sql: str | None, interpretation: str = "counts the rows asked for",
                 assumptions: list[str] = ()) -> str:
    return json.dumps({"sql": sql, "interpretation": interpretation, "assumptions": list(assumptions)})


@dataclass
class Script:
    """A handler for the Vouch stages (decide, assess, generate, write).

    ``assess``: the assess reply; the decide call gets it too, plus, for a valid request with
    no interpretations, the next scripted SQL as its answer (``decide_sql=False``: none, so
    generate draws all K). A generate request with OpenAI's ``n`` gets ``n`` choices, each the
    next scripted SQL (``honour_n=False``: one choice, as a server that ignores ``n``). ``samples``: SQL per sample, served in arrival order — a list
    for one request, or ``{substring of the request: [sql, …]}`` for interpretations.
    ``write``: the answer text (or a function of the call). ``gather``: hold generate replies
    until this many generate requests are in flight (proves they run in parallel; gives up
    after ``gather_timeout`` and notes it in ``gather_failed``); ``gather_write`` the same for
    write requests.
    """

    assess: "str | Reply" = field(default_factory=assess_reply)
    samples: "list[str] | dict[str, list[str]]" = field(default_factory=list)
    write: "str | Callable[[Call], str | Reply]" = "The answer is in the result."
    gather: int = 0
    gather_write: int = 0
    gather_timeout: float = 5.0
    gather_failed: bool = False
    decide_sql: bool = True
    honour_n: bool = True
    _served: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _arrived: dict = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def __call__(self, call: Call) -> "str | Reply":
        stage = call.stage
        if stage == "assess":
            return self.assess
        if stage == "decide":
            return self._decide(call)
        if stage == "generate":
            self._gather(stage, self.gather)
            n = int(call.body.get("n") or 1) if self.honour_n else 1
            if n > 1:
                return [sample_reply(self._next_sql(call.user)) for _ in range(n)]
            return sample_reply(self._next_sql(call.user))
        if stage == "write":
            self._gather(stage, self.gather_write)
            return self.write(call) if callable(self.write) else self.write
        raise AssertionError(f"unexpected stage {stage!r}")

    def _decide(self, call: Call) -> "str | Reply":
        if isinstance(self.assess, Reply) or not self.decide_sql:
            return self.assess
        data = json.loads(self.assess)
        if data.get("is_valid") and not data.get("interpretations"):
            data.update(json.loads(sample_reply(self._next_sql(call.user.replace("Question:", "Request:")))))
        return json.dumps(data)

    def _gather(self, stage: str, n: int) -> None:
        if not n:
            return
        with self._cond:
            self._arrived[stage] = self._arrived.get(stage, 0) + 1
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._arrived[stage] >= n, timeout=self.gather_timeout):
                self.gather_failed = True

    def _next_sql(self, user: str) -> str:
        if isinstance(self.samples, dict):
            request = user.rsplit("Request:", 1)[-1]
            key = next((k for k in self.samples if k in request), None)
            if key is None:
                raise AssertionError(f"no scripted samples for request {request.strip()!r}")
            options = self.samples[key]
        else:
            key, options = "", self.samples
        with self._lock:
            i = self._served.get(key, 0)
            self._served[key] = i + 1
        return options[i % len(options)]

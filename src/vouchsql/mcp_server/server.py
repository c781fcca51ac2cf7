"""The MCP server: :class:`~vouchsql.mcp_server.tools.Tools` behind the official ``mcp`` SDK's
low-level ``Server`` (hand-written schemas, so every refusal is a structured
``{"error": ...}`` result rather than the SDK's text), over stdio or streamable HTTP.

Over HTTP the rules of ``vouch serve`` apply: off loopback a token is required (``VOUCH_TOKEN``,
sent as ``Authorization: Bearer``) and a token given must be long enough; on loopback the
``Host`` (and ``Origin``) must name loopback, a DNS-rebinding guard. Tool calls run in worker
threads (SQLite connections never cross threads), at most ``max_concurrent`` at once, each
within ``call_timeout`` seconds; every query in them is bounded by the query timeout setting.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from .. import __version__
from .tools import PROTOCOL, Tools, ToolFailure, tool_list

# What the SDK hands each handler first: the request's context.
HandlerContext = ServerRequestContext[Any]

log = logging.getLogger("vouchsql.mcp")

PROFILE_URI = "vouch://profile/"
PROMPT_NAME = "answer_with_vouch"


def _text(payload: dict[str, Any]) -> list[types.TextContent]:
    return [types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))]


def build_server(tools: Tools, *, call_timeout: float = 120.0, max_concurrent: int = 4) -> Server:
    """The low-level MCP server over ``tools``: its tools, one prompt and a profile resource per database."""
    limiter = anyio.CapacityLimiter(max(1, max_concurrent))
    listed = tool_list(tools)

    async def list_tools(ctx: HandlerContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t["name"], title=t["title"], description=t["description"],
                       input_schema=t["inputSchema"], output_schema=t["outputSchema"],
                       annotations=types.ToolAnnotations(title=t["title"], read_only_hint=True,
                                                         destructive_hint=False, idempotent_hint=True,
                                                         open_world_hint=t["name"] == "ask"))
            for t in listed])

    async def call_tool(ctx: HandlerContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        token = object()  # this call, for the slot and for cancel()
        holding, started, released = False, threading.Event(), threading.Lock()

        def release() -> None:  # once, by whichever side ends the call
            if released.acquire(blocking=False):
                limiter.release_on_behalf_of(token)

        def work() -> tuple[dict[str, Any], bool]:
            # The slot is given back by the worker when it ends, not when the caller stops
            # waiting: a call past its limit holds it until its query has stopped.
            started.set()
            try:
                return tools.call(params.name, params.arguments, token)
            finally:
                anyio.from_thread.run_sync(release)

        try:
            with anyio.fail_after(call_timeout):
                await limiter.acquire_on_behalf_of(token)
                holding = True
                payload, is_error = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except TimeoutError:
            if holding:
                tools.cancel(token)  # stop its statement on the engine; the worker then frees the slot
                if not started.is_set():
                    release()  # stopped before its thread began: nothing else will give the slot back
            payload, is_error = ToolFailure(
                "timeout", f"the call ran past its {call_timeout:g} s limit and was stopped "
                           f"(start vouch mcp with a larger --call-timeout)").payload(), True
        return types.CallToolResult(content=_text(payload), structured_content=payload, is_error=is_error)

    async def list_resources(ctx: HandlerContext, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[
            types.Resource(name=f"profile-{name}", title=f"Profile of {name}", uri=f"{PROFILE_URI}{name}",
                           description=f"Vouch's schema-and-data profile of {name!r} (tables, columns, keys, "
                                       f"NULL counts, stand-in codes, join overlaps)",
                           mime_type="application/json")
            for name in tools.databases])

    async def list_templates(ctx: HandlerContext, params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(name="profile", uri_template=PROFILE_URI + "{database}",
                                   description="Vouch's profile of a database", mime_type="application/json")])

    async def read_resource(ctx: HandlerContext, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        name = uri[len(PROFILE_URI):] if uri.startswith(PROFILE_URI) else None
        if name is None or name not in tools.databases:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"no resource {uri!r}; this server has {PROFILE_URI}NAME for: "
                                   f"{', '.join(tools.databases)}")
        with anyio.fail_after(call_timeout):
            text = await anyio.to_thread.run_sync(tools.profile_json, name, limiter=limiter,
                                                  abandon_on_cancel=True)
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="application/json", text=text)])

    prompt = types.Prompt(
        name=PROMPT_NAME, title="Answer a question with Vouch",
        description="The protocol for answering a question over a database: describe, K independent "
                    "queries, check_sql, then show the verdict's reasons and every open choice",
        arguments=[types.PromptArgument(name="database", description="a database name", required=True),
                   types.PromptArgument(name="question", description="the question", required=True)])

    async def list_prompts(ctx: HandlerContext, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: HandlerContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        from mcp.shared.exceptions import MCPError

        if params.name != PROMPT_NAME:
            raise MCPError(code=types.INVALID_PARAMS, message=f"no prompt {params.name!r}; this server has {PROMPT_NAME}")
        args = params.arguments or {}
        database, question = (args.get("database") or "").strip(), (args.get("question") or "").strip()
        if not database or not question:
            raise MCPError(code=types.INVALID_PARAMS, message="give both arguments: database and question")
        text = (f"Answer this question over the database {database!r} with the Vouch tools.\n\n"
                f"Question: {question}\n\n{PROTOCOL}")
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])

    return Server(
        "vouch", version=__version__, title="Vouch",
        instructions=("Vouch checks SQL answers to questions over the databases listed by list_databases.\n"
                      + PROTOCOL),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt)


async def run_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(server: Server, host: str, token: str | None, path: str = "/mcp") -> Any:
    """The streamable-HTTP ASGI app, guarded as ``vouch serve`` is."""
    from mcp.server.transport_security import TransportSecuritySettings

    from ..server.access import AccessGuard, loopback_hosts
    from ..server.names import is_loopback

    security = None
    if is_loopback(host):
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        names = sorted({"127.0.0.1", "localhost", "[::1]", shown})
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=[f"{n}:*" for n in names] + names,
            allowed_origins=[f"http://{n}:*" for n in names] + [f"http://{n}" for n in names])
    app = server.streamable_http_app(streamable_http_path=path, host=host, transport_security=security)
    # The token and the Host, as `vouch serve` checks them (server/access.py); the SDK's own
    # guard behind it also checks the Origin of a browser's request.
    return AccessGuard(app, token=token, hosts=loopback_hosts(host) if is_loopback(host) else None)


def run_http(server: Server, host: str, port: int, token: str | None) -> bool:
    """Serve until stopped; False when the port could not be bound."""
    import uvicorn

    userver = uvicorn.Server(uvicorn.Config(http_app(server, host, token), host=host, port=port,
                                            log_level="warning", server_header=False, proxy_headers=False,
                                            lifespan="on"))
    try:
        userver.run()
    except SystemExit:
        pass
    return bool(userver.started)

"""``vouch mcp`` driven by the official MCP SDK's own client (``ClientSession``) over stdio and
over streamable HTTP on loopback: the tools listed with their schemas, each tool called, a write
refused, a bad join vetoed, a tie reported as a choice, bad input refused with a structured
error, every output validated against its tool's outputSchema, and the database file unchanged.

One real server process per transport and module (starting one takes seconds); the calls are
recorded once and each test reads what it needs. ``VOUCH_MCP_TRANSCRIPT=FILE`` writes the stdio
session as the Markdown transcript shown in docs/agents.md.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'vouchsql[mcp]')")
anyio = pytest.importorskip("anyio")
jsonschema = pytest.importorskip("jsonschema")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from conftest import sha256_of  # noqa: E402
from fakes.servers import Script, ScriptedServer, assess_reply  # noqa: E402

VOUCH = str(Path(sys.executable).with_name("vouch"))
TOOLS = ["list_databases", "describe", "run_sql", "check_sql"]
TIE_Q = "Which product has the highest price?"
TIE_SQL = "SELECT name, price FROM products ORDER BY price DESC LIMIT 1"
TIE_ALT = "SELECT name, price FROM products WHERE price = (SELECT MAX(price) FROM products) ORDER BY name"
BAD_JOIN_Q = "How many orders match a product?"
BAD_JOIN_SQL = "SELECT COUNT(*) FROM orders o JOIN products p ON p.price = o.total"
CHINOOK_Q = "How many invoices does each support rep have?"
CHINOOK_BAD = ("SELECT e.EmployeeId, COUNT(*) AS invoices FROM Invoice i JOIN Employee e ON e.EmployeeId = i.CustomerId "
               "GROUP BY e.EmployeeId")
CHINOOK_GOOD = ("SELECT c.SupportRepId, COUNT(*) AS invoices FROM Invoice i JOIN Customer c ON c.CustomerId = i.CustomerId "
                "GROUP BY c.SupportRepId ORDER BY c.SupportRepId")
ERROR_SCHEMA = {
    "type": "object", "required": ["error"], "additionalProperties": False,
    "properties": {"error": {"type": "object", "required": ["kind", "message"],
                             "properties": {"kind": {"type": "string"}, "message": {"type": "string"}}}},
}

# (label, tool, arguments): the session every transport runs, in order.
CALLS = [
    ("list", "list_databases", {}),
    ("describe", "describe", {"database": "demo", "tables": ["orders", "customers"], "sample_values": 2}),
    ("run", "run_sql", {"database": "demo", "sql": "SELECT COUNT(*) AS orders FROM orders"}),
    ("tie", "check_sql", {"database": "demo", "question": TIE_Q, "candidates": [TIE_SQL, TIE_ALT, TIE_SQL]}),
    ("bad_join", "check_sql", {"database": "demo", "question": BAD_JOIN_Q, "candidates": [BAD_JOIN_SQL]}),
    ("judged", "check_sql", {"database": "demo", "question": "How many orders are there?",
                             "candidates": ["SELECT COUNT(*) FROM orders"] * 3,
                             "answer_text": "There are 3867 orders.",
                             "judged_parts": [["how many orders", True]]}),
    ("write", "run_sql", {"database": "demo", "sql": "DELETE FROM orders"}),
    ("two_statements", "run_sql", {"database": "demo", "sql": "SELECT 1; DROP TABLE orders"}),
    ("attach", "run_sql", {"database": "demo", "sql": "ATTACH DATABASE '/tmp/x.sqlite' AS x"}),
    ("pragma_write", "run_sql", {"database": "demo", "sql": "PRAGMA writable_schema = 1"}),
    ("missing_arg", "check_sql", {"database": "demo", "question": "x"}),
    ("wrong_type", "check_sql", {"database": "demo", "question": "x", "candidates": "SELECT 1"}),
    ("extra_field", "run_sql", {"database": "demo", "sql": "SELECT 1", "path": "/etc/passwd"}),
    ("empty_sql", "check_sql", {"database": "demo", "question": "x", "candidates": ["  "]}),
    ("unknown_db", "run_sql", {"database": "/etc/passwd", "sql": "SELECT 1"}),
    ("unknown_table", "describe", {"database": "demo", "tables": ["nope"]}),
    ("unknown_tool", "drop_everything", {}),
    ("ask_off", "ask", {"database": "demo", "question": "How many orders?"}),
    ("refine_off", "refine", {"database": "demo", "question": "q", "pick": 1,
                              "interpretations": [{"text": "a"}, {"text": "b"}]}),
    ("bad_parts", "check_sql", {"database": "demo", "question": "x", "candidates": ["SELECT 1"],
                                "judged_parts": [["a part", "maybe", 3]]}),
]


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {"VOUCH_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1", **extra}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _session_calls(session: ClientSession, calls) -> dict:
    out: dict = {"init": None}
    out["tools"] = (await session.list_tools()).tools
    out["prompts"] = (await session.list_prompts()).prompts
    out["resources"] = (await session.list_resources()).resources
    out["prompt"] = await session.get_prompt("answer_with_vouch", {"database": "demo", "question": TIE_Q})
    out["profile"] = await session.read_resource("vouch://profile/demo")
    out["calls"] = {}
    for label, tool, args in calls:
        out["calls"][label] = (tool, args, await session.call_tool(tool, args))
    return out


@asynccontextmanager
async def _stdio(args: list[str], env: dict[str, str]):
    params = StdioServerParameters(command=VOUCH, args=["mcp", *args], env=env)
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield session, init


@pytest.fixture(scope="module")
def demo_copy(demo_db, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "demo.sqlite"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture(scope="module")
def mcp_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp_cache")


@pytest.fixture(scope="module")
def stdio_run(demo_copy, mcp_cache):
    """One stdio session of ``vouch mcp --db demo=…``: every call of CALLS, recorded."""
    before = sha256_of(demo_copy)

    async def main():
        async with _stdio(["--db", f"demo={demo_copy}"], _env(mcp_cache)) as (session, init):
            out = await _session_calls(session, CALLS)
            out["init"] = init
            return out

    out = anyio.run(main)
    out["digest"] = (before, sha256_of(demo_copy))
    path = os.environ.get("VOUCH_MCP_TRANSCRIPT")
    if path:
        Path(path).write_text(_transcript(out), encoding="utf-8")
    return out


def _result(run, label):
    tool, args, res = run["calls"][label]
    return res, res.structured_content


def _validators(tools) -> dict:
    out = {}
    for t in tools:
        jsonschema.Draft202012Validator.check_schema(t.output_schema)
        jsonschema.Draft202012Validator.check_schema(t.input_schema)
        out[t.name] = jsonschema.Draft202012Validator(t.output_schema)
    return out


# -- stdio ----------------------------------------------------------------------------------

def test_lists_the_tools_with_schemas_and_a_protocol(stdio_run):
    tools = {t.name: t for t in stdio_run["tools"]}
    assert list(tools) == TOOLS  # no model: no ask
    for t in tools.values():
        assert t.input_schema["type"] == "object" and t.output_schema["type"] == "object"
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False
    check = tools["check_sql"]
    assert {"database", "question", "candidates", "answer_text", "hint", "judged_parts"} <= set(check.input_schema["properties"])
    assert set(check.input_schema["required"]) == {"database", "question", "candidates"}
    for phrase in ("independent", "candidates[0]", "every choice", "never present it as fact"):
        assert phrase in check.description
    assert "independent" in (stdio_run["init"].instructions or "")


def test_every_success_matches_its_output_schema(stdio_run):
    validators = _validators(stdio_run["tools"])
    successes = 0
    for _label, (tool, _args, res) in stdio_run["calls"].items():
        assert res.content and res.content[0].type == "text"
        assert json.loads(res.content[0].text) == res.structured_content  # the same JSON for text-only clients
        if res.is_error:
            jsonschema.validate(res.structured_content, ERROR_SCHEMA)
        else:
            validators[tool].validate(res.structured_content)
            successes += 1
    assert successes == 6


def test_list_describe_and_run(stdio_run):
    listed = _result(stdio_run, "list")[1]
    assert listed == {"databases": [{"name": "demo", "engine": "sqlite", "tables": 11, "views": 0}],
                      "ask_available": False}
    described = _result(stdio_run, "describe")[1]
    assert [t["name"] for t in described["tables"]] == ["orders", "customers"]
    customers = described["tables"][1]
    age = next(c for c in customers["columns"] if c["name"] == "age")
    assert age["stand_ins"] and age["stand_ins"][0]["value"] == -1  # -1 means unknown
    region = next(c for c in customers["columns"] if c["name"] == "region")
    assert 0 < region["null_share"] < 1 and len(region["top_values"]) <= 2
    assert any(j["left"].startswith("orders.") or j["right"].startswith("orders.") for j in described["joins"])
    run = _result(stdio_run, "run")[1]
    assert run["columns"] == ["orders"] and run["rows"] == [[3867]] and run["error"] is None


def test_a_tie_is_reported_as_an_open_choice(stdio_run):
    res, answer = _result(stdio_run, "tie")
    assert not res.is_error
    assert answer["verdict"]["gate"] != "pass"
    ties = [c for c in answer["choices"] if c["type"] == "ties"]
    assert ties and ties[0]["differs"] and ties[0]["result"]["row_count"] == 5
    assert "open_choice:ties" in answer["verdict"]["reasons"]


def test_a_bad_join_is_vetoed(stdio_run):
    res, answer = _result(stdio_run, "bad_join")
    assert not res.is_error
    assert answer["verdict"]["gate"] == "abstain" and "bad_join" in answer["verdict"]["reasons"]
    assert next(c for c in answer["checks"] if c["name"] == "bad_join")["fired"]


def test_judged_parts_and_answer_text_are_accepted(stdio_run):
    res, answer = _result(stdio_run, "judged")
    assert not res.is_error and answer["answer_text"] == "There are 3867 orders."
    assert answer["agreement"] == 1.0


@pytest.mark.parametrize("label", ["write", "two_statements", "attach", "pragma_write"])
def test_writes_are_refused_with_a_structured_error(stdio_run, label):
    res, payload = _result(stdio_run, label)
    assert res.is_error
    assert payload["error"]["kind"] in {"not_select", "rejected", "multiple_statements", "forbidden", "read_only", "parse"}
    assert "Traceback" not in res.content[0].text


def test_the_database_file_is_unchanged(stdio_run):
    before, after = stdio_run["digest"]
    assert before == after


@pytest.mark.parametrize("label, kind, says", [
    ("missing_arg", "bad_input", "candidates: Field required"),
    ("wrong_type", "bad_input", "candidates"),
    ("extra_field", "bad_input", "path: Extra inputs are not permitted"),
    ("empty_sql", "bad_input", "candidates.0: the SQL is empty"),
    ("unknown_db", "unknown_database", "this server has: demo"),
    ("unknown_table", "unknown_table", "'nope'"),
    ("unknown_tool", "unknown_tool", "list_databases, describe, run_sql, check_sql"),
    ("ask_off", "no_model", "--model"),
    ("refine_off", "no_model", "refine needs a model"),
    ("bad_parts", "bad_input", "judged_parts"),
])
def test_bad_input_is_refused_with_a_structured_error(stdio_run, label, kind, says):
    res, payload = _result(stdio_run, label)
    assert res.is_error and payload["error"]["kind"] == kind and says in payload["error"]["message"]
    assert "Traceback" not in res.content[0].text


def test_prompt_and_profile_resource(stdio_run):
    assert [p.name for p in stdio_run["prompts"]] == ["answer_with_vouch"]
    text = stdio_run["prompt"].messages[0].content.text
    assert TIE_Q in text and "check_sql" in text and "never present it as fact" in text
    assert [str(r.uri) for r in stdio_run["resources"]] == ["vouch://profile/demo"]
    profile = json.loads(stdio_run["profile"].contents[0].text)
    assert profile["target"] == "demo" and len(profile["tables"]) == 11


def test_no_server_side_path_reaches_the_client(stdio_run, demo_copy):
    for label, (_tool, _args, res) in stdio_run["calls"].items():
        assert str(demo_copy) not in res.content[0].text, label
    assert str(demo_copy) not in stdio_run["profile"].contents[0].text


# -- ask, with a scripted model on loopback ---------------------------------------------------------

OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]
BY_CUSTOMER = "SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"
BY_ORDER = "SELECT COUNT(*) AS orders FROM orders"


def test_ask_and_refine_with_a_scripted_model(demo_copy, mcp_cache):
    # The first key found in the request wins: the refined request holds both phrases.
    script = Script(assess=assess_reply(interpretations=INTERPS), write="See the result.",
                    samples={"not each customer once": [BY_ORDER], "every order row": [BY_ORDER],
                             "each customer once": [BY_CUSTOMER]})

    async def main(base_url):
        env = _env(mcp_cache, VOUCH_BASE_URL=base_url, OPENAI_API_KEY="sk-test", VOUCH_MAX_RETRIES="0")
        async with _stdio(["--db", f"demo={demo_copy}", "--model", "openai:scripted"], env) as (session, _):
            tools = (await session.list_tools()).tools
            asked = await session.call_tool("ask", {"database": "demo", "question": OPEN_Q, "k": 2})
            a = asked.structured_content
            refined = await session.call_tool("refine", {"database": "demo", "question": a["question"],
                                                         "interpretations": a["interpretations"], "pick": 2, "k": 2})
            bad_pick = await session.call_tool("refine", {"database": "demo", "question": a["question"],
                                                          "interpretations": a["interpretations"], "pick": 3})
            return tools, asked, refined, bad_pick

    with ScriptedServer(script) as srv:
        tools, asked, refined, bad_pick = anyio.run(main, srv.base_url)
    assert [t.name for t in tools] == TOOLS + ["ask", "refine"]
    validators = _validators(tools)
    for res in (asked, refined):
        assert not res.is_error, res.content[0].text
        validators["ask"].validate(res.structured_content)
    assert asked.structured_content["shown"]["sql"] == BY_CUSTOMER
    assert asked.structured_content["premise"]["is_valid"] is True
    new = refined.structured_content
    assert new["question"] == OPEN_Q + " " + INTERPS[1][1] and new["shown"]["sql"] == BY_ORDER
    assert [i["picked"] for i in new["interpretations"]] == [False, True]
    assert bad_pick.is_error and "pick 3" in bad_pick.structured_content["error"]["message"]


# -- streamable HTTP on loopback, and its guards -------------------------------------------------------

@pytest.fixture(scope="module")
def http_server(demo_copy, chinook_path, mcp_cache):
    """``vouch mcp --transport http`` on a free loopback port, with a token."""
    port, token = _free_port(), "t" * 8 + "-loopback-token-123"
    env = {**os.environ, **_env(mcp_cache, VOUCH_TOKEN=token)}
    proc = subprocess.Popen([VOUCH, "mcp", "--transport", "http", "--port", str(port), "--db", f"demo={demo_copy}",
                             "--db", f"chinook={chinook_path}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vouch mcp exited {proc.returncode}: {proc.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("vouch mcp --transport http did not start listening")
    yield f"http://127.0.0.1:{port}/mcp", token
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_http_session_with_the_sdk_client(http_server, chinook_path, file_digest):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url, token = http_server
    before = file_digest(chinook_path)

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = (await session.list_tools()).tools
                    calls = {
                        "list": await session.call_tool("list_databases", {}),
                        "describe": await session.call_tool("describe", {"database": "chinook", "tables": ["Invoice"]}),
                        "run": await session.call_tool("run_sql", {"database": "chinook", "sql": "SELECT COUNT(*) FROM Invoice"}),
                        "bad": await session.call_tool("check_sql", {"database": "chinook", "question": CHINOOK_Q,
                                                                     "candidates": [CHINOOK_BAD]}),
                        "good": await session.call_tool("check_sql", {"database": "chinook", "question": CHINOOK_Q,
                                                                      "candidates": [CHINOOK_GOOD] * 3}),
                        "write": await session.call_tool("run_sql", {"database": "chinook", "sql": "UPDATE Invoice SET Total = 0"}),
                    }
                    return tools, calls

    tools, calls = anyio.run(main)
    assert [t.name for t in tools] == TOOLS
    validators = _validators(tools)
    for label, res in calls.items():
        if label == "write":
            assert res.is_error and res.structured_content["error"]["kind"] in {"not_select", "rejected"}
            continue
        assert not res.is_error, (label, res.content[0].text)
        validators[{"list": "list_databases", "run": "run_sql", "bad": "check_sql", "good": "check_sql"}.get(label, label)] \
            .validate(res.structured_content)
    assert [d["name"] for d in calls["list"].structured_content["databases"]] == ["demo", "chinook"]
    assert calls["run"].structured_content["rows"] == [[412]]
    bad = calls["bad"].structured_content["verdict"]
    assert bad["gate"] == "abstain" and "join_key_meaning" in bad["reasons"]
    assert calls["good"].structured_content["verdict"]["gate"] == "pass"
    assert file_digest(chinook_path) == before
    assert str(chinook_path) not in json.dumps([r.structured_content for r in calls.values()])


def test_http_needs_the_token_and_a_loopback_host(http_server):
    import httpx2

    url, token = http_server
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=30) as http:
        r = http.post(url, json=init, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["kind"] == "unauthorized"
        r = http.post(url, json=init, headers={**headers, "Authorization": "Bearer wrong-token-of-some-length"})
        assert r.status_code == 401
        r = http.post(url, json=init, headers={**headers, "Authorization": f"Bearer {token}", "Host": "evil.example"})
        assert r.status_code in (400, 403, 421)
        r = http.post(url, json=init, headers={**headers, "Authorization": f"Bearer {token}"})
        assert r.status_code == 200


@pytest.mark.parametrize("args, token, says", [
    (["--transport", "http", "--host", "0.0.0.0"], None, "refusing to listen on 0.0.0.0 without a token"),
    (["--transport", "http", "--db", "a=x.sqlite"], "short", "VOUCH_TOKEN is shorter than 16 characters"),
    ([], None, "no database to serve"),
    (["--db", "a=/nonexistent/x.sqlite"], None, "database 'a'"),
])
def test_refuses_to_start_unguarded_or_empty(args, token, says, clean_env, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOUCH_")}
    env["VOUCH_CACHE_DIR"] = str(tmp_path / "cache")
    if token:
        env["VOUCH_TOKEN"] = token
    r = subprocess.run([VOUCH, "mcp", *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_vouch_help_does_not_import_the_sdk():
    code = ("import sys, vouchsql.cli as c; c.build_parser().format_help(); "
            "print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# -- the transcript in docs/agents.md -----------------------------------------------------------------

def _transcript(run) -> str:
    shown = ["list", "describe", "tie", "bad_join", "write", "missing_arg"]
    lines = ["<!-- written by tests/test_mcp.py (VOUCH_MCP_TRANSCRIPT=FILE); results clipped -->", ""]
    for label in shown:
        tool, args, res = run["calls"][label]
        data = res.structured_content
        lines += [f"**→ {tool}** `{json.dumps(args, ensure_ascii=False)}`", "",
                  f"**← {'error' if res.is_error else 'result'}**", "", "```json",
                  _pretty(_clip(data)), "```", ""]
    return "\n".join(lines)


def _pretty(data, indent: str = "") -> str:
    """JSON with each object's fields on their own lines, and anything short on one line."""
    flat = json.dumps(data, ensure_ascii=False)
    if len(flat) + len(indent) <= 100 or not isinstance(data, (dict, list)) or not data:
        return flat
    inner = indent + "  "
    if isinstance(data, dict):
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, inner)}" for k, v in data.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [inner + _pretty(v, inner) for v in data]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"


def _clip(data, depth: int = 0):
    """A readable excerpt: lists cut to 3 items, result rows to 3, timings dropped."""
    if isinstance(data, dict):
        return {k: _clip(v, depth + 1) for k, v in data.items()
                if k not in {"elapsed_ms", "evidence", "terms", "usage", "interpretations", "premise", "text",
                             "agreement_bounds"}}
    if isinstance(data, list):
        kept = [_clip(v, depth + 1) for v in data[:3]]
        return kept + ([f"… {len(data) - 3} more"] if len(data) > 3 else [])
    return data


# -- limits, in process (the SDK's Client connected to the server object) -----------------------------

SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"


def _in_process(tools, calls, **server_options):
    from mcp import Client

    from vouchsql.mcp_server.server import build_server

    async def main():
        async with Client(build_server(tools, **server_options)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(main)


@pytest.fixture
def make_tools(demo_copy, mcp_cache):
    from vouchsql.mcp_server.tools import Tools
    from vouchsql.settings import load_config

    def make(**options):
        settings = options.pop("settings", {})
        tools = Tools({"demo": str(demo_copy)}, load_config(env={}, cache_dir=str(mcp_cache), **settings), **options)
        tools.warm()
        return tools

    return make


def test_a_slow_query_stops_at_the_query_timeout(make_tools):
    (res,) = _in_process(make_tools(settings={"timeout": 0.5}), [("run_sql", {"database": "demo", "sql": SLOW})])
    assert res.is_error and res.structured_content["error"]["kind"] == "timeout"


def test_a_call_past_its_limit_is_a_structured_timeout(make_tools):
    started = time.monotonic()
    (res,) = _in_process(make_tools(settings={"timeout": 3}), [("run_sql", {"database": "demo", "sql": SLOW})],
                         call_timeout=0.3)
    assert res.is_error and res.structured_content["error"]["kind"] == "timeout"
    assert "--call-timeout" in res.structured_content["error"]["message"]
    assert time.monotonic() - started < 3  # answered at the call's limit, not the query's


def test_a_large_result_is_cut_to_the_response_limit(make_tools):
    tools = make_tools(max_response=64 * 1024)
    (res,) = _in_process(tools, [("run_sql", {"database": "demo", "sql": "SELECT * FROM order_items",
                                              "max_rows": 10_000})])
    assert not res.is_error
    out = res.structured_content
    assert out["truncated"] and out["truncated_reason"] == "bytes" and 0 < len(out["rows"]) < out["row_count"]
    assert len(json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()) <= 64 * 1024


def test_arguments_that_are_not_an_object_are_refused(make_tools):
    tools = make_tools()
    payload, is_error = tools.call("run_sql", ["SELECT 1"])
    assert is_error and payload["error"]["kind"] == "bad_input"
    payload, is_error = tools.call("check_sql", {"database": "demo", "question": "q",
                                                 "candidates": ["SELECT 1"] * 17})
    assert is_error and "candidates" in payload["error"]["message"]
    payload, is_error = tools.call("run_sql", {"database": "demo", "sql": "SELECT 1", "max_rows": 0})
    assert is_error and "max_rows" in payload["error"]["message"]


def test_an_unknown_resource_or_prompt_is_a_protocol_error(make_tools):
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from vouchsql.mcp_server.server import build_server

    async def main():
        out = []
        async with Client(build_server(make_tools())) as client:
            for call in (lambda: client.read_resource("vouch://profile/nope"),
                         lambda: client.read_resource("file:///etc/passwd"),
                         lambda: client.get_prompt("nope", {}),
                         lambda: client.get_prompt("answer_with_vouch", {"database": "demo"})):
                try:
                    await call()
                    out.append(None)
                except MCPError as exc:
                    out.append(exc.error.message)
        return out

    messages = anyio.run(main)
    assert all(messages) and "vouch://profile/NAME for: demo" in messages[0] and "database and question" in messages[3]
    assert not any("Traceback" in m for m in messages)


def test_describe_clips_to_the_first_tables_and_names_the_rest(make_tools):
    from vouchsql.mcp_server.tools import describe_profile

    tools = make_tools()
    db = tools._open("demo")
    try:
        profile = db.profile()
    finally:
        db.close()
    out = describe_profile(profile, "demo", None, 3, max_tables=4)
    assert len(out["tables"]) == 4 and len(out["more_tables"]) == len(profile.tables) - 4
    named = describe_profile(profile, "demo", ["ORDERS"], 0)  # names match regardless of case
    assert [t["name"] for t in named["tables"]] == ["orders"]
    assert all(c["top_values"] == [] for c in named["tables"][0]["columns"])


def test_a_call_past_its_limit_is_stopped_and_holds_its_slot_until_then(make_tools):
    """Issue 27, item 5: the timed-out call's query is interrupted on the engine before its
    slot is freed. With one slot, a second call waits for the first to stop — which takes
    moments, not the 30 s query timeout the SLOW query would otherwise run to."""
    started = time.monotonic()
    slow, quick = _in_process(make_tools(settings={"timeout": 30}),
                              [("run_sql", {"database": "demo", "sql": SLOW}),
                               ("run_sql", {"database": "demo", "sql": "SELECT COUNT(*) AS n FROM stores"})],
                              call_timeout=0.5, max_concurrent=1)
    assert slow.is_error and slow.structured_content["error"]["kind"] == "timeout"
    assert not quick.is_error and quick.structured_content["rows"] == [[8]]
    assert time.monotonic() - started < 10


def test_the_concurrency_limit_holds_on_postgresql_under_load(pg, mcp_cache):
    """A 50-call soak against a limit of 4, every call past its limit: the server never runs
    more than 4 of their queries at once (pg_stat_activity, read by a watcher), and none is
    left running after (issue 27, item 5)."""
    import threading
    import uuid

    import psycopg
    from mcp import Client

    from vouchsql.mcp_server.server import build_server
    from vouchsql.mcp_server.tools import Tools
    from vouchsql.settings import load_config

    url, _, _ = pg
    tag = f"soak_{uuid.uuid4().hex[:8]}"
    sql = f"SELECT count(*) AS n, '{tag}' AS tag FROM generate_series(1, 2000000000)"
    active = (f"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%{tag}%' "
              "AND pid <> pg_backend_pid()")
    tools = Tools({"pg": url}, load_config(env={}, cache_dir=str(mcp_cache), timeout=30))
    tools.warm()  # the catalogue read once, so every call's time goes to its query
    seen, stop = [0], threading.Event()

    def watch():
        with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True) as conn:
            while not stop.is_set():
                seen[0] = max(seen[0], conn.execute(active).fetchone()[0])
                time.sleep(0.02)

    async def main():
        async with Client(build_server(tools, call_timeout=0.6, max_concurrent=4)) as client:
            out = []

            async def one():
                out.append(await client.call_tool("run_sql", {"database": "pg", "sql": sql}))

            async with anyio.create_task_group() as tg:
                for _ in range(50):  # a call every 40 ms, each wanting 0.6 s: more than 4 at once
                    tg.start_soon(one)
                    await anyio.sleep(0.04)
            return out

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        results = anyio.run(main)
    finally:
        stop.set()
        watcher.join(5)
    assert len(results) == 50 and all(r.is_error for r in results)
    assert 1 <= seen[0] <= 4, seen[0]
    time.sleep(0.5)
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True) as conn:
        assert conn.execute(active).fetchone()[0] == 0

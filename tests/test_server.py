"""The HTTP API in process (FastAPI's TestClient over the real app and the real demo
database): auth, the database allow-list, bad input, limits, the check contract, profile,
examples, ask availability, and that the page ships without remote code or HTML injection."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("httpx", reason="httpx is needed by FastAPI's TestClient")

import jsonschema  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from fakes.servers import Script, ScriptedServer, assess_reply  # noqa: E402
from vouchsql import api, schemas  # noqa: E402
from vouchsql.demo import EXAMPLES  # noqa: E402
from vouchsql.errors import UserInputError  # noqa: E402
from vouchsql.server import cli as server_cli  # noqa: E402
from vouchsql.server.access import LOOPBACK_NAMES  # noqa: E402
from vouchsql.server.app import STATIC_DIR, ServerOptions, create_app, is_loopback  # noqa: E402
from vouchsql.settings import load_config  # noqa: E402

TOKEN = "t0ken-for-tests-0123456789"
TIE = EXAMPLES[0]
assert TIE["title"] == "Tie at the top price"
SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.fixture(autouse=True)
def isolated(clean_env):
    """No vouch.toml or VOUCH_* variable from the developer's machine leaks in."""


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return load_config(env={}, cwd=tmp_path_factory.mktemp("cwd"), cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def other_db(tmp_path_factory, demo_db):
    path = tmp_path_factory.mktemp("other") / "other.sqlite"
    shutil.copyfile(demo_db, path)
    return path


def make_client(config, dbs, **options) -> TestClient:
    options.setdefault("examples", {"demo": EXAMPLES} if "demo" in dbs else {})
    return TestClient(create_app(ServerOptions(databases={k: str(v) for k, v in dbs.items()}, **options), config))


@pytest.fixture(scope="module")
def client(config, demo_db, other_db):
    return make_client(config, {"demo": demo_db, "other": other_db})


@pytest.fixture(scope="module")
def secured(config, demo_db):
    return make_client(config, {"demo": demo_db}, token=TOKEN)


def auth(token=TOKEN):
    return {"Authorization": f"Bearer {token}"}


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["kind"] and body["error"]["message"]
    assert "Traceback" not in response.text
    return body["error"]


# -- auth ---------------------------------------------------------------------------------------

def test_with_a_token_every_api_call_needs_it_even_on_loopback(secured):
    for method, path, body in [("GET", "/api/databases", None), ("GET", "/api/info", None),
                               ("GET", "/api/profile/demo", None), ("GET", "/api/examples/demo", None),
                               ("POST", "/api/check", {"db": "demo", "question": "q", "candidates": ["SELECT 1"]}),
                               ("POST", "/api/ask", {"db": "demo", "question": "q"})]:
        for headers in ({}, auth("wrong-token-wrong-token"), {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
            r = secured.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (path, headers, r.text)
            assert error_of(r)["kind"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
    assert secured.get("/api/databases", headers=auth()).status_code == 200
    r = secured.post("/api/check", json={"db": "demo", "question": "How many?", "candidates": ["SELECT 1"]}, headers=auth())
    assert r.status_code == 200


def test_health_the_page_and_the_docs_need_no_token(secured):
    assert secured.get("/health").json() == {"status": "ok", "version": __import__("vouchsql").__version__}
    page = secured.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert secured.get("/static/app.js").status_code == 200
    assert secured.get("/static/app.css").status_code == 200
    assert secured.get("/docs").status_code == 200
    paths = secured.get("/openapi.json").json()["paths"]
    assert {"/api/check", "/api/ask", "/api/databases", "/api/profile/{name}", "/api/examples/{name}", "/health"} <= set(paths)
    assert secured.get("/api/info", headers=auth()).json()["auth"] is True


def test_without_a_token_loopback_is_open(client):
    assert client.get("/api/databases").status_code == 200
    assert client.get("/api/info").json()["auth"] is False


@pytest.mark.parametrize("host,loop", [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
                                       ("127.0.0.2", True), ("0.0.0.0", False), ("192.168.1.5", False),
                                       ("::", False), ("example.com", False)])
def test_loopback_detection(host, loop):
    assert is_loopback(host) is loop


def test_the_server_refuses_to_listen_off_loopback_without_a_token(monkeypatch, config, demo_db):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    server_cli.register(sub, argparse.ArgumentParser(add_help=False))
    args = parser.parse_args(["serve", "--db", f"demo={demo_db}", "--host", "0.0.0.0", "--port", "8765"])
    with pytest.raises(UserInputError, match="VOUCH_TOKEN") as info:
        args.handler(args, config, None)
    assert info.value.exit_code == 2
    monkeypatch.setenv("VOUCH_TOKEN", "short")
    with pytest.raises(UserInputError, match="shorter than 16"):
        args.handler(args, config, None)
    server_cli.check_listen("0.0.0.0", TOKEN)  # with a long token it would start
    server_cli.check_listen("127.0.0.1", None)


def test_vouch_serve_through_the_real_cli_exits_2_off_loopback(demo_db, capsys):
    from vouchsql.cli import build_parser, main

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    if "serve" not in commands:
        pytest.skip("vouch serve is not wired into vouchsql/cli.py yet (server.cli.register(sub, common))")
    assert main(["serve", "--db", f"demo={demo_db}", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "VOUCH_TOKEN" in err and "Traceback" not in err


def test_host_header_guard_on_loopback(config, demo_db):
    c = make_client(config, {"demo": demo_db}, allowed_hosts=list(LOOPBACK_NAMES))
    assert c.get("/api/databases", headers={"Host": "127.0.0.1:8000"}).status_code == 200
    assert c.get("/api/databases", headers={"Host": "localhost"}).status_code == 200
    assert c.get("/api/databases", headers={"Host": "[::1]:8000"}).status_code == 200
    r = c.get("/api/databases", headers={"Host": "attacker.example:8000"})
    assert r.status_code == 400 and error_of(r)["kind"] == "bad_host"


# -- the allow-list -------------------------------------------------------------------------------

def test_databases_lists_names_only(client, demo_db):
    body = client.get("/api/databases").json()
    assert [d["name"] for d in body["databases"]] == ["demo", "other"]
    demo = body["databases"][0]
    assert demo["engine"] == "sqlite" and demo["tables"] == 11 and demo["examples"] == len(EXAMPLES)
    assert str(demo_db) not in json.dumps(body) and str(demo_db) not in client.get("/api/info").text


@pytest.mark.parametrize("name", ["nope", "DEMO", "demo.sqlite", "..", "%2e%2e%2fdemo"])
def test_unknown_database_is_404_with_the_known_names(client, name):
    for r in (client.post("/api/check", json={"db": name, "question": "q", "candidates": ["SELECT 1"]}),
              client.post("/api/ask", json={"db": name, "question": "q"}),
              client.get(f"/api/profile/{name}"),
              client.get(f"/api/examples/{name}")):
        assert r.status_code == 404, r.text
        err = error_of(r)
        if err["kind"] == "unknown_database":
            assert err["databases"] == ["demo", "other"]
            assert "demo" in err["message"]


def test_a_path_in_the_request_is_never_opened(client, demo_db, other_db):
    for target in (str(demo_db), f"sqlite:///{demo_db}", str(other_db.parent)):
        r = client.post("/api/check", json={"db": target, "question": "q", "candidates": ["SELECT 1"]})
        assert r.status_code in (404, 422)
    r = client.post("/api/check", json={"db": "demo", "path": str(demo_db), "question": "q", "candidates": ["SELECT 1"]})
    assert r.status_code == 422 and "path" in error_of(r)["message"]


# -- bad input and limits -----------------------------------------------------------------------------

@pytest.mark.parametrize("body,where", [
    ({"question": "q", "candidates": ["SELECT 1"]}, "db"),
    ({"db": "demo", "candidates": ["SELECT 1"]}, "question"),
    ({"db": "demo", "question": "", "candidates": ["SELECT 1"]}, "question"),
    ({"db": "demo", "question": "q"}, "candidates"),
    ({"db": "demo", "question": "q", "candidates": []}, "candidates"),
    ({"db": "demo", "question": "q", "candidates": "SELECT 1"}, "candidates"),
    ({"db": "demo", "question": "q", "candidates": [1]}, "candidates.0"),
    ({"db": "demo", "question": "q", "candidates": ["   "]}, "candidates.0"),
    ({"db": "demo", "question": "q", "candidates": ["SELECT 1"] * 17}, "candidates"),
    ({"db": "demo", "question": "q", "candidates": ["SELECT 1"], "all_choices": "maybe"}, "all_choices"),
    ({"db": ["demo"], "question": "q", "candidates": ["SELECT 1"]}, "db"),
    ([1, 2], "body"),
])
def test_bad_check_bodies_are_422_with_a_clear_message(client, body, where):
    r = client.post("/api/check", json=body)
    assert r.status_code == 422, r.text
    err = error_of(r)
    assert err["kind"] == "bad_input"
    assert err["message"].startswith("invalid request: ") and where in err["message"]


def test_invalid_json_wrong_type_and_bad_rule(client):
    r = client.post("/api/check", content=b'{"db": "demo", ', headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "not valid JSON" in error_of(r)["message"]
    body = json.dumps({"db": "demo", "question": "q", "candidates": ["SELECT 1"]})
    r = client.post("/api/check", content=body, headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and "application/json" in error_of(r)["message"]
    r = client.post("/api/check", json={"db": "demo", "question": "q", "candidates": ["SELECT 1"], "rule": "nonsense"})
    # the rule is part of the request's schema (contract.py): named with the rules there are
    assert r.status_code == 422 and "rule: Input should be 'designed'" in error_of(r)["message"]
    r = client.post("/api/ask", json={"db": "demo", "question": "q", "k": 99})
    assert r.status_code == 422 and "k" in error_of(r)["message"]
    r = client.get("/api/check")
    assert r.status_code == 405
    r = client.get("/api/nothing-here")
    assert r.status_code == 404 and error_of(r)["kind"] == "not_found"


def test_body_over_the_limit_is_413(client):
    big = {"db": "demo", "question": "q", "candidates": ["SELECT 1 -- " + "x" * 70_000]}
    r = client.post("/api/check", json=big)
    assert r.status_code == 413 and error_of(r)["kind"] == "too_large"

    def chunks():  # no Content-Length: the guard counts what arrives
        for _ in range(5):
            yield b" " * 20_000

    r = client.post("/api/check", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413


def test_a_smaller_body_limit_is_honoured(config, demo_db):
    c = make_client(config, {"demo": demo_db}, max_body=200)
    ok = c.post("/api/check", json={"db": "demo", "question": "q", "candidates": ["SELECT 1"]})
    assert ok.status_code == 200
    r = c.post("/api/check", json={"db": "demo", "question": "q" * 300, "candidates": ["SELECT 1"]})
    assert r.status_code == 413 and "200-byte" in error_of(r)["message"]


def test_a_request_past_its_time_limit_is_504_and_stops_its_queries(config, demo_db):
    c = make_client(config, {"demo": demo_db}, request_timeout=1.0)
    import time

    start = time.monotonic()
    r = c.post("/api/check", json={"db": "demo", "question": "How many?", "candidates": [SLOW, SLOW, SLOW]})
    took = time.monotonic() - start
    assert r.status_code == 504, r.text
    assert "1 s limit" in error_of(r)["message"]
    assert took < 3.5, f"the limit was not enforced: {took:.1f} s"  # three 10 s queries would take 30 s
    assert c.post("/api/check", json={"db": "demo", "question": "q", "candidates": ["SELECT 1"]}).status_code == 200


def test_the_query_timeout_setting_applies(tmp_path, demo_db):
    cfg = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), timeout=0.3)
    c = make_client(cfg, {"demo": demo_db})
    assert c.get("/api/info").json()["limits"]["query_timeout_s"] == 0.3
    body = c.post("/api/check", json={"db": "demo", "question": "How many?", "candidates": [SLOW]}).json()
    assert body["shown"]["result"]["error"]["kind"] == "timeout"
    assert body["verdict"]["gate"] == "abstain"


# -- the check contract --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def validator():
    schema = json.loads(schemas.ANSWER_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _without_timings(obj):
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if k != "elapsed_ms"}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["title"] for e in EXAMPLES])
def test_check_returns_the_vouch_check_json(client, validator, config, demo_db, example):
    candidates = [example["sql"]] + ([example["alt_sql"]] if example.get("alt_sql") else [])
    r = client.post("/api/check", json={"db": "demo", "question": example["question"], "candidates": candidates})
    assert r.status_code == 200, r.text
    body = r.json()
    validator.validate(body)
    expected = api.check(demo_db, example["question"], candidates, config=config).model_dump(mode="json")
    assert _without_timings(body) == _without_timings(expected)


def test_check_passes_answer_text_hint_rule_and_all_choices(client, demo_db, config):
    q, sql = TIE["question"], TIE["sql"]
    body = {"db": "demo", "question": q, "candidates": [sql, sql], "answer_text": "It costs 1300.", "hint": "price in dollars",
            "rule": "designed", "all_choices": True}
    got = client.post("/api/check", json=body).json()
    assert got["answer_text"] == "It costs 1300." and got["hint"] == "price in dollars"
    assert got["verdict"]["rule"] == "designed"
    assert "uncited_number" in got["verdict"]["reasons"]
    expected = api.check(demo_db, q, [sql, sql], answer_text="It costs 1300.", hint="price in dollars", rule="designed",
                         all_choices=True, config=config).model_dump(mode="json")
    assert _without_timings(got) == _without_timings(expected)


def test_tie_example_names_the_open_choice_with_the_alternative_result(client):
    body = client.post("/api/check", json={"db": "demo", "question": TIE["question"],
                                           "candidates": [TIE["sql"], TIE["alt_sql"]]}).json()
    assert body["verdict"]["gate"] == "abstain"
    assert body["shown"]["result"]["row_count"] == 1
    if not body["choices"]:
        pytest.skip("no choice detector reported the tie yet (choices are built in another issue)")
    tie = next(c for c in body["choices"] if c["type"] == "ties")
    assert tie["differs"] and tie["settled_by"] is None
    assert tie["result"]["row_count"] == 5
    assert "open_choice:ties" in body["verdict"]["reasons"]


def test_writes_are_refused_and_the_file_is_unchanged(client, demo_db, file_digest):
    before = file_digest(demo_db)
    for sql in ("DELETE FROM orders", "DROP TABLE orders", "UPDATE products SET price = 0",
                "ATTACH DATABASE '/tmp/x.sqlite' AS x", "SELECT 1; DELETE FROM orders"):
        r = client.post("/api/check", json={"db": "demo", "question": "q", "candidates": [sql]})
        assert r.status_code == 200
        body = r.json()
        assert body["shown"]["result"]["error"] is not None
        assert body["verdict"]["gate"] == "abstain"
    assert file_digest(demo_db) == before


def test_parallel_requests_each_use_their_own_connection(client):
    def one(i):
        ex = EXAMPLES[i % len(EXAMPLES)]
        r = client.post("/api/check", json={"db": "demo" if i % 2 else "other", "question": ex["question"],
                                            "candidates": [ex["sql"]]})
        return r.status_code, r.json()["shown"]["result"]["error"]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(24)))
    assert all(code == 200 and err is None for code, err in results), results


def test_an_internal_failure_is_a_json_500_without_a_traceback(client, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("secret internals at /srv/private")

    monkeypatch.setattr(api, "check", boom)
    r = client.post("/api/check", json={"db": "demo", "question": "q", "candidates": ["SELECT 1"]})
    assert r.status_code == 500
    err = error_of(r)
    assert err["kind"] == "internal" and "/srv/private" not in r.text


def test_a_database_that_goes_away_is_503_without_its_path(config, demo_db, tmp_path):
    path = tmp_path / "gone.sqlite"
    shutil.copyfile(demo_db, path)
    c = make_client(config, {"gone": path})
    path.unlink()
    r = c.post("/api/check", json={"db": "gone", "question": "q", "candidates": ["SELECT 1"]})
    assert r.status_code == 503 and error_of(r)["kind"] == "unavailable"
    assert str(tmp_path) not in r.text


# -- profile, examples, ask -------------------------------------------------------------------------------

def test_profile_endpoint(client, demo_db):
    r = client.get("/api/profile/demo")
    assert r.status_code == 200
    body = r.json()
    assert {t["name"] for t in body["tables"]} >= {"products", "orders", "customers", "loyalty_accounts"}
    price = next(c for t in body["tables"] if t["name"] == "products" for c in t["columns"] if c["name"] == "price")
    assert price["max"] == 1299.0
    assert body["target"] == "demo"
    assert str(demo_db) not in r.text and str(demo_db.parent) not in r.text


def test_examples_for_the_demo_and_none_for_others(client):
    demo = client.get("/api/examples/demo").json()
    assert demo["database"] == "demo"
    assert [e["title"] for e in demo["examples"]] == [e["title"] for e in EXAMPLES]
    assert demo["examples"][0] == {k: TIE.get(k) for k in ("title", "question", "sql", "alt_sql", "shows")}
    assert client.get("/api/examples/other").json() == {"database": "other", "examples": []}


def test_ask_without_a_model_is_503(client, monkeypatch):
    monkeypatch.setattr(api, "ask", lambda *a, **k: pytest.fail("must not be called"), raising=False)
    r = client.post("/api/ask", json={"db": "demo", "question": "Which product is the most expensive?"})
    assert r.status_code == 503
    err = error_of(r)
    assert err["kind"] == "no_model" and "--model" in err["message"] and "VOUCH_MODEL" in err["message"]


def test_ask_with_a_model_calls_vouchsql_ask(config, demo_db, monkeypatch):
    calls = []

    def fake_ask(db, question, **kwargs):
        calls.append((db.engine, question, kwargs))
        return api.check(db, question, [TIE["sql"]])

    monkeypatch.setattr(api, "ask", fake_ask, raising=False)
    c = make_client(config, {"demo": demo_db}, model="replay:/nowhere.jsonl")
    assert c.get("/api/info").json()["ask"] == {"available": True, "kind": None, "reason": None, "model": "replay:nowhere.jsonl"}
    r = c.post("/api/ask", json={"db": "demo", "question": TIE["question"], "k": 3})
    assert r.status_code == 200, r.text
    assert r.json()["shown"]["sql"] == TIE["sql"]
    assert calls == [("sqlite", TIE["question"], {"model": "replay:/nowhere.jsonl", "k": 3})]

    from vouchsql.errors import ModelError

    def failing(db, question, **kwargs):
        raise ModelError("the provider answered 500 three times")

    monkeypatch.setattr(api, "ask", failing)
    r = c.post("/api/ask", json={"db": "demo", "question": "q"})
    assert r.status_code == 502 and "500 three times" in error_of(r)["message"]


OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]
BY_CUSTOMER = "SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"
BY_ORDER = "SELECT COUNT(*) AS orders FROM orders"


def test_ask_end_to_end_with_a_scripted_model(tmp_path, demo_db, validator):
    """The real vouchsql.ask through the real openai SDK against a scripted server on loopback."""
    script = Script(assess=assess_reply(interpretations=INTERPS), write="See the result.",
                    samples={"each customer once": [BY_CUSTOMER], "every order row": [BY_ORDER]})
    with ScriptedServer(script) as srv:
        cfg = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), base_url=srv.base_url,
                          max_retries=1, retry_backoff=0.001, model_timeout=5)
        c = make_client(cfg, {"demo": demo_db}, model="openai:scripted")
        assert c.get("/api/info").json()["ask"]["available"] is True
        r = c.post("/api/ask", json={"db": "demo", "question": OPEN_Q, "k": 2, "prose": True})
    assert r.status_code == 200, r.text
    body = r.json()
    validator.validate(body)
    assert body["premise"]["is_valid"] is True
    assert [i["text"] for i in body["interpretations"]] == [t for t, _ in INTERPS]
    assert body["shown"]["sql"] == BY_CUSTOMER and body["interpretations"][1]["answer"]["shown"]["sql"] == BY_ORDER
    assert body["text"] == "See the result." and body["usage"]["model"].endswith("scripted")
    assert str(demo_db) not in r.text


# -- start-up and configuration ------------------------------------------------------------------------------

def test_start_up_refuses_bad_databases_and_names(config, demo_db, tmp_path):
    with pytest.raises(UserInputError, match="'missing'"):
        create_app(ServerOptions(databases={"missing": str(tmp_path / "nope.sqlite")}), config)
    with pytest.raises(UserInputError, match="database name"):
        create_app(ServerOptions(databases={"../etc": str(demo_db)}), config)
    with pytest.raises(UserInputError, match="examples"):
        create_app(ServerOptions(databases={"demo": str(demo_db)}, examples={"nope": EXAMPLES}), config)


def test_serve_refuses_without_databases(config):
    with pytest.raises(UserInputError, match="--db NAME=PATH"):
        server_cli.serve({}, config)


def test_db_specs(tmp_path):
    assert server_cli.parse_db_specs(["shop=/data/shop.sqlite", "/data/chinook.sqlite"]) == {
        "shop": "/data/shop.sqlite", "chinook": "/data/chinook.sqlite"}
    url = "postgresql://me@host/db?sslmode=require"
    assert server_cli.parse_db_specs([f"pg={url}"]) == {"pg": url}
    assert list(server_cli.parse_db_specs([url])) == ["db"]
    with pytest.raises(UserInputError, match="two databases"):
        server_cli.parse_db_specs(["a=/x.sqlite", "a=/y.sqlite"])
    with pytest.raises(UserInputError, match="no path"):
        server_cli.parse_db_specs(["a="])


def test_model_comes_from_the_option_then_vouch_model(monkeypatch, config):
    assert server_cli.resolve_model(None, config) is None
    monkeypatch.setenv("VOUCH_MODEL", "openai:gpt-4o-mini")
    assert server_cli.resolve_model(None, config) == "openai:gpt-4o-mini"
    assert server_cli.resolve_model("anthropic:claude", config) == "anthropic:claude"


# -- the page ---------------------------------------------------------------------------------------------------

def test_the_page_ships_in_the_package_without_remote_code_or_html_injection():
    files = {p.name: p.read_text(encoding="utf-8") for p in STATIC_DIR.iterdir() if p.is_file()}
    assert set(files) == {"index.html", "app.js", "app.css"}
    for name, text in files.items():
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), f"{name} refers to a remote resource"
    js = files["app.js"]
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in js, f"app.js uses {sink}"
    html = files["index.html"]
    assert re.findall(r'(?:src|href)="([^"#]+)"', html) == ["data:,", "/static/app.css", "/static/app.js"]
    assert "<script>" not in html and "style=" not in html
    # Ctrl+Enter, tabs with ARIA roles, a live region for the answer
    assert "ctrlKey" in js and 'role: "tablist"' in js and 'role: "tab"' in js and 'role: "tabpanel"' in js
    assert 'aria-live="polite"' in html


def test_the_static_files_are_packaged():
    import tomllib

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "server/static/*" in data["tool"]["setuptools"]["package-data"]["vouchsql"]

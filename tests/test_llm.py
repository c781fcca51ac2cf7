"""The model layer: provider specs, lazy SDK imports, the tolerant JSON reader with one
repair, retries with backoff, the concurrency limit, accounting, the response cache,
cassettes, and the prompts. No test reaches a network: a function-backed fake, or the real
SDKs against scripted servers on loopback (see tests/fakes)."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from fakes.servers import Reply, ScriptedServer
from vouchsql.errors import ModelError, UserInputError
from vouchsql.llm import (LLM, BadOutput, Cassette, Completion, FakeModel, ReplayMiss, ReplayModel, Request,
                          ResponseCache, TransientModelError, get_model, list_prompts, load_prompt,
                          parse_json_object, prompt_hashes)
from vouchsql.settings import load_config


def req(text: str = "hello", sample: int = 0) -> Request:
    return Request.of([{"role": "system", "content": "# Task: test"}, {"role": "user", "content": text}],
                      sample=sample)


def fake_llm(fn, **kwargs) -> tuple[LLM, FakeModel, list[float]]:
    sleeps: list[float] = []
    model = FakeModel(fn)
    kwargs.setdefault("backoff", 0.01)
    return LLM(model, sleep=sleeps.append, **kwargs), model, sleeps


# -- provider specs and extras -------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["gpt-4o", "openai", "openai:", "nope:model", ":model", ""])
def test_bad_model_specs_are_user_errors(spec):
    with pytest.raises(UserInputError, match="provider:model"):
        get_model(spec)


def test_openai_spec_needs_a_key_or_a_base_url():
    with pytest.raises(UserInputError, match="OPENAI_API_KEY"):
        get_model("openai:gpt-4o-mini")
    model = get_model("openai:local-model", base_url="http://127.0.0.1:9/v1")
    assert (model.provider, model.name, model.endpoint) == ("openai", "local-model", "http://127.0.0.1:9/v1")


def test_anthropic_spec_needs_a_key_or_a_base_url():
    with pytest.raises(UserInputError, match="ANTHROPIC_API_KEY"):
        get_model("anthropic:claude-x")
    assert get_model("anthropic:claude-x", base_url="http://127.0.0.1:9").provider == "anthropic"


def test_base_url_comes_from_the_environment_too(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert get_model("openai:m").endpoint == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("provider, extra", [("openai", "vouchsql[openai]"), ("anthropic", "vouchsql[anthropic]")])
def test_a_missing_sdk_names_its_extra(monkeypatch, provider, extra):
    monkeypatch.setitem(sys.modules, provider, None)  # makes `import openai` raise ImportError
    with pytest.raises(UserInputError) as info:
        get_model(f"{provider}:m", base_url="http://127.0.0.1:9")
    assert f"pip install '{extra}'" in info.value.message


def test_sdks_are_imported_lazily():
    import subprocess

    code = ("import sys, vouchsql, vouchsql.pipeline.asking, vouchsql.llm, vouchsql.ask_cli; "
            "print(any(m in sys.modules for m in ('openai', 'anthropic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the tolerant JSON reader ------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n{"a": 1}\n```\nHope this helps!', {"a": 1}),
    ('Here is the JSON: {"a": {"b": [1, 2]}} and some words after it.', {"a": {"b": [1, 2]}}),
    ('{"a": 1,}', {"a": 1}),
    ('{"a": [1, 2,],}', {"a": [1, 2]}),
    ('{"sql": "SELECT \'{x}\' FROM t"}', {"sql": "SELECT '{x}' FROM t"}),
    ('```json\n{"a": 1}', {"a": 1}),  # an unclosed fence
])
def test_json_reader_tolerates_fences_and_trailing_text(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("   \n", "empty"), (None, "empty"),
    ('{"sql": "SELECT COUNT(*) FR', "cut off"),
    ("no json here", "no JSON object"),
    ('[1, 2]', "no JSON object"),
    ('{"a": 1 "b": 2}', "malformed"),
])
def test_json_reader_says_why_it_failed(text, message):
    with pytest.raises(BadOutput, match=message):
        parse_json_object(text)


def test_one_repair_request_then_success():
    replies = iter(['{"answer": ', '{"answer": 42}'])
    llm, model, _ = fake_llm(lambda r: next(replies))
    assert llm.complete_json(req(), stage="s") == {"answer": 42}
    repair = model.requests[1]
    assert [r for r, _ in repair.messages] == ["system", "user", "assistant", "user"]
    assert repair.messages[2][1] == '{"answer":'
    assert "cut off" in repair.messages[3][1]
    u = llm.accounting.stages["s"]
    assert (u.calls, u.requests, u.repairs) == (2, 2, 1)


def test_only_one_repair_then_model_error():
    llm, model, _ = fake_llm(lambda r: "not json")
    with pytest.raises(ModelError) as info:
        llm.complete_json(req(), stage="assess")
    assert info.value.kind == "model_bad_output" and info.value.message.startswith("assess:")
    assert len(model.requests) == 2


def test_validation_failures_are_repaired_too():
    replies = iter(['{"x": 1}', '{"sql": "SELECT 1"}'])

    def validate(d):
        if "sql" not in d:
            raise BadOutput("the object has no 'sql' field")
        return d["sql"]

    llm, model, _ = fake_llm(lambda r: next(replies))
    assert llm.complete_json(req(), stage="generate", validate=validate) == "SELECT 1"
    assert "no 'sql' field" in model.requests[1].messages[-1][1]


def test_an_empty_reply_gets_a_placeholder_turn_in_the_repair():
    replies = iter(["", '{"ok": true}'])
    llm, model, _ = fake_llm(lambda r: next(replies))
    assert llm.complete_json(req(), stage="s") == {"ok": True}
    assert model.requests[1].messages[2] == ("assistant", "(empty reply)")


def test_text_replies_repair_an_empty_reply_once():
    replies = iter(["", "  "])
    llm, model, _ = fake_llm(lambda r: next(replies))
    with pytest.raises(ModelError, match="empty"):
        llm.complete_text(req(), stage="write")
    assert len(model.requests) == 2


# -- retries ----------------------------------------------------------------------------------------

def test_transient_errors_are_retried_with_doubling_backoff():
    failures = iter([TransientModelError("429", kind="model_rate_limited"),
                     TransientModelError("timeout", kind="model_timeout")])

    def fn(r):
        exc = next(failures, None)
        if exc:
            raise exc
        return "fine"

    llm, model, sleeps = fake_llm(fn, max_retries=3, backoff=0.5)
    assert llm.complete(req(), stage="s").text == "fine"
    assert sleeps == [0.5, 1.0]
    u = llm.accounting.stages["s"]
    assert (u.calls, u.requests, u.retries) == (1, 3, 2)


def test_retries_stop_at_max_retries():
    def fn(r):
        raise TransientModelError("HTTP 500", kind="model_server_error")

    llm, model, sleeps = fake_llm(fn, max_retries=2)
    with pytest.raises(ModelError) as info:
        llm.complete(req(), stage="generate")
    assert len(model.requests) == 3 and len(sleeps) == 2
    assert info.value.kind == "model_server_error"
    assert "gave up after 3 attempts" in info.value.message


def test_zero_retries_means_one_attempt():
    def fn(r):
        raise TransientModelError("timeout", kind="model_timeout")

    llm, model, sleeps = fake_llm(fn, max_retries=0)
    with pytest.raises(ModelError, match="1 attempt\\)"):
        llm.complete(req(), stage="s")
    assert len(model.requests) == 1 and sleeps == []


def test_permanent_errors_are_not_retried():
    def fn(r):
        raise ModelError("HTTP 400: bad model name", kind="model_request")

    llm, model, sleeps = fake_llm(fn, max_retries=5)
    with pytest.raises(ModelError, match="bad model name"):
        llm.complete(req(), stage="s")
    assert len(model.requests) == 1 and sleeps == []


# -- concurrency and accounting ------------------------------------------------------------------------

def test_concurrency_limit_holds():
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def fn(r):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.03)
        with lock:
            state["now"] -= 1
        return "ok"

    llm, _, _ = fake_llm(fn, concurrency=2)
    threads = [threading.Thread(target=llm.complete, args=(req(sample=i),), kwargs={"stage": "g"}) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["max"] == 2


def test_accounting_counts_tokens_and_latency_per_stage():
    llm, _, _ = fake_llm(lambda r: Completion(text="x", input_tokens=10, output_tokens=3))
    llm.complete(req("a"), stage="assess")
    llm.complete(req("b"), stage="generate")
    llm.complete(req("c"), stage="generate")
    usage = llm.usage(prompt_hashes("assess"))
    assert usage.model == "fake:fake"
    assert usage.stages["generate"].calls == 2 and usage.stages["generate"].input_tokens == 20
    assert usage.total.calls == 3 and usage.total.output_tokens == 9
    assert usage.total.latency_ms >= 0 and set(usage.prompts) == {"assess"}


# -- the response cache ------------------------------------------------------------------------------------

def test_cache_answers_a_repeated_request_without_a_call(tmp_path):
    llm, model, _ = fake_llm(lambda r: f"reply {len(model.requests)}", cache=ResponseCache(tmp_path))
    first = llm.complete(req(), stage="s").text
    again = llm.complete(req(), stage="s").text
    other_sample = llm.complete(req(sample=1), stage="s").text
    assert first == again == "reply 1" and other_sample == "reply 2"
    assert len(model.requests) == 2
    u = llm.accounting.stages["s"]
    assert (u.calls, u.requests, u.cached) == (3, 2, 1)


def test_cache_is_keyed_by_model_messages_and_parameters(tmp_path):
    cache = ResponseCache(tmp_path)
    a, model_a, _ = fake_llm(lambda r: "a", cache=cache)
    b = LLM(FakeModel(lambda r: "b", name="other"), cache=cache)
    a.complete(req(), stage="s")
    assert b.complete(req(), stage="s").text == "b"  # another model: not a hit
    hot = Request.of(list(req().message_dicts()), temperature=0.9)
    assert a.complete(hot, stage="s").text == "a" and len(model_a.requests) == 2


def test_a_corrupt_cache_file_is_asked_again(tmp_path):
    llm, model, _ = fake_llm(lambda r: "fresh", cache=ResponseCache(tmp_path))
    llm.complete(req(), stage="s")
    for f in tmp_path.rglob("*.json"):
        f.write_text("{not json")
    assert llm.complete(req(), stage="s").text == "fresh" and len(model.requests) == 2


# -- cassettes ----------------------------------------------------------------------------------------------

def test_record_then_replay_then_miss(tmp_path):
    path = tmp_path / "run.json"
    llm, _, _ = fake_llm(lambda r: f"answer to {r.messages[-1][1]}", cassette=Cassette.load(path, missing_ok=True))
    llm.complete(req("one"), stage="assess")
    llm.complete(req("two", sample=3), stage="generate")
    llm.save_cassette()
    data = json.loads(path.read_text())
    assert data["format"] == "vouch-cassette/1" and len(data["entries"]) == 2
    assert {e["stage"] for e in data["entries"]} == {"assess", "generate"}

    replay = LLM(get_model(f"replay:{path}"), cache=ResponseCache(tmp_path / "c"))
    assert replay.complete(req("two", sample=3), stage="generate").text == "answer to two"
    assert replay.accounting.stages["generate"].requests == 0
    assert replay.accounting.stages["generate"].cached == 1
    with pytest.raises(ReplayMiss, match="holds no answer"):
        replay.complete(req("two", sample=4), stage="generate")  # another sample is another request
    with pytest.raises(ReplayMiss):
        replay.complete(req("three"), stage="assess")


def test_a_missing_or_foreign_cassette_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError, match="no cassette"):
        ReplayModel(tmp_path / "absent.json")
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(UserInputError, match="not a Vouch cassette"):
        ReplayModel(tmp_path / "x.json")


def test_llm_from_config_reads_the_settings(tmp_path):
    from vouchsql.llm import llm_from_config

    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path), max_retries=0, retry_backoff=0.001,
                         concurrency=3, no_model_cache=True)
    llm = llm_from_config("openai:m", config, base_url="http://127.0.0.1:9/v1")
    assert llm.max_retries == 0 and llm.backoff == 0.001 and llm.cache is None
    assert llm_from_config("openai:m", config.with_overrides(no_model_cache=False),
                           base_url="http://127.0.0.1:9/v1").cache.folder == tmp_path / "llm"


# -- the real SDKs against scripted servers -----------------------------------------------------------------

def _sdk_llm(server: ScriptedServer, provider: str, **kwargs) -> LLM:
    model = get_model(f"{provider}:scripted-model", base_url=server.base_url, timeout=kwargs.pop("timeout", 5.0))
    return LLM(model, backoff=0.001, **kwargs)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_round_trip(provider):
    with ScriptedServer(lambda call: Reply(content="pong", input_tokens=5, output_tokens=2), protocol=provider) as srv:
        llm = _sdk_llm(srv, provider)
        completion = llm.complete(Request.of([{"role": "system", "content": "# Task: ping\nbe brief"},
                                              {"role": "user", "content": "ping"}], temperature=0.0), stage="p")
    assert completion.text == "pong"
    assert (completion.input_tokens, completion.output_tokens) == (5, 2)
    call = srv.calls[0]
    assert call.body["model"] == "scripted-model" and call.stage == "ping" and call.user == "ping"
    if provider == "openai":
        assert call.path == "/v1/chat/completions" and call.body["messages"][0]["role"] == "system"
    else:
        assert call.path == "/v1/messages" and call.body["system"].startswith("# Task: ping")
        assert call.body["max_tokens"] == 2048


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [429, 500, 503])
def test_sdk_errors_are_retried_then_succeed(provider, status):
    def handler(call):
        return Reply(status=status) if call.index == 0 else "ok"

    with ScriptedServer(handler, protocol=provider) as srv:
        llm = _sdk_llm(srv, provider, max_retries=2)
        assert llm.complete(req(), stage="s").text == "ok"
    assert [c.status for c in srv.calls] == [status, 200]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_timeouts_are_retried_then_give_up(provider):
    with ScriptedServer(lambda call: Reply(content="late", delay=1.0), protocol=provider) as srv:
        llm = _sdk_llm(srv, provider, max_retries=1, timeout=0.2)
        with pytest.raises(ModelError) as info:
            llm.complete(req(), stage="s")
    assert info.value.kind == "model_timeout"
    assert len(srv.calls) == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sdk_client_errors_are_not_retried(provider):
    with ScriptedServer(lambda call: Reply(status=400), protocol=provider) as srv:
        llm = _sdk_llm(srv, provider, max_retries=3)
        with pytest.raises(ModelError) as info:
            llm.complete(req(), stage="s")
    assert info.value.kind == "model_request" and "400" in info.value.message
    assert len(srv.calls) == 1


def test_connection_refused_is_retried_then_a_model_error():
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = LLM(get_model("openai:m", base_url=f"http://127.0.0.1:{port}/v1", timeout=2), backoff=0.001, max_retries=1)
    with pytest.raises(ModelError) as info:
        llm.complete(req(), stage="s")
    assert info.value.kind == "model_connection"
    assert llm.accounting.stages["s"].requests == 2


# -- prompts ----------------------------------------------------------------------------------------------------

def test_prompts_are_files_identified_by_content_hash():
    import hashlib
    from pathlib import Path

    prompts = list_prompts()
    assert [p.name for p in prompts] == ["assess", "decide", "generate", "write", "judge_complete", "judge_claims",
                                              "plain", "interpretations", "missing", "judge_named", "paraphrase"]
    for p in prompts:
        data = Path(p.path).read_bytes()
        assert p.hash == hashlib.sha256(data).hexdigest()[:12]
        # decide is the assess step that also answers a clear request: "Task: assess (decide)".
        assert p.title.startswith(f"Task: {p.name}") or p.title.startswith(f"Task: assess ({p.name})")
        messages = p.messages(**{s: f"<{s}>" for s in p.slots})
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "{{" not in messages[0]["content"] + messages[1]["content"]


def test_assess_prompt_presumes_validity_and_asks_for_evidence():
    text = load_prompt("assess").text
    assert "Most questions are valid" in text
    assert "If you cannot name that evidence, the question is valid" in text
    for code in ("E1.1", "E1.2", "E2.1", "E2.2", "E3.1", "E3.2", "E3.3", "E4.1", "E4.2"):
        assert code in text
    assert "at most four" in text and "exactly one interpretation" in text


def test_prompt_slots_must_all_be_filled():
    p = load_prompt("generate")
    with pytest.raises(KeyError):
        p.messages(request="x")
    with pytest.raises(KeyError):
        p.messages(**{s: "" for s in p.slots}, unknown="x")

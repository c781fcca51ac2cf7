"""Model faults through the real SDKs: timeouts, 429, 5xx, malformed, truncated and empty
replies are retried (or repaired) as configured; what still fails gives an Answer with gate
``abstain`` and reason ``model_error`` — never a pass, never a crash."""

from __future__ import annotations

import pytest

import vouchsql
from fakes import ask_cache, demo_profile  # noqa: F401 - fixtures
from fakes.servers import Reply, Script, ScriptedServer, assess_reply

STORES = "SELECT COUNT(*) AS n FROM stores"
K = 3
RETRIES = 2

# fault → (the reply, requests one call costs before it gives up)
FAULTS = {
    "timeout": (lambda: Reply(content=assess_reply(), delay=1.0), 1 + RETRIES),
    "429": (lambda: Reply(status=429), 1 + RETRIES),
    "500": (lambda: Reply(status=500), 1 + RETRIES),
    "503": (lambda: Reply(status=503), 1 + RETRIES),
    "malformed JSON": (lambda: "Sure! The question is valid, I think.", 2),  # one repair
    "truncated JSON": (lambda: '{"is_valid": true, "flaw_code": null, "reason": "the sch', 2),
    "empty content": (lambda: "", 2),
    "unreadable body": (lambda: Reply(body="<html>502 Bad Gateway</html>"), 1),
}


def _ask(server, db, cache, **kwargs):
    kwargs.setdefault("k", K)
    return vouchsql.ask(db, "How many stores are there?", model=f"{server.protocol}:scripted",
                        base_url=server.base_url, cache_dir=cache, max_retries=RETRIES,
                        retry_backoff=0.001, model_timeout=0.25, **kwargs)


def _assert_model_error(answer, stage: str) -> None:
    assert answer.verdict.gate == "abstain" and answer.verdict.score == 0.0
    assert answer.verdict.reasons == ["model_error"]
    (check,) = answer.checks
    assert check.name == "model_error" and check.fired and check.evidence["stage"] == stage
    assert answer.shown.sql == "" and answer.candidates == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_fault_that_persists_abstains_with_model_error(demo_db, ask_cache, protocol, fault):
    make, cost = FAULTS[fault]
    with ScriptedServer(lambda call: make(), protocol=protocol) as srv:
        answer = _ask(srv, demo_db, ask_cache)
    _assert_model_error(answer, "assess")
    assert len(srv.calls) == cost, [c.status for c in srv.calls]
    u = answer.usage.stages["assess"]
    assert u.requests == cost
    assert answer.premise is None and answer.text is None


@pytest.mark.parametrize("fault", ["timeout", "429", "500", "truncated JSON", "malformed JSON", "empty content"])
def test_a_fault_that_clears_is_retried_and_passes(demo_db, ask_cache, fault):
    make, _ = FAULTS[fault]
    script = Script(samples=[STORES], write="There are 8 stores.")

    def handler(call):
        if call.stage == "decide":  # the first reply is the fault; its retry or repair succeeds
            return make() if call.index == 0 else script(call)
        return script(call)

    with ScriptedServer(handler) as srv:
        answer = _ask(srv, demo_db, ask_cache)
    assert answer.verdict.gate == "pass", answer.verdict
    assert len(srv.calls) == 1 + 1 + 1  # the fault, its retry or repair, one draw of K - 1
    u = answer.usage.stages["assess"]
    if fault.endswith("JSON") or fault == "empty content":
        assert (u.calls, u.repairs, u.retries) == (2, 1, 0)
    else:
        assert (u.calls, u.requests, u.retries) == (1, 2, 1)


def test_429_then_success_on_every_generate_call(demo_db, ask_cache):
    """Anthropic draws the K - 1 samples as parallel calls: each is retried on its own."""
    import threading

    script = Script(samples=[STORES], write="There are 8 stores.")
    arrived = {"n": 0}
    all_in = threading.Condition()

    def handler(call):
        if call.stage == "generate":
            with all_in:
                arrived["n"] += 1
                first_attempt = arrived["n"] <= K - 1
                all_in.notify_all()
                # Hold the first attempts until all K - 1 are in, so no retry can pass one of them.
                all_in.wait_for(lambda: arrived["n"] >= K - 1, timeout=5)
            if first_attempt:
                return Reply(status=429)
        return script(call)

    with ScriptedServer(handler, protocol="anthropic") as srv:
        answer = _ask(srv, demo_db, ask_cache)
    assert answer.verdict.gate == "pass"
    g = answer.usage.stages["generate"]
    assert (g.calls, g.requests, g.retries) == (K - 1, 2 * (K - 1), K - 1)
    assert [c.status for c in srv.calls if c.stage == "generate"].count(429) == K - 1


def test_a_429_on_a_draw_of_n_is_retried_as_one_request(demo_db, ask_cache):
    script = Script(samples=[STORES])
    seen = {"generate": 0}

    def handler(call):
        if call.stage == "generate":
            seen["generate"] += 1
            if seen["generate"] == 1:
                return Reply(status=429)
        return script(call)

    with ScriptedServer(handler) as srv:
        answer = _ask(srv, demo_db, ask_cache)
    assert answer.verdict.gate == "pass" and len(answer.candidates) == K
    g = answer.usage.stages["generate"]
    assert (g.calls, g.requests, g.retries) == (1, 2, 1)
    assert [c.body.get("n") for c in srv.calls if c.stage == "generate"] == [K - 1, K - 1]


def test_a_generate_failure_abstains_and_keeps_the_premise(demo_db, ask_cache):
    def handler(call):
        if call.stage == "decide":
            return assess_reply()  # no SQL: generate draws all K, and fails
        return Reply(status=500)

    with ScriptedServer(handler) as srv:
        answer = _ask(srv, demo_db, ask_cache)
    _assert_model_error(answer, "generate")
    assert answer.premise is not None and answer.premise.is_valid
    assert "HTTP 500" in answer.checks[0].detail and "gave up after 3 attempts" in answer.checks[0].detail


def test_one_bad_sample_fails_the_round_not_a_pass(demo_db, ask_cache):
    import threading

    script = Script(samples=[STORES])
    bad = {"n": 0}
    lock = threading.Lock()

    def handler(call):
        if call.stage == "generate":
            with lock:
                first_bad = not call.is_repair and bad["n"] == 0
                bad["n"] += first_bad
            if first_bad or call.is_repair:  # one sample, and its repair
                return "no json at all"
        return script(call)

    with ScriptedServer(handler, protocol="anthropic") as srv:
        answer = _ask(srv, demo_db, ask_cache)
    _assert_model_error(answer, "generate")
    assert answer.checks[0].evidence["kind"] == "model_bad_output"


def test_a_write_failure_abstains(demo_db, ask_cache):
    script = Script(samples=[STORES], write="")
    with ScriptedServer(script) as srv:
        answer = _ask(srv, demo_db, ask_cache, prose=True)
    _assert_model_error(answer, "write")
    assert [c.stage for c in srv.calls].count("write") == 2  # the call and its one repair


def test_a_model_error_is_not_cached_as_an_answer(demo_db, ask_cache):
    with ScriptedServer(lambda call: Reply(status=500)) as srv:
        failed = _ask(srv, demo_db, ask_cache)
        srv.handler = Script(samples=[STORES], write="There are 8 stores.")
        answer = _ask(srv, demo_db, ask_cache)
    assert failed.verdict.gate == "abstain" and answer.verdict.gate == "pass"


def test_the_cli_prints_a_model_error_answer_not_a_traceback(demo_db, ask_cache, capsys):
    from test_ask_cli import vouch

    with ScriptedServer(lambda call: Reply(status=500)) as srv:
        code = vouch(["ask", "--db", str(demo_db), "--model", "openai:x", "--base-url", srv.base_url,
                      "--cache-dir", ask_cache, "--max-retries", "0", "--json", "How many stores?"])
    out = capsys.readouterr().out
    assert code == 0
    assert '"gate": "abstain"' in out and '"model_error"' in out

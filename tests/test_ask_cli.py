"""``vouch ask`` and ``vouch prompts`` through the CLI's ``main``: the JSON contract, the
terminal view (verdict first, then text, interpretation, alternatives, result, SQL), phase 2
with ``--pick``, recording and replaying a cassette, and user errors."""

from __future__ import annotations

import argparse
import json

import pytest

from fakes import ask_cache, demo_profile  # noqa: F401 - fixtures
from fakes.servers import Script, ScriptedServer, assess_reply
from vouchsql import ask_cli, cli

STORES = "SELECT COUNT(*) AS n FROM stores"
OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order row.")]


def vouch(argv: list[str]) -> int:
    """``vouch …`` with ``ask`` and ``prompts`` registered (whether or not cli.py wires them yet)."""
    real = cli.build_parser

    def build() -> argparse.ArgumentParser:
        parser = real()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if "ask" not in sub.choices:
            ask_cli.register(sub, cli._settings_parent())
        return parser

    cli.build_parser = build
    try:
        return cli.main(argv)
    finally:
        cli.build_parser = real


def _open_script() -> Script:
    return Script(assess=assess_reply(interpretations=INTERPS),
                  samples={"every order row.": ["SELECT COUNT(*) AS orders FROM orders"],
                           "each customer once": ["SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"],
                           "every order row?": ["SELECT COUNT(*) AS orders FROM orders"]},
                  write="See the table.")


@pytest.fixture
def base(demo_db, ask_cache):
    return ["--db", str(demo_db), "--cache-dir", ask_cache, "--retry-backoff", "0.001"]


def test_ask_json_is_the_answer_contract(base, capsys):
    import jsonschema

    from vouchsql.schemas import answer_schema

    with ScriptedServer(Script(samples=[STORES], write="There are 8 stores.")) as srv:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "--k", "3", "--json",
                      "--prose", "How many stores are there?"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, answer_schema())
    assert data["verdict"]["gate"] == "pass" and data["text"] == "There are 8 stores."
    assert data["premise"] == {"is_valid": True, "flaw_code": None, "reason": "the schema has what it needs",
                               "clarification": None}
    # Decide-then-answer: decide answers (sample 0), one request draws 2 more, one writes.
    assert data["usage"]["stages"]["generate"]["calls"] == 1 and data["usage"]["rounds"] == 3
    assert data["usage"]["total"]["calls"] == 3
    assert len(data["candidates"]) == 3


def test_ask_terminal_view_puts_the_verdict_first(base, capsys):
    with ScriptedServer(_open_script()) as srv:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "--k", "2", "--prose",
                      OPEN_Q])
    out = capsys.readouterr().out
    assert code == 0
    order = [out.index(s) for s in (" PASS ", "Question:", "See the table.", "Interpretation:",
                                    "Interpretations (pick one", "1104", "SELECT COUNT(DISTINCT customer_id)")]
    assert order == sorted(order), out
    assert "3867" in out  # the alternative's result
    assert "--pick N" in out and "1 assess + 2 generate" in out


def test_ask_pick_runs_phase_two(base, capsys):
    with ScriptedServer(_open_script()) as srv:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "--k", "2", "--json",
                      "--pick", "2", OPEN_Q])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["question"] == OPEN_Q + " Count every order row."
    assert data["shown"]["sql"] == "SELECT COUNT(*) AS orders FROM orders"
    assert [i["picked"] for i in data["interpretations"]] == [False, True]


def test_pick_without_interpretations_is_a_user_error(base, capsys):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "--k", "1",
                      "--pick", "1", "How many stores?"])
    assert code == 2 and "no choice open" in capsys.readouterr().err


def test_flawed_question_in_the_terminal(base, capsys):
    reply = assess_reply(False, "E4.1", "this asks for a forecast", "Which past period should I report?")
    with ScriptedServer(Script(assess=reply)) as srv:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "How many orders next year?"])
    out = capsys.readouterr().out
    assert code == 0
    assert " ABSTAIN " in out and "premise_flaw:E4.1" in out
    assert "E4.1 Inexpressible in SQL" in out and "Which past period should I report?" in out
    assert "╭─ SQL" not in out and "╭─ Answer" not in out  # no SQL ran; the premise says why


def test_record_then_replay_through_the_cli(base, tmp_path, capsys):
    cassette = tmp_path / "run.json"
    with ScriptedServer(Script(samples=[STORES], write="There are 8 stores.")) as srv:
        vouch(["ask", *base, "--model", "openai:m", "--base-url", srv.base_url, "--k", "2", "--json",
               "--record", str(cassette), "How many stores?"])
    first = json.loads(capsys.readouterr().out)
    code = vouch(["ask", "--db", base[1], "--cache-dir", str(tmp_path / "fresh"), "--model", f"replay:{cassette}",
                  "--k", "2", "--json", "How many stores?"])
    second = json.loads(capsys.readouterr().out)
    assert code == 0 and second["shown"] == {**first["shown"], "result": second["shown"]["result"]}
    assert second["text"] == first["text"] and second["verdict"] == first["verdict"]
    code = vouch(["ask", "--db", base[1], "--cache-dir", str(tmp_path / "fresh"), "--model", f"replay:{cassette}",
                  "How many stores were open?"])
    assert code == 1 and "holds no answer" in capsys.readouterr().err


def test_model_comes_from_vouch_model(base, monkeypatch, capsys):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        monkeypatch.setenv("VOUCH_MODEL", "openai:from-env")
        code = vouch(["ask", *base, "--base-url", srv.base_url, "--k", "1", "--json", "How many stores?"])
    assert code == 0 and json.loads(capsys.readouterr().out)["usage"]["model"] == "openai:from-env"
    assert srv.calls[0].body["model"] == "from-env"


@pytest.mark.parametrize("extra, message", [
    ([], "no model given"),
    (["--model", "gpt-4o"], "provider:model"),
    (["--model", "openai:gpt-4o"], "OPENAI_API_KEY"),
    (["--model", "openai:m", "--k", "0"], "--k must be at least 1"),
    (["--model", "openai:m", "--definitions", "/nonexistent/defs.toml"], "no definitions file"),
])
def test_ask_user_errors(base, capsys, extra, message):
    code = vouch(["ask", *base, *extra, "How many stores?"])
    assert code == 2
    assert message in capsys.readouterr().err


def test_yaml_definitions_need_pyyaml(base, tmp_path, capsys):
    path = tmp_path / "defs.yaml"
    path.write_text("definitions:\n  revenue: sum of line totals\n")
    try:
        import yaml  # noqa: F401
    except ImportError:
        code = vouch(["ask", *base, "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                      "--definitions", str(path), "How many stores?"])
        assert code == 2 and "pip install pyyaml" in capsys.readouterr().err
    else:
        from vouchsql.definitions import load_definitions

        assert load_definitions(path).definitions == {"revenue": "sum of line totals"}


def test_prompts_lists_names_and_hashes(capsys):
    from vouchsql.llm import list_prompts

    assert vouch(["prompts"]) == 0
    out = capsys.readouterr().out
    for p in list_prompts():
        assert p.name in out and p.hash in out
    assert vouch(["prompts", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data] == ["assess", "decide", "generate", "write", "judge_complete", "judge_claims",
                                              "plain", "interpretations", "missing", "judge_named", "paraphrase"]
    assert vouch(["prompts", "--show", "assess"]) == 0
    assert capsys.readouterr().out.startswith("# Task: assess")
    assert vouch(["prompts", "--show", "nope"]) == 2

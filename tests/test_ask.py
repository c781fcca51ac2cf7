"""``vouchsql.ask`` and ``refine`` end to end: the real ``openai`` (and ``anthropic``) SDK
against a scripted server on loopback, the demo database, and the same checks and gate as
``vouch check``. No model, no network."""

from __future__ import annotations

import json

import pytest

import vouchsql
from fakes import ask_cache, demo_profile  # noqa: F401 - fixtures
from fakes.servers import Script, ScriptedServer, assess_reply, sample_reply
from vouchsql.prompting.context import template_text
from vouchsql.pipeline.asking import VOLATILE_FIELDS, append_clause, comparable
from vouchsql.db.base import Database
from vouchsql.errors import UserInputError, VouchError
from vouchsql.premise import TAXONOMY
from vouchsql.schemas import answer_schema

STORES = "SELECT COUNT(*) AS n FROM stores"
STORES_WRONG = "SELECT COUNT(*) AS n FROM stores WHERE region = 'North'"
QUESTION = "How many stores are there?"
BY_CUSTOMER = "SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"
BY_ORDER = "SELECT COUNT(*) AS orders FROM orders"
OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]


@pytest.fixture
def ask(ask_cache, demo_db):
    """ask() against the demo database with a fresh cache folder and quick retries."""

    def run(server: ScriptedServer | None, question: str = QUESTION, **kwargs):
        kwargs.setdefault("model", f"{server.protocol if server else 'openai'}:scripted")
        if server is not None:
            kwargs.setdefault("base_url", server.base_url)
        kwargs.setdefault("cache_dir", ask_cache)
        kwargs.setdefault("max_retries", 1)
        kwargs.setdefault("retry_backoff", 0.001)
        kwargs.setdefault("model_timeout", 5)
        return vouchsql.ask(kwargs.pop("db", demo_db), question, **kwargs)

    return run


@pytest.fixture
def executed(monkeypatch):
    """Every SQL statement run through Database.execute, in order."""
    seen: list[str] = []
    real = Database.execute

    def execute(self, sql, **kwargs):
        seen.append(sql)
        return real(self, sql, **kwargs)

    monkeypatch.setattr(Database, "execute", execute)
    return seen


def _json_valid(answer) -> None:
    import jsonschema

    jsonschema.validate(answer.model_dump(mode="json"), answer_schema())


# -- a clear question ------------------------------------------------------------------------------

def test_valid_question_passes(ask):
    script = Script(samples=[STORES], write="There are 8 stores.")
    with ScriptedServer(script) as srv:
        answer = ask(srv, k=5, prose=True)
    assert answer.verdict.gate == "pass", answer.verdict
    assert answer.agreement == 1.0 and len(answer.candidates) == 5
    assert answer.shown.sql == STORES and answer.shown.result.rows == [[8]]
    assert answer.text == answer.answer_text == "There are 8 stores."
    assert answer.premise.is_valid and answer.premise.flaw_code is None
    assert [c.name for c in answer.checks if c.fired] == []
    uncited = next(c for c in answer.checks if c.name == "uncited_number")
    assert uncited.evidence["cited"] == ["8"]
    (interp,) = answer.interpretations
    assert interp.text == QUESTION and interp.shown and interp.stated == "counts the rows asked for"
    _json_valid(answer)
    # What the model was shown: the schema profile, the question, then the result.
    assess_call, write_call = srv.calls[0], next(c for c in srv.calls if c.stage == "write")
    assert "TABLE stores: 8 rows" in assess_call.user and assess_call.user.endswith(f"Question: {QUESTION}")
    assert "n\n8" in write_call.user and STORES in write_call.user


@pytest.mark.parametrize("k", [1, 3, 5])
def test_a_clear_request_costs_at_most_two_calls(ask, k):
    """Decide-then-answer's budget (issue 14): the decide call answers a clear request
    (sample 0) and one request with ``n = K - 1`` draws the rest; the text is a template."""
    script = Script(samples=[STORES])
    with ScriptedServer(script) as srv:
        answer = ask(srv, k=k)
    generate = ["generate"] if k > 1 else []
    assert srv.stages() == ["decide"] + generate
    assert srv.rounds() == [["decide"]] + ([generate] if generate else [])
    if k > 1:
        assert srv.calls[1].body["n"] == k - 1
    assert len(answer.candidates) == k and answer.candidates[0].sql == STORES
    u = answer.usage
    assert u.stages["assess"].calls == 1 and "write" not in u.stages
    assert u.total.calls == u.total.requests == 1 + (k > 1) and u.rounds == 1 + (k > 1)
    # The server bills 11 prompt tokens per request and 7 per choice.
    assert u.total.input_tokens == 11 * (1 + (k > 1)) and u.total.output_tokens == 7 * k
    assert set(u.prompts) == {"decide", "generate"} if k > 1 else {"decide"}
    assert answer.text == "n: 8."
    if k == 1:
        assert "thin_evidence" in answer.verdict.reasons


def test_anthropic_draws_the_samples_as_parallel_calls(ask):
    """An endpoint with no ``n`` (Anthropic): the K - 1 samples are K - 1 parallel calls, in
    the same round, so the rounds stay two."""
    script = Script(samples=[STORES], gather=4)
    with ScriptedServer(script, protocol="anthropic") as srv:
        answer = ask(srv, k=5)
    assert not script.gather_failed, "the K - 1 generate calls did not run in parallel"
    assert srv.rounds() == [["decide"], ["generate"] * 4]
    assert len(answer.candidates) == 5 and answer.agreement == 1.0
    assert answer.usage.total.calls == answer.usage.total.requests == 5 and answer.usage.rounds == 2


def test_a_server_that_ignores_n_gets_the_rest_one_by_one(ask):
    script = Script(samples=[STORES], honour_n=False)
    with ScriptedServer(script) as srv:
        answer = ask(srv, k=5)
    # The n = 4 request came back with one choice; the 3 missing samples followed in parallel.
    assert srv.rounds()[:2] == [["decide"], ["generate"]] and len(srv.rounds()) in (3, 4, 5)
    assert srv.calls[1].body["n"] == 4 and all("n" not in c.body for c in srv.calls[2:])
    assert len(answer.candidates) == 5 and answer.usage.total.requests == 5
    assert answer.usage.rounds == 3  # the missing samples waited for the reply without them


def test_model_prose_is_one_more_call_and_round(ask):
    with ScriptedServer(Script(samples=[STORES], write="There are 8 stores.")) as srv:
        answer = ask(srv, k=5, prose=True)
    assert srv.rounds() == [["decide"], ["generate"], ["write"]]
    assert answer.usage.total.calls == 3 and answer.usage.rounds == 3 and answer.text == "There are 8 stores."
    with pytest.raises(UserInputError, match="contradict"):
        ask(None, prose=True, no_prose=True)


def test_a_decide_reply_without_sql_draws_all_k(ask):
    with ScriptedServer(Script(samples=[STORES], decide_sql=False)) as srv:
        answer = ask(srv, k=3)
    assert srv.stages() == ["decide", "generate"] and srv.calls[1].body["n"] == 3
    assert len(answer.candidates) == 3 and answer.usage.total.calls == 2


def test_samples_setting_is_the_default_k(ask):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        answer = ask(srv, samples=3)
    assert len(answer.candidates) == 3


def test_anthropic_protocol_end_to_end(ask):
    script = Script(samples=[STORES], write="There are 8 stores.", gather=4)
    with ScriptedServer(script, protocol="anthropic") as srv:
        answer = ask(srv, k=5, prose=True)
    assert answer.verdict.gate == "pass" and answer.usage.model == "anthropic:scripted"
    assert {c.path for c in srv.calls} == {"/v1/messages"}
    assert srv.rounds() == [["decide"], ["generate"] * 4, ["write"]]


# -- disagreement -----------------------------------------------------------------------------------

@pytest.mark.parametrize("served, agreement, gate", [
    ([STORES_WRONG, STORES, STORES, STORES, STORES_WRONG], 0.6, "flag"),
    ([STORES_WRONG, STORES, "SELECT 99 AS n", STORES, "SELECT 98 AS n"], 0.4, "abstain"),
    ([STORES, STORES, STORES, STORES, STORES_WRONG], 0.8, "pass"),
])
def test_disagreeing_samples_lower_the_gate(ask, served, agreement, gate):
    with ScriptedServer(Script(samples=served, write="The count is in the result.")) as srv:
        answer = ask(srv, k=5)
    assert answer.agreement == pytest.approx(agreement)
    assert answer.verdict.gate == gate, answer.verdict
    # The shown answer is the largest cluster's, whatever order the samples arrived in.
    assert answer.shown.sql == STORES and answer.candidates[0].sql == STORES
    assert sorted(c.sql for c in answer.candidates) == sorted(served)
    if gate != "pass":
        assert answer.verdict.reasons[0].startswith(f"agreement {agreement:.2f}")


def test_a_write_statement_from_the_model_is_rejected_not_run(ask, demo_db, file_digest, executed):
    before = file_digest(demo_db)
    served = [STORES, STORES, "DELETE FROM stores", STORES, STORES]
    with ScriptedServer(Script(samples=served, write="There are 8 stores.")) as srv:
        answer = ask(srv, k=5)
    bad = next(c for c in answer.candidates if c.sql.startswith("DELETE"))
    assert bad.result.error is not None and bad.result.error.kind in {"not_select", "rejected"}
    assert answer.agreement == 0.8 and answer.verdict.gate == "pass"
    assert file_digest(demo_db) == before


def test_no_sql_from_any_sample_abstains_without_a_write_call(ask):
    def handler(call):
        if call.stage == "decide":
            return assess_reply()
        return [sample_reply(None, "this database has no such data")] * int(call.body.get("n") or 1)

    with ScriptedServer(handler) as srv:
        answer = ask(srv, k=3, prose=True)
    assert answer.verdict.gate == "abstain" and "no_result" in answer.verdict.reasons
    assert answer.text == "No answer: the SQL did not run."
    assert srv.stages() == ["decide", "generate"]  # no write call without a result


# -- flawed premises -----------------------------------------------------------------------------------

@pytest.mark.parametrize("code", sorted(TAXONOMY))
def test_flawed_question_abstains_with_its_code_and_runs_no_sql(ask, executed, code):
    reply = assess_reply(False, code, "the schema has no weather data",
                         "Which table records the weather?")
    with ScriptedServer(Script(assess=reply)) as srv:
        answer = ask(srv, "Will it rain at store 3 tomorrow?")
    assert answer.verdict.gate == "abstain" and answer.verdict.score == 0.0
    assert answer.verdict.reasons == [f"premise_flaw:{code}"]
    assert answer.premise.model_dump() == {"is_valid": False, "flaw_code": code,
                                           "reason": "the schema has no weather data",
                                           "clarification": "Which table records the weather?"}
    assert answer.candidates == [] and answer.shown.sql == "" and answer.interpretations == []
    assert executed == [], "a flawed question must run no SQL"
    assert srv.stages() == ["decide"]
    assert answer.usage.total.calls == 1 and answer.usage.rounds == 1
    assert "Which table records the weather?" in answer.text
    _json_valid(answer)


def test_a_flaw_code_written_loosely_is_read(ask):
    reply = json.dumps({"is_valid": False, "flaw_code": "E4.1 Inexpressible in SQL", "reason": "a forecast",
                        "clarification": None, "interpretations": []})
    with ScriptedServer(Script(assess=reply)) as srv:
        answer = ask(srv, "How many orders will we get next year?")
    assert answer.premise.flaw_code == "E4.1" and answer.premise.clarification is None


def test_an_unknown_flaw_code_is_repaired_once(ask):
    replies = iter([json.dumps({"is_valid": False, "flaw_code": "E9.9", "reason": "?"}),
                    assess_reply(False, "E3.3", "no such concept")])
    with ScriptedServer(Script(assess=None)) as srv:
        srv.handler = lambda call: next(replies) if call.stage == "decide" else "unused"
        answer = ask(srv, "How happy are the stores?")
    assert answer.premise.flaw_code == "E3.3" and answer.usage.stages["assess"].repairs == 1
    assert "E9.9" in srv.calls[1].messages[-1]["content"]


def test_ambiguity_that_comes_with_interpretations_is_answered_not_refused(ask):
    reply = assess_reply(False, "E1.1", "customers can be counted two ways", "Count customers or orders?",
                         INTERPS)
    script = Script(assess=reply, samples={"each customer once": [BY_CUSTOMER], "every order row": [BY_ORDER]})
    with ScriptedServer(script) as srv:
        answer = ask(srv, OPEN_Q, k=2)
    assert answer.premise.is_valid and answer.premise.flaw_code is None
    assert len(answer.interpretations) == 2 and answer.verdict.gate != "abstain"


# -- interpretations and phase 2 -------------------------------------------------------------------------

def _open_script(**kwargs) -> Script:
    return Script(assess=assess_reply(interpretations=INTERPS),
                  samples={"not each customer once": [BY_ORDER],  # phase 2's clause; matched first
                           "each customer once": [BY_CUSTOMER], "every order row": [BY_ORDER]},
                  write="See the result.", **kwargs)


def test_two_interpretations_are_both_answered_and_shown(ask):
    script = _open_script(gather=2, gather_write=2)
    with ScriptedServer(script) as srv:
        answer = ask(srv, OPEN_Q, k=3, prose=True)
    assert not script.gather_failed, "the generate calls, or the write calls, did not run in parallel"
    first, second = answer.interpretations
    assert answer.question == OPEN_Q
    assert (first.text, first.clause, first.shown, first.answer) == (*INTERPS[0], True, None)
    assert (second.text, second.clause, second.shown) == (*INTERPS[1], False)
    assert answer.shown.sql == BY_CUSTOMER and answer.verdict.gate == "pass"
    alt = second.answer
    assert alt.question == INTERPS[1][0] and alt.shown.sql == BY_ORDER and alt.verdict.gate == "pass"
    assert alt.shown.result.rows != answer.shown.result.rows and second.same_result_as is None
    assert alt.text == "See the result." and alt.premise is None and alt.usage is None
    assert "open_choice:interpretation" in answer.verdict.reasons
    # Each interpretation got its own K samples, asked with its full request, in one request.
    generate = [c for c in srv.calls if c.stage == "generate"]
    assert sorted(c.user.rsplit("Request: ", 1)[1] for c in generate) == sorted([INTERPS[0][0], INTERPS[1][0]])
    assert all(c.body["n"] == 3 for c in generate) and len(answer.candidates) == 3
    assert srv.rounds() == [["decide"], ["generate"] * 2, ["write", "write"]]
    # 1 + n calls at any K, plus one write call per interpretation for model prose.
    assert answer.usage.total.calls == 1 + 2 + 2 and answer.usage.rounds == 3
    _json_valid(answer)


def test_interpretations_with_one_result_are_shown_once(ask):
    script = Script(assess=assess_reply(interpretations=INTERPS), samples={"each customer": [STORES], "every order": [STORES]})
    with ScriptedServer(script) as srv:
        answer = ask(srv, OPEN_Q, k=2)
    assert answer.interpretations[1].same_result_as == 0
    assert "open_choice:interpretation" not in answer.verdict.reasons


def test_at_most_four_interpretations_and_one_is_none(ask):
    many = [(f"{OPEN_Q} Reading {i}.", f"Reading {i}.") for i in range(6)]
    script = Script(assess=assess_reply(interpretations=many), samples=[STORES])
    with ScriptedServer(script) as srv:
        answer = ask(srv, OPEN_Q, k=1)
    assert len(answer.interpretations) == 4
    script = Script(assess=assess_reply(interpretations=many[:1]), samples=[STORES])
    with ScriptedServer(script) as srv:
        answer = ask(srv, OPEN_Q, k=1)
    assert [i.text for i in answer.interpretations] == [OPEN_Q]  # one reading: the request as asked


def test_phase_two_appends_the_clause_verbatim(ask, demo_db, ask_cache):
    with ScriptedServer(_open_script()) as srv:
        first = ask(srv, OPEN_Q, k=2)
        n_before = len(srv.calls)
        second = vouchsql.refine(first, 2, db=demo_db, base_url=srv.base_url, cache_dir=ask_cache,
                                 k=2, retry_backoff=0.001)
    refined = OPEN_Q + " " + INTERPS[1][1]
    assert second.question == refined == append_clause(OPEN_Q, INTERPS[1][1])
    assert second.question.startswith(OPEN_Q)  # the request, word for word
    phase2 = srv.calls[n_before:]
    assert [c.stage for c in phase2] == ["generate"] and phase2[0].body["n"] == 2  # no new assess
    assert all(c.user.endswith("Request: " + refined) for c in phase2 if c.stage == "generate")
    assert second.shown.sql == BY_ORDER and second.premise == first.premise
    picked = [i.picked for i in second.interpretations]
    assert picked == [False, True] and second.interpretations[1].shown
    assert second.usage.model == "openai:scripted" and second.usage.rounds == 1
    assert "assess" not in second.usage.stages and set(second.usage.prompts) == {"generate"}
    # Phase 2 from a phase-2 answer starts again from the original request.
    again = vouchsql.pipeline.asking.base_request(second)
    assert again == OPEN_Q


def test_refine_refuses_what_it_cannot_pick(ask, demo_db):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        clear = ask(srv, k=1)
    with pytest.raises(UserInputError, match="no interpretations"):
        vouchsql.refine(clear, 1, db=demo_db)
    with ScriptedServer(_open_script()) as srv:
        open_answer = ask(srv, OPEN_Q, k=1)
    for pick in (0, 3):
        with pytest.raises(UserInputError, match="from 1 to 2"):
            vouchsql.refine(open_answer, pick, db=demo_db)


# -- cache and replay -------------------------------------------------------------------------------------

def _volatile_paths(a, b, path="") -> set[str]:
    """Leaf keys where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = set()
        for key in set(a) | set(b):
            out |= _volatile_paths(a.get(key), b.get(key), key)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return set().union(*(_volatile_paths(x, y, path) for x, y in zip(a, b))) if a else set()
    return set() if a == b else {path}


def test_a_second_run_is_free_and_identical(ask):
    served = [STORES, STORES, STORES_WRONG, STORES, STORES]
    with ScriptedServer(Script(samples=served, write="There are 8 stores.")) as srv:
        first = ask(srv, k=5)
        n = len(srv.calls)
        srv.handler = Script(samples=["SELECT 'a different reply'"], write="different")
        second = ask(srv, k=5)
    assert len(srv.calls) == n == 2, "the rerun must be answered from the response cache"
    assert comparable(second) == comparable(first)
    differ = _volatile_paths(first.model_dump(mode="json"), second.model_dump(mode="json"))
    assert differ <= VOLATILE_FIELDS, differ
    assert second.usage.total.requests == 0 and second.usage.total.cached == second.usage.total.calls == 2


def test_no_model_cache_asks_again(ask):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        ask(srv, k=2)
        ask(srv, k=2, no_model_cache=True)
    assert len(srv.calls) == 2 * 2


def test_record_then_replay_without_a_server(ask, tmp_path):
    cassette = tmp_path / "run.json"
    with ScriptedServer(_open_script()) as srv:
        recorded = ask(srv, OPEN_Q, k=2, record=str(cassette))
    entries = json.loads(cassette.read_text())["entries"]
    # One entry per sample (each choice of a draw under its own sample), one request per draw.
    assert len(entries) == 1 + 4 and len(srv.calls) == 1 + 2
    replayed = ask(None, OPEN_Q, k=2, model=f"replay:{cassette}", cache_dir=str(tmp_path / "other-cache"))
    assert comparable(replayed) == {**comparable(recorded), "usage": comparable(replayed)["usage"]}
    assert replayed.usage.model == f"replay:{cassette}" and replayed.usage.total.requests == 0
    # A request the cassette does not hold is an error, never a guess.
    with pytest.raises(VouchError, match="holds no answer"):
        ask(None, OPEN_Q + " Also by year.", k=2, model=f"replay:{cassette}")
    with pytest.raises(VouchError, match="holds no answer"):
        ask(None, OPEN_Q, k=3, model=f"replay:{cassette}")  # a third sample was never recorded


def test_phase_two_can_be_recorded_into_the_same_cassette(ask, demo_db, tmp_path, ask_cache):
    cassette = tmp_path / "run.json"
    with ScriptedServer(_open_script()) as srv:
        first = ask(srv, OPEN_Q, k=2, record=str(cassette))
        vouchsql.refine(first, 1, db=demo_db, base_url=srv.base_url, k=2, record=str(cassette),
                        cache_dir=ask_cache)
    assert len(json.loads(cassette.read_text())["entries"]) == 5 + 2
    replay = f"replay:{cassette}"
    again = ask(None, OPEN_Q, k=2, model=replay, cache_dir=str(tmp_path / "c2"))
    picked = vouchsql.refine(again, 1, db=demo_db, k=2, cache_dir=str(tmp_path / "c2"))
    assert picked.question == OPEN_Q + " " + INTERPS[0][1] and picked.shown.sql == BY_CUSTOMER


# -- prose -------------------------------------------------------------------------------------------------

def test_no_prose_writes_a_template_and_makes_no_write_call(ask):
    with ScriptedServer(Script(samples=[STORES])) as srv:
        answer = ask(srv, k=2, no_prose=True)
    assert srv.stages() == ["decide", "generate"]
    assert answer.text == "n: 8." and answer.usage.rounds == 2 and "write" not in answer.usage.prompts
    assert not next(c for c in answer.checks if c.name == "uncited_number").fired


def test_an_uncited_number_in_the_prose_caps_the_answer(ask):
    with ScriptedServer(Script(samples=[STORES], write="There are 12 stores.")) as srv:
        answer = ask(srv, k=2, prose=True)
    assert answer.verdict.gate == "flag" and "uncited_number" in answer.verdict.reasons


@pytest.mark.parametrize("rows, expected", [
    ([], "No rows matched."),
    ([[3.14159265]], "x: 3.1416."),
    ([[1, "a"], [2, "b"]], "2 rows. They are: x 1, y a; x 2, y b."),
])
def test_template_numbers_are_cells_or_the_row_count(rows, expected):
    from vouchsql.answer import Result

    cols = ["x"] if rows and len(rows[0]) == 1 else ["x", "y"]
    result = Result(columns=cols, rows=rows, row_count=len(rows))
    assert template_text(result) == expected


def test_hint_reaches_the_prompts_and_its_numbers_are_not_checked(ask):
    hint = "Stores opened before 2020 count as legacy (there were 42 in the old system)."
    with ScriptedServer(Script(samples=[STORES], write="8 stores; the old system had 42.")) as srv:
        answer = ask(srv, k=2, hint=hint, prose=True)
    assert answer.hint == hint and all(hint in c.user for c in srv.calls if c.stage in {"decide", "generate"})
    assert not next(c for c in answer.checks if c.name == "uncited_number").fired


# -- recorded definitions ----------------------------------------------------------------------------------

REVENUE_Q = "What was the total revenue?"


@pytest.fixture
def defs_path():
    from pathlib import Path

    return Path(__file__).parent / "fixtures" / "definitions" / "demo.toml"


def test_definitions_are_given_to_the_model_and_checked_on_the_sql(ask, defs_path):
    with ScriptedServer(Script(samples=["SELECT SUM(total) AS revenue FROM orders"], write="See the result.")) as srv:
        answer = ask(srv, REVENUE_Q, k=2, definitions=defs_path)
    for call in srv.calls:
        if call.stage in {"decide", "generate"}:
            assert "- 'revenue' means 'the sum of order_items.line_total" in call.user
            assert "- rule 'revenue_from_order_lines': 'for questions about revenue / sales: read" in call.user
    rule = next(c for c in answer.checks if c.name == "definition_rule")
    assert rule.fired and "rule revenue_from_order_lines" in rule.detail
    assert answer.verdict.gate == "abstain"
    assert "definition_rule:revenue_from_order_lines" in answer.verdict.reasons


def test_prompt_hashes_name_the_prompts_a_run_used(ask):
    from vouchsql.llm import load_prompt

    with ScriptedServer(Script(samples=[STORES])) as srv:
        answer = ask(srv, k=2, prose=True)
    assert answer.usage.prompts == {n: load_prompt(n).hash for n in ("decide", "generate", "write")}


def test_definitions_kept_and_absent(ask, defs_path):
    good = "SELECT SUM(line_total) AS revenue FROM order_items"
    with ScriptedServer(Script(samples=[good])) as srv:
        kept = ask(srv, REVENUE_Q, k=2, definitions={"rules": [{"name": "r", "when": ["revenue"],
                                                                   "must_read": ["order_items"]}]})
        absent = ask(srv, REVENUE_Q + " ", k=2)
    assert not next(c for c in kept.checks if c.name == "definition_rule").fired
    bare = next(c for c in absent.checks if c.name == "definition_rule")
    assert not bare.fired and bare.detail.startswith("not measured")
    none = 'Recorded definitions:\n<data name="definitions">\n(none)\n</data>'
    assert all(none in c.user for c in srv.calls[len(srv.calls) // 2:] if c.stage in {"decide", "generate"})


def test_definitions_setting_is_read_when_no_argument_is_given(ask, demo_db, defs_path, ask_cache):
    db = vouchsql.connect(demo_db, cache_dir=ask_cache, definitions=str(defs_path))
    with db, ScriptedServer(Script(samples=["SELECT SUM(total) AS revenue FROM orders"])) as srv:
        answer = ask(srv, REVENUE_Q, k=2, db=db)
    assert "definition_rule:revenue_from_order_lines" in answer.verdict.reasons


def test_bad_inputs_are_user_errors(ask, tmp_path):
    with pytest.raises(UserInputError, match="no model given"):
        ask(None, model=None)
    with pytest.raises(UserInputError, match="question is empty"):
        ask(None, "  ")
    with pytest.raises(UserInputError, match="no definitions file"):
        ask(None, definitions=tmp_path / "absent.toml")
    with ScriptedServer(Script(samples=[STORES])) as srv, pytest.raises(UserInputError, match="k must be"):
        ask(srv, k=0)
    with pytest.raises(UserInputError, match="unknown scoring rule"):
        ask(None, rule="best")
    assert srv.calls == []


def test_the_claim_judge_reads_the_written_answer_against_its_rows(ask):
    """IES §3.2's unsupported-claim judge over the real SDK: one more call after the write
    call; a claim in the commentary is kept in the evidence but caps nothing, a claim about
    the answer caps the score (issue 29)."""
    for about, gate in ((False, "pass"), (True, "flag")):
        script = Script(samples=[STORES], write="There are 8 stores, most of them in large cities.")
        claims = json.dumps({"claims": [{"claim": "most of them in large cities", "about_answer": about,
                                         "why": "the rows hold no dates"}]})

        def handler(call, script=script, claims=claims):
            return claims if call.stage == "judge_claims" else script(call)

        with ScriptedServer(handler) as srv:
            answer = ask(srv, k=5, prose=True, judge_claims=True)
        judge = next(c for c in srv.calls if c.stage == "judge_claims")
        assert "most of them in large cities" in judge.user and "n\n8" in judge.user  # the text and the rows
        check = next(c for c in answer.checks if c.name == "claim_judge")
        assert check.fired is about and check.evidence["claims"][0]["about_answer"] is about
        assert answer.verdict.gate == gate, answer.verdict
        assert srv.stages()[-1] == "judge_claims"

"""The pieces of ask that need no server: reading the assess and generate replies, the
premise taxonomy, recorded definitions and their rules, the schema text the prompts show,
and ask driven by a function-backed fake model."""

from __future__ import annotations

import json

import pytest

import vouchsql
from vouchsql.prompting.context import schema_text
from vouchsql.pipeline.asking import clean_sql, validate_sample
from vouchsql.definitions import Definitions, Rule, definitions_from_dict, load_definitions, use_definitions
from vouchsql.errors import UserInputError
from vouchsql.llm import BadOutput, FakeModel
from vouchsql.premise import TAXONOMY, validate_assessment


# -- the assess reply ---------------------------------------------------------------------------------

def test_taxonomy_has_the_nine_codes():
    assert list(TAXONOMY) == ["E1.1", "E1.2", "E2.1", "E2.2", "E3.1", "E3.2", "E3.3", "E4.1", "E4.2"]


def test_a_valid_verdict_keeps_no_flaw_and_at_most_four_readings():
    readings = [{"request": f"Q, reading {i}", "clause": f"Reading {i}."} for i in range(6)]
    a = validate_assessment({"is_valid": True, "flaw_code": "E3.1", "reason": "fine", "interpretations": readings})
    assert a.premise.is_valid and a.premise.flaw_code is None
    assert [r.clause for r in a.interpretations] == [f"Reading {i}." for i in range(4)]


def test_one_reading_is_no_open_choice_and_duplicates_are_dropped():
    a = validate_assessment({"is_valid": True, "interpretations": [{"request": "Q?", "clause": "c"}]})
    assert a.interpretations == [] and not a.open
    b = validate_assessment({"is_valid": True, "interpretations": ["Q one way?", "q ONE WAY?", "Q another way?"]})
    assert [r.request for r in b.interpretations] == ["Q one way?", "Q another way?"] and b.open


@pytest.mark.parametrize("data, message", [
    ({}, "no 'is_valid'"),
    ({"is_valid": "yes"}, "must be bool"),
    ({"is_valid": False, "flaw_code": None}, "flaw_code"),
    ({"is_valid": False, "flaw_code": "E5.1"}, "flaw_code"),
    ({"is_valid": True, "interpretations": "two"}, "must be a list"),
    ({"is_valid": True, "interpretations": [3]}, "each interpretation"),
])
def test_unreadable_assessments_ask_for_a_repair(data, message):
    with pytest.raises(BadOutput, match=message):
        validate_assessment(data)


def test_generate_reply_reading():
    s = validate_sample({"sql": "```sql\nSELECT 1;\n```", "interpretation": " one ", "assumptions": "none made"})
    assert (s.sql, s.interpretation, s.assumptions) == ("SELECT 1", "one", ["none made"])
    assert validate_sample({"sql": None}).sql == ""
    with pytest.raises(BadOutput):
        validate_sample({"query": "SELECT 1"})
    assert clean_sql("  SELECT 1 ;  ") == "SELECT 1"


# -- recorded definitions --------------------------------------------------------------------------------

USAGE = Rule(name="usage_reads_issues", when=("usage", "used", "use*"), must_read=("inventory_issue_history",),
             must_not_read=("storage_report_*",), note="usage follows the issue transactions")
STORAGE = Rule(name="storage_only", unless=("storage", "stored"), must_not_read=("storage_report_*",))


@pytest.mark.parametrize("question, applies", [
    ("How many pounds of water were used per year?", True),
    ("What was the usage of CAS 7732-18-5?", True),
    ("Which products use water?", True),
    ("How many users signed up?", False),  # "use" is a whole word: "users" is not it
    ("How much water is stored?", False),
])
def test_rule_words_match_whole_words(question, applies):
    rule = Rule(name="r", when=("usage", "used", "use"), must_read=("x",))
    assert rule.applies_to(question) is applies


def test_a_star_in_a_rule_word_matches_any_letters():
    rule = Rule(name="r", when=("use*",), must_read=("x",))
    assert rule.applies_to("How many users signed up?") and rule.applies_to("What is the USAGE?") is False
    assert rule.applies_to("Which products use water?")


def test_rules_break_on_tables_read_and_not_read():
    assert USAGE.broken_by(["storage_report_2024"]) == {"read": ["storage_report_2024"],
                                                         "not_read": ["inventory_issue_history"]}
    assert USAGE.broken_by(["Inventory_Issue_History", "sds_composition"]) is None
    assert STORAGE.applies_to("How much water was used?") and not STORAGE.applies_to("What is stored at site 4?")


def test_definitions_text_lists_definitions_notes_rules_words_and_verified_queries():
    from vouchsql.prompting.context import definitions_text
    from vouchsql.semantic import VerifiedQuery

    d = Definitions(definitions={"usage": "weight issued"}, rules=(USAGE,), notes=("Quantities are signed.",),
                    synonyms={"singer.Citizenship": ("nationality",)}, values={"singer.Citizenship": ("France",)},
                    verified=(VerifiedQuery("n", "How many singers?", "SELECT count(*)\n FROM singer"),))
    text = definitions_text(d)
    assert "- 'usage' means 'weight issued'" in text and "- note: 'Quantities are signed.'" in text
    assert "'usage_reads_issues': 'for questions about usage / used / use*: read inventory_issue_history; " \
           "do not read storage_report_* (usage follows the issue transactions)'" in text
    assert "- 'singer.Citizenship' is called 'nationality'" in text and "holds values such as 'France'" in text
    assert "- verified question 'How many singers?' has the SQL 'SELECT count(*) FROM singer'" in text
    assert definitions_text(Definitions()) == "(none)"


def test_toml_definitions_file(tmp_path):
    path = tmp_path / "defs.toml"
    path.write_text('[definitions]\nusage = "weight issued"\n[[rules]]\nname = "u"\nwhen = "usage"\n'
                    'must_not_read = ["storage_*"]\n')
    d = load_definitions(path)
    assert d.definitions == {"usage": "weight issued"} and d.rules[0].when == ("usage",)
    assert d.source == str(path.resolve())
    path.write_text('[definitions]\nusage = "changed"\n')
    assert load_definitions(path).definitions == {"usage": "changed"}  # re-read when the file changes


@pytest.mark.parametrize("data, message", [
    ({"glossary": {}}, "unknown key"),
    ({"definitions": {"usage": 3}}, "maps each term"),
    ({"rules": {"name": "x"}}, "rules must be a list"),
    ({"rules": [{"name": "x"}]}, "names no table"),
    ({"rules": [{"name": "x", "must_read": ["a"], "if": ["b"]}]}, "unknown key"),
    ({"rules": [{"name": "x", "must_read": ["a"]}, {"name": "x", "must_read": ["b"]}]}, "share a name"),
    ({"rules": [{"name": "x", "must_read": [""]}]}, "list of words"),
])
def test_bad_definitions_are_user_errors(data, message):
    with pytest.raises(UserInputError, match=message):
        definitions_from_dict(data)


def test_bad_toml_is_a_user_error(tmp_path):
    path = tmp_path / "defs.toml"
    path.write_text("[definitions\n")
    with pytest.raises(UserInputError, match="cannot read definitions file"):
        load_definitions(path)


def test_check_reads_definitions_from_the_context(demo_db, tmp_path):
    """``vouch check`` gets the rule check too: from the definitions setting, or in code."""
    rule = definitions_from_dict({"rules": [{"name": "no_loyalty", "unless": ["loyalty"],
                                             "must_not_read": ["loyalty_*"]}]})
    sql = "SELECT COUNT(*) FROM loyalty_accounts"
    plain = vouchsql.check(demo_db, "How many accounts?", [sql, sql], cache_dir=str(tmp_path))
    with use_definitions(rule):
        ruled = vouchsql.check(demo_db, "How many accounts?", [sql, sql], cache_dir=str(tmp_path))
    assert not next(c for c in plain.checks if c.name == "definition_rule").fired
    fired = next(c for c in ruled.checks if c.name == "definition_rule")
    assert fired.fired and fired.evidence["rules"] == ["no_loyalty"]
    assert ruled.verdict.gate == "abstain" and "definition_rule" in ruled.verdict.reasons


# -- the schema text the prompts show ------------------------------------------------------------------------

def test_schema_text_shows_keys_nulls_and_stand_ins(demo_db, tmp_path):
    with vouchsql.connect(demo_db, cache_dir=str(tmp_path)) as db:
        text = schema_text(db.profile())
    assert "TABLE customers: 1,200 rows; primary key (customer_id)" in text
    assert "  - customer_id: INTEGER; references customers.customer_id" in text  # orders.customer_id
    assert "  - region: TEXT; 10% null; 5 distinct; e.g. 'North', 'East', 'West'" in text  # values quoted
    assert "stand-in code -1 in 4.0% of rows (means unknown)" in text


# -- ask with a function-backed fake ------------------------------------------------------------------------------

def test_ask_with_a_fake_model(demo_db, tmp_path):
    def reply(request):
        system = request.messages[0][1]
        if system.startswith("# Task: assess"):
            return json.dumps({"is_valid": True, "reason": "ok", "interpretations": []})
        if system.startswith("# Task: generate"):
            return json.dumps({"sql": "SELECT COUNT(*) AS n FROM stores", "interpretation": "all stores",
                               "assumptions": ["closed stores count"]})
        return "There are 8 stores."

    model = FakeModel(reply)
    answer = vouchsql.ask(demo_db, "How many stores are there?", model=model, k=4, cache_dir=str(tmp_path),
                          prose=True)
    assert answer.verdict.gate == "pass" and answer.text == "There are 8 stores."
    assert answer.interpretations[0].assumptions == ["closed stores count"]
    assert answer.usage.model == "fake:fake" and len(model.requests) == 6
    assert sorted(r.sample for r in model.requests if r.messages[0][1].startswith("# Task: generate")) == [0, 1, 2, 3]
    temps = {r.messages[0][1].split("—")[0].strip(): r.temperature for r in model.requests}
    # The decide reply gave no SQL, so generate drew all four (one call each: this fake has no n).
    assert temps == {"# Task: assess (decide)": 0.0, "# Task: generate": 0.7, "# Task: write": 0.0}


def test_ask_with_a_fake_model_that_draws_n(demo_db, tmp_path):
    """The decide call answers a clear request, and one request draws the other K - 1."""
    def reply(request):
        system = request.messages[0][1]
        if system.startswith("# Task: assess (decide)"):
            return json.dumps({"is_valid": True, "reason": "ok", "interpretations": [],
                               "sql": "SELECT COUNT(*) AS n FROM stores", "interpretation": "all stores"})
        return json.dumps({"sql": "SELECT COUNT(*) AS n FROM stores WHERE region = 'North'" if request.sample == 3
                           else "SELECT COUNT(*) AS n FROM stores", "interpretation": "all stores"})

    model = FakeModel(reply, n=True)
    answer = vouchsql.ask(demo_db, "How many stores are there?", model=model, k=4, cache_dir=str(tmp_path))
    assert len(model.requests) == 2 and model.requests[1].sample == 1
    assert answer.agreement == 0.75 and answer.text == "n: 8." and answer.usage.total.calls == 2


def test_completeness_judge_share_of_parts_covered():
    from vouchsql.answer import Result
    from vouchsql.llm.judges import judge_completeness
    from vouchsql.llm import LLM, load_prompt

    assert set(load_prompt("judge_complete").slots) == {"question", "text", "columns"}
    reply = {"parts": [{"part": "how many stores", "covered": True}, {"part": "in which city", "covered": False}]}
    model = FakeModel(lambda r: json.dumps(reply))
    share, parts = judge_completeness(LLM(model), "How many stores, and in which city?", "There are 8 stores.",
                                      Result(columns=["n"], rows=[[8]], row_count=1))
    assert share == 0.5 and parts == [("how many stores", True), ("in which city", False)]
    assert model.requests[0].messages[1][1].endswith(
        '<data name="answer">\ntext: \'There are 8 stores.\'\nresult columns: n\n</data>')

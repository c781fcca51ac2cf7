"""``vouch check`` in process: the JSON contract (validated against the shipped schema), the
exit codes (the gate is data, bad input is exit 2 with one error line) and the terminal view."""

from __future__ import annotations

import json

import jsonschema
import pytest

from vouchsql import schemas
from vouchsql.cli import main

COUNT = "SELECT COUNT(*) AS n_customers FROM customers"
LOYALTY = ("SELECT l.tier, COUNT(*) AS n_customers FROM customers c JOIN loyalty_accounts l "
           "ON l.customer_id = c.customer_id GROUP BY l.tier ORDER BY n_customers DESC LIMIT 1")


@pytest.fixture(autouse=True)
def isolated(clean_env):
    """No vouch.toml or VOUCH_* variable from the developer's machine leaks in."""


@pytest.fixture
def vouch(demo_db, tmp_path, capsys):
    cache = tmp_path / "cache"

    def run(*args: str, db=None, sql=(COUNT, COUNT), question="How many customers are there?"):
        argv = ["check", "--db", str(db or demo_db), "--cache-dir", str(cache)]
        if question is not None:
            argv += ["--question", question]
        for s in sql:
            argv += ["--sql", s]
        code = main(argv + list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(schemas.ANSWER_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _json(out: str) -> dict:
    return json.loads(out)


# ---------------------------------------------------------------------------------------
# The JSON contract
# ---------------------------------------------------------------------------------------
def test_schema_file_has_not_drifted_from_the_models():
    assert schemas.ANSWER_SCHEMA.read_text(encoding="utf-8") == schemas.render()


@pytest.mark.parametrize("label, sql, extra, gate", [
    ("pass", (COUNT, COUNT), ("--answer-text", "There are 1,200 customers."), "pass"),
    ("flag", (COUNT,), (), "flag"),
    ("abstain", (LOYALTY, LOYALTY), (), "abstain"),
    ("no result", ("SELECT shoe_size FROM customers", COUNT), (), "abstain"),
])
def test_json_validates_against_the_schema(vouch, validator, label, sql, extra, gate):
    code, out, err = vouch("--json", *extra, sql=sql)
    assert code == 0, err
    doc = _json(out)
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors]
    assert doc["verdict"]["gate"] == gate


def test_each_checks_evidence_is_typed_by_its_own_model(vouch, validator):
    """The schema holds a check's evidence to its Evidence model (by the check's name), so a
    consumer can rely on, say, unmatched_literal's ``literals`` being a list of findings."""
    code, out, err = vouch("--json", sql=(COUNT,))
    assert code == 0, err
    doc = _json(out)
    assert not list(validator.iter_errors(doc))
    typed = {c["name"] for c in doc["checks"]}
    schema = validator.schema
    assert {r["if"]["properties"]["name"]["const"] for r in schema["$defs"]["CheckResult"]["allOf"]} >= typed
    for name, key, wrong in (("unmatched_literal", "literals", "oops"), ("bad_join", "joins", {"x": 1}),
                             ("no_result", "unknown_key", 1)):
        broken = json.loads(out)
        check = next(c for c in broken["checks"] if c["name"] == name)
        check["evidence"][key] = wrong
        assert list(validator.iter_errors(broken)), (name, key)


def test_json_has_the_contract_keys(vouch):
    code, out, _ = vouch("--json", "--answer-text", "There are 1,200 customers.", "--hint", "count rows")
    assert code == 0
    doc = _json(out)
    assert doc["question"] == "How many customers are there?"
    assert doc["shown"]["sql"] == COUNT
    result = doc["shown"]["result"]
    assert {"columns", "rows", "row_count", "truncated", "error"} <= set(result)
    assert result["columns"] == ["n_customers"]
    assert result["rows"] == [[1200]]
    assert (result["row_count"], result["truncated"], result["error"]) == (1, False, None)
    assert len(doc["candidates"]) == 2
    for cand in doc["candidates"]:
        assert {"sql", "result", "cluster"} <= set(cand)
        assert cand["sql"] == COUNT and cand["cluster"] == 0
    assert doc["agreement"] == 1.0
    assert isinstance(doc["choices"], list)
    names = [c["name"] for c in doc["checks"]]
    assert "missing_table" in names and "uncited_number" in names
    for c in doc["checks"]:
        assert set(c) >= {"name", "kind", "fired", "detail", "evidence"}
        assert c["kind"] in {"veto", "cap", "signal"}
        assert isinstance(c["fired"], bool) and isinstance(c["evidence"], dict)
    verdict = doc["verdict"]
    assert set(verdict) >= {"rule", "score", "gate", "reasons"}
    assert (verdict["rule"], verdict["score"], verdict["gate"], verdict["reasons"]) == (
        "agreement_first", 1.0, "pass", [])
    assert doc["answer_text"] == "There are 1,200 customers."
    assert doc["hint"] == "count rows"


def test_json_names_the_reasons_of_an_abstain(vouch):
    code, out, _ = vouch("--json", sql=(LOYALTY, LOYALTY))
    assert code == 0
    verdict = _json(out)["verdict"]
    assert (verdict["score"], verdict["gate"]) == (0.59, "abstain")
    assert "bad_join" in verdict["reasons"]


def test_failed_shown_sql_is_reported_in_the_result(vouch):
    code, out, _ = vouch("--json", sql=("SELECT shoe_size FROM customers", COUNT))
    assert code == 0
    doc = _json(out)
    assert doc["shown"]["result"]["error"]["kind"] == "execution"
    assert doc["agreement"] == 0.0
    assert [c["name"] for c in doc["checks"] if c["fired"]][0] == "no_result"


def test_rule_option_changes_the_verdict_rule(vouch):
    _, default, _ = vouch("--json")
    code, designed, _ = vouch("--json", "--rule", "designed")
    assert code == 0
    assert _json(default)["verdict"]["rule"] == "agreement_first"
    assert _json(designed)["verdict"]["rule"] == "designed"


def test_rule_from_the_environment(vouch, monkeypatch):
    monkeypatch.setenv("VOUCH_RULE", "v3")
    _, out, _ = vouch("--json")
    assert _json(out)["verdict"]["rule"] == "v3"


# ---------------------------------------------------------------------------------------
# Exit codes
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sql, gate", [((COUNT, COUNT), "PASS"), ((COUNT,), "FLAG"), ((LOYALTY,), "ABSTAIN")])
def test_exit_code_is_zero_for_every_gate(vouch, sql, gate):
    code, out, err = vouch(sql=sql)
    assert code == 0, err
    assert gate in out
    assert err == ""


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_unknown_rule_is_exit_2(vouch):
    code, out, err = vouch("--rule", "bogus")
    assert code == 2 and out == ""
    line = _one_error_line(err)
    assert "bogus" in line and "agreement_first" in line


def test_empty_question_is_exit_2(vouch):
    code, out, err = vouch(question="   ")
    assert code == 2 and out == ""
    assert "question" in _one_error_line(err)


def test_missing_database_file_is_exit_2(vouch, tmp_path):
    code, out, err = vouch(db=tmp_path / "nowhere.sqlite")
    assert code == 2 and out == ""
    assert "nowhere.sqlite" in _one_error_line(err)
    assert not (tmp_path / "nowhere.sqlite").exists(), "a missing database is not created"


def test_not_a_database_is_exit_2(vouch, tmp_path):
    bogus = tmp_path / "notes.sqlite"
    bogus.write_text("not a database", encoding="utf-8")
    code, out, err = vouch(db=bogus)
    assert code == 2 and out == ""
    _one_error_line(err)


def test_missing_sql_is_exit_2(vouch):
    code, out, err = vouch(sql=())
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--sql" in errors[0], err


def test_missing_question_is_exit_2(vouch):
    code, _, err = vouch(question=None)
    assert code == 2
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--question" in errors[0], err


# ---------------------------------------------------------------------------------------
# The terminal view
# ---------------------------------------------------------------------------------------
def test_terminal_view_prints_the_gate_before_the_result(vouch):
    code, out, _ = vouch(sql=(COUNT, COUNT))
    assert code == 0
    assert out.index("PASS") < out.index("n_customers") < out.index("1200")
    assert "not a probability" in out
    assert "No check fired" in out


def test_terminal_view_of_an_abstain_names_the_fired_checks_first(vouch):
    code, out, _ = vouch(sql=(LOYALTY,))
    assert code == 0
    first = out.index("ABSTAIN")
    assert first < out.index("tier")
    assert "bad_join" in out[:out.index("tier")], "the reasons come with the gate, before the table"
    assert "ρ" in out  # the check's detail


def test_terminal_view_of_a_failed_query(vouch):
    code, out, _ = vouch(sql=("SELECT shoe_size FROM customers",))
    assert code == 0
    assert out.index("ABSTAIN") < out.index("did not run")
    assert "shoe_size" in out


def test_all_checks_lists_every_check(vouch):
    from vouchsql.checks import CHECKS

    _, out, _ = vouch("--all-checks")
    for check in CHECKS:
        assert check.name in out

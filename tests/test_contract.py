"""Issue 28, item 3: one request for a check on every surface. ``POST /api/check``, the MCP
tool ``check_sql``, ``vouch check`` and :func:`vouchsql.check` take the same fields
(contract.py), with the same limits, and each surface differs only in how it names the
database. The same request gives the same verdict everywhere."""

from __future__ import annotations

import inspect
import json

import pytest

import vouchsql
from vouchsql.cli import build_parser, main
from vouchsql.contract import CheckFields

pytestmark = pytest.mark.server

QUESTION = "How many orders are there?"
SQL = "SELECT COUNT(*) FROM orders"
REQUEST = {"question": QUESTION, "candidates": [SQL, SQL], "answer_text": "There are 12 orders.",
           "judged_parts": [["how many orders", True]], "judged_claims": [["There are 12 orders", True]],
           "rule": "v2", "all_choices": True}


def _schema_without(model, name: str) -> dict:
    schema = model.model_json_schema()
    props = dict(schema["properties"])
    props.pop(name)
    return props


def test_http_and_mcp_take_the_fields_of_one_model():
    pytest.importorskip("fastapi")
    from vouchsql.mcp_server.tools import CheckSqlInput
    from vouchsql.server.app import CheckRequest

    shared = CheckFields.model_json_schema()["properties"]
    assert _schema_without(CheckRequest, "db") == shared
    assert _schema_without(CheckSqlInput, "database") == shared
    assert set(CheckFields.model_json_schema()["required"]) == {"question", "candidates"}


def test_the_library_and_the_cli_take_every_field():
    params = inspect.signature(vouchsql.check).parameters
    assert set(CheckFields.model_fields) - {"question", "candidates"} <= set(params)
    check = build_parser()._subparsers._group_actions[0].choices["check"]
    check.format_help()  # fills the parser's arguments
    options = {a.dest for a in check._actions}
    assert {"question", "sql", "answer_text", "hint", "rule", "all_choices", "judged_parts",
            "judged_claims"} <= options


def test_the_same_request_gives_the_same_verdict_on_every_surface(demo_db, tmp_path, capsys):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from vouchsql.mcp_server.tools import CheckSqlInput, Tools
    from vouchsql.server.app import ServerOptions, create_app
    from vouchsql.settings import load_config

    config = load_config(env={}, cache_dir=str(tmp_path))
    library = vouchsql.check(demo_db, QUESTION, REQUEST["candidates"], answer_text=REQUEST["answer_text"],
                             rule="v2", all_choices=True, judged_parts=[("how many orders", True)],
                             judged_claims=[("There are 12 orders", True)], cache_dir=str(tmp_path))
    with TestClient(create_app(ServerOptions(databases={"demo": str(demo_db)}), config)) as client:
        http = client.post("/api/check", json={"db": "demo", **REQUEST}).json()
    tools = Tools({"demo": str(demo_db)}, config)
    mcp = tools._check_sql(CheckSqlInput(database="demo", **REQUEST))
    code = main(["check", "--db", str(demo_db), "-q", QUESTION, "--sql", SQL, "--sql", SQL, "--answer-text",
                 REQUEST["answer_text"], "--rule", "v2", "--all-choices", "--json", "--cache-dir", str(tmp_path),
                 "--judged-parts", json.dumps(REQUEST["judged_parts"]),
                 "--judged-claims", json.dumps(REQUEST["judged_claims"])])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    verdicts = [(a["verdict"]["gate"], a["verdict"]["score"], a["verdict"]["rule"],
                 sorted(c["name"] for c in a["checks"] if c.get("fired")))
                for a in (library.model_dump(mode="json"), http, mcp, cli)]
    assert verdicts[0][2] == "v2" and "claim_judge" in verdicts[0][3]
    assert all(v == verdicts[0] for v in verdicts), verdicts


@pytest.mark.parametrize("argv, says", [
    (["--judged-parts", "not json"], "--judged-parts is not JSON"),
    (["--judged-claims", '[["a claim", "maybe", 3]]'], "invalid check: judged_claims.0"),
    (["--sql", "x" * 20_001], "invalid check: candidates.1"),
])
def test_cli_refuses_what_the_other_surfaces_refuse(demo_db, capsys, argv, says):
    assert main(["check", "--db", str(demo_db), "-q", QUESTION, "--sql", SQL, *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err

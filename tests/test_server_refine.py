"""Phase 2 on the HTTP API and the page (issue 15, part 5): ``POST /api/refine`` answers the
request again with the picked interpretation's clause appended (the real ``vouchsql.refine``
through the real openai SDK against a scripted model on loopback), refuses bad picks with
structured errors, and is off without a model; the page ships the pick button, the JSON
download and the check permalink (their behaviour in a browser: tests/e2e/test_web_phase2.py)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("httpx", reason="httpx is needed by FastAPI's TestClient")

import jsonschema  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from fakes.servers import Script, ScriptedServer, assess_reply  # noqa: E402
from vouchsql import schemas  # noqa: E402
from vouchsql.server.app import STATIC_DIR, ServerOptions, create_app  # noqa: E402
from vouchsql.settings import load_config  # noqa: E402

OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]
BY_CUSTOMER = "SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"
BY_ORDER = "SELECT COUNT(*) AS orders FROM orders"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(schemas.ANSWER_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _client(tmp_path, demo_db, model=None, base_url=None) -> TestClient:
    cfg = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), base_url=base_url,
                      max_retries=1, retry_backoff=0.001, model_timeout=5)
    return TestClient(create_app(ServerOptions(databases={"demo": str(demo_db)}, model=model), cfg))


def test_refine_appends_the_picked_clause(tmp_path, demo_db, validator):
    script = Script(assess=assess_reply(interpretations=INTERPS),
                    # The first key found in the request wins: the refined request holds both phrases.
                    samples={"not each customer once": [BY_ORDER], "every order row": [BY_ORDER],
                             "each customer once": [BY_CUSTOMER]})
    with ScriptedServer(script) as srv:
        c = _client(tmp_path, demo_db, model="openai:scripted", base_url=srv.base_url)
        first = c.post("/api/ask", json={"db": "demo", "question": OPEN_Q, "k": 2})
        assert first.status_code == 200, first.text
        old = first.json()
        r = c.post("/api/refine", json={"db": "demo", "question": old["question"],
                                        "interpretations": old["interpretations"], "pick": 2, "k": 2})
    assert r.status_code == 200, r.text
    new = r.json()
    validator.validate(new)
    assert new["question"] == OPEN_Q + " " + INTERPS[1][1]  # the request word for word, then the clause
    assert new["shown"]["sql"] == BY_ORDER and old["shown"]["sql"] == BY_CUSTOMER
    assert [i["picked"] for i in new["interpretations"]] == [False, True]
    assert str(demo_db) not in r.text


@pytest.mark.parametrize("body, status, says", [
    ({"pick": 3}, 422, "pick 3: choose an interpretation from 1 to 2"),
    ({"pick": 0}, 422, "pick"),
    ({"interpretations": [{"text": "only one", "clause": "x"}]}, 422, "interpretations"),
    ({"db": "nope"}, 404, "no database named 'nope'"),
    ({"path": "/etc/passwd"}, 422, "path"),
])
def test_refine_refuses_bad_requests(tmp_path, demo_db, body, status, says):
    c = _client(tmp_path, demo_db, model="openai:scripted", base_url="http://127.0.0.1:9")
    request = {"db": "demo", "question": OPEN_Q, "pick": 1,
               "interpretations": [{"text": t, "clause": cl} for t, cl in INTERPS], **body}
    r = c.post("/api/refine", json=request)
    assert r.status_code == status and says in r.json()["error"]["message"], r.text


def test_refine_is_off_without_a_model(tmp_path, demo_db):
    c = _client(tmp_path, demo_db)
    r = c.post("/api/refine", json={"db": "demo", "question": OPEN_Q, "pick": 1,
                                    "interpretations": [{"text": t, "clause": cl} for t, cl in INTERPS]})
    assert r.status_code == 503 and r.json()["error"]["kind"] == "no_model"


def test_the_page_ships_pick_download_and_permalink():
    js = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    assert '"/api/refine"' in js and "Pick this reading" in js
    assert "Download JSON" in js and "application/json" in js
    assert "#check=" in js and "hashchange" in js

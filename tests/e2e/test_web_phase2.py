"""The page's phase 2, JSON download and check permalink in a real headless Chromium (issue 15,
part 5). Skips, with the reason, where Playwright or the browser is missing — as on the
development VM, which has no Chromium; ``tests/test_server_refine.py`` covers the API and that
the page ships these controls. ``VOUCH_CHROMIUM`` picks another Chromium binary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("uvicorn", reason="the [server] extra (fastapi, uvicorn) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (Python) is not installed: pip install playwright")

from fakes.servers import Script, ScriptedServer, assess_reply  # noqa: E402
from fakes.browser import browser, serve  # noqa: E402,F401 - the shared fixtures
from vouchsql import api  # noqa: E402
from vouchsql.demo import EXAMPLES  # noqa: E402
from vouchsql.server.access import LOOPBACK_NAMES  # noqa: E402
from vouchsql.server.app import ServerOptions, create_app  # noqa: E402
from vouchsql.settings import load_config  # noqa: E402

TIE = next(e for e in EXAMPLES if e["title"] == "Tie at the top price")
OPEN_Q = "How many customers placed orders?"
INTERPS = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
           ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.problems = []
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    yield page
    context.close()


def test_download_and_permalink(browser, page, demo_db, tmp_path, serve):
    expect = sync_api.expect
    config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"))
    app = create_app(ServerOptions(databases={"demo": str(demo_db)}, examples={"demo": EXAMPLES},
                                   allowed_hosts=list(LOOPBACK_NAMES)), config)
    server, thread, url = serve(app)
    try:
        expected = api.check(demo_db, TIE["question"], [TIE["sql"], TIE["alt_sql"]], config=config)
        page.goto(url + "/")
        page.get_by_role("button", name=re.compile("Tie at the top price")).click()
        expect(page.locator("#verdict-badge")).to_have_text(expected.verdict.gate.upper())
        with page.expect_download() as info:
            page.get_by_role("button", name="Download JSON").click()
        saved = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
        assert saved["verdict"]["gate"] == expected.verdict.gate and saved["question"] == TIE["question"]

        link = page.get_by_role("link", name="Link to this check").get_attribute("href")
        assert link.startswith("#check=") and page.evaluate("() => location.hash") == link
        other = browser.new_context().new_page()
        other.goto(url + "/" + link)  # a fresh tab: the link alone re-runs the same check
        expect(other.locator("#verdict-badge")).to_have_text(expected.verdict.gate.upper())
        assert other.locator("#question").input_value() == TIE["question"]
        expect(other.locator("#trace tbody tr")).to_have_count(2)
        other.context.close()
        assert page.problems == []
    finally:
        server.should_exit = True
        thread.join(10)


def test_picking_a_reading_runs_phase_2_beside_the_old_answer(page, demo_db, tmp_path, serve):
    expect = sync_api.expect
    script = Script(assess=assess_reply(interpretations=INTERPS), write="See the result.",
                    samples={"not each customer once": ["SELECT COUNT(*) AS orders FROM orders"],
                             "every order row": ["SELECT COUNT(*) AS orders FROM orders"],
                             "each customer once": ["SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"]})
    with ScriptedServer(script) as srv:
        config = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), base_url=srv.base_url,
                             max_retries=1, retry_backoff=0.001, model_timeout=5)
        app = create_app(ServerOptions(databases={"demo": str(demo_db)}, model="openai:scripted",
                                       allowed_hosts=list(LOOPBACK_NAMES)), config)
        server, thread, url = serve(app)
        try:
            page.goto(url + "/")
            expect(page.locator("#ask-btn")).to_be_enabled()
            page.locator("#question").fill(OPEN_Q)
            page.locator("#ask-btn").click()
            expect(page.get_by_role("tab", name=re.compile("reading 2"))).to_be_visible()
            page.get_by_role("tab", name=re.compile("reading 2")).click()
            page.get_by_role("button", name="Pick this reading").click()
            comparison = page.locator("#pick-comparison")
            expect(comparison).to_be_visible()
            expect(comparison).to_contain_text("Before the pick")
            expect(comparison).to_contain_text(INTERPS[1][1])  # the new request carries the clause
            assert page.problems == []
        finally:
            server.should_exit = True
            thread.join(10)

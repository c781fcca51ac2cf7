"""The web page end to end in a real headless Chromium (Debian's ``chromium`` package, driven
by Playwright through its executable path): uvicorn serves the app on a loopback port, the
page runs a check with an open choice, and a screenshot is saved.

Skips with the reason when Playwright or the browser is missing or cannot start. Set
``VOUCH_CHROMIUM`` to use another Chromium binary and ``VOUCH_SCREENSHOT_DIR`` to keep the
screenshots somewhere other than pytest's tmp folder."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("uvicorn", reason="the [server] extra (fastapi, uvicorn) is not installed")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (Python) is not installed: pip install playwright")

from fakes.browser import browser, serve  # noqa: E402,F401 - the shared fixtures
from vouchsql import api  # noqa: E402
from vouchsql.demo import EXAMPLES  # noqa: E402
from vouchsql.server.access import LOOPBACK_NAMES  # noqa: E402
from vouchsql.server.app import ServerOptions, create_app  # noqa: E402
from vouchsql.settings import load_config  # noqa: E402

TOKEN = "e2e-token-0123456789abcdef"
TIE = next(e for e in EXAMPLES if e["title"] == "Tie at the top price")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return load_config(env={}, cwd=tmp_path_factory.mktemp("cwd"), cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def site(demo_db, config, serve):
    app = create_app(ServerOptions(databases={"demo": str(demo_db)}, examples={"demo": EXAMPLES},
                                   allowed_hosts=list(LOOPBACK_NAMES)), config)
    server, thread, url = serve(app)
    yield url
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.problems = []
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    yield page
    context.close()


@pytest.fixture
def shots(tmp_path):
    folder = Path(os.environ.get("VOUCH_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_check_with_an_open_choice(page, site, shots, demo_db, config):
    expect = sync_api.expect
    candidates = [TIE["sql"], TIE["alt_sql"]]
    expected = api.check(demo_db, TIE["question"], candidates, config=config)

    page.goto(site + "/")
    example = page.get_by_role("button", name=re.compile("Tie at the top price"))
    example.click()

    badge = page.locator("#verdict-badge")
    expect(badge).to_have_text(expected.verdict.gate.upper())
    reasons = page.locator(".verdict .reasons li")
    expect(reasons).to_have_count(len(expected.verdict.reasons))
    expect(reasons.first).to_contain_text("agreement")
    assert page.locator("#question").input_value() == TIE["question"]

    rows = page.locator("#result-section table tbody tr")
    expect(rows).to_have_count(expected.shown.result.row_count)
    expect(rows.first).to_contain_text(str(expected.shown.result.rows[0][0]))
    expect(page.locator("#trace tbody tr")).to_have_count(2)
    expect(page.locator("#checks tbody tr")).to_have_count(len(expected.checks))

    path = shots / "vouch_web_check.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"\nscreenshot: {path}")
    assert path.stat().st_size > 10_000
    assert page.problems == []

    assert expected.choices, "the example must report an open choice: the page's choice tabs are tested below"
    tie = next(c for c in expected.choices if c.type == "ties")
    expect(reasons.filter(has_text="Open choice")).to_have_count(1)
    tab = page.get_by_role("tab", name=re.compile("Ties"))
    expect(tab).to_have_attribute("aria-selected", "true")
    panel = page.get_by_role("tabpanel")
    expect(panel).to_be_visible()
    alt_rows = panel.locator(".alt-side tbody tr")
    expect(alt_rows).to_have_count(tie.result.row_count)
    for name, _price in tie.result.rows:
        expect(panel.locator(".alt-side")).to_contain_text(name)
    expect(panel.locator(".shown-side tbody tr")).to_have_count(expected.shown.result.row_count)
    expect(panel).to_contain_text(tie.description)


def test_keyboard_charts_and_escaping(page, site, shots):
    expect = sync_api.expect
    page.goto(site + "/")
    expect(page.locator("#db option")).to_have_count(1)
    expect(page.locator("#ask-btn")).to_be_disabled()
    expect(page.locator("#ask-note")).to_contain_text("Ask is off")

    # Bars: a label–value result, run with Ctrl+Enter from the keyboard.
    page.locator("#question").fill("How many orders has each store taken?")
    page.locator("#candidates textarea").first.fill(
        "SELECT s.name, COUNT(*) AS n_orders FROM stores s JOIN orders o ON o.store_id = s.store_id "
        "GROUP BY s.store_id ORDER BY n_orders DESC")
    page.locator("#question").press("Control+Enter")
    expect(page.locator("#verdict-badge")).to_have_text(re.compile("PASS|FLAG|ABSTAIN"))
    chart = page.locator(".chart svg[role=img]")
    expect(chart).to_have_attribute("aria-label", re.compile("Bar chart"))
    expect(chart.locator("rect.bar")).to_have_count(7)
    if page.locator("#choices").count():  # tabs: arrow keys move between them
        page.get_by_role("tab").first.focus()
        page.keyboard.press("End")
        expect(page.get_by_role("tab").last).to_be_focused()

    # A line: a time series.
    page.locator("#question").fill("How many orders were placed each month?")
    page.locator("#candidates textarea").first.fill(
        "SELECT substr(order_date, 1, 7) AS month, COUNT(*) AS n_orders FROM orders GROUP BY month ORDER BY month")
    page.locator("#candidates textarea").first.press("Control+Enter")
    expect(page.locator(".chart svg polyline.line")).to_have_count(1)
    expect(page.locator(".chart svg circle.dot")).to_have_count(24)
    page.screenshot(path=str(shots / "vouch_web_line.png"), full_page=True)

    # Data is text, never markup.
    markup = "<img src=x onerror=window.pwned=1><b>bold</b>"
    page.locator("#question").fill("What does this return?")
    page.locator("#candidates textarea").first.fill(f"SELECT '{markup}' AS label, 1 AS v UNION ALL SELECT 'b', 2")
    page.locator("#check-btn").click()
    cell = page.locator("#result-section tbody tr").first.locator("td").first
    expect(cell).to_have_text(markup)
    assert page.locator("#output img, #output b").count() == 0
    assert page.evaluate("() => window.pwned === undefined")

    # Bad SQL is shown as the result's error, not a broken page.
    page.locator("#candidates textarea").first.fill("SELECT nope FROM nowhere")
    page.locator("#check-btn").click()
    expect(page.locator("#verdict-badge")).to_have_text("ABSTAIN")
    expect(page.locator("#result-section .result-error")).to_contain_text("nowhere")
    assert page.problems == []


def test_the_page_asks_for_the_token(browser, demo_db, config, serve):
    app = create_app(ServerOptions(databases={"demo": str(demo_db)}, token=TOKEN), config)
    server, thread, url = serve(app)
    try:
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(url + "/")
        expect = sync_api.expect
        expect(page.locator("#token-bar")).to_be_visible()
        page.locator("#token").fill(TOKEN)
        page.locator("#token").press("Enter")
        expect(page.locator("#db option")).to_have_count(1)
        expect(page.locator("#token-bar")).to_be_hidden()
        page.locator("#question").fill("How many customers are there?")
        page.locator("#candidates textarea").first.fill("SELECT COUNT(*) AS n FROM customers")
        page.locator("#question").press("Control+Enter")
        expect(page.locator("#result-section td").first).to_have_text("1200")
        context.close()
    finally:
        server.should_exit = True
        thread.join(10)


def test_ask_shows_the_interpretations_side_by_side(browser, demo_db, tmp_path, shots, monkeypatch, serve):
    """The page's ask path with the real vouchsql.ask, the real openai SDK and a scripted
    OpenAI-compatible server on loopback (no model, no network)."""
    from fakes.servers import Script, ScriptedServer, assess_reply

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "VOUCH_MODEL", "VOUCH_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    question = "How many customers placed orders?"
    interps = [("How many customers placed orders, counting each customer once?", "Count each customer once."),
               ("How many customers placed orders, counting every order row?", "Count every order, not each customer once.")]
    script = Script(assess=assess_reply(interpretations=interps), write="See the result.",
                    samples={"each customer once": ["SELECT COUNT(DISTINCT customer_id) AS customers FROM orders"],
                             "every order row": ["SELECT COUNT(*) AS orders FROM orders"]})
    expect = sync_api.expect
    with ScriptedServer(script) as model_server:
        cfg = load_config(env={}, cwd=tmp_path, cache_dir=str(tmp_path / "cache"), base_url=model_server.base_url,
                          max_retries=1, retry_backoff=0.001, model_timeout=5, samples=2)
        app = create_app(ServerOptions(databases={"demo": str(demo_db)}, model="openai:scripted",
                                       allowed_hosts=list(LOOPBACK_NAMES)), cfg)
        server, thread, url = serve(app)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.goto(url + "/")
            expect(page.locator("#ask-btn")).to_be_enabled()
            page.locator("#question").fill(question)
            page.locator("#question").press("Control+Enter")  # no SQL given: Ctrl+Enter asks
            expect(page.locator("#verdict-badge")).to_have_text(re.compile("PASS|FLAG|ABSTAIN"))
            # The page asks without model prose: the answer text is the template over the result.
            expect(page.locator(".answer-text")).to_have_text("customers: 1104.")
            tabs = page.locator("#interpretations [role=tab]")
            expect(tabs).to_have_count(2)
            tabs.first.focus()
            page.keyboard.press("ArrowRight")
            expect(tabs.nth(1)).to_have_attribute("aria-selected", "true")
            panel = page.locator("#interpretations [role=tabpanel]:not([hidden])")
            expect(panel).to_contain_text(interps[1][0])
            expect(panel.locator(".alt-side th")).to_have_text("orders")
            expect(panel.locator(".shown-side th")).to_have_text("customers")
            page.screenshot(path=str(shots / "vouch_web_ask.png"), full_page=True)
            context.close()
        finally:
            server.should_exit = True
            thread.join(10)

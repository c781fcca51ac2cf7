"""``vouch eval predictions``' report opens in a real headless Chromium with both plots drawn:
the risk–coverage curve and a reliability diagram per rule (issue 29).

Skips with the reason when Playwright or the browser is missing or cannot start."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api", reason="Playwright (Python) is not installed: pip install playwright")
pytest.importorskip("matplotlib", reason="matplotlib draws the figures")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakes.browser import browser  # noqa: E402,F401 - the shared fixture

from vouchsql.cli import main  # noqa: E402


def test_the_predictions_report_shows_both_plots(browser, demo_db, tmp_path):  # noqa: F811 - the fixture
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in [
        {"id": "q1", "db": "shop", "question": "How many stores are there?", "gold_sql": "SELECT COUNT(*) FROM stores"},
        {"id": "q2", "db": "shop", "question": "What is the highest product price?",
         "gold_sql": "SELECT MAX(price) FROM products"},
    ]), encoding="utf-8")
    (tmp_path / "a.sql").write_text("SELECT COUNT(*) FROM stores\nSELECT MAX(price) FROM products\n", encoding="utf-8")
    (tmp_path / "b.sql").write_text("SELECT COUNT(*) FROM orders\nSELECT MAX(price) FROM products\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["eval", "predictions", "--questions", str(questions), "--predictions", f"a={tmp_path / 'a.sql'}",
                 f"b={tmp_path / 'b.sql'}", "--db", f"shop={demo_db}", "--out", str(out), "--bootstrap", "50",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto((out / "report.html").as_uri())
        assert page.locator("h2", has_text="Confident errors (A = 1)").count() == 1
        images = page.locator("figure img")
        alts = [images.nth(i).get_attribute("alt") for i in range(images.count())]
        assert any(a.startswith("Accuracy of the answers shown") for a in alts), alts
        assert any(a.startswith("Reliability diagram") for a in alts), alts
        # Every figure decoded to a real picture, not a broken image.
        widths = page.eval_on_selector_all("figure img", "els => els.map(e => e.complete ? e.naturalWidth : 0)")
        assert widths and all(w > 200 for w in widths), widths
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    finally:
        page.close()

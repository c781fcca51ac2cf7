"""Issue 30, item 4: Vouch in a notebook. docs/notebooks/check.ipynb runs top to bottom in a
real Jupyter kernel (nbclient, ipykernel); its Answer, Result and Profile outputs are HTML
tables holding the gate, the reasons and the readings side by side; the HTML renders in
Chromium; and the same objects print as rich text in a terminal REPL."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

import vouchsql

pytestmark = pytest.mark.slow

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "check.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (it comes with [dev])")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (it comes with [dev])")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (it comes with [dev])")
    cache = tmp_path_factory.mktemp("notebook-cache")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VOUCH_CACHE_DIR", str(cache))  # the kernel inherits it: the demo lands here
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(cache)}}).execute()
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def _html(cell) -> str:
    outputs = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert outputs, cell.source
    return outputs[0]["data"]["text/html"]


def test_every_cell_runs_without_an_error(executed):
    for cell in executed:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source


def test_the_tie_shows_both_readings_side_by_side(executed):
    page = _html(executed[1])
    assert ">PASS<" in page or ">FLAG<" in page or ">ABSTAIN<" in page
    assert "Each reading of the request, side by side" in page and "open choice: ties" in page
    assert page.count("UltraBook Pro 16 Laptop") >= 2  # in the shown result and the tied one
    assert "5 rows" in page and "1 row" in page
    assert executed[2].outputs[0]["data"]["text/plain"] == "('pass', ['ties'])"


def test_the_bad_join_is_withheld_with_its_reason(executed):
    page = _html(executed[3])
    assert ">ABSTAIN<" in page and "bad_join" in page and "veto" in page


def test_a_result_and_the_profile_are_tables(executed):
    result, profile = _html(executed[4]), _html(executed[5])
    assert "<th>category</th><th>products</th>" in result and "rows" in result
    assert "<th>table</th><th>rows</th>" in profile and ">orders<" in profile and "stand-in codes" in profile


def test_values_are_escaped(demo_db):
    sql = "SELECT '<script>alert(1)</script>' AS \"<b>x</b>\""
    page = vouchsql.check(demo_db, "What is it?", [sql])._repr_html_()
    assert "<script>" not in page and html.escape("<script>alert(1)</script>") in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page


def test_a_terminal_repl_prints_what_the_cli_prints(demo_db):
    from rich.console import Console

    answer = vouchsql.check(demo_db, "Which product has the highest price?",
                            ["SELECT name, price FROM products ORDER BY price DESC LIMIT 1"])
    console = Console(width=100, record=True, color_system=None)
    console.print(answer)
    console.print(answer.shown.result)
    text = console.export_text()
    assert "Open choice — ties" in text and "UltraBook Pro 16 Laptop" in text and "score" in text


def test_the_notebook_output_renders_in_chromium(executed, tmp_path):
    from fakes.browser import CHROMIUM, CHROMIUM_ARGS

    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (Python) is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's package (apt-get install -y chromium)")
    page_file = tmp_path / "answer.html"
    page_file.write_text("<html><body>" + _html(executed[1]) + "</body></html>", encoding="utf-8")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(page_file.as_uri())
            shot = page.screenshot(path=str(tmp_path / "answer.png"), full_page=True)
            gate = page.locator(".vouch .gate")
            assert gate.inner_text() in ("PASS", "FLAG", "ABSTAIN")
            assert gate.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
            # the readings are columns of one table: the tied reading's cell sits right of the shown one
            cells = page.locator(".vouch table").last.locator("tr").first.locator("th")
            assert cells.count() == 2
            first, second = cells.nth(0).bounding_box(), cells.nth(1).bounding_box()
            assert second["x"] > first["x"] + first["width"] - 1
        finally:
            browser.close()
    assert len(shot) > 5_000  # a rendered page, not a blank one


@pytest.mark.parametrize("k", [1, 3])
def test_the_notebook_the_repl_and_the_cli_say_the_same_agreement(demo_db, k, capsys):
    """One candidate: agreement is unmeasured on every surface (never "1.00 over 1"); three:
    the same agreement over three candidates. One helper words it for all of them."""
    import io
    import re

    from rich.console import Console

    from vouchsql.cli import main

    question, sql = "How many orders are there?", "SELECT COUNT(*) FROM orders"
    answer = vouchsql.check(demo_db, question, [sql] * k)
    page = html.unescape(re.sub(r"<[^>]+>", " ", answer._repr_html_()))
    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    console.print(answer)
    repl = console.export_text()
    assert main(["check", "--db", str(demo_db), "-q", question] + [a for _ in range(k) for a in ("--sql", sql)]) in (0, 1, 2)
    cli = capsys.readouterr().out
    said = "agreement unmeasured (one candidate)" if k == 1 else "agreement 1.00 over 3 candidates"
    for surface, text in (("notebook", page), ("repl", repl), ("cli", cli)):
        assert said in text, surface
        assert re.findall(r"agreement (?:unmeasured \([^)]*\)|\S+ over \d+ \w+)", text) == [said], surface

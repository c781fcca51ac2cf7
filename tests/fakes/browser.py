"""What the browser tests (tests/e2e) share, imported by each module (a tests/e2e/conftest.py
would shadow the top-level ``conftest`` that other test modules import from): a headless
Chromium per module (Debian's package, driven by Playwright through its executable path;
``VOUCH_CHROMIUM`` picks another binary) and uvicorn serving an app on a loopback port. Each fixture skips with the reason where Playwright,
uvicorn or the browser is missing or cannot start."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("VOUCH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    # Per module: Playwright's sync API runs one driver loop at a time, and each importing
    # module gets its own copy of this fixture.
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (Python) is not installed: pip install playwright")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's package (apt-get install -y chromium) "
                    f"or set VOUCH_CHROMIUM to run the browser test")
    pw = sync_api.sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=60_000)
    except Exception as exc:  # noqa: BLE001 - any launch failure is a skip with its reason
        pw.stop()
        pytest.skip(f"Chromium at {CHROMIUM} could not be started: {str(exc).splitlines()[0]}")
    yield browser
    browser.close()
    pw.stop()


@pytest.fixture(scope="session")
def serve():
    """``serve(app) -> (server, thread, url)``: uvicorn on a free loopback port, started."""
    uvicorn = pytest.importorskip("uvicorn", reason="the [server] extra (fastapi, uvicorn) is not installed")

    def start(app):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                pytest.fail("uvicorn did not start")
            time.sleep(0.05)
        return server, thread, f"http://127.0.0.1:{port}"

    return start

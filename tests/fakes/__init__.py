"""Test doubles for the model layer: scripted OpenAI- and Anthropic-protocol servers on
loopback (:mod:`.servers`) and a guard that keeps every model test off the network.

``no_network`` is autouse for every test (``tests/conftest.py`` imports it): vendor keys and
base URLs are removed from the environment, and any socket connection to an address other
than loopback fails the test.

``ask_cache`` (import it with ``demo_profile``) is a fresh cache folder for one test that
already holds the demo database's profile, so each test keeps its own response cache without
profiling the demo database again.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
from pathlib import Path

import pytest

_MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "VOUCH_MODEL",
              "VOUCH_BASE_URL", "VOUCH_CONFIG", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")


def _loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, (bytes, str)) and not isinstance(address, tuple):
        return True  # a Unix socket path
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    for name in _MODEL_ENV:
        monkeypatch.delenv(name, raising=False)
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise AssertionError(f"a test tried to reach the network: {address!r}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
            raise AssertionError(f"a test tried to reach the network: {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    yield


@pytest.fixture(scope="session")
def demo_profile(tmp_path_factory, demo_db) -> Path:
    import vouchsql

    folder = tmp_path_factory.mktemp("demo-profile")
    with vouchsql.connect(demo_db, cache_dir=str(folder)) as db:
        db.profile()
    return folder / "profiles"


@pytest.fixture
def ask_cache(tmp_path, demo_profile) -> str:
    dest = tmp_path / "cache"
    shutil.copytree(demo_profile, dest / "profiles")
    return str(dest)

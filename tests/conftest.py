"""Shared fixtures: the public sample databases (skipped where absent) and the demo database."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

# The public sample databases live beside the checkout, never inside it.
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"public sample databases not found at {DATASETS} "
                    f"(expected ../shared/datasets beside the checkout)")
    return DATASETS


def _dataset(datasets_dir: Path, name: str) -> Path:
    path = datasets_dir / f"{name}.sqlite"
    if not path.is_file():
        pytest.skip(f"sample database {path} is absent")
    return path


@pytest.fixture(scope="session")
def chinook_path(datasets_dir) -> Path:
    """The shared chinook file. Read-only: copy it before anything that could write."""
    return _dataset(datasets_dir, "chinook")


@pytest.fixture(scope="session")
def sakila_path(datasets_dir) -> Path:
    return _dataset(datasets_dir, "sakila")


@pytest.fixture(scope="session")
def northwind_path(datasets_dir) -> Path:
    return _dataset(datasets_dir, "northwind")


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """The generated demo database (default seed), built once per test session."""
    from vouchsql.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "demo.sqlite")


@pytest.fixture
def file_digest():
    """sha256 of a file's bytes, to show a file is byte-identical before and after."""
    return sha256_of


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    """One profile cache per test module: each database is profiled once, not once per case."""
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def databases(request, cache_dir):
    """``get(name)`` opens demo/chinook/sakila/northwind once per module (skipping where the
    shared datasets are absent) and closes them at the end."""
    import vouchsql

    opened: dict = {}

    def get(name: str):
        if name not in opened:
            path = request.getfixturevalue("demo_db" if name == "demo" else f"{name}_path")
            opened[name] = vouchsql.connect(path, cache_dir=cache_dir)
        return opened[name]

    yield get
    for db in opened.values():
        db.close()


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No VOUCH_* variable from the caller's shell, and no vouch.toml from its folder."""
    for name in list(os.environ):
        if name.startswith("VOUCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)

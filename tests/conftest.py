"""Shared fixtures: the public sample databases (skipped where absent) and the demo database.

``VOUCH_REQUIRE_SERVICES`` (comma-separated: ``postgresql``, ``mariadb``, ``chromium``,
``java``, or ``all``) turns a test skipped because that service is missing into a failure:
``.ci/run`` sets it, so CI cannot be green without having run the server, browser and Spark
tests. A contributor without the servers leaves it unset and sees the skips with their reasons.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from pathlib import Path

import pytest

import vouchsql.choices
from fakes import no_network  # noqa: F401 - autouse for every test: no vendor keys, no sockets off loopback

# The session stops Spark and exits within a bound once the tests are done (tests/exit_guard.py).
pytest_plugins = ["exit_guard"]

# The public sample databases live beside the checkout, never inside it.
DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


# What a skip's reason says when each service is missing (every skip site words it so).
SERVICE_SKIPS = {
    "postgresql": re.compile(r"PostgreSQL is not reachable|psycopg is not installed"),
    "mariadb": re.compile(r"MariaDB/MySQL is not reachable|PyMySQL is not installed"),
    "chromium": re.compile(r"Chromium|Playwright"),
    "java": re.compile(r"^Spark: |no Java runtime"),
}


def required_services(value: str | None = None) -> set[str]:
    """The services ``VOUCH_REQUIRE_SERVICES`` names (``all``: every one); an unknown name is an error."""
    raw = os.environ.get("VOUCH_REQUIRE_SERVICES", "") if value is None else value
    names = {n.strip().lower() for n in raw.split(",") if n.strip()}
    if "all" in names:
        return set(SERVICE_SKIPS)
    unknown = names - set(SERVICE_SKIPS)
    if unknown:
        raise pytest.UsageError(f"VOUCH_REQUIRE_SERVICES names {', '.join(sorted(unknown))}; "
                                f"choose from {', '.join(SERVICE_SKIPS)} or all")
    return names


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip for a missing service that ``VOUCH_REQUIRE_SERVICES`` requires is a failure."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    for service in required_services():
        if SERVICE_SKIPS[service].search(reason):
            report.outcome = "failed"
            report.longrepr = (f"{service} is required here (VOUCH_REQUIRE_SERVICES) but the test was skipped: "
                               f"{reason}")
            return


# Markers, given by what a test needs (`pytest --markers` lists them; docs/getting-started.md).
# A test with none of the first five is `core`: `pytest -m core` is the quick run.
MARKERS = {
    "engines": "runs on PostgreSQL or MariaDB (the local servers), or on every engine",
    "server": "drives `vouch serve` (HTTP) or `vouch mcp`",
    "browser": "drives headless Chromium (tests/e2e)",
    "spark": "starts a local Spark session (needs Java)",
    "slow": "a long module of many cases: the full suite runs it, the core run does not",
    "core": "none of the above: the quick run, `pytest -m core`",
}
ENGINE_FIXTURES = {"pg", "mariadb", "targets", "copies", "engines", "servers", "trap_pg", "trap_mariadb",
                   "pg_reader", "my_reader"}
ENGINE_MODULES = {"test_golden_engines", "test_profile_engines", "test_engines", "test_join_overlap_engine",
                  "test_privileges", "test_no_hidden_state", "test_isolation"}
SERVER_MODULES = {"test_server", "test_server_refine", "test_mcp"}
SPARK_MODULES = {"test_spark"}
# The modules that take most of the time outside the servers, measured with
# `pytest -m core --junitxml=…` and summed per module (2-vCPU VM): the many-case boundary
# files, the docs' examples, the end-to-end harnesses and `vouch ask` over the scripted server.
# What is left is the core run: under a minute.
SLOW_MODULES = {
    "test_boundaries", "test_boundaries_checks", "test_boundaries_question_filters", "test_boundaries_question_shape",
    "test_boundaries_score", "test_docs", "test_robustness", "test_determinism", "test_ask", "test_ask_faults",
    "test_ask_cli", "test_ies_paper", "test_eval_confidence", "test_eval_choices", "test_eval_premise",
    "test_premise_paper", "test_planted", "test_profile", "test_readonly", "test_agreement", "test_sets_generate",
    "test_lazy_profile", "test_startup_imports", "test_import_graph", "test_llm", "test_demo", "test_cli_basic",
    "test_check_cli", "test_retrieval", "test_unjoined_table", "test_required_services", "test_probe_replay",
}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def markers_for(module: str, parts: tuple[str, ...], fixtures, case_id: str = "") -> set[str]:
    """The markers of a test, from its module, its folder, its fixtures and its case id."""
    found = set()
    if "e2e" in parts:
        found.add("browser")
    words = set(re.findall(r"[a-z]+", case_id.lower()))
    if module in SPARK_MODULES or case_id.startswith("spark"):
        found.add("spark")
    if (module in ENGINE_MODULES or "isolation" in parts or ENGINE_FIXTURES & set(fixtures)
            or words & {"pg", "postgresql", "mariadb", "mysql"}):
        found.add("engines")
    if module in SERVER_MODULES:
        found.add("server")
    if module in SLOW_MODULES:
        found.add("slow")
    return found or {"core"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        case = getattr(getattr(item, "callspec", None), "id", "")
        for name in markers_for(path.stem, path.parts, getattr(item, "fixturenames", ()), case):
            item.add_marker(name)


@pytest.fixture(autouse=True, scope="session")
def strict_detectors():
    """A detector that crashes fails the test that ran it, instead of reporting nothing."""
    vouchsql.choices.STRICT = True
    yield
    vouchsql.choices.STRICT = False


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


# -- the local database servers (skipped where absent) ------------------------------------

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
MARIADB_URL = "mysql+pymysql://root@127.0.0.1:3306/test"


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def pg(tmp_path):
    """A fresh schema on the PostgreSQL server, with owners/pets tables; yields
    (url, raw connection, schema). The URL puts the schema first on the search path."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'vouchsql[postgres]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test",
                              autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_URL}: {str(exc).strip().splitlines()[0]}")
    schema = _unique("vouch_test")
    try:
        raw.execute(f"CREATE SCHEMA {schema}")
        raw.execute(f"CREATE TABLE {schema}.owners (id INTEGER PRIMARY KEY, name TEXT)")
        raw.execute(f"CREATE TABLE {schema}.pets (id INTEGER PRIMARY KEY, "
                    f"owner_id INTEGER REFERENCES {schema}.owners(id), age INTEGER NOT NULL, nick TEXT)")
        raw.execute(f"INSERT INTO {schema}.owners SELECT i, 'o' || i FROM generate_series(1, 50) i")
        raw.execute(f"INSERT INTO {schema}.pets SELECT i, 1 + i % 25, "
                    f"CASE WHEN i % 10 = 0 THEN -1 ELSE i % 15 END, "
                    f"CASE WHEN i % 4 = 0 THEN NULL ELSE 'n' || i END FROM generate_series(1, 200) i")
        yield f"{PG_URL}?options=-csearch_path%3D{schema}", raw, schema
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        raw.close()


@pytest.fixture
def mariadb(tmp_path):
    """A fresh database on the MariaDB server with owners/pets; yields (url, raw cursor, name)."""
    pymysql = pytest.importorskip("pymysql", reason="PyMySQL is not installed (pip install 'vouchsql[mysql]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = pymysql.connect(host="127.0.0.1", port=3306, user="root", database="test",
                              autocommit=True, connect_timeout=3)
    except pymysql.Error as exc:
        pytest.skip(f"MariaDB/MySQL is not reachable at {MARIADB_URL}: {exc}")
    name = _unique("vouch_test")
    cur = raw.cursor()
    try:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.owners (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB")
        cur.execute(f"CREATE TABLE {name}.pets (id INT PRIMARY KEY, owner_id INT, age INT NOT NULL, "
                    f"nick VARCHAR(20), FOREIGN KEY (owner_id) REFERENCES {name}.owners(id)) ENGINE=InnoDB")
        cur.executemany(f"INSERT INTO {name}.owners VALUES (%s, %s)", [(i, f"o{i}") for i in range(1, 51)])
        cur.executemany(f"INSERT INTO {name}.pets VALUES (%s, %s, %s, %s)",
                        [(i, 1 + i % 25, -1 if i % 10 == 0 else i % 15, None if i % 4 == 0 else f"n{i}")
                         for i in range(1, 201)])
        yield MARIADB_URL.rsplit("/", 1)[0] + "/" + name, cur, name
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        raw.close()

"""Least privilege: the role a server database is opened as is read at connect, a role that
may write or reach the server's files is warned about (CLI, web page) and refused by
``vouch serve`` without ``--allow-privileged-role``, and the read-only roles that
docs/security.md tells people to create — made here by running the documented SQL itself —
are reported as read-only and can query.

Runs against the real PostgreSQL and MariaDB servers at 127.0.0.1 (skipped with the reason
when absent). Every role, user, schema and database made here has a unique name and is
dropped at the end."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

import vouchsql
from vouchsql.cli import main
from vouchsql.errors import UserInputError
from vouchsql.server.cli import ALLOW_PRIVILEGED_FLAG, check_roles
from vouchsql.settings import load_config

SECURITY_DOC = Path(__file__).resolve().parents[1] / "docs" / "security.md"
PG = "postgresql+psycopg://{user}@127.0.0.1:5432/test"
MY = "mysql+pymysql://{user}@127.0.0.1:3306/{db}"
PASSWORD = "Reader-pw-0123"


def _unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def documented_sql(tag: str, **names: str) -> list[str]:
    """The statements of the block marked ``<!-- tested: TAG -->`` in docs/security.md, with
    the placeholders (role, password, database, schema) replaced by ``names``."""
    text = SECURITY_DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- tested: {re.escape(tag)} -->\s*```sql\n(.*?)```", text, re.S)
    assert m, f"docs/security.md has no SQL block marked 'tested: {tag}'"
    sql = m.group(1)
    placeholders = {"vouch_reader": names["role"], "change-me": names["password"], "mydb": names["database"]}
    if "schema" in names:
        placeholders["public"] = names["schema"]
    for word, value in placeholders.items():
        sql = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", value, sql)
    return [s.strip() for s in sql.split(";") if s.strip()]


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return load_config(env={}, cwd=tmp_path_factory.mktemp("cwd"), cache_dir=str(tmp_path_factory.mktemp("cache")))


# -- servers ------------------------------------------------------------------------------

@pytest.fixture
def pg():
    """A fresh schema on the PostgreSQL server with one small table; yields (raw autocommit
    connection, schema, URL for the superuser with that schema on its search path)."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'vouchsql[postgres]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432: {str(exc).strip().splitlines()[0]}")
    schema = _unique("vouch_priv")
    try:
        raw.execute(f"CREATE SCHEMA {schema}")
        raw.execute(f"CREATE TABLE {schema}.pets (id INTEGER PRIMARY KEY, age INTEGER)")
        raw.execute(f"INSERT INTO {schema}.pets SELECT i, i % 7 FROM generate_series(1, 20) i")
        yield raw, schema, _pg_url("postgres", schema)
    finally:
        raw.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        raw.close()


def _pg_url(user: str, schema: str) -> str:
    return PG.format(user=user) + f"?options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_role(pg):
    """Makes login roles with unique names; drops each (and what was granted to it) at the end."""
    raw, _, _ = pg
    made: list[str] = []

    def make(prefix: str = "vouch_reader") -> str:
        name = _unique(prefix)
        made.append(name)
        return name

    yield make
    for name in made:
        if raw.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (name,)).fetchone():
            raw.execute(f"DROP OWNED BY {name}")
            raw.execute(f"DROP ROLE {name}")


@pytest.fixture
def mariadb():
    """A fresh database on the MariaDB server with one small table; yields (raw cursor,
    database name, URL for root)."""
    pymysql = pytest.importorskip("pymysql", reason="PyMySQL is not installed (pip install 'vouchsql[mysql]')")
    pytest.importorskip("sqlalchemy")
    try:
        raw = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True, connect_timeout=3)
    except pymysql.Error as exc:
        pytest.skip(f"MariaDB/MySQL is not reachable at 127.0.0.1:3306: {exc}")
    name = _unique("vouch_priv")
    cur = raw.cursor()
    try:
        cur.execute(f"CREATE DATABASE {name}")
        cur.execute(f"CREATE TABLE {name}.pets (id INT PRIMARY KEY, age INT)")
        cur.executemany(f"INSERT INTO {name}.pets VALUES (%s, %s)", [(i, i % 7) for i in range(1, 21)])
        yield cur, name, MY.format(user="root", db=name)
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        raw.close()


@pytest.fixture
def my_user(mariadb):
    """Makes accounts (and roles) with unique names; drops them at the end."""
    cur, _, _ = mariadb
    made: list[str] = []

    def make(prefix: str = "vouch_reader") -> str:
        name = _unique(prefix)
        made.append(name)
        return name

    yield make
    for name in made:
        cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
        cur.execute(f"DROP ROLE IF EXISTS {name}")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


# -- a superuser ------------------------------------------------------------------------------

def test_postgres_superuser_is_reported_with_its_powers(pg, config):
    _, _, url = pg
    with vouchsql.connect(url, config=config) as db:
        powers = db.role_powers()
        assert db.role_powers() is powers  # read once per connection
    assert powers.engine == "postgresql" and powers.role == "postgres"
    assert powers.can_write and powers.can_reach_server and powers.privileged
    for power in ("superuser", "member of pg_write_server_files", "member of pg_execute_server_program",
                  "member of pg_read_server_files", "member of pg_write_all_data", "CREATE on database test"):
        assert power in powers.powers
    assert powers.powers[0] == "superuser"
    assert powers.summary.startswith("the role postgres can write and reach the server's files or programs "
                                     "(superuser; ")
    assert powers.warning().endswith("; connect as a read-only role instead, see docs/security.md#least-privilege")


def test_mariadb_root_is_reported_with_its_powers(mariadb, config):
    _, _, url = mariadb
    with vouchsql.connect(url, config=config) as db:
        powers = db.role_powers()
    assert powers.engine == "mysql" and powers.role.startswith("root@")
    assert powers.powers == ["ALL PRIVILEGES ON *.*"]
    assert powers.can_write and powers.can_reach_server


def test_embedded_engines_have_no_role(demo_db, config):
    with vouchsql.connect(demo_db, config=config) as db:
        assert db.role_powers() is None


@pytest.mark.parametrize("server", ["pg", "mariadb"])
def test_cli_warns_exactly_once_per_command(server, request, capsys, config, demo_db):
    _, _, url = request.getfixturevalue(server)
    power = "superuser" if server == "pg" else "ALL PRIVILEGES ON *.*"
    cache = ["--cache-dir", str(config.cache_path)]
    code, out, err = run_cli(capsys, "check", "--db", url, *cache, "-q", "How many pets?",
                             "--sql", "SELECT COUNT(*) FROM pets", "--sql", "SELECT COUNT(id) FROM pets")
    assert code == 0 and "PASS" in out
    (line,) = warnings_in(err)
    assert power in line and "docs/security.md" in line and line.startswith("warning: the role ")
    assert err.count("warning") == 1

    code, out, err = run_cli(capsys, "sql", "--db", url, *cache, "--json", "SELECT MAX(age) FROM pets")
    assert code == 0 and json.loads(out)["rows"] == [[6]]
    assert len(warnings_in(err)) == 1

    code, _, err = run_cli(capsys, "sql", "--db", str(demo_db), *cache, "SELECT 1")
    assert code == 0 and err == ""


def test_ask_warns_exactly_once(pg, config, capsys):
    pytest.importorskip("openai", reason="the openai SDK is not installed (pip install 'vouchsql[openai]')")
    from fakes.servers import Script, ScriptedServer

    _, _, url = pg
    with ScriptedServer(Script(samples=["SELECT COUNT(*) AS n FROM pets"], write="There are 20 pets.")) as srv:
        code, out, err = run_cli(capsys, "ask", "--db", url, "--cache-dir", str(config.cache_path), "--model",
                                 "openai:m", "--base-url", srv.base_url, "--k", "1", "--prose", "--json", "How many pets?")
    assert code == 0 and '"There are 20 pets."' in out
    (line,) = warnings_in(err)
    assert "superuser" in line


def test_serve_refuses_a_privileged_role_unless_allowed(pg, mariadb, config, demo_db, capsys):
    dbs = {"pets": pg[2], "shop": mariadb[2], "demo": str(demo_db)}
    with pytest.raises(UserInputError) as caught:
        check_roles(dbs, config)
    message = caught.value.message
    assert "database 'pets': the role postgres can write" in message and "superuser" in message
    assert "database 'shop': the role root@" in message and "ALL PRIVILEGES ON *.*" in message
    assert "'demo'" not in message
    assert ALLOW_PRIVILEGED_FLAG in message and "docs/security.md" in message

    allowed = check_roles(dbs, config, allow_privileged=True)
    assert sorted(allowed) == ["pets", "shop"]
    assert allowed["pets"].role == "postgres" and allowed["shop"].powers == ["ALL PRIVILEGES ON *.*"]

    # Through the command: exit 2 before anything listens, with the same message.
    code, _, err = run_cli(capsys, "serve", "--db", f"pets={pg[2]}", "--cache-dir", str(config.cache_path),
                           "--port", "1")
    assert code == 2
    assert err.startswith("error: refusing to serve a database whose role can do more than read: database 'pets'")
    assert ALLOW_PRIVILEGED_FLAG in err


# -- roles that may write or reach files, without being superusers ---------------------------------

def test_a_postgres_role_that_may_insert_can_write(pg, pg_role, config):
    raw, schema, _ = pg
    name = pg_role("vouch_writer")
    raw.execute(f"CREATE ROLE {name} LOGIN")
    raw.execute(f"GRANT USAGE ON SCHEMA {schema} TO {name}")
    raw.execute(f"GRANT SELECT, INSERT ON {schema}.pets TO {name}")
    with vouchsql.connect(_pg_url(name, schema), config=config) as db:
        powers = db.role_powers()
    assert powers.role == name and powers.powers == ["INSERT/UPDATE/DELETE/TRUNCATE on 1 table"]
    assert powers.can_write and not powers.can_reach_server


def test_a_postgres_role_that_reads_server_files_reaches_the_server(pg, pg_role, config):
    raw, schema, _ = pg
    name = pg_role("vouch_files")
    raw.execute(f"CREATE ROLE {name} LOGIN")
    raw.execute(f"GRANT pg_read_server_files TO {name}")
    with vouchsql.connect(_pg_url(name, schema), config=config) as db:
        powers = db.role_powers()
    assert powers.powers == ["member of pg_read_server_files"]
    assert powers.can_reach_server and not powers.can_write


def test_a_superuser_login_behind_a_reader_role_is_still_reported(pg, pg_role, config):
    """SET ROLE at login narrows the current role, but the session can switch back to the
    superuser it logged in as: both are read."""
    raw, schema, _ = pg
    name = pg_role()
    raw.execute(f"CREATE ROLE {name} LOGIN")
    raw.execute(f"GRANT pg_read_all_data TO {name}")
    with vouchsql.connect(_pg_url("postgres", schema) + f"%20-crole%3D{name}", config=config) as db:
        assert db.execute("SELECT current_user").rows == [[name]]
        powers = db.role_powers()
    assert powers.role == f"{name} (logged in as postgres)"
    assert powers.powers[0] == "superuser" and powers.can_write and powers.can_reach_server


def test_mariadb_grants_through_a_default_role_and_file_are_found(mariadb, my_user, config):
    cur, db_name, _ = mariadb
    user, role = my_user("vouch_user"), my_user("vouch_role")
    cur.execute(f"CREATE ROLE {role}")
    cur.execute(f"GRANT INSERT, UPDATE (age) ON {db_name}.pets TO {role}")
    cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}'")
    cur.execute(f"GRANT SELECT ON {db_name}.* TO '{user}'@'%'")
    cur.execute(f"GRANT FILE ON *.* TO '{user}'@'%'")
    cur.execute(f"GRANT {role} TO '{user}'@'%'")
    cur.execute(f"SET DEFAULT ROLE {role} FOR '{user}'@'%'")
    with vouchsql.connect(MY.format(user=f"{user}:{PASSWORD}", db=db_name), config=config) as db:
        powers = db.role_powers()
    assert powers.role == f"{user}@%"
    assert powers.powers == ["FILE ON *.*", f"INSERT, UPDATE ON `{db_name}`.`pets`"]
    assert powers.can_write and powers.can_reach_server


# -- the documented read-only roles -------------------------------------------------------------

def assert_read_only(url: str, config, capsys, expect_rows: list) -> None:
    """Not privileged, no CLI warning, a SELECT runs, and the serve check accepts it."""
    with vouchsql.connect(url, config=config) as db:
        powers = db.role_powers()
        result = db.execute("SELECT id, age FROM pets WHERE id <= 3 ORDER BY id")
    assert not powers.privileged and powers.powers == [] and powers.warning() is None
    assert powers.summary.endswith("can only read: no write or server-file power found")
    assert result.error is None and result.rows == expect_rows

    code, out, err = run_cli(capsys, "sql", "--db", url, "--cache-dir", str(config.cache_path), "--csv",
                             "SELECT COUNT(*) AS n FROM pets")
    assert code == 0 and out.splitlines() == ["n", "20"] and err == ""
    assert check_roles({"reader": url}, config) == {}


@pytest.mark.parametrize("tag", ["postgresql", "postgresql-schema"])
def test_documented_postgres_reader_is_read_only(tag, pg, pg_role, config, capsys):
    raw, schema, _ = pg
    if tag == "postgresql" and raw.info.server_version < 140000:
        pytest.skip("pg_read_all_data needs PostgreSQL 14 or later")
    name = pg_role()
    statements = documented_sql(tag, role=name, password=PASSWORD, database="test", schema=schema)
    assert statements[0] == f"CREATE ROLE {name} LOGIN PASSWORD '{PASSWORD}'"
    if tag == "postgresql":
        assert statements[1:] == [f"GRANT CONNECT ON DATABASE test TO {name}", f"GRANT pg_read_all_data TO {name}"]
    else:
        assert f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {name}" in statements
    for statement in statements:
        raw.execute(statement)
    url = PG.format(user=f"{name}:{PASSWORD}") + f"?options=-csearch_path%3D{schema}"
    assert_read_only(url, config, capsys, [[1, 1], [2, 2], [3, 3]])


def test_documented_mariadb_reader_is_read_only(mariadb, my_user, config, capsys):
    cur, db_name, _ = mariadb
    name = my_user()
    statements = documented_sql("mariadb", role=name, password=PASSWORD, database=db_name)
    assert statements == [f"CREATE USER '{name}'@'%' IDENTIFIED BY '{PASSWORD}'",
                          f"GRANT SELECT, SHOW VIEW ON {db_name}.* TO '{name}'@'%'"]
    for statement in statements:
        cur.execute(statement)
    assert_read_only(MY.format(user=f"{name}:{PASSWORD}", db=db_name), config, capsys, [[1, 1], [2, 2], [3, 3]])


# -- the web page's listing -------------------------------------------------------------------

def test_api_databases_carries_the_warning(pg, pg_role, config, demo_db):
    pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
    from fastapi.testclient import TestClient

    from vouchsql.server.app import ServerOptions, create_app

    raw, schema, url = pg
    reader = pg_role()
    for statement in documented_sql("postgresql-schema", role=reader, password=PASSWORD, database="test",
                                    schema=schema):
        raw.execute(statement)
    app = create_app(ServerOptions(databases={"pets": url, "reader": _pg_url(f"{reader}:{PASSWORD}", schema),
                                              "demo": str(demo_db)}), config)
    body = TestClient(app).get("/api/databases").json()
    listed = {d["name"]: d for d in body["databases"]}
    pets = listed["pets"]
    assert pets["role"]["can_write"] and pets["role"]["can_reach_server"] and "superuser" in pets["role"]["powers"]
    assert pets["warning"].startswith("the role this database is opened as can write and reach the server's files")
    assert "docs/security.md" in pets["warning"]
    assert "the role postgres" not in pets["warning"] and "role" not in pets["role"]  # the name stays on the server
    assert listed["reader"]["role"] == {"powers": [], "can_write": False, "can_reach_server": False}
    assert listed["reader"]["warning"] is None
    assert listed["demo"]["role"] is None and listed["demo"]["warning"] is None


def test_the_page_shows_the_warning():
    """The page has a place for the warning and fills it from GET /api/databases."""
    static = Path(vouchsql.__file__).parent / "server" / "static"
    assert 'id="db-warning"' in (static / "index.html").read_text(encoding="utf-8")
    script = (static / "app.js").read_text(encoding="utf-8")
    assert 'api("GET", "/api/databases")' in script and "d.warning" in script

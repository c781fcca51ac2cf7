"""Issue 27, items 1 and 3: the trust boundary read from the catalogue (db/trust.py) and
``vouch doctor`` (db/doctor.py), on a real PostgreSQL and MariaDB.

Each database below holds the traps of the issue and is built in a database of its own.
Every PostgreSQL trap ends in ``side(KEY)``, a SECURITY DEFINER function of the superuser that
runs a program writing a file inside Vouch's READ ONLY transaction (the issue's worst case);
every MariaDB trap changes a global variable or takes a named lock. As the server's superuser
Vouch refuses each database at connect, naming what it found; under the reader role
``vouch doctor`` prints, each trap — alone and reached from inside five other queries — is
refused or fails harmlessly through the library, ``vouch sql``, ``POST /api/check`` and the
MCP ``run_sql`` tool, with no file written, no setting changed and no lock held, while
ordinary reads still run.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

import vouchsql
from vouchsql.cli import main
from vouchsql.errors import UntrustedCode

pytestmark = pytest.mark.engines

LONG = "f_" + "long" * 17  # 70 bytes: PostgreSQL keeps the first 63
VOUCH = str(Path(sys.executable).with_name("vouch"))


def _token() -> str:
    return uuid.uuid4().hex[:8]


# Each trap is also reached from inside another query.
WRAPPERS = [
    ("plain", "{s}"),
    ("subquery", "SELECT * FROM ({s}) AS w"),
    ("cte", "WITH w AS ({s}) SELECT * FROM w"),
    ("scalar", "SELECT (SELECT count(*) FROM ({s}) AS x) AS n"),
    ("exists", "SELECT id FROM t WHERE EXISTS ({s})"),
    ("derived-join", "SELECT t.id FROM t JOIN ({s}) AS l ON true"),
]


def _wrapped(traps, **names) -> list[tuple[str, str]]:
    return [(f"{case} ({how})", form.format(s=sql.format(**names))) for case, sql in traps for how, form in WRAPPERS]


# -- every channel ---------------------------------------------------------------------------------

def _library(url: str, trusted: str, statements, tmp: Path) -> dict[str, str | None]:
    out = {}
    with vouchsql.connect(url, trusted_objects=trusted or None, cache_dir=str(tmp)) as db:
        for case, sql in statements:
            result = db.execute(sql)
            out[case] = None if result.error is None else result.error.kind
    return out


def _cli(url: str, trusted: str, statements, tmp: Path) -> dict[str, str | None]:
    out = {}
    for case, sql in statements:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["sql", "--db", url, *(["--trusted-objects", trusted] if trusted else []),
                         "--cache-dir", str(tmp), sql])
        assert "Traceback" not in err.getvalue(), (case, err.getvalue())
        out[case] = None if code == 0 else f"exit {code}"
    return out


def _http(url: str, trusted: str, statements, tmp: Path) -> dict[str, str | None]:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from vouchsql.server.app import ServerOptions, create_app
    from vouchsql.settings import load_config

    config = load_config(env={}, cwd=tmp, cache_dir=str(tmp), trusted_objects=trusted or None)
    out = {}
    with TestClient(create_app(ServerOptions(databases={"w": url}), config)) as client:
        for case, sql in statements:
            resp = client.post("/api/check", json={"db": "w", "question": "What does this return?",
                                                   "candidates": [sql]})
            assert resp.status_code < 500 and "Traceback" not in resp.text, (case, resp.text[:300])
            error = (resp.json().get("shown") or {}).get("result", {}).get("error") if resp.status_code == 200 \
                else {"kind": str(resp.status_code)}
            out[case] = None if error is None else error.get("kind")
    return out


def _mcp(url: str, trusted: str, statements, tmp: Path) -> dict[str, str | None]:
    pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {"VOUCH_CACHE_DIR": str(tmp), "PATH": os.environ.get("PATH", ""),
           **({"VOUCH_TRUSTED_OBJECTS": trusted} if trusted else {})}
    out: dict[str, str | None] = {}

    async def session() -> None:
        params = StdioServerParameters(command=VOUCH, args=["mcp", "--db", f"w={url}"], env=env)
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for case, sql in statements:
                        res = await s.call_tool("run_sql", {"database": "w", "sql": sql})
                        assert "Traceback" not in res.content[0].text, (case, res.content[0].text)
                        out[case] = (res.structured_content or {}).get("error", {}).get("kind", "error") \
                            if res.is_error else None

    anyio.run(session)
    return out


CHANNELS = {"library": _library, "cli": _cli, "http": _http, "mcp": _mcp}


# -- PostgreSQL ------------------------------------------------------------------------------------

# (case, statement); {long} is the 70-byte name. Each names the side() key it fires in _pg_setup.
PG_TRAPS = [
    ("domain check", "SELECT 5::d_lock AS v"),
    ("implicit cast", "SELECT textlen(ROW(1)::mytype) AS v"),
    ("explicit cast", "SELECT (ROW(1)::mytype)::text AS v"),
    ("row-level security policy", "SELECT id AS v FROM rls_t"),
    ("moving-aggregate msfunc in a window frame",
     "SELECT magg(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS v FROM t"),
    ("default-argument expression", "SELECT f_default() AS v"),
    ("BEGIN ATOMIC body", "SELECT f_atomic(1) AS v"),
    ("name over 63 bytes", "SELECT {long}() AS v"),
    ("view by a run-time name", "SELECT table_to_xml(('v_'||'side')::regclass, true, true, '') AS v"),
    ("view read directly", "SELECT l AS v FROM v_side"),
    ("SECURITY DEFINER function", "SELECT side('direct') AS v"),
    ("user operator", "SELECT 1 <-> 2 AS v"),
    ("SQL held in a string",
     "SELECT r AS v FROM crosstab('SELECT side(''crosstab'')::text, ''a'', ''b''') AS ct(r text, a text)"),
    ("foreign table running a program", "SELECT line AS v FROM ft"),
    ("secret catalogue by a run-time name",
     "SELECT table_to_xml(('pg_catalog.pg_au'||'thid')::regclass, true, true, '') AS v"),
    ("subscription connection strings", "SELECT subconninfo AS v FROM pg_subscription"),
]


def _pg_setup(marker: str) -> list[str]:
    return [
        "CREATE EXTENSION tablefunc", "CREATE EXTENSION file_fdw",
        "CREATE TABLE t (id int PRIMARY KEY, v text)", "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        # The superuser's program, reached by every trap below. It reads what COPY writes before
        # it touches its file: a program that exits unread can make COPY fail with a broken pipe
        # (it did once in CI, after the file was written), so a fired trap is a file, never an error.
        "CREATE FUNCTION side(key text) RETURNS boolean VOLATILE SECURITY DEFINER LANGUAGE plpgsql AS $$ BEGIN "
        f"EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'cat > /dev/null; touch {marker}_' || key); "
        "RETURN true; END $$",
        # Declared STABLE so the statement policy's volatility rule does not see them.
        "CREATE FUNCTION f_lock(int) RETURNS boolean STABLE LANGUAGE plpgsql AS $$ BEGIN "
        "RETURN side('domain'); END $$",
        "CREATE DOMAIN d_lock AS int CHECK (f_lock(VALUE))",
        "CREATE DOMAIN d_conf AS text CHECK (set_config('application_name', VALUE, true) IS NOT NULL)",
        "CREATE TYPE mytype AS (a int)",
        "CREATE FUNCTION f_cast(mytype) RETURNS text STABLE LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM side('cast'); RETURN 'x'; END $$",
        "CREATE CAST (mytype AS text) WITH FUNCTION f_cast(mytype) AS IMPLICIT",
        "CREATE TABLE rls_t (id int)", "INSERT INTO rls_t VALUES (1)",
        "ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY", "ALTER TABLE rls_t FORCE ROW LEVEL SECURITY",
        "CREATE POLICY p_lock ON rls_t FOR SELECT USING (f_lock(id))",
        "CREATE FUNCTION f_msfunc(int, int) RETURNS int STABLE STRICT LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM side('msfunc'); RETURN $1 + $2; END $$",
        "CREATE AGGREGATE magg(int) (sfunc = int4pl, stype = int, msfunc = f_msfunc, minvfunc = int4mi, "
        "mstype = int)",
        "CREATE FUNCTION f_default(a boolean DEFAULT side('default')) RETURNS int STABLE LANGUAGE sql "
        "AS $$ SELECT 1 $$",
        "CREATE FUNCTION f_atomic(int) RETURNS boolean STABLE LANGUAGE sql BEGIN ATOMIC SELECT side('atomic'); END",
        f"CREATE FUNCTION {LONG}() RETURNS boolean STABLE LANGUAGE sql AS $$ SELECT side('long') $$",
        "CREATE VIEW v_side AS SELECT side('view') AS l",
        "CREATE FUNCTION f_op(int, int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN "
        "PERFORM side('operator'); RETURN $1 + $2; END $$",
        "CREATE OPERATOR <-> (LEFTARG = int, RIGHTARG = int, FUNCTION = f_op)",
        "CREATE SERVER files FOREIGN DATA WRAPPER file_fdw",
        f"CREATE FOREIGN TABLE ft (line text) SERVER files OPTIONS (program 'touch {marker}_fdw; echo hi')",
        # An ordinary function a person has reviewed, and one Vouch proves itself.
        "CREATE FUNCTION fmt_money(numeric) RETURNS text IMMUTABLE LANGUAGE plpgsql AS "
        "$$ BEGIN RETURN to_char($1, 'FM999990.00'); END $$",
        "CREATE FUNCTION twice(int) RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT $1 * 2 $$",
    ]


@pytest.fixture(scope="module")
def trap_pg():
    psycopg = pytest.importorskip("psycopg")
    pytest.importorskip("sqlalchemy")
    try:
        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True,
                                connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable: {exc}")
    token = _token()
    dbname, reader = f"vouch_trust_{token}", f"vouch_reader_{token}"
    # The server's programs write here (a /tmp shared with it); open to its user, and without
    # /tmp's sticky bit so that the test can remove what the server wrote.
    workdir = Path(tempfile.mkdtemp(prefix="vouch_trust_"))
    workdir.chmod(0o777)
    marker = str(workdir / "fired")
    admin.execute(f"CREATE DATABASE {dbname}")
    own = psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={dbname}", autocommit=True)
    for statement in _pg_setup(marker):
        own.execute(statement)
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{dbname}"
    try:
        yield {"url": url, "own": own, "dbname": dbname, "reader": reader, "marker": marker,
               "reader_url": f"postgresql+psycopg://{reader}:pw-{token}@127.0.0.1:5432/{dbname}", "token": token}
    finally:
        own.close()
        admin.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")
        admin.execute(f"DROP ROLE IF EXISTS {reader}")
        admin.close()
        shutil.rmtree(workdir, ignore_errors=True)


def _fired(marker: str) -> list[str]:
    """The side effects that happened: the files the superuser's program wrote."""
    path = Path(marker)
    return sorted(p.name[len(path.name) + 1:] for p in path.parent.glob(path.name + "_*"))


def test_the_traps_do_fire_when_nothing_guards_them(trap_pg):
    # The fixture is sound: as the superuser, straight through psycopg, a trap writes its file.
    try:
        trap_pg["own"].execute("SELECT (ROW(1)::mytype)::text")
        assert _fired(trap_pg["marker"]) == ["cast"]
    finally:  # the tests after this one count the files they find as side effects of Vouch
        Path(trap_pg["marker"] + "_cast").unlink(missing_ok=True)


def test_superuser_is_refused_at_connect_naming_what_runs(trap_pg):
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(trap_pg["url"])
    message = info.value.message
    assert "holds code that a query can run" in message and "vouch doctor" in message
    assert "trusted_objects" in message and "\n" not in message


def test_report_lists_every_trap_and_proves_the_plain_sql_function(trap_pg):
    with vouchsql.connect(trap_pg["url"], trusted_objects="*") as db:
        report = db.trust_report()
    names = {h.name: h for h in report.found}
    for expected in ("public.side", "public.f_lock", "public.f_cast", "public.f_msfunc", "public.f_default",
                     "public.f_atomic", f"public.{LONG[:63]}", "public.f_op", "public.fmt_money",
                     "public.d_conf", "public.ft", "public.v_side", "extension:tablefunc", "extension:file_fdw"):
        assert expected in names, (expected, sorted(names))
    assert "public.twice" not in names  # LANGUAGE sql, IMMUTABLE, uses nothing refused: proven
    assert "public.d_lock" not in names  # its check calls f_lock, which is listed (and fenced by EXECUTE)
    assert "domain public.d_lock" in names["public.f_lock"].used_by
    assert "policy public.rls_t (p_lock)" in names["public.f_lock"].used_by
    assert "cast mytype -> text" in names["public.f_cast"].used_by
    assert "SECURITY DEFINER" in names["public.side"].why
    assert names["public.f_atomic"].why == "its body uses side"  # the BEGIN ATOMIC body, read
    assert names["public.f_default"].why == "its body uses side"  # the default argument, read
    assert names["public.d_conf"].fence == []  # no role can be kept from a domain's CHECK
    assert names["public.ft"].fence == ["REVOKE SELECT ON public.ft FROM {reader};"]
    assert report.role == "pg_read_all_data"  # the superuser is demoted for every query


def test_trusting_every_object_opens_and_one_missing_still_refuses(trap_pg):
    with vouchsql.connect(trap_pg["url"], trusted_objects="*") as db:
        names = [h.name for h in db.trust_report().found]
    with vouchsql.connect(trap_pg["url"], trusted_objects=",".join(names)) as db:
        assert db.trust_report().untrusted == []
        assert db.execute("SELECT count(*) FROM t").rows == [[3]]
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(trap_pg["url"], trusted_objects=",".join(n for n in names if n != "public.ft"))
    assert "(1 object: foreign table public.ft" in info.value.message


def test_cli_refuses_in_one_line_with_exit_2(trap_pg, capsys):
    assert main(["sql", "--db", trap_pg["url"], "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "holds code that a query can run" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["serve", "--port", "8799"], ["mcp"]])
def test_servers_refuse_to_start_on_the_database(trap_pg, capsys, command):
    pytest.importorskip("fastapi" if command[0] == "serve" else "mcp")
    assert main([command[0], "--db", f"trap={trap_pg['url']}", *command[1:]]) == 2
    err = capsys.readouterr().err
    assert "database 'trap'" in err and "holds code that a query can run" in err and "Traceback" not in err


def test_statement_policy_is_a_second_layer_under_a_trusted_superuser(trap_pg):
    # Trusting everything waives the database-level refusal; the statement policy still
    # refuses the traps it can see, among them the ones this issue found it blind to.
    with vouchsql.connect(trap_pg["url"], trusted_objects="*") as db:
        for sql, word in [("SELECT f_atomic(1)", "f_atomic"), ("SELECT f_default()", "f_default"),
                          (f"SELECT {LONG}()", LONG[:63]), ("SELECT * FROM ft", "foreign table public.ft"),
                          ("SELECT 'x'::d_conf", "domain public.d_conf"),
                          ("SELECT table_to_xml(('v_'||'side')::regclass, true, true, '')", "run time"),
                          ("SELECT schema_to_xml('public', true, true, '')", "schema_to_xml"),
                          ("SELECT * FROM crosstab('SELECT 1') AS ct(r text)", "crosstab"),
                          ("SELECT subconninfo FROM pg_subscription", "pg_subscription")]:
            result = db.execute(sql)
            assert result.error is not None and result.error.kind == "forbidden", (sql, result)
            assert word in result.error.message, (sql, result.error.message)
        # A constant name is read like any other word: allowed when it names nothing refused.
        assert db.execute("SELECT length(table_to_xml('t'::regclass, true, true, '')::text) > 0").rows == [[True]]
    assert _fired(trap_pg["marker"]) == []


@pytest.fixture(scope="module")
def pg_reader(trap_pg):
    """The reader ``vouch doctor`` prints, created by running its statements as written."""
    url, own, reader, token = trap_pg["url"], trap_pg["own"], trap_pg["reader"], trap_pg["token"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["doctor", "--db", url, "--reader", reader, "--sql-only"]) == 1  # as the superuser: refused
    script = out.getvalue()
    assert "REVOKE EXECUTE ON FUNCTION public.f_lock(integer) FROM PUBLIC;" in script
    assert "REVOKE EXECUTE ON FUNCTION public.side(key text) FROM PUBLIC;" in script
    assert "REVOKE SELECT ON public.ft FROM" in script and "-- domain public.d_conf" in script
    own.execute(script.replace("'change-me'", f"'pw-{token}'"))
    return trap_pg["reader_url"]


def test_doctor_reader_leaves_only_what_no_role_can_be_kept_from(pg_reader, trap_pg):
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(pg_reader)
    assert "(1 object: domain public.d_conf" in info.value.message
    assert main(["doctor", "--db", pg_reader, "--trusted-objects", "public.d_conf", "--sql-only"]) == 0
    with vouchsql.connect(pg_reader, trusted_objects="public.d_conf") as db:
        assert db.role_powers().privileged is False
        assert db.execute("SELECT id, twice(id) FROM t ORDER BY id").rows == [[1, 2], [2, 4], [3, 6]]


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_doctor_reader_is_refused_or_harmless_on_every_trap(pg_reader, trap_pg, channel, tmp_path):
    statements = _wrapped(PG_TRAPS, long=LONG)
    assert len(statements) == 96
    outcomes = CHANNELS[channel](pg_reader, "public.d_conf", statements, tmp_path)
    # Harmless counts as well as refused: PostgreSQL may plan a wrapped trap away (a count over
    # a subquery never computes its column), so it runs, and nothing happens.
    refused = [case for case, kind in outcomes.items() if kind is not None]
    assert all(f"{case} (plain)" in refused for case, _ in PG_TRAPS), (channel, outcomes)
    assert len(refused) >= 90, (channel, outcomes)
    assert _fired(trap_pg["marker"]) == [], f"{channel}: side effects {_fired(trap_pg['marker'])}"
    locks = trap_pg["own"].execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0]
    assert locks == 0
    # What runs beside the traps is unchanged: an ordinary read through the same channel.
    ok = CHANNELS[channel](pg_reader, "public.d_conf", [("read", "SELECT count(*) AS n FROM t")], tmp_path)
    assert ok == {"read": None}


# -- MariaDB ----------------------------------------------------------------------------------------

# (case, statement); {db} is the trap database. Every trap SETs a global or takes a lock.
MY_TRAPS = [
    ("definer view over SET GLOBAL", "SELECT r AS v FROM v_glob"),
    ("definer view over a CALL chain", "SELECT r AS v FROM v_call"),
    ("invoker view over SET/**/GLOBAL", "SELECT r AS v FROM v_comment"),
    ("view over a view", "SELECT r AS v FROM v_over"),
    ("function with SET v = 1, @@global", "SELECT {db}.f_glob() AS v"),
    ("function calling a procedure", "SELECT {db}.f_call() AS v"),
    ("function with SET/**/GLOBAL", "SELECT {db}.f_comment() AS v"),
    ("function taking a lock", "SELECT {db}.f_lock() AS v"),
    ("server accounts and their passwords", "SELECT Host AS v FROM mysql.servers"),
]


@pytest.fixture(scope="module")
def trap_mariadb():
    pymysql = pytest.importorskip("pymysql")
    pytest.importorskip("sqlalchemy")
    try:
        raw = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True, connect_timeout=3)
    except pymysql.Error as exc:
        pytest.skip(f"MariaDB is not reachable: {exc}")
    token = _token()
    name, reader, plain = f"vouch_trust_{token}", f"vouch_reader_{token}", f"vouch_plain_{token}"
    cur = raw.cursor()
    lock = f"vouch_trust_{token}"
    cur.execute(f"CREATE DATABASE {name}")
    for statement in [
        f"CREATE TABLE {name}.t (id INT PRIMARY KEY, v VARCHAR(10))",
        f"INSERT INTO {name}.t VALUES (1, 'a'), (2, 'b')",
        # SET forms a word scan misses: a list after a local, a comment between the words.
        f"CREATE FUNCTION {name}.f_glob() RETURNS INT NOT DETERMINISTIC READS SQL DATA "
        f"BEGIN DECLARE v INT; SET v = 1, @@global.max_connections = @@global.max_connections + 1; RETURN v; END",
        f"CREATE FUNCTION {name}.f_comment() RETURNS INT NOT DETERMINISTIC NO SQL "
        f"BEGIN SET/**/GLOBAL max_connections = @@global.max_connections + 1; RETURN 1; END",
        f"CREATE PROCEDURE {name}.p_lock() BEGIN DO GET_LOCK('{lock}', 0); END",
        f"CREATE FUNCTION {name}.f_call() RETURNS INT NOT DETERMINISTIC READS SQL DATA BEGIN CALL {name}.p_lock(); "
        f"RETURN 1; END",
        f"CREATE FUNCTION {name}.f_lock() RETURNS INT NOT DETERMINISTIC NO SQL RETURN GET_LOCK('{lock}', 0)",
        f"CREATE SQL SECURITY DEFINER VIEW {name}.v_glob AS SELECT {name}.f_glob() AS r",
        f"CREATE SQL SECURITY DEFINER VIEW {name}.v_call AS SELECT {name}.f_call() AS r",
        f"CREATE SQL SECURITY INVOKER VIEW {name}.v_comment AS SELECT {name}.f_comment() AS r",
        f"CREATE SQL SECURITY DEFINER VIEW {name}.v_over AS SELECT r FROM {name}.v_glob",
        f"CREATE VIEW {name}.v_ok AS SELECT id, v FROM {name}.t",
        f"CREATE USER '{plain}'@'%' IDENTIFIED BY 'pw-{token}'",
        f"GRANT SELECT ON {name}.* TO '{plain}'@'%'",
    ]:
        cur.execute(statement)
    base = "mysql+pymysql://{}@127.0.0.1:3306/" + name
    try:
        yield {"url": base.format("root"), "cur": cur, "name": name, "reader": reader, "token": token, "lock": lock,
               "reader_url": base.format(f"{reader}:pw-{token}"), "plain_url": base.format(f"{plain}:pw-{token}")}
    finally:
        cur.execute(f"DROP DATABASE IF EXISTS {name}")
        cur.execute(f"DROP USER IF EXISTS '{reader}'@'%'")
        cur.execute(f"DROP USER IF EXISTS '{plain}'@'%'")
        raw.close()


def _max_connections(cur) -> int:
    cur.execute("SELECT @@global.max_connections")
    return cur.fetchone()[0]


def test_mariadb_root_is_refused_naming_functions_and_definer_views(trap_mariadb):
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(trap_mariadb["url"])
    name = trap_mariadb["name"]
    # The message names the first few objects root can reach on the whole server (another
    # database there may hold some too); the report below lists every one of this database's.
    assert "stored function " in info.value.message
    with vouchsql.connect(trap_mariadb["url"], trusted_objects="*") as db:
        found = {h.name: h for h in db.trust_report().found}
    assert {f"{name}.{f}" for f in ("f_glob", "f_call", "f_comment", "f_lock", "v_glob", "v_call", "v_comment",
                                    "v_over")} <= found.keys()
    assert f"{name}.v_ok" not in found
    assert "as its definer" in found[f"{name}.v_glob"].why


def test_mariadb_statement_policy_reads_every_set_form_as_a_second_layer(trap_mariadb):
    cur = trap_mariadb["cur"]
    before = _max_connections(cur)
    with vouchsql.connect(trap_mariadb["url"], trusted_objects="*") as db:
        for sql in ("SELECT f_glob()", "SELECT f_comment()", "SELECT f_call()", "SELECT * FROM v_over",
                    "SELECT * FROM v_comment", "SELECT Host FROM mysql.servers"):
            result = db.execute(sql)
            assert result.error is not None and result.error.kind == "forbidden", (sql, result)
        assert db.execute("SELECT count(*) FROM v_ok").rows == [[2]]
    assert _max_connections(cur) == before


def test_mariadb_select_only_account_gets_a_clear_refusal_not_a_traceback(trap_mariadb, capsys):
    # The account the docs once recommended: SELECT on the database, so it reads the definer
    # views without being able to see what they run.
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(trap_mariadb["plain_url"])
    assert "cannot read its definition (no SHOW VIEW)" in info.value.message
    assert main(["check", "--db", trap_mariadb["plain_url"], "-q", "how many", "--sql", "SELECT count(*) FROM t"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    # Trusted anyway, reading the catalogue is a one-line error, not SQLAlchemy's traceback.
    code = main(["profile", "--db", trap_mariadb["plain_url"], "--trusted-objects", "*"])
    err = capsys.readouterr().err
    assert code == 2 and "SHOW VIEW" in err and "Traceback" not in err


@pytest.fixture(scope="module")
def my_reader(trap_mariadb):
    cur, name, token = trap_mariadb["cur"], trap_mariadb["name"], trap_mariadb["token"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["doctor", "--db", trap_mariadb["url"], "--reader", trap_mariadb["reader"], "--sql-only"]) == 1
    script = out.getvalue()
    assert f"GRANT SELECT ON `{name}`.`t` TO" in script and f"`{name}`.`v_glob`" not in script
    assert f"GRANT SELECT, SHOW VIEW ON `{name}`.`v_ok` TO" in script and "EXECUTE" not in script.split("--")[0]
    for statement in script.replace("'change-me'", f"'pw-{token}'").split(";\n"):
        body = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip().rstrip(";")
        if body:
            cur.execute(body)
    with vouchsql.connect(trap_mariadb["reader_url"]) as db:  # nothing within reach: opens
        assert db.trust_report().found == []
        assert db.execute("SELECT count(*) FROM v_ok").rows == [[2]]
    return trap_mariadb["reader_url"]


@pytest.mark.parametrize("channel", list(CHANNELS))
def test_mariadb_doctor_reader_reaches_no_stored_code(my_reader, trap_mariadb, channel, tmp_path):
    cur = trap_mariadb["cur"]
    statements = _wrapped(MY_TRAPS, db=trap_mariadb["name"])
    assert len(statements) == 54
    before = _max_connections(cur)
    outcomes = CHANNELS[channel](my_reader, "", statements, tmp_path)
    ran = [case for case, kind in outcomes.items() if kind is None]
    assert ran == [], f"{channel}: ran {ran}"  # MariaDB evaluates each of these
    assert _max_connections(cur) == before
    cur.execute(f"SELECT IS_USED_LOCK('{trap_mariadb['lock']}')")
    assert cur.fetchone()[0] is None
    ok = CHANNELS[channel](my_reader, "", [("read", "SELECT count(*) AS n FROM t")], tmp_path)
    assert ok == {"read": None}

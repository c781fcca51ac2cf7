"""Issue 27, items 1 and 3: the trust boundary read from the catalogue (db/trust.py) and
``vouch doctor`` (db/doctor.py), on a real PostgreSQL and MariaDB.

Each database below holds the traps of the issue, each with a side effect that outlives the
query (a session advisory lock with its own key, a file written by a program, a server
variable), and is built in a database of its own so no other test sees it. As the server's
superuser Vouch refuses each database at connect, naming what it found; under the reader
role ``vouch doctor`` prints, every trap is refused or fails harmlessly with no side effect,
and ordinary reads still run.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import vouchsql
from vouchsql.cli import main
from vouchsql.errors import UntrustedCode

pytestmark = pytest.mark.engines

LONG = "f_" + "long" * 17  # 70 bytes: PostgreSQL keeps the first 63


def _token() -> str:
    return uuid.uuid4().hex[:8]


# -- PostgreSQL ------------------------------------------------------------------------------------

# (case, statement, advisory-lock key its trap takes); {long} is the 70-byte name.
PG_TRAPS = [
    ("domain check", "SELECT 5::d_lock", 9101),
    ("implicit cast", "SELECT textlen(ROW(1)::mytype)", 9102),
    ("explicit cast", "SELECT (ROW(1)::mytype)::text", 9102),
    ("row-level security policy", "SELECT * FROM rls_t", 9101),
    ("moving-aggregate msfunc in a window frame",
     "SELECT magg(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", 9104),
    ("default-argument expression", "SELECT f_default()", 9105),
    ("BEGIN ATOMIC body", "SELECT f_atomic(1)", 9106),
    ("name over 63 bytes", "SELECT {long}()", 9107),
    ("view by a run-time name", "SELECT table_to_xml(('v_'||'side')::regclass, true, true, '')", 9108),
    ("view read directly", "SELECT * FROM v_side", 9108),
    ("SECURITY DEFINER function", "SELECT f_definer()", 9109),
    ("user operator", "SELECT 1 <-> 2", 9110),
    ("SQL held in a string", "SELECT * FROM crosstab('SELECT f_lockv(9111)::text, ''a'', ''b''') "
                             "AS ct(r text, a text)", 9111),
    ("foreign table running a program", "SELECT * FROM ft", None),
]


def _pg_setup(dbname: str, marker: Path) -> list[str]:
    lock = "PERFORM pg_advisory_lock({});"
    return [
        "CREATE EXTENSION tablefunc", "CREATE EXTENSION file_fdw",
        "CREATE TABLE t (id int PRIMARY KEY, v text)", "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        # Declared STABLE so the statement policy's volatility rule does not see them.
        f"CREATE FUNCTION f_lock(int) RETURNS boolean STABLE LANGUAGE plpgsql AS $$ BEGIN {lock.format(9101)} "
        "RETURN true; END $$",
        f"CREATE FUNCTION f_lockv(int) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_lock($1); "
        "RETURN true; END $$",
        "CREATE DOMAIN d_lock AS int CHECK (f_lock(VALUE))",
        "CREATE DOMAIN d_conf AS text CHECK (set_config('application_name', VALUE, true) IS NOT NULL)",
        "CREATE TYPE mytype AS (a int)",
        f"CREATE FUNCTION f_cast(mytype) RETURNS text STABLE LANGUAGE plpgsql AS $$ BEGIN {lock.format(9102)} "
        "RETURN 'x'; END $$",
        "CREATE CAST (mytype AS text) WITH FUNCTION f_cast(mytype) AS IMPLICIT",
        "CREATE TABLE rls_t (id int)", "INSERT INTO rls_t VALUES (1)",
        "ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY", "ALTER TABLE rls_t FORCE ROW LEVEL SECURITY",
        "CREATE POLICY p_lock ON rls_t FOR SELECT USING (f_lock(id))",
        f"CREATE FUNCTION f_msfunc(int, int) RETURNS int STABLE STRICT LANGUAGE plpgsql AS $$ BEGIN {lock.format(9104)} "
        "RETURN coalesce($1, 0) + $2; END $$",
        "CREATE AGGREGATE magg(int) (sfunc = int4pl, stype = int, msfunc = f_msfunc, minvfunc = int4mi, "
        "mstype = int)",
        "CREATE FUNCTION f_default(a text DEFAULT pg_advisory_lock(9105)::text) RETURNS int STABLE LANGUAGE sql "
        "AS $$ SELECT 1 $$",
        "CREATE FUNCTION f_atomic(int) RETURNS text STABLE LANGUAGE sql BEGIN ATOMIC "
        "SELECT pg_advisory_lock(9106)::text; END",
        f"CREATE FUNCTION {LONG}() RETURNS int STABLE LANGUAGE plpgsql AS $$ BEGIN {lock.format(9107)} "
        "RETURN 1; END $$",
        "CREATE VIEW v_side AS SELECT pg_advisory_lock(9108)::text AS l",
        f"CREATE FUNCTION f_definer() RETURNS int STABLE SECURITY DEFINER LANGUAGE plpgsql AS $$ BEGIN "
        f"{lock.format(9109)} RETURN 1; END $$",
        f"CREATE FUNCTION f_op(int, int) RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$ BEGIN {lock.format(9110)} "
        "RETURN $1 + $2; END $$",
        "CREATE OPERATOR <-> (LEFTARG = int, RIGHTARG = int, FUNCTION = f_op)",
        "CREATE SERVER files FOREIGN DATA WRAPPER file_fdw",
        f"CREATE FOREIGN TABLE ft (line text) SERVER files OPTIONS (program 'touch {marker}; echo hi')",
        # An ordinary function a person has reviewed, and one Vouch proves itself.
        "CREATE FUNCTION fmt_money(numeric) RETURNS text IMMUTABLE LANGUAGE plpgsql AS "
        "$$ BEGIN RETURN to_char($1, 'FM999990.00'); END $$",
        "CREATE FUNCTION twice(int) RETURNS int IMMUTABLE LANGUAGE sql AS $$ SELECT $1 * 2 $$",
    ]


@pytest.fixture(scope="module")
def trap_pg(tmp_path_factory):
    psycopg = pytest.importorskip("psycopg")
    pytest.importorskip("sqlalchemy")
    try:
        admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True,
                                connect_timeout=3)
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL is not reachable: {exc}")
    token = _token()
    dbname, reader = f"vouch_trust_{token}", f"vouch_reader_{token}"
    marker = Path("/tmp") / f"vouch_trust_{token}"  # written by the server's program: a shared /tmp
    admin.execute(f"CREATE DATABASE {dbname}")
    own = psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={dbname}", autocommit=True)
    for statement in _pg_setup(dbname, marker):
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
        marker.unlink(missing_ok=True)


def _locks_held(own, key: int) -> int:
    return own.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND "
                       "database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                       (key,)).fetchone()[0]


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
    for expected in ("public.f_lock", "public.f_cast", "public.f_msfunc", "public.f_default", "public.f_atomic",
                     f"public.{LONG[:63]}", "public.f_definer", "public.f_op", "public.fmt_money",
                     "public.d_conf", "public.ft", "public.v_side", "extension:tablefunc", "extension:file_fdw"):
        assert expected in names, (expected, sorted(names))
    assert "public.twice" not in names  # LANGUAGE sql, IMMUTABLE, uses nothing refused: proven
    assert "public.d_lock" not in names  # its check calls f_lock, which is listed (and fenced by EXECUTE)
    assert "domain public.d_lock" in names["public.f_lock"].used_by
    assert "cast mytype -> text" in names["public.f_cast"].used_by
    assert "SECURITY DEFINER" in names["public.f_definer"].why
    assert names["public.d_conf"].fence == []  # no role can be kept from a domain's CHECK
    assert names["public.ft"].fence == [f"REVOKE SELECT ON public.ft FROM {{reader}};"]
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


def test_doctor_reader_is_refused_or_harmless_on_every_trap(trap_pg, capsys):
    url, own, reader, token = trap_pg["url"], trap_pg["own"], trap_pg["reader"], trap_pg["token"]
    assert main(["doctor", "--db", url, "--reader", reader, "--sql-only"]) == 1  # as the superuser: refused
    script = capsys.readouterr().out
    assert "REVOKE EXECUTE ON FUNCTION public.f_lock(integer) FROM PUBLIC;" in script
    assert "REVOKE SELECT ON public.ft FROM" in script and "-- domain public.d_conf" in script
    own.execute(script.replace("'change-me'", f"'pw-{token}'"))

    # Under the reader only the domain no role can be kept from is left; trust it as reviewed.
    with pytest.raises(UntrustedCode) as info:
        vouchsql.connect(trap_pg["reader_url"])
    assert "(1 object: domain public.d_conf" in info.value.message
    with vouchsql.connect(trap_pg["reader_url"], trusted_objects="public.d_conf") as db:
        assert db.role_powers().privileged is False
        assert db.execute("SELECT id, twice(id) FROM t ORDER BY id").rows == [[1, 2], [2, 4], [3, 6]]
        for case, sql, key in PG_TRAPS:
            result = db.execute(sql.format(long=LONG))
            assert result.error is not None, (case, result.rows)
            assert result.error.kind in ("forbidden", "read_only", "execution"), (case, result.error)
            if key is not None:
                assert _locks_held(own, key) == 0, f"{case}: the trap's lock is held"
        assert not trap_pg["marker"].exists(), "the foreign table's program ran"


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
    assert not trap_pg["marker"].exists()


# -- MariaDB ----------------------------------------------------------------------------------------

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
        # SET forms a word scan misses: a comment between the words, a list after a local.
        f"CREATE FUNCTION {name}.f_glob() RETURNS INT NOT DETERMINISTIC READS SQL DATA "
        f"BEGIN DECLARE v INT; SET v = 1, @@global.max_connections = @@global.max_connections + 1; RETURN v; END",
        f"CREATE PROCEDURE {name}.p_lock() BEGIN DO GET_LOCK('{lock}', 0); END",
        f"CREATE FUNCTION {name}.f_call() RETURNS INT NOT DETERMINISTIC READS SQL DATA BEGIN CALL {name}.p_lock(); "
        f"RETURN 1; END",
        f"CREATE SQL SECURITY DEFINER VIEW {name}.v_glob AS SELECT {name}.f_glob() AS r",
        f"CREATE SQL SECURITY DEFINER VIEW {name}.v_call AS SELECT {name}.f_call() AS r",
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
    assert f"stored function {name}.f_glob" in info.value.message
    with vouchsql.connect(trap_mariadb["url"], trusted_objects="*") as db:
        found = {h.name: h for h in db.trust_report().found}
    assert {f"{name}.f_glob", f"{name}.f_call", f"{name}.v_glob", f"{name}.v_call"} <= found.keys()
    assert f"{name}.v_ok" not in found
    assert "as its definer" in found[f"{name}.v_glob"].why


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


def test_mariadb_doctor_reader_reaches_no_stored_code(trap_mariadb, capsys):
    cur, name, token = trap_mariadb["cur"], trap_mariadb["name"], trap_mariadb["token"]
    assert main(["doctor", "--db", trap_mariadb["url"], "--reader", trap_mariadb["reader"], "--sql-only"]) == 1
    script = capsys.readouterr().out
    assert f"GRANT SELECT ON `{name}`.`t` TO" in script and f"`{name}`.`v_glob`" not in script
    assert f"GRANT SELECT, SHOW VIEW ON `{name}`.`v_ok` TO" in script
    for statement in script.replace("'change-me'", f"'pw-{token}'").split(";\n"):
        body = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip().rstrip(";")
        if body:
            cur.execute(body)
    before = _max_connections(cur)
    with vouchsql.connect(trap_mariadb["reader_url"]) as db:  # nothing within reach: opens
        assert db.trust_report().found == []
        assert db.execute("SELECT count(*) FROM v_ok").rows == [[2]]
        for sql in ["SELECT * FROM v_glob", "SELECT * FROM v_call", f"SELECT {name}.f_glob()",
                    f"SELECT {name}.f_call()"]:
            result = db.execute(sql)
            assert result.error is not None, (sql, result.rows)
    assert _max_connections(cur) == before
    cur.execute(f"SELECT IS_USED_LOCK('{trap_mariadb['lock']}')")
    assert cur.fetchone()[0] is None



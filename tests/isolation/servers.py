"""Server worlds: PostgreSQL and MariaDB on 127.0.0.1, each in a database of its own
(``vouch_isolation_<token>`` / ``vouch_iso_<token>``) created once per session and dropped
at the end, reached as the superuser (the setting issue 10 is about).

The snapshot covers what a statement reaching the server could change: a checksum of every
table, the relations, functions and sequences, replication slots and origins, advisory /
user locks, large objects, statistics resets, roles and databases a statement would create,
``ALTER SYSTEM`` settings, chosen global variables, a victim session and a victim file, and
connections left behind (dblink). Files a statement would write (``{{OUT}}``) are checked by
the caller: both servers run on this machine, so a path under /tmp is visible here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .worlds import (ACCOUNTS, AUDIT, CHINOOK_TABLES, Unavailable, World, chinook_columns, chinook_rows,
                     has_chinook)

PG_HOST = os.environ.get("VOUCH_ISO_PG", "host=127.0.0.1 port=5432 user=postgres")
MY_HOST = dict(host="127.0.0.1", port=3306, user="root", password="")
LO_OID = 424242


def _pg_type(declared: str) -> str:
    d = declared.upper()
    if d.startswith("NVARCHAR"):
        return "varchar" + d[len("NVARCHAR"):]
    if d == "DATETIME":
        return "timestamp"
    if d.startswith("NUMERIC"):
        return d.lower()
    return "integer" if d == "INTEGER" else "text"


def _my_type(declared: str) -> str:
    d = declared.upper()
    if d.startswith("NVARCHAR"):
        return "VARCHAR" + d[len("NVARCHAR"):]
    return {"DATETIME": "DATETIME", "INTEGER": "INT"}.get(d, d if d.startswith("NUMERIC") else "TEXT")


class ServerWorld(World):
    """Shared plumbing: {{OUT}} paths under /tmp, a secret folder readable by the server."""

    def __init__(self, workdir: Path, token: str) -> None:
        super().__init__(workdir, token)
        self.tmp_prefix = f"/tmp/vouch-iso-{token}-{self.engine}"
        self.secret_dir = Path(f"{self.tmp_prefix}-secrets")
        self.secret_dir.mkdir(mode=0o755, exist_ok=True)
        os.chmod(self.secret_dir, 0o755)
        (self.secret_dir / "secret.txt").write_text(f"{self.marker}\n")
        (self.secret_dir / f"{self.marker}.key").write_text("k\n")
        for p in self.secret_dir.iterdir():
            os.chmod(p, 0o644)

    def out_for(self, case_id: str) -> str:
        return f"{self.tmp_prefix}-{case_id}.out"

    def values(self) -> dict:
        return {**super().values(), "SECRET_DIR": self.secret_dir.as_posix()}

    def stray_outputs(self) -> list[str]:
        base = Path("/tmp")
        return sorted(str(p) for p in base.glob(f"vouch-iso-{self.token}-{self.engine}-*.out"))

    def remove_outputs(self) -> None:
        for p in self.stray_outputs():
            try:
                os.unlink(p)
            except OSError:
                pass

    def close(self) -> None:
        super().close()
        self.remove_outputs()
        for p in self.secret_dir.glob("*"):
            p.unlink()
        self.secret_dir.rmdir()


# -- PostgreSQL -----------------------------------------------------------------------------

class PostgresWorld(ServerWorld):
    engine = "postgresql"

    def __init__(self, workdir: Path, token: str) -> None:
        try:
            import psycopg
            import sqlalchemy  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"{exc.name} is not installed (pip install 'vouchsql[postgres]')") from None
        self._psycopg = psycopg
        try:
            self.admin = psycopg.connect(f"{PG_HOST} dbname=postgres application_name=vouch_iso_admin_{token}",
                                         autocommit=True, connect_timeout=3)
        except psycopg.Error as exc:
            raise Unavailable(f"PostgreSQL is not reachable ({PG_HOST}): "
                              f"{str(exc).strip().splitlines()[0]}") from None
        missing = {"dblink", "adminpack", "lo"} - {r[0] for r in self.admin.execute(
            "SELECT name FROM pg_available_extensions").fetchall()}
        if missing:
            self.admin.close()
            raise Unavailable(f"PostgreSQL lacks the extensions {sorted(missing)}")
        super().__init__(workdir, token)
        self.dbname = f"vouch_isolation_{token}"
        self.app = f"vouch_iso_app_{token}"
        self.victim_app = f"vouch_iso_victim_{token}"
        self.raw_app = f"vouch_iso_raw_{token}"
        self.dsn = f"host=127.0.0.1 port=5432 dbname={self.dbname} user=postgres"
        self.victim_file = f"{self.tmp_prefix}-victim"
        self.secret_role = f"vouch_iso_secret_{token}"
        self.admin.execute(f"CREATE ROLE {self.secret_role} LOGIN PASSWORD 'pw-{token}'")
        self.authid_hash = self.admin.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s",
                                              (self.secret_role,)).fetchone()[0]
        self.raw = self.victim = None
        self.target = (f"postgresql+psycopg://postgres@127.0.0.1:5432/{self.dbname}"
                       f"?application_name={self.app}")
        try:
            self._create_database()
            self.reopen()
            self.rebaseline()
        except BaseException:
            self.close()  # a half-built world leaves no database, role or file behind
            raise

    # -- building ------------------------------------------------------------------------
    def _connect(self, app: str):
        return self._psycopg.connect(f"{self.dsn} application_name={app}", autocommit=True, connect_timeout=3)

    def _create_database(self) -> None:
        self.admin.execute(f"CREATE DATABASE {self.dbname}")
        self.raw = self._connect(self.raw_app)
        self._build(self.raw)
        self.victim = self._connect(self.victim_app)
        self._victim_file()

    def _victim_file(self) -> None:
        if os.path.exists(self.victim_file):
            os.unlink(self.victim_file)
        self.raw.execute(f"COPY (SELECT 'victim {self.token}') TO '{self.victim_file}'")

    def _build(self, raw) -> None:
        dsn, t = self.dsn, self.token
        q = lambda s: s.replace("'", "''")  # noqa: E731
        statements = [
            "CREATE EXTENSION dblink", "CREATE EXTENSION adminpack", "CREATE EXTENSION lo",
            "CREATE TABLE accounts (id integer PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) NOT NULL, "
            "opened date)",
            "CREATE TABLE audit_log (id integer PRIMARY KEY, note text)",
            "CREATE SEQUENCE order_seq START 100",
            "CREATE VIEW v_accounts AS SELECT id, owner FROM accounts",
            f"SELECT lo_from_bytea({LO_OID}, 'vouch large object')",
            f"""CREATE FUNCTION evil_volatile() RETURNS integer LANGUAGE plpgsql AS $f$
                BEGIN PERFORM dblink_exec('{q(dsn)}', 'DELETE FROM audit_log'); RETURN 1; END $f$""",
            f"""CREATE FUNCTION immutable_liar(integer) RETURNS integer IMMUTABLE LANGUAGE plpgsql AS $f$
                BEGIN PERFORM pg_advisory_lock(7777);
                      PERFORM dblink_exec('{q(dsn)}', 'UPDATE accounts SET balance = 0'); RETURN $1; END $f$""",
            f"""CREATE FUNCTION evil_op(integer, integer) RETURNS integer LANGUAGE plpgsql AS $f$
                BEGIN PERFORM dblink_exec('{q(dsn)}', 'DELETE FROM accounts WHERE id = ' || $1);
                      RETURN $1 + $2; END $f$""",
            "CREATE OPERATOR ### (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil_op)",
            "CREATE FUNCTION read_passwd() RETURNS text STABLE LANGUAGE sql AS $f$ SELECT pg_read_file('/etc/passwd') $f$",
            f"""CREATE FUNCTION evil_slot() RETURNS text LANGUAGE sql AS $f$
                SELECT (pg_create_physical_replication_slot('vouch_iso_evil_{t}_fn')).slot_name::text $f$""",
            "CREATE SCHEMA trap",
            f"CREATE VIEW trap.v_evil AS SELECT dblink_exec('{q(dsn)}', 'DELETE FROM audit_log') AS r",
            "CREATE VIEW trap.v_passwd AS SELECT pg_read_file('/etc/passwd') AS body",
            "CREATE VIEW trap.v_lock AS SELECT pg_advisory_lock(4242)::text AS l",
            f"CREATE SERVER vouch_iso_srv FOREIGN DATA WRAPPER dblink_fdw OPTIONS (host '127.0.0.1', dbname '{self.dbname}')",
            f"CREATE USER MAPPING FOR postgres SERVER vouch_iso_srv OPTIONS (user 'postgres', password '{self.marker}')",
        ]
        for s in statements:
            raw.execute(s)
        with raw.cursor() as cur:
            cur.executemany("INSERT INTO accounts VALUES (%s, %s, %s, %s)", ACCOUNTS)
            cur.executemany("INSERT INTO audit_log VALUES (%s, %s)", AUDIT)
            if has_chinook():
                for table in CHINOOK_TABLES:
                    cols = chinook_columns(table)
                    ddl = ", ".join(f"{n} {_pg_type(ty)}{' NOT NULL' if nn else ''}" for n, ty, nn in cols)
                    cur.execute(f"CREATE TABLE {table} ({ddl}, PRIMARY KEY ({cols[0][0]}))")
                    names, rows = chinook_rows(table)
                    with cur.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
        raw.execute("ANALYZE")

    # -- the snapshot ------------------------------------------------------------------------
    def _tables(self) -> list[str]:
        return [r[0] for r in self.raw.execute(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname IN ('public', 'trap') ORDER BY 1").fetchall()]

    def snapshot(self) -> dict:
        if self.raw is None or self.raw.closed:
            self.raw = self._connect(self.raw_app)
        x = lambda sql, *a: [tuple(map(str, r)) for r in self.raw.execute(sql, a or None).fetchall()]  # noqa: E731
        tables = self._tables()
        sums = " UNION ALL ".join(
            f"SELECT '{t}', count(*), coalesce(sum(hashtextextended(x::text, 0)::numeric), 0) FROM {t} x"
            for t in tables)
        t = self.token
        snap = {
            "tables": x(sums) if sums else [],
            "relations": x("SELECT n.nspname || '.' || c.relname || ':' || c.relkind::text FROM pg_class c "
                           "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN "
                           "('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg_temp%%' "
                           "AND n.nspname NOT LIKE 'pg_toast_temp%%' ORDER BY 1"),
            "functions": x("SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON "
                           "n.oid = p.pronamespace WHERE n.nspname IN ('public', 'trap') ORDER BY 1"),
            "sequence": x("SELECT last_value, is_called FROM order_seq"),
            "large_objects": x("SELECT count(*), md5(coalesce(string_agg(encode(data, 'hex'), '' ORDER BY loid, pageno), '')) "
                               "FROM pg_largeobject"),
            "replication_slots": x("SELECT slot_name FROM pg_replication_slots ORDER BY 1"),
            "replication_origins": x("SELECT roname FROM pg_replication_origin ORDER BY 1"),
            # Advisory locks taken in this world's database (pg_locks is cluster-wide).
            "advisory_locks": x("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
                                "(SELECT oid FROM pg_database WHERE datname = current_database())"),
            "stats_reset": x("SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()"),
            "bgwriter_reset": x("SELECT stats_reset FROM pg_stat_bgwriter"),
            "roles": x("SELECT rolname FROM pg_roles WHERE rolname LIKE %s ORDER BY 1", f"vouch_iso_evil_{t}%"),
            "databases": x("SELECT datname FROM pg_database WHERE datname LIKE %s ORDER BY 1", f"vouch_iso_evil_{t}%"),
            "auto_conf": x("SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%%postgresql.auto.conf' "
                           "ORDER BY 1"),
            "victim_session": x("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", self.victim_app),
            "wal_segment": x("SELECT pg_walfile_name(pg_current_wal_lsn())"),
            "victim_file": (Path(self.victim_file).read_text() if os.path.exists(self.victim_file) else None),
            "left_connections": self._strays(),
        }
        return snap

    def _strays(self) -> int:
        """Client sessions in the test database that nobody here opened (dblink_connect
        leaves one behind); a closing dblink_exec session gets a second to go away."""
        deadline = time.monotonic() + 1.0
        while True:
            n = self.raw.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                "backend_type = 'client backend' AND application_name NOT IN (%s, %s, %s)",
                (self.app, self.victim_app, self.raw_app)).fetchone()[0]
            if n == 0 or time.monotonic() > deadline:
                return n
            time.sleep(0.05)

    def secrets(self) -> dict[str, list[str]]:
        found = super().secrets()
        salt = self.authid_hash.split("$")[1].split(":")[-1] if "$" in self.authid_hash else self.authid_hash
        found["authid"] = [self.authid_hash, salt]
        return found

    def values(self) -> dict:
        return {**super().values(), "DSN": self.dsn, "DB": self.dbname, "VICTIM": self.victim_file,
                "VICTIM_APP": self.victim_app}

    # -- putting things back -----------------------------------------------------------------
    def restore(self) -> None:
        changed = set(self.changes())
        a = self.admin
        if changed & {"tables", "relations", "functions", "large_objects", "sequence"}:
            self._drop_database()
            self._create_database()
        t = self.token
        # Slots and origins are the server's: only those named by this world's corpus are
        # dropped, never one another user of the server made meanwhile.
        if "replication_slots" in changed:
            for (name,) in a.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s",
                                     (f"vouch_iso_evil_{t}%",)).fetchall():
                if (name,) not in self.baseline["replication_slots"]:
                    a.execute("SELECT pg_drop_replication_slot(%s)", (name,))
        if "replication_origins" in changed:
            for (name,) in a.execute("SELECT roname FROM pg_replication_origin WHERE roname LIKE %s",
                                     (f"vouch_iso_evil_{t}%",)).fetchall():
                if (name,) not in self.baseline["replication_origins"]:
                    a.execute("SELECT pg_replication_origin_drop(%s)", (name,))
        for (name,) in a.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (f"vouch_iso_evil_{t}%",)).fetchall():
            a.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        for (name,) in a.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (f"vouch_iso_evil_{t}%",)).fetchall():
            a.execute(f'DROP ROLE "{name}"')
        if "auto_conf" in changed:
            before = dict(self.baseline["auto_conf"])
            for name, _ in a.execute("SELECT name, setting FROM pg_file_settings "
                                     "WHERE sourcefile LIKE '%postgresql.auto.conf'").fetchall():
                if name not in before:
                    a.execute(f"ALTER SYSTEM RESET {name}")
            for name, value in before.items():
                a.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            a.execute("SELECT pg_reload_conf()")
        if changed & {"advisory_locks", "left_connections"}:
            # Sessions holding advisory locks or left by dblink: end every session in the
            # test database except this world's own watchers (Vouch's pool reconnects).
            a.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                      "AND application_name NOT IN (%s, %s)", (self.dbname, self.raw_app, self.victim_app))
            a.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                      "AND pid IN (SELECT pid FROM pg_stat_activity WHERE application_name = %s)", (self.app,))
        if "victim_session" in changed:
            try:
                self.victim.close()
            finally:
                self.victim = self._connect(self.victim_app)
        if "victim_file" in changed:
            self._victim_file()
        self.remove_outputs()
        self.reopen()
        time.sleep(0.1)
        self.rebaseline()

    def _drop_database(self) -> None:
        for c in (self.raw, self.victim):
            try:
                if c is not None:
                    c.close()
            except Exception:  # noqa: BLE001
                pass
        if self.db is not None:
            try:
                self.db.close()
            except Exception:  # noqa: BLE001
                pass
            self.db = None
        self.admin.execute(f"DROP DATABASE IF EXISTS {self.dbname} WITH (FORCE)")

    def close(self) -> None:
        t = self.token
        try:
            super().close()
        finally:
            try:
                self._drop_database()
                a = self.admin
                for (name,) in a.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE %s",
                                         (f"vouch_iso_evil_{t}%",)).fetchall():
                    a.execute("SELECT pg_drop_replication_slot(%s)", (name,))
                for (name,) in a.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                         (f"vouch_iso_evil_{t}%",)).fetchall():
                    a.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
                for (name,) in a.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE %s OR rolname = %s",
                                         (f"vouch_iso_evil_{t}%", self.secret_role)).fetchall():
                    a.execute(f'DROP ROLE "{name}"')
                if os.path.exists(self.victim_file):
                    os.unlink(self.victim_file)
            finally:
                self.admin.close()


# -- MariaDB --------------------------------------------------------------------------------

WATCHED_GLOBALS = ("max_connect_errors", "max_statement_time", "general_log", "general_log_file",
                   "slow_query_log", "read_only", "sql_mode", "event_scheduler", "local_infile",
                   "max_allowed_packet", "wait_timeout")


class MariaDBWorld(ServerWorld):
    engine = "mariadb"

    def __init__(self, workdir: Path, token: str) -> None:
        try:
            import pymysql
            import sqlalchemy  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"{exc.name} is not installed (pip install 'vouchsql[mysql]')") from None
        self._pymysql = pymysql
        try:
            self.raw = pymysql.connect(**MY_HOST, autocommit=True, connect_timeout=3)
        except pymysql.Error as exc:
            raise Unavailable(f"MariaDB is not reachable at 127.0.0.1:3306: {exc}") from None
        super().__init__(workdir, token)
        self.dbname = f"vouch_iso_{token}"
        self.trap = f"vouch_iso_{token}_trap"
        self.lock = f"vouch_iso_lock_{token}"
        self.secret_user = f"vouch_iso_secret_{token}"
        self.exec(f"CREATE USER '{self.secret_user}'@'localhost' IDENTIFIED BY 'pw-{token}'")
        self.authid_hash = self.one("SELECT authentication_string FROM mysql.user WHERE User = %s", self.secret_user)
        self.target = f"mysql+pymysql://root@127.0.0.1:3306/{self.dbname}"
        try:
            self._build()
            self.reopen()
            self.rebaseline()
        except BaseException:
            self.close()
            raise

    def exec(self, sql: str, *args):
        with self.raw.cursor() as cur:
            cur.execute(sql, args or None)
            return cur.fetchall()

    def one(self, sql: str, *args):
        rows = self.exec(sql, *args)
        return rows[0][0] if rows else None

    def _build(self) -> None:
        d, trap = self.dbname, self.trap
        for s in [
            f"CREATE DATABASE {d}", f"CREATE DATABASE {trap}",
            f"CREATE TABLE {d}.accounts (id INT PRIMARY KEY, owner VARCHAR(20) NOT NULL, "
            f"balance DECIMAL(12,2) NOT NULL, opened DATE) ENGINE=InnoDB",
            f"CREATE TABLE {d}.audit_log (id INT PRIMARY KEY, note VARCHAR(80)) ENGINE=InnoDB",
            f"CREATE SEQUENCE {d}.order_seq START WITH 100 INCREMENT BY 1 NOCACHE",
            f"CREATE VIEW {d}.v_accounts AS SELECT id, owner FROM {d}.accounts",
            f"CREATE FUNCTION {d}.evil_global() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA "
            f"BEGIN SET GLOBAL max_connect_errors = 7777; RETURN 1; END",
            f"CREATE FUNCTION {d}.evil_write() RETURNS INT NOT DETERMINISTIC MODIFIES SQL DATA "
            f"BEGIN DELETE FROM {d}.audit_log; RETURN 1; END",
            f"CREATE FUNCTION {d}.evil_lock() RETURNS INT NOT DETERMINISTIC "
            f"BEGIN RETURN GET_LOCK('{self.lock}', 0); END",
            f"CREATE FUNCTION {d}.evil_next() RETURNS BIGINT NOT DETERMINISTIC "
            f"BEGIN RETURN NEXTVAL({d}.order_seq); END",
            f"CREATE FUNCTION {d}.read_passwd() RETURNS LONGTEXT NOT DETERMINISTIC "
            f"BEGIN RETURN LOAD_FILE('/etc/passwd'); END",
            f"CREATE VIEW {trap}.v_evil AS SELECT {d}.evil_global() AS r",
            f"CREATE VIEW {trap}.v_passwd AS SELECT LOAD_FILE('/etc/passwd') AS body",
            f"CREATE VIEW {trap}.v_lock AS SELECT GET_LOCK('{self.lock}', 0) AS l",
            f"CREATE VIEW {trap}.v_next AS SELECT NEXTVAL({d}.order_seq) AS n",
        ]:
            self.exec(s)
        with self.raw.cursor() as cur:
            cur.executemany(f"INSERT INTO {d}.accounts VALUES (%s, %s, %s, %s)", ACCOUNTS)
            cur.executemany(f"INSERT INTO {d}.audit_log VALUES (%s, %s)", AUDIT)
            if has_chinook():
                for table in CHINOOK_TABLES:
                    cols = chinook_columns(table)
                    ddl = ", ".join(f"`{n}` {_my_type(ty)}{' NOT NULL' if nn else ''}" for n, ty, nn in cols)
                    cur.execute(f"CREATE TABLE {d}.`{table}` ({ddl}, PRIMARY KEY (`{cols[0][0]}`)) "
                                f"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
                    names, rows = chinook_rows(table)
                    marks = ", ".join(["%s"] * len(names))
                    cur.executemany(f"INSERT INTO {d}.`{table}` VALUES ({marks})", rows)

    def snapshot(self) -> dict:
        try:
            self.raw.ping(False)
        except self._pymysql.Error:
            self.raw = self._pymysql.connect(**MY_HOST, autocommit=True, connect_timeout=3)
        d, trap, t = self.dbname, self.trap, self.token
        tables = self.exec("SELECT CONCAT('`', TABLE_SCHEMA, '`.`', TABLE_NAME, '`') FROM information_schema.TABLES "
                           "WHERE TABLE_SCHEMA IN (%s, %s) AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1", d, trap)
        sums = self.exec("CHECKSUM TABLE " + ", ".join(r[0] for r in tables)) if tables else []
        glob = self.exec("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                         "WHERE VARIABLE_NAME IN (" + ", ".join(f"'{g.upper()}'" for g in WATCHED_GLOBALS) + ") ORDER BY 1")
        try:
            probe = self.db.execute("SELECT @vouch_iso_v AS v")
            session = probe.rows if probe.error is None else f"refused: {probe.error.kind}"
        except Exception as exc:  # noqa: BLE001
            session = f"exception: {type(exc).__name__}"
        return {
            "tables": [tuple(map(str, r)) for r in sums],
            "relations": self.exec("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
                                   "WHERE TABLE_SCHEMA IN (%s, %s) ORDER BY 1, 2", d, trap),
            "routines": self.exec("SELECT ROUTINE_SCHEMA, ROUTINE_NAME FROM information_schema.ROUTINES "
                                  "WHERE ROUTINE_SCHEMA IN (%s, %s) ORDER BY 1, 2", d, trap),
            "sequence": self.exec(f"SELECT next_not_cached_value FROM {d}.order_seq"),
            "globals": glob,
            "user_lock": self.one("SELECT IS_USED_LOCK(%s)", self.lock) is not None,
            "users": self.exec("SELECT User, Host FROM mysql.user WHERE User LIKE %s", f"vouch_iso_evil_{t}%"),
            "databases": self.exec("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE %s",
                                   f"vouch_iso_evil_{t}%"),
            "session_variable": session,
        }

    def secrets(self) -> dict[str, list[str]]:
        found = super().secrets()
        found["authid"] = [self.authid_hash, self.authid_hash.lstrip("*")]
        return found

    def values(self) -> dict:
        return {**super().values(), "DB": self.dbname, "TRAP": self.trap}

    def restore(self) -> None:
        changed = set(self.changes())
        t = self.token
        if changed & {"tables", "relations", "routines", "sequence"}:
            self.exec(f"DROP DATABASE IF EXISTS {self.trap}")
            self.exec(f"DROP DATABASE IF EXISTS {self.dbname}")
            self._build()
        if "globals" in changed:
            for name, value in self.baseline["globals"]:
                now = self.one("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES WHERE VARIABLE_NAME = %s",
                               name)
                if now != value:
                    self.exec(f"SET GLOBAL {name.lower()} = %s", int(value) if value.lstrip("-").isdigit() else value)
        holder = self.one("SELECT IS_USED_LOCK(%s)", self.lock)
        if holder is not None:
            self.exec(f"KILL {int(holder)}")
        for user, host in self.exec("SELECT User, Host FROM mysql.user WHERE User LIKE %s", f"vouch_iso_evil_{t}%"):
            self.exec(f"DROP USER '{user}'@'{host}'")
        for (name,) in self.exec("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE %s",
                                 f"vouch_iso_evil_{t}%"):
            self.exec(f"DROP DATABASE `{name}`")
        self.remove_outputs()
        self.reopen()
        self.rebaseline()

    def close(self) -> None:
        try:
            super().close()
        finally:
            t = self.token
            try:
                self.exec(f"DROP DATABASE IF EXISTS {self.trap}")
                self.exec(f"DROP DATABASE IF EXISTS {self.dbname}")
                self.exec(f"DROP USER IF EXISTS '{self.secret_user}'@'localhost'")
                for user, host in self.exec("SELECT User, Host FROM mysql.user WHERE User LIKE %s", f"vouch_iso_evil_{t}%"):
                    self.exec(f"DROP USER '{user}'@'{host}'")
            finally:
                self.raw.close()


def build(engine: str, workdir: Path, token: str) -> World:
    if engine == "postgresql":
        return PostgresWorld(workdir, token)
    if engine == "mariadb":
        return MariaDBWorld(workdir, token)
    raise ValueError(engine)

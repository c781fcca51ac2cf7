"""What the role a server database is opened as may do beyond reading.

Vouch's read-only transaction and statement gate stop ordinary writes, but the real guarantee
is a role that may only read (docs/security.md, "Least privilege"). So at connect the role's
powers are read from the server's own catalogue, and the CLI warns, the web page shows it,
and ``vouch serve`` refuses to start when the role could write or reach the server's files:

- **PostgreSQL**, for ``current_user`` and for the login role (``session_user``) when it
  differs, since the session could switch back to it: superuser, ``CREATEROLE``,
  ``CREATEDB``, membership in ``pg_write_server_files``, ``pg_execute_server_program``,
  ``pg_read_server_files`` and ``pg_write_all_data``, ``CREATE`` on the database or on any
  user schema, and write privileges (table- or column-level) on any user table of the
  database. ``TEMP`` is left out: every role has it by default, and a temporary table is
  private to the session and gone at disconnect.
- **MariaDB/MySQL**: the lines of ``SHOW GRANTS FOR CURRENT_USER()``, and those of every role
  granted to the user (a default role is active without ``SET ROLE``). ``SUPER``, ``FILE`` and
  ``ALL PRIVILEGES ON *.*`` reach the server; ``INSERT``, ``UPDATE``, ``DELETE``, ``CREATE``,
  ``DROP``, ``ALTER`` and the other privileges that change data or schema (anywhere) are
  writes. ``CREATE TEMPORARY TABLES`` is left out for the reason ``TEMP`` is.

Embedded engines (SQLite, DuckDB) are opened read-only by construction and have no role, so
nothing here applies to them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # sqlalchemy is imported only for a server database
    from sqlalchemy.engine import Connection, Engine

DOCS = "docs/security.md#least-privilege"

# PostgreSQL's predefined roles that reach outside the database, and the one that writes.
_PG_SERVER_ROLES = ("pg_execute_server_program", "pg_read_server_files", "pg_write_server_files")
_PG_WRITE_ROLES = ("pg_write_all_data",)

# The schemas PostgreSQL keeps for itself: CREATE there is the catalogue's business.
_PG_USER_SCHEMA = r"n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'"

_PG_QUERY = f"""
SELECT r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
       ARRAY(SELECT g.rolname FROM pg_roles g
             WHERE g.rolname = ANY(:special) AND pg_has_role(r.oid, g.oid, 'MEMBER')
             ORDER BY g.rolname) AS member_of,
       has_database_privilege(r.oid, current_database(), 'CREATE') AS create_db,
       current_database() AS db,
       ARRAY(SELECT n.nspname FROM pg_namespace n
             WHERE {_PG_USER_SCHEMA} AND has_schema_privilege(r.oid, n.oid, 'CREATE')
             ORDER BY n.nspname) AS create_schemas,
       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'f') AND {_PG_USER_SCHEMA}
          AND (has_table_privilege(r.oid, c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE')
               OR has_any_column_privilege(r.oid, c.oid, 'INSERT,UPDATE'))) AS writable_tables
FROM pg_roles r
WHERE r.rolname IN (current_user, session_user)
ORDER BY r.rolname = current_user DESC
"""

_MY_SERVER = {"SUPER", "FILE"}
_MY_WRITE = {"ALL PRIVILEGES", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX",
             "CREATE VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "TRIGGER", "EVENT", "DELETE HISTORY",
             "CREATE USER", "CREATE TABLESPACE"}
_QUOTED = r"`(?:[^`]|``)*`"
_PART = rf"(?:{_QUOTED}|\*|[^\s.`]+)"
# GRANT <privileges> ON [FUNCTION|PROCEDURE|PACKAGE [BODY]] <object> TO …  (object: *.*, db.*, db.t)
_MY_GRANT = re.compile(rf"^GRANT (?P<privs>.+?) ON (?:(?:FUNCTION|PROCEDURE|PACKAGE(?: BODY)?) )?"
                       rf"(?P<object>{_PART}(?:\.{_PART})?) TO ", re.S)
# GRANT <role> TO <user>: a role, with no ON clause.
_MY_ROLE = re.compile(rf"^GRANT (?P<role>{_QUOTED}(?:@{_QUOTED})?) TO ")
_MAX_ROLES = 32  # roles granted to roles: a bound, not a depth anyone reaches


class RolePowers(BaseModel):
    """The role a server database is opened as, and what it may do beyond reading."""

    engine: str = Field(description="postgresql, mysql or mariadb")
    role: str = Field(description="the role (PostgreSQL) or account (MariaDB/MySQL) Vouch connects as")
    powers: list[str] = Field(default_factory=list, description="each power found beyond reading, as one phrase")
    can_write: bool = Field(description="the role may change data or schema (Vouch's read-only transaction aside)")
    can_reach_server: bool = Field(description="the role may read or write the server's files or run its programs")
    summary: str = Field(description="one line for people")

    @property
    def privileged(self) -> bool:
        return self.can_write or self.can_reach_server

    def warning(self, who: str | None = None) -> str | None:
        """The one-line warning for a privileged role (``None`` for a read-only one). ``who``
        stands in for "the role NAME" where the name is not to be shown (the web page)."""
        if not self.privileged:
            return None
        text = self.summary if who is None else _describe(who, self.powers, self.can_write, self.can_reach_server)
        return f"{text}; connect as a read-only role instead, see {DOCS}"


def _describe(who: str, powers: list[str], can_write: bool, can_reach_server: bool) -> str:
    if can_write and can_reach_server:
        what = "can write and reach the server's files or programs"
    elif can_reach_server:
        what = "can reach the server's files or programs"
    elif can_write:
        what = "can write"
    else:
        what = "can only read: no write or server-file power found"
    return f"{who} {what}" + (f" ({'; '.join(powers)})" if powers else "")


def _build(engine: str, role: str, powers: list[str], can_write: bool, can_reach_server: bool) -> RolePowers:
    return RolePowers(engine=engine, role=role, powers=powers, can_write=can_write, can_reach_server=can_reach_server,
                      summary=_describe(f"the role {role}", powers, can_write, can_reach_server))


def read_role_powers(engine: Engine, dialect: str) -> RolePowers | None:
    """The powers of the role ``engine`` (a SQLAlchemy engine) connects as, or ``None`` for a
    dialect Vouch cannot read them from. Runs only Vouch's own catalogue queries, in a
    transaction that is rolled back."""
    if dialect not in ("postgresql", "mysql", "mariadb"):
        return None
    with engine.connect() as conn:  # closing hands the connection back to the pool rolled back
        return _postgresql(conn) if dialect == "postgresql" else _mysql(conn, dialect)


def _postgresql(conn: Connection) -> RolePowers:
    from sqlalchemy import text

    rows = conn.execute(text(_PG_QUERY), {"special": [*_PG_SERVER_ROLES, *_PG_WRITE_ROLES]}).mappings().all()
    server: list[str] = []
    write: list[str] = []

    def add(bucket: list[str], phrase: str) -> None:
        if phrase not in bucket:
            bucket.append(phrase)

    for r in rows:
        if r["rolsuper"]:
            add(server, "superuser")
        for name in r["member_of"]:
            add(server if name in _PG_SERVER_ROLES else write, f"member of {name}")
        if r["rolcreaterole"]:
            add(write, "CREATEROLE")
        if r["rolcreatedb"]:
            add(write, "CREATEDB")
        if r["create_db"]:
            add(write, f"CREATE on database {r['db']}")
        schemas = r["create_schemas"]
        if schemas:
            shown = ", ".join(schemas[:3]) + (f" and {len(schemas) - 3} more" if len(schemas) > 3 else "")
            add(write, f"CREATE on schema{'s' if len(schemas) > 1 else ''} {shown}")
        if r["writable_tables"]:
            n = r["writable_tables"]
            add(write, f"INSERT/UPDATE/DELETE/TRUNCATE on {n} table{'s' if n != 1 else ''}")
    names = [r["rolname"] for r in rows]  # current_user first
    role = names[0] if len(names) == 1 else f"{names[0]} (logged in as {names[1]})"
    # A superuser passes every privilege check, so it can write even where nothing else says so.
    return _build("postgresql", role, server + write, bool(write) or "superuser" in server, bool(server))


def _mysql(conn: Connection, dialect: str) -> RolePowers:
    account = str(conn.exec_driver_sql("SELECT CURRENT_USER()").scalar())
    lines = _grant_lines(conn, "CURRENT_USER()")
    by_object: dict[str, list[str]] = {}
    can_write = can_reach_server = False
    for line in lines:
        m = _MY_GRANT.match(line)
        if not m:
            continue
        obj = m.group("object")
        for priv in _split_privileges(m.group("privs")):
            if priv in _MY_SERVER or (priv == "ALL PRIVILEGES" and obj == "*.*"):
                can_reach_server = True
            elif priv in _MY_WRITE:
                can_write = True
            else:
                continue
            if priv not in by_object.setdefault(obj, []):
                by_object[obj].append(priv)
    # ALL PRIVILEGES ON *.* holds every write privilege as well as SUPER and FILE.
    can_write = can_write or "ALL PRIVILEGES" in by_object.get("*.*", [])
    powers = [f"{', '.join(privs)} ON {obj}" for obj, privs in by_object.items() if privs]
    return _build(dialect, account, powers, can_write, can_reach_server)


def _grant_lines(conn: Connection, first: str) -> list[str]:
    """The GRANT lines of ``first`` and of every role granted to it, roles of roles included."""
    lines: list[str] = []
    todo, seen = [first], {first}
    while todo and len(seen) <= _MAX_ROLES:
        who = todo.pop()
        for (line,) in conn.exec_driver_sql(f"SHOW GRANTS FOR {who}").fetchall():
            lines.append(line)
            m = _MY_ROLE.match(line)
            if m and m.group("role") not in seen:
                seen.add(m.group("role"))
                todo.append(m.group("role"))
    return lines


def _split_privileges(text: str) -> list[str]:
    """``SELECT, UPDATE (`a`, `b`), INSERT`` → ``["SELECT", "UPDATE", "INSERT"]``: column lists
    dropped, since a write to one column is a write."""
    word: list[str]
    out, depth, word = [], 0, []
    for ch in text + ",":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(" ".join("".join(word).split()).upper())
            word = []
        elif depth == 0:
            word.append(ch)
    return [p for p in out if p]

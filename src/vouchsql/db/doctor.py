"""``vouch doctor``: the statements that make a least-privilege reader for a server database.

The reader may read the tables of the schemas Vouch reads and cannot reach any code the
database holds that :mod:`.trust` finds: functions are revoked from ``PUBLIC`` (every role's
default EXECUTE), views and foreign tables that run such code are left out of the reader's
grants, and what no role can be kept from (a domain whose CHECK calls a refused built-in, the
support functions of a type) is listed for a person to review. The inventory is read as the
most a new reader could have (``pg_read_all_data`` where the server has it), not as the role
the doctor connects with, so a grant the script makes cannot reach what the report missed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from pydantic import BaseModel, Field

from .trust import DOCS, HeldCode, TrustReport

if TYPE_CHECKING:
    from .base import Database
    from .sqlalchemy import SQLAlchemyDatabase


class Prescription(BaseModel):
    engine: str
    reader: str
    report: TrustReport
    script: str = Field(description="SQL to run as an administrator")
    unfenced: list[HeldCode] = Field(default_factory=list, description="objects no role can be kept from")


def prescribe(db: Database, reader: str = "vouch_reader", password: str = "change-me") -> Prescription | None:
    """The prescription for ``db`` (an open :class:`SQLAlchemyDatabase`), or ``None`` for an
    engine without roles (SQLite, DuckDB, CSV folders, Spark)."""
    engine = getattr(db, "engine", "")
    # (only a SQLAlchemyDatabase has these engines)
    if engine == "postgresql":
        return _postgresql(cast("SQLAlchemyDatabase", db), reader, password)
    if engine in ("mysql", "mariadb"):
        return _mysql(cast("SQLAlchemyDatabase", db), reader, password)
    return None


def _quote_pg(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _comment(held: HeldCode) -> str:
    return "-- " + held.line().replace("\n", " ")


def _postgresql(db: SQLAlchemyDatabase, reader: str, password: str) -> Prescription:
    with db._engine.connect() as conn:
        row = conn.exec_driver_sql("SELECT current_database(), to_regrole('pg_read_all_data') IS NOT NULL, "
                                   "current_user").fetchone()
        conn.rollback()
    assert row is not None  # (a SELECT without FROM: one row)
    database, has_reader_role, current = row
    report = db.trust_report(role="pg_read_all_data" if has_reader_role else current)
    assert report is not None  # (PostgreSQL always has one)
    schemas = sorted({t.schema or db.default_schema or "public" for t in db.schema()}) or [db.default_schema or "public"]
    role = _quote_pg(reader)
    lines = [f"-- vouch doctor: a least-privilege reader for database {database} (PostgreSQL).",
             "-- Run as a superuser or as the owner of the objects below; replace the role name and password.",
             f"CREATE ROLE {role} LOGIN PASSWORD '{password.replace(chr(39), chr(39) * 2)}';",
             f"GRANT CONNECT ON DATABASE {_quote_pg(database)} TO {role};"]
    for schema in schemas:
        lines += [f"GRANT USAGE ON SCHEMA {_quote_pg(schema)} TO {role};",
                  f"GRANT SELECT ON ALL TABLES IN SCHEMA {_quote_pg(schema)} TO {role};"]
    return _finish("postgresql", reader, role, report, lines, [
        "-- EXECUTE was revoked from PUBLIC above: grant it back to the roles that use those functions",
        "-- (GRANT EXECUTE ON FUNCTION ... TO app_role;), and keep functions created later from every role with",
        "-- ALTER DEFAULT PRIVILEGES FOR ROLE <owner> REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;"])


def _mysql(db: SQLAlchemyDatabase, reader: str, password: str) -> Prescription:
    with db._engine.connect() as conn:
        database = conn.exec_driver_sql("SELECT DATABASE()").scalar()
        tables = conn.exec_driver_sql(
            "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() "
            "ORDER BY TABLE_NAME").fetchall()
        conn.rollback()
    report = db.trust_report()
    assert report is not None  # (MariaDB/MySQL always have one)
    held = {h.name for h in report.found}
    account = f"'{reader.replace(chr(39), chr(39) * 2)}'@'%'"

    def q(name: object) -> str:  # (DATABASE() may be NULL: str() of anything)
        return "`" + str(name).replace("`", "``") + "`"

    lines = [f"-- vouch doctor: a least-privilege reader for database {database} (MariaDB/MySQL).",
             "-- Run as an administrator; replace the account name, host and password.",
             f"CREATE USER {account} IDENTIFIED BY '{password.replace(chr(39), chr(39) * 2)}';",
             "-- SELECT table by table rather than on the whole database: a view that runs code the database holds",
             "-- is left out (MariaDB cannot revoke one table from a database-wide grant). SHOW VIEW lets Vouch read",
             "-- a granted view's definition, which it needs to see that the view runs nothing.",
             "-- No EXECUTE is granted: stored functions stay out of the reader's reach."]
    for name, kind in tables:
        if f"{database}.{name}" in held:
            continue
        privileges = "SELECT, SHOW VIEW" if kind == "VIEW" else "SELECT"
        lines.append(f"GRANT {privileges} ON {q(database)}.{q(name)} TO {account};")
    return _finish("mysql", reader, account, report, lines, [])


def _finish(engine: str, reader: str, role: str, report: TrustReport, lines: list[str],
            after_revokes: list[str]) -> Prescription:
    fenced = [h for h in report.found if h.fence]
    unfenced = [h for h in report.found if not h.fence]
    if fenced:
        lines += ["", f"-- Code the database holds that a reader could reach ({len(fenced)}), fenced off:"]
        for held in fenced:
            lines.append(_comment(held))
            lines += [f.replace("{reader}", role) for f in held.fence if not f.startswith("-- ")]
        if any("FROM PUBLIC" in f for h in fenced for f in h.fence):
            lines += after_revokes
    if unfenced:
        lines += ["", f"-- No role can be kept from these ({len(unfenced)}): they run whenever a value is cast to the",
                  "-- domain or a value of the type is read or compared, whatever the role. Review each, then list it",
                  "-- in trusted_objects, or change it: until then Vouch refuses the database."]
        lines += [_comment(h) for h in unfenced]
    if not report.found:
        lines += ["", "-- No code the database holds is within a reader's reach: the grants above are all it needs."]
    lines += ["", f"-- Then connect Vouch as {reader}; see {DOCS}."]
    return Prescription(engine=engine, reader=reader, report=report, script="\n".join(lines) + "\n",
                        unfenced=unfenced)

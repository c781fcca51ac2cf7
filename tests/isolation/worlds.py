"""Worlds: one prepared database per engine, with everything a hostile statement could touch
and a ``snapshot()`` of all of it, so a test can say "nothing changed".

A world is built once per session (the fixtures in ``conftest.py``, or ``bench/isolation.py``)
and owns a Vouch ``Database`` opened on it (``world.db``, time limit ``world.timeout``). After
a statement, ``world.changes()`` compares a fresh snapshot with the baseline; when something
changed, ``world.restore()`` puts the world back (and re-takes the baseline) so one bad case
cannot spoil the next.

File engines (SQLite, DuckDB file, CSV folder): the snapshot is the folder listing with the
sha256 of every file, the same for a sibling ``outside`` folder (where ``{{OUT}}`` paths and
the secret files live) and DuckDB's extension folder. Server engines are in ``servers.py``.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import sqlite3
import uuid
from pathlib import Path

import vouchsql

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
CHINOOK = DATASETS / "chinook.sqlite"
# The Chinook tables copied into every world for the legitimate corpus (PlaylistTrack left
# out: 8,715 rows that no query needs).
CHINOOK_TABLES = ("Artist", "Album", "Genre", "MediaType", "Track", "Employee", "Customer",
                  "Invoice", "InvoiceLine", "Playlist")
ACCOUNTS = [(i, owner, bal, f"2024-0{1 + i % 9}-1{i % 10}")
            for i, (owner, bal) in enumerate([("ann", 120.5), ("bob", 80.0), ("cy", 0.0), ("dee", 999.99),
                                               ("eve", 13.37), ("fay", 42.0), ("gus", 7.5), ("hal", 300.0),
                                               ("ivy", 55.55), ("jo", 1.0)], start=1)]
AUDIT = [(i, f"note {i}") for i in range(1, 6)]


# The worlds hold trap functions, views and foreign tables on purpose: the database-level
# refusal (db/trust.py, tested in tests/test_trust.py) is waived so that these corpora test
# the statement policy behind it.
TRUST_ALL = "*"


def new_token() -> str:
    return uuid.uuid4().hex[:10]


def listing(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its sha256 (as in tests/test_readonly.py)."""
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def passwd_line() -> str:
    try:
        first = Path("/etc/passwd").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""
    return first


def chinook_rows(table: str) -> tuple[list[str], list[tuple]]:
    con = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    try:
        cur = con.execute(f'SELECT * FROM "{table}"')
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        con.close()


def chinook_columns(table: str) -> list[tuple[str, str, bool]]:
    """(name, declared type, not null) of a Chinook table."""
    con = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    try:
        return [(r[1], r[2].upper(), bool(r[3])) for r in con.execute(f'PRAGMA table_info("{table}")')]
    finally:
        con.close()


def has_chinook() -> bool:
    return CHINOOK.is_file()


class World:
    """What every engine's world offers; see the module docstring."""

    engine = "?"
    timeout = 1.0

    def __init__(self, workdir: Path, token: str) -> None:
        self.workdir = Path(workdir)
        self.token = token
        self.marker = f"vouchsecret{token}"
        self.cache_dir = self.workdir / "cache"
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.target = ""
        self.db = None
        self.baseline: dict = {}
        self.has_chinook = has_chinook()

    # -- what the tests use ------------------------------------------------------------
    def out_for(self, case_id: str) -> str:
        raise NotImplementedError

    def values(self) -> dict:
        return {"TOKEN": self.token, "OUT_FOR": self.out_for, "LOCK": f"vouch_iso_lock_{self.token}"}

    def secrets(self) -> dict[str, list[str]]:
        """Secret name → texts that must never come back in a result, error or response."""
        line = passwd_line()
        found = {"marker": [self.marker, self.marker.encode().hex(), self.marker.encode().hex().upper()]}
        if line:
            head = line.split(":")[0] + ":" + ":".join(line.split(":")[1:4])  # e.g. root:x:0:0
            found["passwd"] = [head, head.encode().hex(), head.encode().hex().upper()]
        return found

    def open(self, **settings):
        settings.setdefault("timeout", self.timeout)
        settings.setdefault("trusted_objects", TRUST_ALL)
        return vouchsql.connect(self.target, cache_dir=str(self.cache_dir), **settings)

    def reopen(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except Exception:  # noqa: BLE001 - a broken connection is why we reopen
                pass
        self.db = self.open()

    def snapshot(self) -> dict:
        raise NotImplementedError

    def changes(self) -> list[str]:
        """Names of the snapshot parts that differ from the baseline."""
        now = self.snapshot()
        return sorted(k for k in set(now) | set(self.baseline) if now.get(k) != self.baseline.get(k))

    def restore(self) -> None:
        raise NotImplementedError

    def rebaseline(self) -> None:
        self.baseline = self.snapshot()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


# -- file engines ---------------------------------------------------------------------------

class FileWorld(World):
    """A folder holding the database (``self.folder``), its pristine copy, and an ``outside``
    folder with secrets; restore copies the pristine folder back."""

    def __init__(self, workdir: Path, token: str) -> None:
        super().__init__(workdir, token)
        self.folder = self.workdir / "db"
        self.pristine = self.workdir / "pristine"
        self.outside = self.workdir / "outside"
        self.secret_dir = self.outside / "secrets"
        self.ext_dir = Path.home() / ".duckdb"
        for d in (self.folder, self.outside, self.secret_dir):
            d.mkdir(parents=True, exist_ok=True)
        (self.secret_dir / "secret.csv").write_text(f"name,value\napi_key,{self.marker}\n")
        (self.secret_dir / "secret.txt").write_text(f"{self.marker}\n")
        con = sqlite3.connect(self.secret_dir / "secret.sqlite")
        con.execute("CREATE TABLE secret (name TEXT, value TEXT)")
        con.execute("INSERT INTO secret VALUES ('api_key', ?)", (self.marker,))
        con.commit()
        con.close()
        self._outside_baseline = listing(self.outside)

    def out_for(self, case_id: str) -> str:
        return (self.outside / f"{case_id}.out").as_posix()

    def values(self) -> dict:
        return {**super().values(), "DIR": self.folder.as_posix(), "SECRET_DIR": self.secret_dir.as_posix()}

    def freeze(self) -> None:
        """Keep a pristine copy of the built folder and open the database on it."""
        shutil.copytree(self.folder, self.pristine)
        self.reopen()
        self.rebaseline()

    def snapshot(self) -> dict:
        return {"folder": listing(self.folder), "outside": listing(self.outside),
                "duckdb_home": listing(self.ext_dir)}

    def restore(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except Exception:  # noqa: BLE001
                pass
            self.db = None
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.copytree(self.pristine, self.folder)
        for path in sorted(self.outside.rglob("*"), reverse=True):
            rel = str(path.relative_to(self.outside))
            if path.is_file() and rel not in self._outside_baseline:
                path.unlink()
        self.reopen()
        self.rebaseline()


class SQLiteWorld(FileWorld):
    engine = "sqlite"

    def __init__(self, workdir: Path, token: str) -> None:
        super().__init__(workdir, token)
        path = self.folder / "hostile.sqlite"
        if self.has_chinook:
            shutil.copyfile(CHINOOK, path)
        con = sqlite3.connect(path)
        con.executescript("""
            CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance REAL NOT NULL, opened TEXT);
            CREATE TABLE audit_log (id INTEGER PRIMARY KEY, note TEXT);
            CREATE TABLE tickets (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT);
            CREATE INDEX ix_accounts_owner ON accounts (owner);
            CREATE VIEW v_accounts AS SELECT id, owner FROM accounts;
            CREATE TRIGGER trg_accounts AFTER UPDATE ON accounts
              BEGIN INSERT INTO audit_log (note) VALUES ('updated'); END;
        """)
        con.executemany("INSERT INTO accounts VALUES (?, ?, ?, ?)", ACCOUNTS)
        con.executemany("INSERT INTO audit_log VALUES (?, ?)", AUDIT)
        con.executemany("INSERT INTO tickets (title) VALUES (?)", [("t1",), ("t2",), ("t3",)])
        con.commit()
        con.execute("PRAGMA journal_mode = DELETE")
        con.close()
        self.target = str(path)
        self.freeze()


def write_chinook_csvs(folder: Path) -> None:
    for table in CHINOOK_TABLES:
        cols, rows = chinook_rows(table)
        with open(folder / f"{table}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            w.writerows(rows)


def _write_small_csvs(folder: Path) -> None:
    with open(folder / "accounts.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "owner", "balance", "opened"])
        w.writerows(ACCOUNTS)
    with open(folder / "audit_log.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "note"])
        w.writerows(AUDIT)


class DuckDBWorld(FileWorld):
    engine = "duckdb"

    def __init__(self, workdir: Path, token: str) -> None:
        import duckdb

        super().__init__(workdir, token)
        staging = self.workdir / "staging"
        staging.mkdir()
        if self.has_chinook:
            write_chinook_csvs(staging)
        _write_small_csvs(staging)
        path = self.folder / "hostile.duckdb"
        con = duckdb.connect(str(path))
        for f in sorted(staging.glob("*.csv")):
            con.execute(f'CREATE TABLE "{f.stem}" AS SELECT * FROM read_csv_auto(\'{f.as_posix()}\')')
        con.execute("CREATE SEQUENCE order_seq START 100")
        con.execute("CREATE VIEW v_accounts AS SELECT id, owner FROM accounts")
        con.execute(f"CREATE VIEW v_secret AS SELECT * FROM read_csv('{(self.secret_dir / 'secret.csv').as_posix()}')")
        con.execute(f"CREATE MACRO peek_secret() AS TABLE SELECT * FROM read_text('{(self.secret_dir / 'secret.txt').as_posix()}')")
        con.execute("CREATE MACRO double_it(x) AS x * 2")
        con.execute("CHECKPOINT")
        con.close()
        shutil.rmtree(staging)
        self.target = str(path)
        self.freeze()


class CSVWorld(FileWorld):
    engine = "csv"

    def __init__(self, workdir: Path, token: str) -> None:
        super().__init__(workdir, token)
        if self.has_chinook:
            write_chinook_csvs(self.folder)
        _write_small_csvs(self.folder)
        # Not a data file: the engine must not let a query read it.
        (self.folder / "notes.txt").write_text(f"internal notes: {self.marker}\n")
        self.target = str(self.folder)
        self.freeze()

    def snapshot(self) -> dict:
        snap = super().snapshot()
        # The in-memory catalogue: a statement must not leave a table, view or macro behind.
        try:
            r = self.db.execute("SELECT table_name FROM information_schema.tables ORDER BY 1")
            snap["catalog"] = r.rows if r.error is None else f"error: {r.error.kind}"
        except Exception as exc:  # noqa: BLE001 - the snapshot must not fail the test
            snap["catalog"] = f"exception: {type(exc).__name__}"
        return snap


FILE_WORLDS = {"sqlite": SQLiteWorld, "duckdb": DuckDBWorld, "csv": CSVWorld}


def build(engine: str, workdir: Path, token: str) -> World:
    """Build the world for ``engine`` (raises ``Unavailable`` with a reason when it cannot)."""
    if engine in FILE_WORLDS:
        if engine != "sqlite":
            try:
                import duckdb  # noqa: F401
            except ImportError:
                raise Unavailable("DuckDB is not installed (pip install 'vouchsql[duckdb]')") from None
        return FILE_WORLDS[engine](workdir, token)
    from . import servers

    return servers.build(engine, workdir, token)


class Unavailable(Exception):
    """The engine cannot be tested here (driver missing, server down): the reason is the message."""

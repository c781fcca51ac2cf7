"""DuckDB (optional extra ``[duckdb]``): a database file opened ``read_only``, or a folder
of CSV/Parquet files exposed as views of an in-memory database.

For a folder, the views are created first and then external access is switched off and the
configuration locked, so a query can read the folder's files through the views but cannot
open any other file, write one, install or load an extension, or undo those settings.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

from ..errors import ExecutionError, QueryTimeout, ReadOnlyViolation, UserInputError
from ..settings import Config
from .base import ColumnInfo, Database, Fetch, ForeignKeyInfo, TableInfo, fetch_bounded

DATA_SUFFIXES = {".csv": "read_csv_auto", ".tsv": "read_csv_auto", ".parquet": "read_parquet"}


def _import_duckdb():
    try:
        import duckdb
    except ImportError:
        raise UserInputError("DuckDB support needs the duckdb extra: pip install 'vouchsql[duckdb]'") from None
    return duckdb


def data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in DATA_SUFFIXES)


def _view_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"\W+", "_", path.stem).strip("_") or "table"
    name, i = base, 2
    while name.lower() in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name.lower())
    return name


class DuckDBDatabase(Database):
    engine = "duckdb"
    dialect = "duckdb"

    def __init__(self, path: str | Path, config: Config) -> None:
        duckdb = _import_duckdb()
        self.path = Path(path).expanduser().resolve()
        super().__init__(str(self.path), config)
        self._duck_error = duckdb.Error
        self._interrupt = getattr(duckdb, "InterruptException", None)
        self.files: list[Path] = []
        try:
            if self.path.is_dir():
                self.files = data_files(self.path)
                if not self.files:
                    raise UserInputError(f"{self.path} is a folder with no .csv, .tsv or .parquet files")
                self._conn = duckdb.connect(":memory:")
                literals = [str(f).replace("'", "''") for f in self.files]
                # The views read their files at query time, so exactly these files stay
                # readable once external access is off (DuckDB >= 1.3). Older DuckDB has no
                # allowed_paths: the files are then loaded into in-memory tables instead.
                try:
                    self._conn.execute("SET allowed_paths = [" + ", ".join(f"'{x}'" for x in literals) + "]")
                    kind = "VIEW"
                except duckdb.Error:
                    kind = "TABLE"
                taken: set[str] = set()
                for f, literal in zip(self.files, literals):
                    reader = DATA_SUFFIXES[f.suffix.lower()]
                    self._conn.execute(
                        f'CREATE {kind} "{_view_name(f, taken)}" AS SELECT * FROM {reader}(\'{literal}\')')
                self._conn.execute("SET enable_external_access = false")
                self._conn.execute("SET lock_configuration = true")
            else:
                if not self.path.exists():
                    raise UserInputError(f"{self.path}: no such file")
                self._conn = duckdb.connect(str(self.path), read_only=True)
                # read_only protects the database file; this stops COPY … TO, EXPORT and
                # read_csv('/any/file') from reaching the rest of the file system.
                self._conn.execute("SET enable_external_access = false")
                self._conn.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            raise UserInputError(f"{self.path}: cannot open with DuckDB ({str(exc).splitlines()[0]})") from None
        self._schema: list[TableInfo] | None = None

    def close(self) -> None:
        self._conn.close()

    def identity(self) -> str:
        paths = self.files or [self.path]
        parts = [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in paths]
        return "duckdb:" + "|".join(parts)

    def _check_select(self, sql: str) -> None:
        """DuckDB's own parser must see exactly one SELECT: allowed_paths lets a query read
        the folder's files but would also let COPY … TO overwrite them."""
        extract = getattr(self._conn, "extract_statements", None)
        if extract is None:  # pragma: no cover - very old DuckDB
            return
        try:
            statements = extract(sql)
        except self._duck_error as exc:
            raise ExecutionError(f"DuckDB error: {str(exc).splitlines()[0]}") from None
        kinds = [str(st.type).rsplit(".", 1)[-1] for st in statements]
        if kinds != ["SELECT"]:
            raise ReadOnlyViolation(f"DuckDB refused: {', '.join(kinds) or 'empty'} statement "
                                    f"(Vouch runs exactly one SELECT, read-only)")

    def _run(self, sql: str, max_rows: int, timeout: float, max_bytes: int | None = None) -> Fetch:
        max_bytes = self.config.max_result_bytes if max_bytes is None else max_bytes
        self._check_select(sql)
        timer = threading.Timer(timeout, self._conn.interrupt)
        timer.start()
        start = time.monotonic()
        try:
            cur = self._conn.execute(sql)
            columns = [d[0] for d in cur.description or []]
            rows, truncated = fetch_bounded(cur.fetchmany, max_rows, max_bytes, start + timeout)
        except (self._duck_error, QueryTimeout) as exc:
            text = str(exc).splitlines()[0]
            if isinstance(exc, QueryTimeout) or "INTERRUPT" in text.upper() or time.monotonic() - start >= timeout:
                raise QueryTimeout(f"the query ran past the {timeout:g} s time limit and was stopped "
                                   f"(raise it with --timeout or VOUCH_TIMEOUT)") from None
            if "read-only" in text.lower() or "external access" in text.lower():
                raise ReadOnlyViolation(f"DuckDB refused: {text}") from None
            raise ExecutionError(f"DuckDB error: {text}") from None
        finally:
            timer.cancel()
        return Fetch(columns, rows, truncated)

    def sample_source(self, table: str, n: int, total: int) -> str:
        return f"(SELECT * FROM {self.quote(table)} USING SAMPLE reservoir({int(n)} ROWS) REPEATABLE (7))"

    def schema(self) -> list[TableInfo]:
        if self._schema is not None:
            return self._schema
        rows = self._conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
            "WHERE table_schema NOT IN ('information_schema', 'pg_catalog') "
            "ORDER BY table_name, ordinal_position").fetchall()
        views = {r[0] for r in self._conn.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        tables: dict[str, TableInfo] = {}
        for tname, cname, ctype, nullable in rows:
            info = tables.setdefault(tname, TableInfo(tname, [], is_view=tname in views))
            info.columns.append(ColumnInfo(cname, str(ctype), nullable == "YES"))
        for tname, ctype, cols, ref_table, ref_cols in self._conn.execute(
                "SELECT table_name, constraint_type, constraint_column_names, "
                "referenced_table, referenced_column_names FROM duckdb_constraints() "
                "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')").fetchall():
            if tname not in tables:
                continue
            if ctype == "PRIMARY KEY":
                tables[tname].primary_key = list(cols)
            else:
                tables[tname].foreign_keys.append(ForeignKeyInfo(list(cols), ref_table, list(ref_cols)))
        self._schema = [tables[k] for k in sorted(tables)]
        return self._schema

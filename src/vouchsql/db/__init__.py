"""Engines behind one interface; :func:`connect` picks one from a path or URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import UserInputError
from ..settings import Config, load_config
from .base import Database, TableInfo
from .sqlite import SQLITE_HEADER

_DUCKDB_MAGIC = b"DUCK"


def connect(target: "str | os.PathLike[str] | Database", config: Config | None = None, **settings: Any) -> Database:
    """Open ``target`` read-only: a SQLite file (the default engine), a DuckDB file, a folder
    of CSV/Parquet files (DuckDB), Spark (``sc://host:port`` for Spark Connect, ``spark-local://``
    for a local session), or a SQLAlchemy URL such as ``postgresql://…``.
    Keyword arguments override settings (``timeout``, ``max_rows``, …)."""
    if isinstance(target, Database):
        return target
    config = (config or load_config()).with_overrides(**settings)
    text = os.fspath(target) if target is not None else ""
    if not str(text).strip():
        raise UserInputError("no database given; pass a file path or a database URL (--db)")
    if "://" in text:
        scheme = text.split("://", 1)[0].lower()
        rest = text.split("://", 1)[1]
        # SQLAlchemy's convention: sqlite:///relative.db and sqlite:////absolute.db
        local = rest[1:] if rest.startswith("/") else rest
        if scheme == "sqlite":
            return _open_path(Path(local), config)
        if scheme == "duckdb":
            from .duckdb import DuckDBDatabase
            return DuckDBDatabase(_reachable(Path(local)), config)
        if scheme in ("sc", "spark-local"):
            from .spark import SparkDatabase
            return SparkDatabase(text, config)
        from .sqlalchemy import SQLAlchemyDatabase
        return SQLAlchemyDatabase(text, config)
    return _open_path(Path(text), config)


def _reachable(path: Path) -> Path:
    """``path`` with ``~`` expanded, once the system can follow it: a symlink loop or a path
    through a file is the user's to fix (a missing file is named by the engine)."""
    path = path.expanduser()
    try:
        path.stat()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UserInputError(f"{path}: {exc.strerror}") from None
    return path


def _open_path(path: Path, config: Config) -> Database:
    path = _reachable(path)
    if path.is_dir():
        from .duckdb import DuckDBDatabase, data_files
        if not data_files(path):
            raise UserInputError(f"{path} is a folder with no .csv, .tsv or .parquet files; "
                                 f"give a database file or a folder of data files")
        return DuckDBDatabase(path, config)
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:  # no permission to read it
            raise UserInputError(f"{path}: {exc.strerror}") from None
        if head[8:12] == _DUCKDB_MAGIC or (path.suffix.lower() in {".duckdb", ".ddb"} and head[:16] != SQLITE_HEADER):
            from .duckdb import DuckDBDatabase
            return DuckDBDatabase(path, config)
    from .sqlite import SQLiteDatabase
    return SQLiteDatabase(path, config)


__all__ = ["connect", "Database", "TableInfo"]

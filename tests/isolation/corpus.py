"""The corpora as data: ``corpus/hostile_<engine>.toml`` and ``corpus/legit_<engine>.toml``.

Every entry is a ``[[case]]`` table with an ``id`` (unique in its file), a ``technique`` (a
short tag: what the statement tries) and the ``sql``. Hostile entries may add ``secret`` (the
name of a secret whose text must never come back: ``passwd``, ``marker``, ``authid``…) and
``nasty = true`` (also sent through the CLI and ``POST /api/check``). A hostile file may
also hold ``[[resource]]`` entries: statements that must end within the time limit + 1 s and
whose memory is measured in a child process (they need not be refused: a cut result is fine).

Placeholders, filled per world (see ``worlds``): ``{{OUT}}`` a file path, unique to the case,
that the statement would write (it must not exist afterwards), ``{{DIR}}`` the folder of a
file database, ``{{DSN}}`` a libpq connection string back to the PostgreSQL test database,
``{{DB}}`` the database name, ``{{TOKEN}}`` this session's token (names of objects a statement
would create), ``{{SECRET_DIR}}`` a folder holding secret files, ``{{VICTIM}}`` a file that
must survive, ``{{LOCK}}`` a lock name, ``{{TRAP}}`` the MariaDB database holding trap views.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
ENGINES = ("sqlite", "duckdb", "csv", "postgresql", "mariadb")
_PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")


@dataclass(frozen=True)
class Case:
    engine: str
    kind: str  # "hostile", "legit" or "resource"
    id: str
    technique: str
    sql: str
    secret: tuple[str, ...] = ()
    nasty: bool = False
    extra: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.id}"

    def render(self, values: dict[str, str]) -> str:
        def fill(match: re.Match) -> str:
            name = match.group(1)
            if name == "OUT":
                return values["OUT_FOR"](self.id)
            if name not in values:
                raise KeyError(f"{self.key}: no value for placeholder {{{{{name}}}}}")
            return values[name]
        return _PLACEHOLDER.sub(fill, self.sql)

    @property
    def writes_file(self) -> bool:
        return "{{OUT}}" in self.sql


def _load(path: Path, engine: str, kind: str, table: str) -> list[Case]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases, seen = [], set()
    for entry in data.get(table, []):
        unknown = set(entry) - {"id", "technique", "sql", "secret", "nasty", "max_rows"}
        if unknown:
            raise ValueError(f"{path.name}: {entry.get('id')}: unknown keys {sorted(unknown)}")
        cid = entry["id"]
        if cid in seen:
            raise ValueError(f"{path.name}: duplicate id {cid!r}")
        seen.add(cid)
        secret = entry.get("secret", ())
        secret = (secret,) if isinstance(secret, str) else tuple(secret)
        cases.append(Case(engine, kind, cid, entry["technique"], entry["sql"].strip(), secret,
                          bool(entry.get("nasty", False)),
                          {k: entry[k] for k in ("max_rows",) if k in entry}))
    return cases


def hostile(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"hostile_{engine}.toml", engine, "hostile", "case")


def resources(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"hostile_{engine}.toml", engine, "resource", "resource")


def legit(engine: str) -> list[Case]:
    return _load(CORPUS_DIR / f"legit_{engine}.toml", engine, "legit", "case")


def nasty(engine: str) -> list[Case]:
    return [c for c in hostile(engine) if c.nasty]

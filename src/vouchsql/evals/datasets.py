"""Dataset loaders: the Spider / BIRD layout, PremiseSQL-style JSONL, and the choice request sets.

Spider / BIRD: a questions JSON file (a list of objects), a ``tables.json`` beside it and a
database folder holding ``<db_id>/<db_id>.sqlite``. Spider names the gold SQL ``query`` and
its folder ``database/``; BIRD names it ``SQL``, adds ``evidence`` (kept here as the hint),
``question_id`` and ``difficulty``, and calls the folder ``dev_databases/`` or
``train_databases/``. :func:`load_spider_bird` accepts the questions file or the folder that
holds it.

PremiseSQL-style JSONL, one question per line::

    {"pair_id": "p01", "db": "demo", "question": "…", "label": "flawed", "flaw": "E2.1"}
    {"pair_id": "p01", "db": "demo", "question": "…", "label": "original", "gold_sql": "SELECT …"}

An E3.2 (Missing Schema Premise) question keeps its original's words and names what the harness
withholds from the schema the model sees: ``"withhold": ["stores", "products.price"]`` (a table,
or ``table.column``). PremiseSQL builds E3.2 that way (§3.3, App. C.5: "E3.2 preserves the
original valid query while withholding part of its required schema context"); a question that
asks for a column missing from an unchanged schema is E2.2.

Choice request sets (SpecBridge §2.4), one set per line::

    {"id": "…", "db": "…", "open_request": "…", "request_a": "…", "request_b": "…",
     "sql_a": "SELECT …", "sql_b": "SELECT …", "choice_type": "counting_unit"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserInputError
from ..premise import CATEGORIES, TAXONOMY
from .cases import read_jsonl

# The nine PremiseSQL flaw codes, their names and E1–E4 categories (Table 1).
FLAW_CODES = tuple(TAXONOMY)
FLAW_NAMES = {code: name for code, (name, _) in TAXONOMY.items()}
FLAW_CATEGORIES = dict(CATEGORIES)


# ---------------------------------------------------------------------------------------
# Spider / BIRD
# ---------------------------------------------------------------------------------------
@dataclass
class Question:
    id: str
    db_id: str
    question: str
    gold_sql: str | None
    db_path: Path | None
    hint: str | None = None  # BIRD's evidence
    difficulty: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class TableSchema:
    db_id: str
    tables: list[str]
    columns: list[tuple[str, str, str]]  # (table, column, type)
    primary_keys: list[tuple[str, str]]
    foreign_keys: list[tuple[str, str, str, str]]  # (table, column, ref table, ref column)


_QUESTION_FILES = ("dev.json", "test.json", "train_spider.json", "train.json", "validation.json")
_DB_FOLDERS = ("database", "dev_databases", "test_database", "test_databases", "train_databases", "databases")


def find_questions(path: Path, split: str | None = None) -> Path:
    """The questions file of a Spider/BIRD split: the path itself, or dev.json (…) inside it."""
    if path.is_file():
        return path
    if not path.is_dir():
        raise UserInputError(f"{path}: no such dataset file or folder")
    names = [f"{split}.json"] if split else list(_QUESTION_FILES)
    for name in names:
        if (path / name).is_file():
            return path / name
    raise UserInputError(f"{path}: no questions file ({', '.join(names)}); give the JSON file itself")


def find_db_root(base: Path, db_root: Path | None = None) -> Path | None:
    if db_root is not None:
        return db_root
    for name in _DB_FOLDERS:
        if (base / name).is_dir():
            return base / name
    return None


def _db_file(root: Path | None, db_id: str) -> Path | None:
    if root is None:
        return None
    for candidate in (root / db_id / f"{db_id}.sqlite", root / db_id / f"{db_id}.db", root / f"{db_id}.sqlite"):
        if candidate.is_file():
            return candidate
    return root / db_id / f"{db_id}.sqlite"  # reported missing by the harness, per question


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}: not valid JSON ({exc.msg})") from None


def load_spider_bird(path: Path, *, split: str | None = None, db_root: Path | None = None) -> list[Question]:
    """Questions of a Spider or BIRD split, each with its gold SQL and database file."""
    qfile = find_questions(Path(path), split)
    data = _read_json(qfile)
    if not isinstance(data, list):
        raise UserInputError(f"{qfile}: expected a JSON list of questions")
    root = find_db_root(qfile.parent, Path(db_root) if db_root else None)
    out = []
    for i, q in enumerate(data):
        if not isinstance(q, dict) or "db_id" not in q or "question" not in q:
            raise UserInputError(f"{qfile}: item {i} lacks db_id or question")
        gold = q.get("SQL", q.get("query"))
        qid = q.get("question_id", i)
        evidence = (q.get("evidence") or "").strip() or None
        known = {"db_id", "question", "SQL", "query", "question_id", "evidence", "difficulty"}
        out.append(Question(id=str(qid), db_id=q["db_id"], question=q["question"], gold_sql=gold,
                            db_path=_db_file(root, q["db_id"]), hint=evidence, difficulty=q.get("difficulty"),
                            extra={k: v for k, v in q.items() if k not in known}))
    return out


def load_tables(path: Path) -> dict[str, TableSchema]:
    """``tables.json`` (Spider's schema file, also shipped by BIRD) by db_id."""
    path = Path(path)
    if path.is_dir():
        path = path / "tables.json"
    if not path.is_file():
        raise UserInputError(f"{path}: no such tables.json")
    out = {}
    for db in _read_json(path):
        tables = db.get("table_names_original") or db.get("table_names") or []
        cols = db.get("column_names_original") or db.get("column_names") or []
        types = db.get("column_types") or []
        columns = [(tables[t], c, types[i] if i < len(types) else "") for i, (t, c) in enumerate(cols) if t >= 0]

        def col(i: int) -> tuple[str, str]:
            t, c = cols[i]
            return tables[t], c

        pks = []
        for pk in db.get("primary_keys", []):
            for i in pk if isinstance(pk, list) else [pk]:
                pks.append(col(i))
        fks = [(*col(a), *col(b)) for a, b in db.get("foreign_keys", [])]
        out[db["db_id"]] = TableSchema(db["db_id"], list(tables), columns, pks, fks)
    return out


def read_predictions(path: Path, n: int | None = None) -> list[str]:
    """Predicted SQL, aligned with the questions: Spider's text format (one SQL per line,
    optionally followed by a tab and the db_id) or BIRD's JSON (``{"0": "SQL\\t----- bird -----\\tdb"}``)."""
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"{path}: no such predictions file")
    if path.suffix == ".json":
        data = _read_json(path)
        if isinstance(data, dict):
            if not all(k.isdecimal() for k in data):
                raise UserInputError(f"{path}: a BIRD predictions object is keyed by question index (\"0\", \"1\", …)")
            items = [data[k] for k in sorted(data, key=int)]
        elif isinstance(data, list):
            items = data
        else:
            raise UserInputError(f"{path}: expected a JSON object of predictions by question index, or a list")
        sqls = [str(s).split("\t----- bird -----\t")[0] for s in items]
    else:
        sqls = [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()]
    if n is not None and len(sqls) != n:
        raise UserInputError(f"{path}: {len(sqls)} predictions for {n} questions")
    return sqls


# ---------------------------------------------------------------------------------------
# PremiseSQL-style
# ---------------------------------------------------------------------------------------
@dataclass
class PremiseItem:
    id: str
    pair_id: str
    db: str
    question: str
    label: str  # "flawed" or "original"
    flaw: str | None  # E1.1 … E4.2 for flawed questions
    gold_sql: str | None = None  # for originals
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Schema elements the model is not shown (E3.2): "table" or "table.column".
    withhold: list[str] = field(default_factory=list)

    @property
    def flawed(self) -> bool:
        return self.label == "flawed"


def load_premise(path: Path) -> list[PremiseItem]:
    path = Path(path)
    out, ids = [], set()
    for n, row in enumerate(read_jsonl(path), 1):
        label = str(row.get("label", "")).lower()
        if label not in ("flawed", "original"):
            raise UserInputError(f"{path}: line {n}: label must be 'flawed' or 'original', got {row.get('label')!r}")
        for key in ("pair_id", "db", "question"):
            if not row.get(key):
                raise UserInputError(f"{path}: line {n}: {key} is missing")
        flaw = row.get("flaw") or row.get("flaw_code")
        if label == "flawed" and flaw not in FLAW_CODES:
            raise UserInputError(f"{path}: line {n}: a flawed question needs a flaw code ({', '.join(FLAW_CODES)}), "
                                 f"got {flaw!r}")
        withhold = row.get("withhold") or []
        if isinstance(withhold, str):
            withhold = [withhold]
        if not isinstance(withhold, list) or not all(isinstance(w, str) and w.strip() for w in withhold):
            raise UserInputError(f"{path}: line {n}: withhold must be a list of \"table\" or \"table.column\" names")
        withhold = [w.strip() for w in withhold]
        if withhold and label != "flawed":
            raise UserInputError(f"{path}: line {n}: only a flawed (E3.2) question withholds schema; its original "
                                 "must see the whole schema")
        if label == "flawed" and (flaw == "E3.2") != bool(withhold):
            # E3.2 is defined by what the supplied schema lacks (Table 1); without a withheld
            # element the question is asked against the full schema, which is E2.2's definition.
            raise UserInputError(
                f"{path}: line {n}: " + ("an E3.2 (Missing Schema Premise) question needs withhold: the table or "
                                         "table.column to remove from the schema the model sees; a question about "
                                         "an element absent from the full schema is E2.2"
                                         if flaw == "E3.2" else
                                         f"withhold is for E3.2 (Missing Schema Premise) questions, not {flaw}"))
        item_id = str(row.get("id") or f"{row['pair_id']}-{label}")
        if item_id in ids:
            raise UserInputError(f"{path}: line {n}: id {item_id!r} appears twice")
        ids.add(item_id)
        known = {"id", "pair_id", "db", "question", "label", "flaw", "flaw_code", "gold_sql", "note", "withhold"}
        out.append(PremiseItem(id=item_id, pair_id=str(row["pair_id"]), db=str(row["db"]), question=row["question"],
                               label=label, flaw=flaw if label == "flawed" else None,
                               gold_sql=row.get("gold_sql"), note=row.get("note"), withhold=withhold,
                               extra={k: v for k, v in row.items() if k not in known}))
    return out


# ---------------------------------------------------------------------------------------
# Choice request sets
# ---------------------------------------------------------------------------------------
@dataclass
class RequestSet:
    """One open calculation choice on one database: the open request fits both interpretations,
    each specific request exactly one, and each interpretation has its reference SQL."""

    id: str
    db: str
    open_request: str
    request_a: str
    request_b: str
    sql_a: str
    sql_b: str
    choice_type: str
    extra: dict[str, Any] = field(default_factory=dict)


_REQUEST_ALIASES = {
    "open_request": ("open_request", "open"),
    "request_a": ("request_a", "specific_a", "specific_request_a"),
    "request_b": ("request_b", "specific_b", "specific_request_b"),
    "sql_a": ("sql_a", "reference_sql_a", "gold_sql_a"),
    "sql_b": ("sql_b", "reference_sql_b", "gold_sql_b"),
    "choice_type": ("choice_type", "type", "choice"),
    "db": ("db", "database", "db_id"),
}


def load_request_sets(path: Path) -> list[RequestSet]:
    path = Path(path)
    return request_sets_from_rows(read_jsonl(path), str(path))


def request_sets_from_rows(rows: list[dict[str, Any]], source: str) -> list[RequestSet]:
    """The request sets of parsed JSONL rows; ``source`` names them in errors."""
    out, ids = [], set()
    for n, row in enumerate(rows, 1):
        values = {}
        for name, aliases in _REQUEST_ALIASES.items():
            value = next((row[a] for a in aliases if row.get(a)), None)
            if value is None:
                raise UserInputError(f"{source}: line {n}: {name} is missing (also read as {', '.join(aliases[1:])})")
            values[name] = str(value)
        set_id = str(row.get("id", f"set-{n}"))
        if set_id in ids:
            raise UserInputError(f"{source}: line {n}: id {set_id!r} appears twice")
        ids.add(set_id)
        used = {a for aliases in _REQUEST_ALIASES.values() for a in aliases} | {"id"}
        out.append(RequestSet(id=set_id, extra={k: v for k, v in row.items() if k not in used}, **values))
    return out

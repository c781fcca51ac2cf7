"""The value index: which columns hold a value the question names.

Built from the tables a query reads, their join neighbours and the tables the question names: the distinct values of every text column
of a base table (views are skipped)
with at most ``MAX_DISTINCT`` distinct values (by the profile), folded case- and
accent-insensitively (:func:`.words.fold`). A lookup matches a mention exactly, by its
singular words ('Sales Representatives' → 'Sales Representative'), by all its words inside a
value (a quoted mention of two words or more: “Sales Agents” ⊂ 'Sales Support Agent'), as a substring of values
(quoted strings only: “queso”), or fuzzily (rapidfuzz ratio ≥ 92, six characters or more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..db.base import Database
from ..db.profile import Profile, TableProfile, _is_numeric
from ..errors import VouchError
from .words import fold, singular

MAX_DISTINCT = 1000
MAX_TABLE_ROWS = 2_000_000  # larger tables give their profile's top values only
MAX_COLUMNS = 300
_DATE_LIKE = re.compile(r"^\d{4}-\d{2}(-\d{2})?")


def _singular_form(text: str) -> str:
    return " ".join(singular(w) for w in fold(text).split())


@dataclass(frozen=True)
class Match:
    table: str
    column: str
    value: str
    how: str  # exact, singular, words, substring, fuzzy


@dataclass
class ValueIndex:
    exact: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    singular: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)

    def add(self, table: str, column: str, value: str) -> None:
        self.exact.setdefault(fold(value), set()).add((table, column, value))
        self.singular.setdefault(_singular_form(value), set()).add((table, column, value))

    def lookup(self, text: str, *, quoted: bool = False) -> list[Match]:
        key = fold(text)
        if not key:
            return []
        hits = [Match(t, c, v, "exact") for t, c, v in self.exact.get(key, ())]
        if hits:
            return sorted(hits, key=lambda m: (m.table, m.column, m.value))
        skey = _singular_form(text)
        hits = [Match(t, c, v, "singular") for t, c, v in self.singular.get(skey, ())]
        if hits:
            return sorted(hits, key=lambda m: (m.table, m.column, m.value))
        words = set(skey.split())
        if quoted and len(words) >= 2:
            for value, refs in self.singular.items():
                if words <= set(value.split()):
                    hits.extend(Match(t, c, v, "words") for t, c, v in refs)
        if quoted and not hits and len(key) >= 3:
            pattern = re.compile(r"\b" + re.escape(key) + r"\b")
            for value, refs in self.exact.items():
                if pattern.search(value):
                    hits.extend(Match(t, c, v, "substring") for t, c, v in refs)
        if not hits and len(key) >= 6:
            from rapidfuzz import fuzz, process  # 25 ms at start: imported by the first fuzzy lookup

            best = process.extractOne(key, list(self.exact), scorer=fuzz.ratio, score_cutoff=92)
            if best is not None:
                hits.extend(Match(t, c, v, "fuzzy") for t, c, v in self.exact[best[0]])
        return sorted(set(hits), key=lambda m: (m.table, m.column, m.value))


def value_index(db: Database, profile: Profile, question: str | None = None) -> ValueIndex:
    """The index over the tables this profile measured (what the SQL reads and the tables
    one join away) and the tables the question names by their entity words. Never over
    whatever happens to be measured already: the same question and SQL get the same index
    whatever ran before. Each table's values are read once per connection (Profile.data_memo):
    a connection opened after a write sees it."""
    tables = {t.qualified.lower(): t for t in profile.measured_tables()}
    if question:
        from .shape import entity_tables

        for t in entity_tables(question, profile).values():
            tables.setdefault(t.qualified.lower(), t)
    index = ValueIndex()
    columns = 0
    for key in sorted(tables, key=lambda k: (tables[k].name.lower(), k)):
        table = profile.table(tables[key].qualified)
        if table is None or table.error or table.is_view:
            continue  # a view repeats its base tables' values, often joined into lists
        for col, values in profile.data_memo(("values", key), lambda: _table_values(db, table)):
            if columns >= MAX_COLUMNS:
                break
            columns += 1
            for v in values:
                index.add(table.qualified, col, v)  # as the profile keys it: schema.table outside the default
    return index


def _table_values(db: Database, table: TableProfile) -> list[tuple[str, list[str]]]:
    """The text values of each text column of ``table`` with at most MAX_DISTINCT of them."""
    out = []
    for col in table.columns:
        if _is_numeric(col.type) or not (0 < col.distinct_count <= MAX_DISTINCT):
            continue
        if isinstance(col.min, (int, float)) or (isinstance(col.min, str) and _DATE_LIKE.match(col.min)):
            continue
        values: list[Any] = []
        if table.row_count <= MAX_TABLE_ROWS:
            sql = (f"SELECT DISTINCT {db.quote(col.name)} FROM {db.table_sql(table.name, table.schema_name)} "
                   f"WHERE {db.quote(col.name)} IS NOT NULL LIMIT {MAX_DISTINCT + 1}")
            try:
                values = [r[0] for r in db.query(sql)]
            except VouchError:
                values = [v for v, _ in col.top_values]
        else:
            values = [v for v, _ in col.top_values]
        if len(values) > MAX_DISTINCT:
            continue
        out.append((col.name, [v for v in values if isinstance(v, str) and v.strip() and not _DATE_LIKE.match(v)]))
    return out

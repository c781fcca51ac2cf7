"""Schema retrieval for ``ask``: on a schema too large for the prompt, the tables relevant to
the question, within a token budget (issue 16, part 6).

A small schema goes into the prompts whole, exactly as before (:func:`schema_for_prompt`
returns ``schema_text`` of the whole profile when it fits ``schema_tokens``). A larger one is
narrowed in four steps:

1. **Routing rules first.** The recorded definitions' rules that apply to the question
   (``when``/``unless`` words) name tables: those matching a ``must_read`` glob come first,
   those matching a ``must_not_read`` glob are never shown. The ``definition_rule`` veto
   checks the same rules on the SQL, so showing the model a table a rule forbids would only
   invite a vetoed answer.
2. **BM25** over one document per table: the words of its name (``InvoiceLine`` → invoice,
   line; plurals folded to the singular of :func:`vouchsql.words.singular`), of its column
   names, of the engine's table and column comments, and of a few values sampled from its
   text columns (one bounded ``SELECT … LIMIT`` per table, cached on disk, never a profile).
   The query is the question, the evidence given with it, and the recorded meaning of each
   defined term the question uses (a verb's stem too: *rented* asks for ``rent*``).
   Scored by SQLite FTS5's ``bm25()``: it ships with the ``sqlite3`` module Vouch already
   uses (no new dependency), and one FTS5 table per field normalises each field's length on
   its own and weighs the fields apart (a table's forty columns do not dilute the match on
   its name; a sampled value counts less than a name), which rank-bm25 and bm25s (one bag of
   words per document) would need four indexes for as well. Where a Python's SQLite lacks
   FTS5, the same formula runs in Python (:class:`_PythonBM25`; a test keeps them equal).
3. **Groups of tables that join.** From each of the best-matching tables a group grows
   along the join graph (declared foreign keys and key names — ``AlbumId`` →
   ``Album.AlbumId``, ``customer_id`` → ``customers``, the profile's rules): the neighbour,
   or the bridge and the table behind it (``enrollments`` between ``students`` and
   ``courses``), that answers most of the query's words not yet answered, then the tables
   its members reference for their names (``Artist`` behind ``Album``). Groups come best
   first by the words they answer together, so the ``Customer`` that ``Invoice`` references
   outranks a ``customers`` table elsewhere in the warehouse that matches *customer* as well.
4. **The budget.** Tables are rendered in that order, each with its profile (measured on
   first use through ``profile.table(name)``, so only these tables are profiled), while they
   fit ``schema_tokens``; the names of the next ones fill what is left, and a last line says
   how many more the database holds and that naming one in the question brings it in.

Tokens are estimated, not counted by a model's tokenizer (Vouch talks to several vendors,
and none of their tokenizers is a dependency): one token per :data:`CHARS_PER_TOKEN`
characters, below the rule of thumb of four for English prose because names, numbers and
quotes split into shorter tokens; an estimate, so the budget is a bound on this count.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..answer import PromptSchema
from ..errors import VouchError
from ..words import singular, words_of
from . import data_text as data

if TYPE_CHECKING:
    from ..db.base import Database, TableInfo
    from ..db.profile import Profile
    from ..definitions import Definitions

CHARS_PER_TOKEN = 3
INDEX_FORMAT = 1
# Values sampled per table for the index: enough words to name what a table holds ('Rock',
# 'Brazil', 'Shipped'), few enough that one statement per table stays cheap on any engine.
VALUE_ROWS = 20
VALUE_COLUMNS = 12
VALUE_CHARS = 40
VALUE_WORDS = 80
VALUE_TIMEOUT = 2.0  # seconds for one table's sample; a slow one is left out, not waited for
# BM25 field weights (FTS5 multiplies a hit's term frequency by its column's weight).
FIELDS = ("name", "columns", "comments", "sampled")
# Names and columns alike: a question names a table's columns (freight, discount, quantity)
# as often as the table; a sampled value is weaker evidence. Chosen on the shipped cases of
# bench/schema_retrieval.py (see bench/README.md), like the other constants below.
WEIGHTS = (2.0, 2.0, 1.0, 0.5)
K1, B = 1.2, 0.75  # FTS5's own constants; the Python fallback uses the same
SEED_POOL = 20  # best-matching tables a group of joined tables grows from
GROUP_MAX = 4  # tables a group grows to by matching words (lookups come on top)
LOOKUPS = 2  # tables a group's members reference, added for their names
MIN_GAIN = 0.1  # of the seed's score: a smaller gain does not grow a group
HUB = 100  # a table joined by more is no bridge
STRONG = 200  # best-matching tables a group may take in
GROUPED = 60  # tables placed by groups; the rest by their plain score
NUMBER_WEIGHT = 1 / 3
STEM_WEIGHT = 0.5
MAX_SHOWN = 40  # tables rendered in full at most, whatever the budget: each is profiled
MAX_LISTED = 200  # names of further tables listed at most
MISFITS = 3  # profiled tables that did not fit, after which no more are tried

# English words that say how to ask, not what about. Words that may name data (name, date,
# total, number, count, first, last, top) are kept: BM25's IDF weighs those.
_STOP = frozenset("""
a about above across after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each either else ever every few
for from further get gets give given gives had has have having he her here hers him his how i if in into
is it its itself just let like list lists made make many me might more most much must my neither no nor
not now of off on once one only or other our ours out over own per please provide query
same shall she should show shows so some such than that the their theirs them then there these they this
those through to too under until up upon us very via was we were what whatever when where whether which
while who whom whose why will with within without would yes you your yours
""".split())


def estimate_tokens(text: str) -> int:
    """The token estimate every budget here uses: characters / CHARS_PER_TOKEN, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def terms(text: str, *, numbers: bool = True) -> list[str]:
    """The index's words of ``text``: identifiers split (camelCase, snake_case, spaces),
    lower case, each folded to its singular; one-letter words dropped, and pure numbers too
    unless ``numbers``."""
    return list(_terms(text or "", numbers))


@lru_cache(maxsize=65536)  # a 2,000-table catalogue repeats its column names many times
def _terms(text: str, numbers: bool) -> tuple[str, ...]:
    out = []
    for word in re.findall(r"[^\W_]+", words_of(text)):
        if len(word) < 2 or (not numbers and word.isdigit()):
            continue
        out.append(singular(word))
    return tuple(out)


def _glob(table: str, pattern: str) -> bool:
    return fnmatchcase(table.lower(), pattern.lower())


# -- the index ---------------------------------------------------------------------------------

@dataclass
class _Doc:
    key: str  # the table's qualified name, as the profile and the SQL name it
    fields: tuple[str, str, str, str]  # space-joined terms of FIELDS


class SchemaIndex:
    """Every table of one database as a BM25 document, with the join graph between them.
    Built from the catalogue (``db.schema()``) and a cached value sample; no profile."""

    def __init__(self, infos: "list[TableInfo]", values: dict[str, list[str]]) -> None:
        self.infos = {i.qualified: i for i in infos}
        self._lower = {k.lower(): k for k in self.infos}
        self.docs = [_document(info, values.get(info.qualified, [])) for info in infos]
        self.links, self.declared = _links(infos)
        self._fts = _fts_index(self.docs)
        self._python: _PythonBM25 | None = None if self._fts is not None else _PythonBM25(self.docs)
        self._lock = threading.Lock()  # one sqlite3 connection, asked from the server's threads

    @property
    def engine(self) -> str:
        return "fts5" if self._fts is not None else "python"

    def key(self, name: str) -> str | None:
        return self._lower.get(name.lower())

    def scores(self, words: Iterable[str]) -> dict[str, dict[str, float]]:
        """For each of ``words``, the tables it matches with Σ over the fields of weight ×
        BM25 (higher is better, > 0): one query per word and field, so a ranking can tell
        which word a table answers. A word ending in ``*`` matches every term it begins."""
        query = sorted({w for w in words if w.strip("*")})
        if not query:
            return {}
        if self._fts is None:
            return self._python.scores(query)
        out: dict[str, dict[str, float]] = {}
        with self._lock:
            for w in query:
                hits: dict[str, float] = {}
                for f, weight in zip(FIELDS, WEIGHTS):
                    for key, score in self._fts.execute(f"SELECT key, -bm25({f}) FROM {f} WHERE {f} MATCH ?",
                                                        (_fts_term(w),)):
                        hits[key] = hits.get(key, 0.0) + weight * score
                if hits:
                    out[w] = hits
        return out


def _fts_term(word: str) -> str:
    body = word.rstrip("*")
    return '"' + body.replace('"', '""') + '"' + ("*" if word.endswith("*") else "")


def _document(info: "TableInfo", values: list[str]) -> _Doc:
    name = terms(info.name)
    columns = [w for c in info.columns for w in terms(c.name)]
    comments = terms(info.comment or "", numbers=False) + [
        w for c in info.columns for w in terms(c.comment or "", numbers=False)]
    # Each sampled word once: twenty rows of 'Rock' say no more than one.
    sampled = list(dict.fromkeys(w for v in values for w in terms(v, numbers=False)))[:VALUE_WORDS]
    return _Doc(info.qualified, tuple(" ".join(ws) for ws in (name, columns, comments, sampled)))


def _fts_index(docs: list[_Doc]) -> sqlite3.Connection | None:
    """In-memory FTS5 tables, one per field, so that each field's length is normalised on its
    own (FTS5's bm25() divides by the whole row's length: one table per field makes a wide
    table's many columns not dilute the match on its name). None without FTS5."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        for f in FIELDS:
            # The terms are already split and folded: unicode61 only splits them at the spaces.
            conn.execute(f"CREATE VIRTUAL TABLE {f} USING fts5(key UNINDEXED, body, "
                         f"tokenize = 'unicode61 remove_diacritics 0', prefix = '3')")
    except sqlite3.OperationalError:
        conn.close()
        return None
    for i, f in enumerate(FIELDS):
        conn.executemany(f"INSERT INTO {f} VALUES (?, ?)", [(d.key, d.fields[i]) for d in docs if d.fields[i]])
    return conn


class _PythonBM25:
    """FTS5's bm25() in Python, per field as :func:`_fts_index` builds it (fts5_aux.c: term
    frequency, the field's length over its average, IDF log((N − n + 0.5)/(n + 0.5)) floored
    at 1e-6, N the documents with that field), for a Python whose SQLite lacks FTS5."""

    def __init__(self, docs: list[_Doc]) -> None:
        self.fields = []
        for i in range(len(FIELDS)):
            rows = [(d.key, d.fields[i].split()) for d in docs if d.fields[i]]
            avg = sum(len(w) for _, w in rows) / len(rows) if rows else 1.0
            self.fields.append((rows, avg))

    def scores(self, query: list[str]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for term in query:
            def matches(w: str) -> bool:
                return w.startswith(term[:-1]) if term.endswith("*") else w == term

            for (rows, avg), weight in zip(self.fields, WEIGHTS):
                n = len(rows)
                hit = sum(1 for _, words in rows if any(matches(w) for w in words))
                if not hit:
                    continue
                idf = max(math.log((n - hit + 0.5) / (hit + 0.5)), 0.0) or 1e-6
                for key, words in rows:
                    tf = sum(1 for w in words if matches(w))
                    if tf:
                        score = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(words) / avg))
                        out.setdefault(term, {})[key] = out.get(term, {}).get(key, 0.0) + weight * score
        return out


def _links(infos: "list[TableInfo]") -> tuple[dict[str, dict[str, str]], set[tuple[str, str]]]:
    """Table → {joined table: "ref" (this table's key points at it) or "back"}: declared
    foreign keys, a column named like another table's single-column primary key, and
    ``<x>_id``/``<x>Id`` → a table whose singular is x's (the profile's join candidates, kept
    here as a graph, both directions); and the (table, referenced table) pairs declared."""
    by_key = {i.qualified.lower(): i.qualified for i in infos}
    pk_owner: dict[str, list[str]] = {}
    by_singular: dict[str, list[str]] = {}
    for i in infos:
        if len(i.primary_key) == 1:
            pk_owner.setdefault(i.primary_key[0].lower(), []).append(i.qualified)
            by_singular.setdefault(singular(i.name), []).append(i.qualified)
    links: dict[str, dict[str, str]] = {i.qualified: {} for i in infos}
    declared: set[tuple[str, str]] = set()

    def add(a: str, b: str) -> None:
        if a != b:
            links[a][b] = "ref"
            links[b].setdefault(a, "back")

    for i in infos:
        for fk in i.foreign_keys:
            target = by_key.get(fk.ref_table.lower())
            if target is not None and target != i.qualified:
                add(i.qualified, target)
                declared.add((i.qualified, target))
        for c in i.columns:
            low = c.name.lower()
            if low == "id":
                continue
            for owner in pk_owner.get(low, []):
                add(i.qualified, owner)
            m = re.fullmatch(r"(.+?)_?id", low)
            if m:
                for owner in by_singular.get(singular(m.group(1)), []):
                    add(i.qualified, owner)
    return links, declared


# -- value sample, cached ------------------------------------------------------------------------

_TEXT_TYPE = re.compile(r"CHAR|TEXT|STRING|CLOB|ENUM|NAME", re.I)


def _sample_values(db: "Database", infos: "list[TableInfo]") -> dict[str, list[str]]:
    """A few distinct values of each table's text columns: one ``SELECT cols FROM t LIMIT n``
    per table (its first rows: cheap on every engine, unlike a random sample). Views are left
    out: their first rows may cost a whole computation."""
    out: dict[str, list[str]] = {}
    q = db.quote
    for info in infos:
        if info.is_view:
            continue
        cols = [c.name for c in info.columns if _TEXT_TYPE.search(c.type or "")
                or (not c.type and db.dialect == "sqlite")][:VALUE_COLUMNS]
        if not cols:
            continue
        table = f"{q(info.schema)}.{q(info.name)}" if info.schema else q(info.name)
        try:
            rows = db.query(f"SELECT {', '.join(map(q, cols))} FROM {table} LIMIT {VALUE_ROWS}",
                            timeout=VALUE_TIMEOUT, max_rows=VALUE_ROWS)
        except VouchError:
            continue  # unreadable or slow: the table is indexed by its names alone
        seen: list[str] = []
        for row in rows:
            for v in row:
                if isinstance(v, str) and v.strip():
                    v = " ".join(v.split())[:VALUE_CHARS]
                    if v not in seen:
                        seen.append(v)
        out[info.qualified] = seen
    return out


def _values_file(db: "Database") -> Path:
    key = f"{INDEX_FORMAT}|{db.identity()}|{VALUE_ROWS}|{VALUE_COLUMNS}|{VALUE_CHARS}"
    return db.config.cache_path / "retrieval" / (hashlib.sha256(key.encode("utf-8", "surrogatepass"))
                                                 .hexdigest()[:24] + ".json")


def _cached_values(db: "Database", infos: "list[TableInfo]") -> dict[str, list[str]]:
    path = _values_file(db)
    if not db.config.no_cache:
        try:
            got = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(got, dict):
                return got
        except (OSError, ValueError):
            pass  # absent or unreadable: sampled again below
    values = _sample_values(db, infos)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{id(values)}.tmp")
        tmp.write_text(json.dumps(values, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache folder costs a new sample next time, nothing more
    return values


_INDEXES: "weakref.WeakKeyDictionary[Database, tuple[str, SchemaIndex]]" = weakref.WeakKeyDictionary()


def schema_index(db: "Database") -> SchemaIndex:
    """The database's index, built once per opened database (and content identity)."""
    identity = db.identity()
    hit = _INDEXES.get(db)
    if hit is not None and hit[0] == identity:
        return hit[1]
    infos = db.schema()
    index = SchemaIndex(infos, _cached_values(db, infos))
    _INDEXES[db] = (identity, index)
    return index


# -- ranking -------------------------------------------------------------------------------------

@dataclass
class Ranking:
    """Tables in the order the prompt takes them, each with why; the tables rules forbid."""

    order: list[str]
    why: dict[str, str]
    dropped: list[str] = field(default_factory=list)


def question_terms(question: str, hint: str | None = None, definitions: "Definitions | None" = None) -> dict[str, float]:
    """The query, each word with its weight: the question's and the evidence's words (stop
    words out), and the words of each recorded definition whose term the question uses (its
    meaning names the tables). A word with a verb's ending also asks for every term its stem
    begins (``rented`` → ``rent*``: rental), at half weight. A number weighs a third: in a
    question it is mostly a value to filter on (2024, store 7), seldom a table's name."""
    text = " ".join(x for x in (question, hint) if x)
    words = _content_terms(text)
    if definitions is not None:
        asked = set(terms(text))
        for term, meaning in definitions.definitions.items():
            if set(terms(term)) and set(terms(term)) <= asked:
                words += _content_terms(meaning)
    out: dict[str, float] = {}
    for w in words:
        out[w] = max(out.get(w, 0.0), NUMBER_WEIGHT if w.isdigit() else 1.0)
        stem = _stem(w)
        if stem:
            out.setdefault(stem + "*", STEM_WEIGHT)
    return out


def _content_terms(text: str) -> list[str]:
    """:func:`terms` of ``text`` without its stop words, checked before the singular is taken
    (*does* is a stop word, its "singular" *doe* would not be)."""
    return [t for w in re.findall(r"[^\W_]+", words_of(text)) if w not in _STOP
            for t in terms(w) if t not in _STOP]


def _stem(word: str) -> str | None:
    """The stem of a word ending in -ed or -ing, its last consonant undoubled (``shipped`` →
    ``ship``), when at least three letters are left; else None."""
    m = re.fullmatch(r"([a-z]{3,}?)(?:ed|ing)", word)
    if not m:
        return None
    stem = m.group(1)
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
        stem = stem[:-1]
    return stem


@dataclass
class _Group:
    seed: str
    members: list[str]
    why: dict[str, str]
    score: float


def rank_tables(index: SchemaIndex, question: str, *, hint: str | None = None,
                definitions: "Definitions | None" = None) -> Ranking:
    """Every table, most relevant first, rules-forbidden tables left out:

    1. the tables the applying rules require;
    2. then groups of tables that join: from each of the SEED_POOL best-matching tables, a
       group grows along the join graph (:func:`_grow`), and the groups come best first by
       how well they answer the query's words together — each word counts once per group,
       by its best table. The tables one query reads join each other, so a question about
       invoices and customers ranks the ``Customer`` that ``Invoice`` references above a
       ``Customers`` table in another corner of the warehouse that matches *customer* as well;
    3. then every other table matching a word, by its score, and last the rest, the most
       joined first.
    """
    rules = definitions.rules_for(" ".join(x for x in (question, hint) if x)) if definitions else []
    keys = list(index.infos)
    dropped = {k for k in keys if any(_glob(k, p) for r in rules for p in r.must_not_read)}
    weights = question_terms(question, hint, definitions)
    gains: dict[str, dict[str, float]] = {}
    for w, hits in index.scores(weights).items():
        for k, score in hits.items():
            if k not in dropped:
                gains.setdefault(k, {})[w] = score * weights[w]
    plain = {k: sum(g.values()) for k, g in gains.items()}
    order: list[str] = []
    why: dict[str, str] = {}

    def put(key: str, reason: str) -> None:
        if key not in why and key not in dropped:
            order.append(key)
            why[key] = reason

    for r in rules:
        for p in r.must_read:
            for k in sorted((k for k in keys if _glob(k, p)), key=lambda k: (-plain.get(k, 0.0), k)):
                put(k, f"rule {r.name}")
    by_plain = sorted(plain, key=lambda k: (-plain[k], k))
    # Groups grow only by the STRONG best-matching tables: a word shared by hundreds of
    # tables matches them all, and the weakest of those never win a place anyway.
    strong = {k: gains[k] for k in by_plain[:STRONG]}
    groups = [_grow(index, seed, strong, dropped) for seed in by_plain[:SEED_POOL]]
    for g in sorted(groups, key=lambda g: (-g.score, len(g.members), g.seed)):
        if len(order) >= GROUPED:
            break
        for m in g.members:
            put(m, g.why[m])
    for k in by_plain:
        put(k, "matched")
    for k in sorted(keys, key=lambda k: (-len(index.links[k]), k)):
        put(k, "unmatched")
    return Ranking(order=order, why=why, dropped=sorted(dropped))


def _grow(index: SchemaIndex, seed: str, gains: dict[str, dict[str, float]], dropped: set[str]) -> _Group:
    """The tables a query from ``seed`` would likely read: repeatedly the neighbour (or the
    neighbour of a neighbour, with the table between: a bridge) that most raises the group's
    score — Σ over the query's words of the best score of a member for it — per table added,
    while that gain is at least MIN_GAIN of the seed's own score and the group has fewer than
    GROUP_MAX tables; then the tables the members reference by a declared foreign key (a
    lookup such as ``Artist`` behind ``Album``: what a query joins to show a name), at most
    LOOKUPS of them. A table joined by more than HUB tables is no bridge: that is a key name
    hundreds of staging tables share, not a path between two tables."""
    links = index.links
    members = [seed]
    why = {seed: "matched"}
    best = dict(gains.get(seed, {}))
    floor = MIN_GAIN * sum(best.values())

    def delta(tables: list[str]) -> float:
        total = 0.0
        for w in {w for t in tables for w in gains.get(t, {})}:
            top = max(gains.get(t, {}).get(w, 0.0) for t in tables)
            if top > best.get(w, 0.0):
                total += top - best.get(w, 0.0)
        return total

    while len(members) < GROUP_MAX:
        inside = set(members)
        options: list[tuple[float, list[str], str]] = []
        frontier = {n: m for m in members for n in links[m] if n not in inside and n not in dropped}
        for n, via in frontier.items():
            if n in gains:
                options.append((delta([n]), [n], via))
        if len(members) < GROUP_MAX - 1:
            for b, via in frontier.items():
                if len(links[b]) > HUB:
                    continue
                for t in links[b]:
                    if t in gains and t not in inside and t not in frontier and t not in dropped:
                        options.append((delta([b, t]) / 2, [b, t], via))
        if not options:
            break
        gain, add, via = max(options, key=lambda o: (o[0], [-len(links[t]) for t in o[1]], o[1]))
        if gain <= 0 or gain < floor:
            break
        for t in add:
            members.append(t)
            why[t] = (f"joins {via}" if len(add) == 1 else f"joins {via} through {add[0]}" if t == add[-1]
                      else f"joins {add[-1]} to {via}")
            for w, g in gains.get(t, {}).items():
                best[w] = max(best.get(w, 0.0), g)
    lookups = 0
    for m in list(members):
        for n, kind in links[m].items():
            if lookups < LOOKUPS and kind == "ref" and (m, n) in index.declared and n not in why and n not in dropped:
                members.append(n)
                why[n] = f"referenced by {m}"
                lookups += 1
    return _Group(seed=seed, members=members, why=why, score=sum(best.values()))


# -- the prompt's schema text --------------------------------------------------------------------

@dataclass
class SchemaContext:
    """The schema text the prompts get, and what it holds (recorded on the Answer)."""

    text: str
    full: bool  # the whole schema, as before retrieval existed
    tables: list[str]  # rendered with their profile, in prompt order
    listed: list[str] = field(default_factory=list)  # named only
    omitted: int = 0  # neither rendered nor named
    dropped: list[str] = field(default_factory=list)  # left out by a rule's must_not_read
    total: int = 0
    tokens: int = 0
    budget: int = 0
    why: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def record(self) -> PromptSchema:
        return PromptSchema(full=self.full, tables=self.tables, listed=self.listed, omitted=self.omitted,
                            dropped=self.dropped, total_tables=self.total, tokens=self.tokens, budget=self.budget,
                            why={t: self.why[t] for t in self.tables if t in self.why})


def _skeleton_tokens(infos: "list[TableInfo]") -> int:
    """A lower bound of the whole schema text's tokens from the catalogue alone (each table's
    head and each column's name and type, which the profiled text always holds), so a large
    schema is known to be over budget without profiling it."""
    chars = 0
    for i in infos:
        chars += len(f"TABLE {i.name}: 0 rows\n")
        chars += sum(len(f"  - {c.name}: {c.type}\n") for c in i.columns)
    return chars // CHARS_PER_TOKEN


def _trailer(total: int, shown: int, listed: list[str], dialect: str) -> str:
    rest = total - shown
    if rest <= 0:
        return ""
    text = (f"NOT SHOWN: {rest:,} more of the database's {total:,} tables (this schema is partial: the tables "
            f"above are those the question's words, the recorded definitions and their join keys point to; "
            f"a question that names another table by name gets it shown)")
    if listed:
        more = rest - len(listed)
        text += "; among them: " + ", ".join(data.identifier(n, dialect) for n in listed)
        text += f", and {more:,} more" if more else ""
    return text + "."


def _lazy_profile(db: "Database") -> "Profile":
    """A profile that measures a table on first ``table(name)``: the catalogue of the lazy,
    per-table profile (issue 16, part 1) where the profile module has it, so only the shown
    tables are profiled; else the whole profile, as before."""
    from ..db import profile as profile_module

    catalogue = getattr(profile_module, "catalogue", None)
    return catalogue(db) if catalogue is not None else db.profile()


def schema_for_prompt(db: "Database", question: str, *, budget: int, hint: str | None = None,
                      definitions: "Definitions | None" = None, profile: "Profile | None" = None) -> SchemaContext:
    """The schema text for ``question``'s prompts within ``budget`` estimated tokens: the whole
    schema where it fits (or ``budget`` is 0), else the retrieved tables (see the module)."""
    from .context import schema_text, table_text

    start = time.perf_counter()
    infos = db.schema()
    total = len(infos)
    if budget <= 0 or _skeleton_tokens(infos) <= budget:
        text = schema_text(profile if profile is not None else db.profile(), db.dialect)
        tokens = estimate_tokens(text)
        if budget <= 0 or tokens <= budget:
            return SchemaContext(text=text, full=True, tables=[i.qualified for i in infos], total=total,
                                tokens=tokens, budget=budget, seconds=time.perf_counter() - start)
    index = schema_index(db)
    ranking = rank_tables(index, question, hint=hint, definitions=definitions)
    prof = profile if profile is not None else _lazy_profile(db)
    blocks: list[str] = []
    shown: list[str] = []
    misfits = 0
    # The last line's own cost is reserved first, at its longest: every count at its widest,
    # with the words around a list of names (each name is counted as it is added).
    used = estimate_tokens(_trailer(total, 0, ["x"], db.dialect)) + 1
    for key in ranking.order[:MAX_SHOWN * 2]:
        if len(shown) >= MAX_SHOWN:
            break
        if used + _skeleton_tokens([index.infos[key]]) + 1 > budget:
            continue  # cannot fit even without its figures: not worth profiling
        tp = prof.table(key)
        if tp is None:
            continue
        block = table_text(tp, db.dialect)
        cost = estimate_tokens(block) + 1  # and its line break
        if used + cost > budget:
            misfits += 1
            if misfits >= MISFITS:
                break  # the budget is spent: profiling more tables to reject them costs time
            continue  # a wide table that does not fit; a narrower one after it may
        blocks.append(block)
        shown.append(key)
        used += cost
    listed: list[str] = []
    for key in ranking.order:
        if len(listed) >= MAX_LISTED:
            break
        if key in shown:
            continue
        cost = estimate_tokens(", " + data.identifier(key, db.dialect))
        if used + cost > budget:
            break
        listed.append(key)
        used += cost
    text = "\n".join([*blocks, _trailer(total, len(shown), listed, db.dialect)])
    return SchemaContext(text=text, full=False, tables=shown, listed=listed,
                        omitted=total - len(shown) - len(listed), dropped=ranking.dropped, total=total,
                        tokens=estimate_tokens(text), budget=budget, why=ranking.why,
                        seconds=time.perf_counter() - start)


__all__ = ["SchemaContext", "Ranking", "SchemaIndex", "estimate_tokens", "question_terms", "rank_tables",
           "schema_for_prompt", "schema_index", "terms"]

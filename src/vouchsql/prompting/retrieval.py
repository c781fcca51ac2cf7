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
2. **How each table answers each word** (:func:`_match`). Every table is a document of
   four fields: the words of its name (``InvoiceLine`` → invoice, line; plurals folded to the
   singular of :func:`vouchsql.words.singular`), of its column names, of the engine's table
   and column comments, and of a few values sampled from its text columns (one bounded
   ``SELECT … LIMIT`` per table, cached on disk, never a profile). The query is the question,
   the evidence given with it, and the recorded meaning of each defined term the question
   uses, without the words that only say how to ask; a verb's stem is the same word
   (*rented* is answered by ``rental``, *paid* by ``payment``). SQLite FTS5 finds, per word
   and field, the tables holding it (it ships with the ``sqlite3`` module Vouch already uses:
   no new dependency; one FTS5 table per field scores each field's length on its own, which
   rank-bm25 and bm25s, one bag of words per document, would need four indexes for as well;
   where a Python's SQLite lacks FTS5, the same BM25 runs in Python, :class:`_PythonBM25`, a
   test keeps them equal). A table answers a word by its best field, with a trust per field
   (a name over a column over a comment over a word inside a sampled value) times how much of
   that name the question covers; a whole sampled value the question names ('Rock') and a
   table the question names outright are channels of their own. A word weighs its IDF.
3. **Groups of tables that join** (:func:`_grow`). From each of the best-matching tables a
   group grows along the join graph (declared foreign keys and key names — ``AlbumId`` →
   ``Album.AlbumId``, ``customer_id`` → ``customers``, the profile's rules; a column with a
   declared key joins only where declared): the table, with the tables on the join path to
   it (up to HOPS joins: ``enrollments`` between ``students`` and ``courses``), that answers
   most of the query's words not yet answered, less the joins' cost (a declared key costs
   less than a guess from names); then the tables its members reference for their names
   (``Artist`` behind ``Album``). Groups come best first by the words they answer together,
   so the ``Customer`` that ``Invoice`` references outranks a ``customers`` table elsewhere
   in the warehouse that matches *customer* as well.
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
import heapq
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
from typing import TYPE_CHECKING, Iterable, cast

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
FIELDS = ("name", "columns", "comments", "sampled")
# BM25 weights of the fields in :meth:`SchemaIndex.scores` (FTS5 multiplies a hit's term
# frequency by its column's weight); the ranking itself reads the fields apart (below).
WEIGHTS = (2.0, 2.0, 1.0, 0.5)
K1, B = 1.2, 0.75  # FTS5's own constants; the Python fallback uses the same
# How surely a word found in a field names what the question asks about, at best: a table's
# name, a column's name, a comment, a word inside a sampled value, a whole sampled value.
Q_NAME, Q_COLUMN, Q_COMMENT, Q_VALUE, Q_CELL = 1.0, 0.8, 0.6, 0.5, 0.9
# A name (of a table or of the best column) counts in proportion to how much of it the
# question covers: half at least, all of it when every word of the name is asked for
# (``rental`` over ``rental_tax`` for "rented"; ``discount_code`` for "each discount code").
COVERED = 0.5
# A module's prefix (:func:`_without_prefixes`) counts as a quarter of a name word: ``wp_posts``
# answers "posts" nearly as fully as a ``posts`` table would, and ranks just below it.
PREFIX_WEIGHT = 0.25
VALUE_SCHEMA = 0.3  # a value word that also names tables or columns elsewhere ('Order Administrator')
VALUE_LOWER = 0.5  # a value word the question neither capitalises nor quotes ('rock' vs 'Rock')
CELL_TABLES = 50  # a whole value sampled in more tables than this names none of them
IDF_CAP = 5.0  # a word's weight: min(IDF_CAP, ln(1 + tables / tables matching it))
CANDIDATES = 30  # best tables per word that a group may reach for
SEEDS = 25  # best-matching tables a group of joined tables grows from
GROUP_MAX = 8  # tables a group grows to by matching words (lookups come on top)
HOPS = 3  # joins from a group to a table it takes in (at most HOPS − 1 tables between)
EDGE_DECLARED, EDGE_INFERRED = 0.5, 0.8  # a join's cost against the words it answers
LOOKUPS = 2  # tables a group's members reference by a declared key, added for their names
# A table joined by name to more tables than this is no bridge: that is a key name hundreds of
# staging tables share, not a path between two tables (and following it costs the time).
HUB = 100
NUMBER_WEIGHT = 1 / 3
STEM_WEIGHT = 0.5
STEM_MATCH = 0.8  # how surely a name beginning with a word's stem answers the word
MAX_SHOWN = 40  # tables rendered in full at most, whatever the budget: each is profiled
MAX_LISTED = 200  # names of further tables listed at most
MISFITS = 3  # profiled tables that did not fit, after which no more are tried

# English words that say how to ask, not what about: the question's own verbs and the words
# for a query's parts and its aggregates (show, provide, column, sorted, count, average,
# highest). Words that may name data
# (name, date, total, number, first, last, top) are kept: the IDF weighs those.
_STOP = frozenset("""
a about above across after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each either else ever every few
for from further get gets give given gives had has have having he her here hers him his how i if in into
is it its itself just let like list lists made make many me might more most much must my neither no nor
not now of off on once one only or other our ours out over own per please provide query
same shall she should show shows so some such than that the their theirs them then there these they this
those through to too under until up upon us very via was we were what whatever when where whether which
while who whom whose why will with within without would yes you your yours
showing shown display displaying displayed provided providing find finding tell want wants wanted need
needs see write writing use using called named table tables column columns field fields row rows record
records result results resultant resulting include includes including included sort sorted sorting
listed listing count counts counting average averages avg mean sum sums maximum minimum highest lowest
largest smallest biggest greatest fewest
""".split())
# Past forms no -ed rule reaches, and the noun of a verb where a schema names the noun (sold:
# sales), for the query's stems: plain English, no schema's words.
_IRREGULAR = {"paid": "pay", "sold": "sale", "sell": "sale", "sells": "sale", "selling": "sale",
              "bought": "buy", "spent": "spend", "won": "win", "lost": "lose", "sent": "send", "held": "hold",
              "took": "take", "taken": "take", "wrote": "write", "written": "write", "ran": "run", "grew": "grow",
              "grown": "grow", "left": "leave", "met": "meet", "led": "lead", "built": "build", "brought": "bring",
              "chose": "choose", "chosen": "choose", "flew": "fly", "flown": "fly", "drove": "drive",
              "driven": "drive", "ate": "eat", "eaten": "eat"}


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
        # Each sampled value's words, once: for the BM25 field and for the whole values.
        value_terms = {i.qualified: [_terms(v, True) for v in values.get(i.qualified, [])] for i in infos}
        self.docs = [_document(info, value_terms[info.qualified]) for info in infos]
        self.links, self.declared = _links(infos)
        # The words of each table's name and of each of its column names, for how much of a
        # name a question covers; the tables by their name's words, for a table the question
        # names outright; the tables by each whole sampled value ('Iron Maiden', 'Rock').
        self.name_terms = {i.qualified: _terms(i.name, True) for i in infos}
        self.column_terms = {i.qualified: tuple(dict.fromkeys(_terms(c.name, True) for c in i.columns)) for i in infos}
        self.cover_terms = _without_prefixes(self.name_terms, self.declared)
        self.by_name: dict[tuple[str, ...], list[str]] = {}
        for key, name in self.name_terms.items():
            if name:
                self.by_name.setdefault(name, []).append(key)
        self.cells: dict[tuple[str, ...], list[str]] = {}
        for key, cells in value_terms.items():
            for cell in cells:
                if 0 < len(cell) <= 4 and not all(w.isdigit() for w in cell):
                    owners = self.cells.setdefault(cell, [])
                    if not owners or owners[-1] != key:
                        owners.append(key)
        # Each table's joins with their cost (EDGE_DECLARED, EDGE_INFERRED), for the paths;
        # and how many it has by name only: a key name hundreds of tables share makes no bridge.
        declared = self.declared
        self.edges = {k: tuple((n, EDGE_DECLARED if (k, n) in declared or (n, k) in declared else EDGE_INFERRED)
                               for n in links) for k, links in self.links.items()}
        self.inferred = {k: sum(1 for _, cost in edges if cost != EDGE_DECLARED) for k, edges in self.edges.items()}
        self.by_degree = sorted(self.infos, key=lambda k: (-len(self.links[k]), k))
        self._fts = _fts_index(self.docs)
        self._python: _PythonBM25 | None = None if self._fts is not None else _PythonBM25(self.docs)
        self._lock = threading.Lock()  # one sqlite3 connection, asked from the server's threads

    @property
    def engine(self) -> str:
        return "fts5" if self._fts is not None else "python"

    def key(self, name: str) -> str | None:
        return self._lower.get(name.lower())

    def joined(self, a: str, b: str) -> bool:
        """Whether a declared foreign key joins ``a`` and ``b`` (either way)."""
        return (a, b) in self.declared or (b, a) in self.declared

    def field_scores(self, words: Iterable[str]) -> dict[str, dict[str, list[float]]]:
        """For each of ``words``, the tables it matches with their BM25 score in each of
        FIELDS (0.0 where it does not occur; higher is better): one FTS5 query per word and
        field. A word ending in ``*`` matches every term it begins."""
        query = sorted({w for w in words if w.strip("*")})
        if not query:
            return {}
        if self._fts is None:
            assert self._python is not None  # built exactly when there is no FTS5
            return self._python.field_scores(query)
        out: dict[str, dict[str, list[float]]] = {}
        with self._lock:
            for w in query:
                hits: dict[str, list[float]] = {}
                for i, f in enumerate(FIELDS):
                    for key, score in self._fts.execute(f"SELECT key, -bm25({f}) FROM {f} WHERE {f} MATCH ?",
                                                        (_fts_term(w),)):
                        hits.setdefault(key, [0.0] * len(FIELDS))[i] = score
                if hits:
                    out[w] = hits
        return out

    def scores(self, words: Iterable[str]) -> dict[str, dict[str, float]]:
        """For each of ``words``, the tables it matches with Σ over the fields of weight ×
        BM25 (higher is better, > 0)."""
        return {w: {k: sum(x * y for x, y in zip(per, WEIGHTS)) for k, per in hits.items()}
                for w, hits in self.field_scores(words).items()}


UNITS = frozenset("""kg kgs g gram grams lb lbs oz km m cm mm mi ms sec secs second seconds min mins minute minutes
hr hrs hour hours day days usd eur gbp jpy cad pct percent mb gb kb""".split())


def _for_cover(column: tuple[str, ...]) -> tuple[str, ...]:
    """A column name's words that a question must cover: a trailing unit left out
    (``weight_kg`` answers "weight" in full, ``price_usd`` "price")."""
    return column[:-1] if len(column) > 1 and column[-1] in UNITS else column


def _without_prefixes(names: dict[str, tuple[str, ...]], declared: set[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Each table's name words for coverage, a module's prefix left out: the first word of a
    name that other tables' names begin with too, where declared foreign keys join them
    (``wp_posts`` and ``wp_users``, ``auth_user`` and ``auth_group``): a question about posts
    never says *wp* (it still counts PREFIX_WEIGHT). A first word many unjoined tables share
    (``stg_``, ``raw_``) stays."""
    out = dict(names)
    for a, b in declared:
        na, nb = names[a], names[b]
        if len(na) >= 2 and len(nb) >= 2 and na[0] == nb[0]:
            out[a], out[b] = na[1:], nb[1:]
    return out


def _fts_term(word: str) -> str:
    body = word.rstrip("*")
    return '"' + body.replace('"', '""') + '"' + ("*" if word.endswith("*") else "")


def _document(info: "TableInfo", values: list[tuple[str, ...]]) -> _Doc:
    """The table's four fields; ``values``: the :func:`terms` of each sampled value."""
    name = terms(info.name)
    columns = [w for c in info.columns for w in terms(c.name)]
    comments = terms(info.comment or "", numbers=False) + [
        w for c in info.columns for w in terms(c.comment or "", numbers=False)]
    # Each sampled word once: twenty rows of 'Rock' say no more than one.
    sampled = list(dict.fromkeys(w for v in values for w in v if not w.isdigit()))[:VALUE_WORDS]
    return _Doc(info.qualified, (" ".join(name), " ".join(columns), " ".join(comments), " ".join(sampled)))


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

    def field_scores(self, query: list[str]) -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {}
        for term in query:
            def matches(w: str) -> bool:
                return w.startswith(term[:-1]) if term.endswith("*") else w == term

            for i, (rows, avg) in enumerate(self.fields):
                n = len(rows)
                hit = sum(1 for _, words in rows if any(matches(w) for w in words))
                if not hit:
                    continue
                idf = max(math.log((n - hit + 0.5) / (hit + 0.5)), 0.0) or 1e-6
                for key, words in rows:
                    tf = sum(1 for w in words if matches(w))
                    if tf:
                        score = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(words) / avg))
                        out.setdefault(term, {}).setdefault(key, [0.0] * len(FIELDS))[i] = score
        return out

    def scores(self, query: list[str]) -> dict[str, dict[str, float]]:
        return {w: {k: sum(x * y for x, y in zip(per, WEIGHTS)) for k, per in hits.items()}
                for w, hits in self.field_scores(query).items()}


def _links(infos: "list[TableInfo]") -> tuple[dict[str, dict[str, str]], set[tuple[str, str]]]:
    """Table → {joined table: "ref" (this table's key points at it) or "back"}: declared
    foreign keys, a column named like another table's single-column primary key, and
    ``<x>_id``/``<x>Id`` → a table whose singular is x's (the profile's join candidates, kept
    here as a graph, both directions); and the (table, referenced table) pairs declared. A
    column that a declared foreign key holds joins only where it is declared: the database
    said where ``customer_id`` points, so the names of other tables do not guess again."""
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
        held: set[str] = set()
        for fk in i.foreign_keys:
            held.update(c.lower() for c in fk.columns)
            target = by_key.get(fk.ref_table.lower())
            if target is not None and target != i.qualified:
                add(i.qualified, target)
                declared.add((i.qualified, target))
        for c in i.columns:
            low = c.name.lower()
            if low == "id" or low in held:
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
        for term, meaning in definitions.meanings():
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
    ``ship``), when at least three letters are left; of an irregular past form, its verb
    (``paid`` → ``pay``: payment); else None."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    m = re.fullmatch(r"([a-z]{3,}?)(?:ed|ing)", word)
    if not m:
        return None
    stem = m.group(1)
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
        stem = stem[:-1]
    return stem


# A word the question capitalises inside a sentence or quotes: a value it names ('Rock',
# "gift-idea", Iron Maiden), read from the question as written.
_NAMED = re.compile(r"'([^']+)'|\"([^\"]+)\"|(?<![.?!:]\s)(?<!^)\b([A-Z][\w-]*)")
# A table the question names as one: an identifier written as such (InvoiceLine, order_items),
# or a word beside "table" (the Employees table, a table called Shippers).
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[a-z0-9][A-Z]|_)[A-Za-z0-9_]*\b")
_BESIDE_TABLE = re.compile(r"\b(\w+)\s+tables?\b|\btables?\s+(?:called|named)\s+(\w+)", re.I)
NAMED_TABLE = "@table"  # the query's pseudo-word that a table named outright answers


@dataclass
class _Query:
    """What a question asks of the index: each word's weight (IDF) and, per table, how well
    the table answers each word (0 to 1, :func:`_match`)."""

    weight: dict[str, float]
    match: dict[str, dict[str, float]]

    def single(self, table: str) -> float:
        return sum(self.weight[w] * q for w, q in self.match.get(table, {}).items())


def _match(index: SchemaIndex, question: str, hint: str | None, definitions: "Definitions | None") -> _Query:
    """How well each table answers each word of the query, best of its fields:

    * its **name** (FTS5 finds it): Q_NAME × how much of the name the question covers — all of
      ``Genre`` for "each genre", half of ``rental_tax`` for "rented", half of
      ``product_2022`` for "each product" (a yearly copy fits a question without the year less);
      a module's prefix (:func:`_without_prefixes`) counts PREFIX_WEIGHT of a word;
    * its best **column name** holding the word, the same way (Q_COLUMN: ``discount_code`` for
      "each discount code" beats a ``discount`` table for both words), a trailing unit
      (UNITS) needing no cover (``weight_kg`` answers "weight" in full);
    * a **comment**: Q_COMMENT × its BM25 score over the best comment's for the word;
    * a word inside a **sampled value**: Q_VALUE, less for a word that also names tables or
      columns elsewhere (VALUE_SCHEMA: the 'order' in 'Order Administrator') and for one the
      question neither capitalises nor quotes (VALUE_LOWER); a stem never matches a value;
    * a **whole sampled value** the question names word for word ('Iron Maiden', 'Rock',
      'West'): Q_CELL, unless CELL_TABLES or more tables hold it;
    * a table the question **names outright** (the InvoiceLine table, ``order_items``):
      answers the pseudo-word NAMED_TABLE, weighted IDF_CAP.

    A word is also answered, STEM_MATCH surely, by a name beginning with its stem ('rented':
    ``rental``). There is no lexicon of what schemas call things: the words for a database's
    tables come from the database (names, columns, comments, sampled values) and from its
    definitions file, whose meaning of a term the question uses is searched for as the
    question's own words ("song: a track" makes 'songs' find ``Track``).

    A word's weight is min(IDF_CAP, ln(1 + N / n)), n the tables whose name, columns or
    comments match it (or, for a value only, those whose sample does), times the query's own
    weight for it (:func:`question_terms`)."""
    text = " ".join(x for x in (question, hint) if x)
    wanted = question_terms(question, hint, definitions)
    plain = {w for w in wanted if not w.endswith("*")}
    stems = tuple(w[:-1] for w in wanted if w.endswith("*"))
    named: set[str] = set()
    for m in _NAMED.finditer(text):
        named.update(terms(next(g for g in m.groups() if g)))

    def asked(t: str) -> bool:
        return t in plain or (t.startswith(stems) if stems else False)

    def covered(name: tuple[str, ...]) -> float:
        return sum(1 for t in name if asked(t)) / len(name) if name else 0.0

    n = len(index.infos)
    cover_of: dict[tuple[str, ...], float] = {}  # names repeat: customer_id in a thousand tables
    column_cover: dict[tuple[str, ...], float] = {}
    weight: dict[str, float] = {}
    match: dict[str, dict[str, float]] = {}

    def put(table: str, word: str, q: float) -> None:
        got = match.setdefault(table, {})
        if q > got.get(word, 0.0):
            got[word] = q

    # A word and its stem are one word of the question: 'rented' answered by a name holding
    # the word or, STEM_MATCH surely, by one beginning with its stem ('rental').
    slots: dict[str, list[str]] = {}
    for w in wanted:
        stem = None if w.endswith("*") else _stem(w)
        if stem and stem + "*" in wanted:
            slots.setdefault(w, []).append(stem + "*")
        elif not w.endswith("*") or not any(_stem(x) == w[:-1] for x in plain):
            slots.setdefault(w, [])
    scored = index.field_scores(list(wanted))
    for slot, extra in slots.items():
        seen: dict[str, bool] = {}  # the tables whose name, columns or comments match
        found = False
        for w in [slot, *extra]:
            hits = scored.get(w)
            if not hits:
                continue
            found = True
            sure = 1.0 if w == slot else STEM_MATCH
            prefix = w.endswith("*")
            body = w.rstrip("*")
            schema_word = any(per[0] or per[1] for per in hits.values())
            best_comment = max(per[2] for per in hits.values())
            for key, per in hits.items():
                if per[0] or per[1] or per[2]:
                    seen[key] = True
                else:
                    seen.setdefault(key, False)
                if per[0]:
                    name = index.cover_terms[key]
                    got = cover_of.get(name)
                    if got is None:
                        got = cover_of[name] = covered(name)
                    if len(name) < len(index.name_terms[key]):
                        got = got * len(name) / (len(name) + PREFIX_WEIGHT)
                    put(key, slot, sure * Q_NAME * (COVERED + (1 - COVERED) * got))
                if per[1]:
                    cover = 0.0
                    for c in index.column_terms[key]:
                        if (any(t.startswith(body) for t in c) if prefix else w in c):
                            got = column_cover.get(c)
                            if got is None:
                                got = column_cover[c] = covered(_for_cover(c))
                            cover = max(cover, got)
                    put(key, slot, sure * Q_COLUMN * (COVERED + (1 - COVERED) * cover))
                if per[2]:
                    put(key, slot, sure * Q_COMMENT * per[2] / best_comment)
                if per[3] and not prefix:
                    put(key, slot, Q_VALUE * (VALUE_SCHEMA if schema_word else 1.0)
                        * (1.0 if w in named else VALUE_LOWER))
        if found:
            df = sum(seen.values()) or len(seen)
            weight[slot] = min(IDF_CAP, wanted[slot] * math.log(1 + n / df))
    # Whole values and named tables, by the question's runs of words (stop words out).
    run = _content_terms(text)
    for size in range(1, 5):
        for i in range(len(run) - size + 1):
            cell = tuple(run[i:i + size])
            owners = index.cells.get(cell)
            if owners and len(owners) <= CELL_TABLES:
                for w in cell:
                    if w not in weight:
                        weight[w] = min(IDF_CAP, math.log(1 + n / len(owners)))
                    for key in owners:
                        put(key, w, Q_CELL)
    mentions = _IDENTIFIER.findall(text) + [a or b for a, b in _BESIDE_TABLE.findall(text)]
    for mention in mentions:
        for key in index.by_name.get(tuple(terms(mention)), []):
            weight[NAMED_TABLE] = IDF_CAP
            put(key, NAMED_TABLE, 1.0)
    return _Query(weight=weight, match=match)


@dataclass
class _Group:
    seed: str
    members: list[str]  # the tables that answer words, with the tables between them
    why: dict[str, str]
    score: float
    lookups: list[str] = field(default_factory=list)


def rank_tables(index: SchemaIndex, question: str, *, hint: str | None = None,
                definitions: "Definitions | None" = None) -> Ranking:
    """Every table, most relevant first, rules-forbidden tables left out:

    1. the tables the applying rules require;
    2. then groups of tables that join: from each of the SEEDS best-matching tables
       (:func:`_match`), a group grows along the join graph (:func:`_grow`), and the groups
       come best first by how well they answer the query's words together — each word counts
       once per group, by its best table, less the cost of the joins taken. The tables one
       query reads join each other, so a question about invoices and customers ranks the
       ``Customer`` that ``Invoice`` references above a ``Customers`` table in another corner
       of the warehouse that matches *customer* as well. Each group's lookups (the tables its
       members reference for their names) follow the next group's tables;
    3. then every other table matching a word, by its own score, and last the rest, the most
       joined first.
    """
    rules = definitions.rules_for(" ".join(x for x in (question, hint) if x)) if definitions else []
    keys = list(index.infos)
    forbidden = [p for r in rules for p in r.must_not_read]
    dropped = {k for k in keys if any(_glob(k, p) for p in forbidden)} if forbidden else set()
    query = _match(index, question, hint, definitions)
    for k in dropped:
        query.match.pop(k, None)
    single = {k: query.single(k) for k in query.match}
    order: list[str] = []
    why: dict[str, str] = {}

    def put(key: str, reason: str) -> None:
        if key not in why and key not in dropped:
            order.append(key)
            why[key] = reason

    for r in rules:
        for p in r.must_read:
            for k in sorted((k for k in keys if _glob(k, p)), key=lambda k: (-single.get(k, 0.0), k)):
                put(k, f"rule {r.name}")
    by_single = sorted(single, key=lambda k: (-single[k], k))
    # The tables a group may reach for: the CANDIDATES best for each word.
    per_word: dict[str, list[tuple[float, str]]] = {}
    for k, matched in query.match.items():
        for w, q in matched.items():
            per_word.setdefault(w, []).append((-q, k))
    targets = {k for hits in per_word.values() for _, k in heapq.nsmallest(CANDIDATES, hits)}
    reach: dict[str, dict[str, tuple[float, tuple[str, ...]]]] = {}
    groups = [_grow(index, query, seed, targets, dropped, reach) for seed in by_single[:SEEDS]]
    pending: list[tuple[str, str]] = []
    for g in sorted(groups, key=lambda g: (-g.score, len(g.members), g.seed)):
        for m in g.members:
            put(m, g.why[m])
        for m, reason in pending:
            put(m, reason)
        pending = [(m, g.why[m]) for m in g.lookups]
    for m, reason in pending:
        put(m, reason)
    for k in by_single:
        put(k, "matched")
    rest = [k for k in index.by_degree if k not in why and k not in dropped]
    order += rest
    why.update(dict.fromkeys(rest, "unmatched"))
    return Ranking(order=order, why=why, dropped=sorted(dropped))


def _paths(index: SchemaIndex, start: str, targets: set[str], dropped: set[str]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """The cheapest join path from ``start`` to each of ``targets`` within HOPS joins: its
    cost (EDGE_DECLARED per declared foreign key, EDGE_INFERRED per join by key names) and
    the tables after ``start`` on it. A table between must not be forbidden, and one joined
    by name to more than HUB tables is no bridge, and from it a join by name leads only to a
    target."""
    best: dict[str, float] = {start: 0.0}
    path: dict[str, tuple[str, ...]] = {start: ()}
    heap = [(0.0, start)]
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    while heap:
        cost, table = heapq.heappop(heap)
        if cost > best[table]:
            continue
        hub = index.inferred[table] > HUB
        if table != start:
            if table in targets:
                out[table] = (cost, path[table])
            if hub or len(path[table]) >= HOPS:
                continue
        for other, step in index.edges[table]:
            # From a table that hundreds join by name, such a join leads only to a target.
            if other in dropped or (hub and step != EDGE_DECLARED and other not in targets):
                continue
            step += cost
            if step < best.get(other, math.inf) - 1e-12:
                best[other] = step
                path[other] = path[table] + (other,)
                heapq.heappush(heap, (step, other))
    return out


def _grow(index: SchemaIndex, query: _Query, seed: str, targets: set[str], dropped: set[str],
          reach: dict[str, dict[str, tuple[float, tuple[str, ...]]]]) -> _Group:
    """The tables a query from ``seed`` would likely read: repeatedly the table among
    ``targets`` (with the tables on the join path to it, :func:`_paths`) that most raises the
    group's score — Σ over the query's words of weight × the best match of a member — less
    the path's cost, while that is positive and the group has fewer than GROUP_MAX tables
    (a short approximation of the cheapest tree joining the tables that answer the words);
    then the tables the members reference by a declared foreign key (a lookup such as
    ``Artist`` behind ``Album``: what a query joins to show a name), at most LOOKUPS."""
    match, weight = query.match, query.weight
    members = [seed]
    why = {seed: "matched"}
    best = dict(match.get(seed, {}))
    spent = 0.0
    while len(members) < GROUP_MAX:
        inside = set(members)
        choice: tuple[float, float, str] | None = None
        route: tuple[str, ...] = ()
        via = seed
        for m in members:
            if m not in reach:
                reach[m] = _paths(index, m, targets, dropped)
            for target, (cost, path) in reach[m].items():
                if target in inside:
                    continue
                gain = 0.0
                top: dict[str, float] = {}
                for t in path:
                    for w, q in match.get(t, {}).items():
                        if q > top.get(w, 0.0):
                            top[w] = q
                for w, q in top.items():
                    if q > best.get(w, 0.0):
                        gain += weight[w] * (q - best.get(w, 0.0))
                key = (gain - cost, -cost, target)
                if choice is None or key > choice:
                    choice, route, via = key, path, m
        if choice is None or choice[0] <= 0:
            break
        spent -= choice[1]
        before = via
        for t in route:
            if t not in inside and len(members) < GROUP_MAX:
                members.append(t)
                inside.add(t)
                why[t] = f"joins {before}" if t == route[-1] or t in match else f"joins {before} to {route[-1]}"
                for w, q in match.get(t, {}).items():
                    best[w] = max(best.get(w, 0.0), q)
            before = t
    score = sum(weight[w] * q for w, q in best.items()) - spent
    # Lookups that answer a word of their own first ('category' behind film_category), then
    # in the members' order.
    refs: dict[str, tuple[float, int, str]] = {}
    for i, m in enumerate(members):
        for n, kind in index.links[m].items():
            if kind == "ref" and (m, n) in index.declared and n not in why and n not in dropped and n not in refs:
                refs[n] = (-query.single(n), i, m)
    lookups = sorted(refs, key=lambda n: (refs[n][:2], n))[:LOOKUPS]
    for n in lookups:
        why[n] = f"referenced by {refs[n][2]}"
    return _Group(seed=seed, members=members, why=why, score=score, lookups=lookups)


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
    return cast("Profile", catalogue(db)) if catalogue is not None else db.profile()


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

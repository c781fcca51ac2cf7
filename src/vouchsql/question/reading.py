"""A question's reading as a comparable structure, and how alike two readings are (issue 30,
verified queries): which entities it names, which columns, which values, numbers and years
it filters on, what it aggregates, which way it ranks, how many rows it wants, and whether it
negates. Two questions that share words but differ in any of these ask different things.

Built from the readers of :mod:`.shape` and :mod:`.filters` and the database's own vocabulary
(table and column names, the values its text columns hold, and the words and sample values a
definitions file or semantic model gives); nothing here names a table of a particular database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..words import singular, words_of
from .filters import read_filters
from .shape import entity_tables, entity_words, read_shape, words
from .words import COLUMN_STOP as _COLUMN_STOP
from .words import column_words, fold

if TYPE_CHECKING:
    from ..db.profile import Profile
    from ..definitions import Definitions
    from .values import ValueIndex

# The patterns of this module are strings, compiled by re's own cache on first use: only a
# check with verified queries reads a question this way, and compiling the four at import cost
# ≈ 5 M instructions of every ``vouch check`` start-up (``bench/startup.py --instructions``).
_NEGATION = r"\b(?:not|no|never|without|except|excluding|other than|n't)\b"
# the parts that must agree for two readings to ask the same thing; columns may differ a little
PARTS = ("entities", "values", "connective", "numbers", "years", "aggregates", "directions", "rows", "negated",
         "qualifiers", "columns")
_NUMBER = r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)"


@dataclass(frozen=True)
class Reading:
    entities: frozenset[str]
    columns: frozenset[str]
    values: frozenset[str]
    connective: str | None  # two or more named values: "any" (or, either) or "all" (and, both)
    numbers: frozenset[tuple[str, float, float | None]]  # op "?" for a number no comparison was read for
    years: frozenset[tuple[int, int | None, str]]
    aggregates: frozenset[str]
    directions: frozenset[str]
    rows: int | None
    negated: bool
    filter_columns: frozenset[str] = frozenset()  # columns named that hold a named value
    # words of this database's vocabulary (a table's or column's name, a term, a filter, a
    # synonym of the definitions) that no other part explains: "late", "unshipped",
    # "discounted", "last year" — a qualifier one question says and the other does not
    qualifiers: frozenset[str] = frozenset()

    def describe(self) -> dict[str, Any]:
        """The reading as JSON: what the evidence shows."""
        return {"entities": sorted(self.entities), "columns": sorted(self.columns), "values": sorted(self.values),
                "connective": self.connective,
                "numbers": [f"{op} {v:g}" + (f" and {h:g}" if h is not None else "") for op, v, h in sorted(self.numbers)],
                "years": [f"{rel} {y}" + (f"-{m:02d}" if m else "") for y, m, rel in sorted(self.years, key=str)],
                "aggregates": sorted(self.aggregates), "directions": sorted(self.directions),
                "rows": self.rows, "negated": self.negated, "qualifiers": sorted(self.qualifiers)}


@dataclass(frozen=True)
class Likeness:
    """How alike two readings are: the parts that agree and differ; ``matched`` when every
    part but the columns agrees, the entities are read, and more than half the columns
    (those holding a named value aside) are shared; ``exact`` when every part agrees."""

    same: tuple[str, ...]
    differ: tuple[str, ...]
    matched: bool
    exact: bool

    @property
    def strength(self) -> str:
        return f"{len(self.same)}/{len(PARTS)} parts of the reading agree"


def _question_words(text: str) -> list[str]:
    return [singular(w) for w in words(text).split()]


def _phrase_in(phrase: str, text_words: list[str]) -> bool:
    want = _question_words(phrase)
    n = len(want)
    return bool(n) and any(text_words[i:i + n] == want for i in range(len(text_words) - n + 1))


def _column_key(name: str) -> str | None:
    parts = column_words(name)
    return " ".join(parts) if parts else None


def _column_keys(profile: Profile) -> list[tuple[str, frozenset[str]]]:
    """Each column name of the catalogue as its words: read once per database, not once per
    question (a check reads the question and every verified question)."""
    keys = {_column_key(col.name) for table in profile.tables for col in table.columns}
    return sorted((k, frozenset(k.split())) for k in keys if k)


def read_question(question: str, profile: Profile, index: ValueIndex | None = None,
                  definitions: Definitions | None = None) -> Reading:
    """The reading of ``question`` against this database: ``index`` (a
    :class:`~vouchsql.question.values.ValueIndex`) says which named values the data holds."""
    qwords = _question_words(question)
    wordset = set(qwords)
    named_entities = entity_tables(entity_words(question), profile)
    entities = {t.qualified.lower() for t in named_entities.values()}
    columns: set[str] = {key for key, parts in profile.memo("reading_column_keys", lambda: _column_keys(profile))
                         if parts <= wordset}
    values: set[str] = set()
    known_values: set[str] = set()
    synonym_words: set[str] = set()  # the words of a synonym the question says: they name a table or column
    if definitions is not None:
        by_name = {t.name.lower(): t.qualified.lower() for t in profile.tables}
        for target, syns in definitions.synonyms.items():
            table, _, column = target.partition(".")
            said = [s for s in syns if _phrase_in(s, qwords)]
            if said:
                synonym_words |= {_stem(w) for s in said for w in words(s).split()}
                if column:
                    key = _column_key(column)
                    if key:
                        columns.add(key)
                elif table.lower() in by_name:
                    entities.add(by_name[table.lower()])
        known_values = {fold(str(v)) for vs in definitions.values.values() for v in vs}
    filters = read_filters(question)
    for m in filters.mentions:
        text = fold(m.text)
        if m.quoted or text in known_values or (index is not None and index.lookup(m.text, quoted=m.quoted)):
            values.add(text)
    values |= _held_words(question, index, known_values, profile)
    # the columns that hold a named value: named to filter ("whose nationality is not Russia"),
    # which a paraphrase may leave unsaid ("people not from Russia")
    # and the table that holds a named value is named with it ("Beverages products" names the
    # category as "products in the Beverages category" does), where one table holds it
    listed = {target: {fold(str(x)) for x in vs} for target, vs in definitions.values.items()} \
        if definitions is not None else {}
    holding: set[str] = set()
    for v in values:
        refs = _held_in(index, v)
        holding |= {k for _, column, _ in refs if (k := _column_key(column))}
        held_in = {table for table, _, _ in refs} | {target.partition(".")[0] for target, vs in listed.items()
                                                      if v in vs}
        found = {tp.qualified.lower() for t in held_in if (tp := profile.find(t)) is not None}
        if len(found) == 1:
            entities |= found
    holding |= {k for target, vs in listed.items() if values & vs if (k := _column_key(target.partition(".")[2]))}
    shape = read_shape(question)
    directions = {f"{c.cls}:{c.kind}" for c in shape.directions}
    if shape.order is not None:
        directions.add(f"order:{shape.order.kind}")
    aggregates = {c.kind for c in shape.aggregates}
    if "count" in aggregates and any(_names_column(phrase, columns) for phrase in shape.count_phrases):
        aggregates.discard("count")  # "the number of products" is the column number_products
    numbers = {(n.op, n.value, n.high) for n in filters.numbers}
    read = {n.value for n in filters.numbers} | {n.high for n in filters.numbers if n.high is not None} | \
        {float(y.year) for y in filters.years} | ({float(filters.rows.n)} if filters.rows else set())
    numbers |= {("?", float(m), None) for m in re.findall(_NUMBER, question) if float(m) not in read}
    rows = filters.rows.n if filters.rows else None
    if rows is None and any(not d.startswith("order:") for d in directions) and not re.search(_PLURAL_TOP, question, re.I):
        rows = 1  # "the student with the most friends": a superlative of one names one row
    text = words(question)
    connective = None
    if len(values) >= 2:
        connective = "any" if re.search(r" (?:or|either) ", text) else "all"
    column_words = {_stem(w) for key in columns for w in key.split()}
    explained = {_stem(w) for name in entities for w in words_of(name.rpartition(".")[2]).split()}
    explained |= {_stem(w) for v in values for w in v.split()} | synonym_words | column_words
    vocabulary = profile.memo("reading_vocabulary", lambda: _catalogue_vocabulary(profile))
    if definitions is not None:
        vocabulary = vocabulary | _definitions_vocabulary(definitions)
    qualifiers = {w for w in (_stem(x) for x in words(question).split()) if w in vocabulary and w not in explained}
    qualifiers |= {f"period:{m.group(0).strip()}" for m in re.finditer(_PERIOD, text)}
    # a column's word before an entity qualifies it too ("active customers" where the column is
    # ``active``): only what names the rows themselves (an entity, a value, a synonym) is no modifier
    named_rows = explained - column_words
    qualifiers |= {f"of:{w}" for w in _modifiers(text, named_entities, named_rows)}
    return Reading(entities=frozenset(entities), columns=frozenset(columns), values=frozenset(values),
                   connective=connective, numbers=frozenset(numbers),
                   years=frozenset((y.year, y.month, y.relation) for y in filters.years),
                   aggregates=frozenset(aggregates), directions=frozenset(directions), rows=rows,
                   negated=bool(re.search(_NEGATION, text)), filter_columns=frozenset(holding & columns),
                   qualifiers=frozenset(qualifiers))


# A period named relative to today ("last year", "this month", "in the past 30 days"): no year is
# read from it, and two questions that differ in it ask for different rows.
_PERIOD = (r" (?:last|this|next|previous|past|current|prior) (?:\d+ )?(?:year|quarter|month|week|day)s? "
           r"| (?:today|yesterday|ytd|year to date) ")
# Words of a question that ask, count or rank rather than name part of the data, and words
# too common in names to qualify anything ("name", "id", "number").
_PLAIN = frozenset(_COLUMN_STOP | {"not", "never", "name", "id", "number", "count", "total", "average", "sum", "max", "min", "each",
                                   "per", "all", "list", "show", "type", "date", "value", "amount", "code", "info"})


def _modifiers(text: str, named: dict[str, Any], explained: set[str]) -> set[str]:
    """The word right before each entity the question names, where it qualifies which rows
    ("the *inactive* customers", "*long* films", "*overdue* rentals"): not a function word, a
    number or a word another part explains. Read whether or not the database's vocabulary
    holds it: "inactive" is no column's word where the column is ``active``."""
    tokens = text.split()
    out: set[str] = set()
    for form in named:
        parts = form.split()
        for i in range(1, len(tokens) - len(parts) + 1):
            if tokens[i:i + len(parts)] != parts:
                continue
            before = tokens[i - 1]
            stem = _stem(before)
            if (len(before) >= 3 and before.isalpha() and before not in _FUNCTION and before not in _PLAIN
                    and before not in _DETERMINERS and stem not in explained and stem not in _PLAIN):
                out.add(stem)
    return out


# Words before a noun that choose how many or which way, not which rows: other parts read them.
_DETERMINERS = frozenset("""the all any each every some many few several both either neither another other same
different distinct unique individual separate their his her its our your my whose which what those these this
that top bottom first last next previous highest lowest largest smallest biggest greatest most least more fewer
oldest youngest newest latest earliest longest shortest best worst cheapest dearest overall entire whole total
average mean maximum minimum max min number count sum per given such only also just ten twenty hundred one two
three four five six seven eight nine""".split())


def _stem(word: str) -> str:
    """A word's stem for comparing qualifiers: singular, without -ed/-ing and a doubled last
    consonant ("shipped", "shipping" and "ship" are one; "discounted" is "discount")."""
    w = singular(word.lower())
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[:-len(suffix)]
            if len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "aeiousl":
                w = w[:-1]
            break
    return w


def _vocabulary(names: list[str]) -> frozenset[str]:
    return frozenset(st for name in names for w in words_of(name).split()
                     if len(w) >= 3 and w not in _PLAIN and w not in _FUNCTION and (st := _stem(w)) not in _PLAIN)


def _catalogue_vocabulary(profile: Profile) -> frozenset[str]:
    """The words of this database's table and column names, stemmed: read once per database."""
    return _vocabulary([t.name for t in profile.tables] + [c.name for t in profile.tables for c in t.columns])


def _definitions_vocabulary(definitions: Definitions) -> frozenset[str]:
    """The words of the definitions' terms (metrics, filters) and synonyms, stemmed."""
    return _vocabulary(list(definitions.definitions) + [w for ws in definitions.synonyms.values() for w in ws])


_PLURAL_TOP = r"\b(?:top|first|last)\s+\d+|\b(?:all|every)\b.*\b(?:most|least|highest|lowest)\b"


def _names_column(phrase: str, columns: set[str]) -> bool:
    """The words after "number of" name a column with "number" in its name."""
    first = phrase.split()[:1]
    return bool(first) and any("number" in c.split() and singular(first[0]) in c.split() for c in columns)


def _held_words(question: str, index: ValueIndex | None, known: set[str], profile: Profile) -> set[str]:
    """Runs of one to three words, in any letter case, that are a value the data holds or the
    definitions list ("How many orders were cancelled?" names the status 'cancelled'): the
    longest run wins, and a run of function words alone is none. A run written all in lower
    case names a value only of a column whose values repeat (a status, a category): "still"
    is a word of the question, not the surname of the one customer called STILL."""
    words = question.replace("?", " ").replace(",", " ").replace(".", " ").split()
    plain = [fold(w) for w in words]
    out: set[str] = set()
    i = 0
    while i < len(plain):
        for n in (3, 2, 1):
            run = " ".join(plain[i:i + n])
            if len(plain[i:i + n]) < n or all(w in _COLUMN_STOP or w in _FUNCTION or len(w) < 3
                                                for w in plain[i:i + n]):
                continue
            refs = _held_in(index, run)
            if run not in known and refs and all(w.islower() for w in words[i:i + n]):
                refs = {r for r in refs if _repeating(profile, r[0], r[1])}
            if run in known or refs:
                out.add(run)
                i += n - 1
                break
        i += 1
    return out


def _held_in(index: ValueIndex | None, value: str) -> set[tuple[str, str, str]]:
    """The (table, column, value as stored) places that hold a folded value, as written or
    singular."""
    return (index.exact.get(value, set()) | index.singular.get(value, set())) if index is not None else set()


def _repeating(profile: Profile, table: str, column: str) -> bool:
    """Whether a column's values repeat (fewer distinct values than half its rows): a category
    a lower-case word may name, not a name or a code of one row. A table or column the profile
    does not hold is read as before (a category)."""
    tp = profile.find(table)
    col = tp.column(column) if tp is not None else None
    if tp is None or col is None or not tp.row_count:
        return True
    return col.distinct_count * 2 < tp.row_count


# Words that ask rather than name: a column holding the value 'what' or 'all' does not make
# every question that asks "what" name it.
_FUNCTION = frozenset("""what which who whom whose how many much all any each every list show give find return
tell name are was were there have has had did does this that these those their its from with without than
more less most least number count total average""".split())


def _same_numbers(a: frozenset[tuple[str, float, float | None]], b: frozenset[tuple[str, float, float | None]]) -> bool:
    """The same numbers, each with the same comparison where both readings read one."""
    if {v for _, v, _ in a} != {v for _, v, _ in b}:
        return False
    ops: dict[float, set[tuple[str, float | None]]] = {}
    for op, v, high in a | b:
        if op != "?":
            ops.setdefault(v, set()).add((op, high))
    return all(len(o) == 1 for o in ops.values())


def likeness(a: Reading, b: Reading) -> Likeness:
    same: list[str] = []
    differ: list[str] = []
    for part in PARTS:
        if part == "numbers":
            equal = _same_numbers(a.numbers, b.numbers)
        elif part == "columns":
            equal = a.columns - a.filter_columns == b.columns - b.filter_columns
        else:
            equal = getattr(a, part) == getattr(b, part)
        (same if equal else differ).append(part)
    ignored = a.filter_columns | b.filter_columns
    shared = len((a.columns & b.columns) - ignored)
    union = len((a.columns | b.columns) - ignored)
    columns_close = union == 0 or shared / union > 0.5
    matched = bool(a.entities) and set(differ) <= {"columns"} and columns_close
    return Likeness(same=tuple(same), differ=tuple(differ), matched=matched, exact=matched and not differ)

"""English words for names: one singular, one plural, the words of an identifier. Used by the
profile, the checks, the choice detectors and the question readers, so a table is named the
same way everywhere ("boxes" is "box" in all of them); and how a value reads in a sentence."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the profile imports this module
    from .db.figures import ColumnProfile

_KEEP = ("ss", "us", "is")
# Longest suffix first; each pair is (plural suffix, singular suffix).
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("uses", "us"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("s", ""))


@lru_cache(maxsize=65536)  # pure, and called for every table and column name of a catalogue
def singular(word: str) -> str:
    """A crude English singular, lower case: ``countries`` → ``country``, ``boxes`` → ``box``,
    ``addresses`` → ``address``, ``statuses`` → ``status``; ``status``, ``class``, ``analysis``
    and words of three letters or fewer are kept."""
    low = word.lower()
    if len(low) <= 3 or low.endswith(_KEEP):
        return low
    for suffix, repl in _SUFFIXES:
        if low.endswith(suffix):
            return low[: -len(suffix)] + repl
    return low


def plural(word: str) -> str:
    """The plural of a singular lower-case word: ``country`` → ``countries``, ``box`` → ``boxes``."""
    low = word.lower()
    if re.search(r"[^aeiou]y$", low):
        return low[:-1] + "ies"
    if re.search(r"(s|x|ch|sh)$", low):
        return low + "es"
    return low + "s"


@lru_cache(maxsize=65536)
def words_of(name: str) -> str:
    """``InvoiceLine`` → ``invoice line``; ``order_items`` → ``order items``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return " ".join(spaced.lower().split())


def _own_name(name: str) -> str:
    """A table's own name: ``sales.orders`` → ``orders`` (the profile keys a table outside the
    default schema ``schema.table``)."""
    return name.rpartition(".")[2]


def entity_word(table: str) -> str:
    """How a description names one row of a table: ``order_items`` → ``order item`` (a
    qualified name by the table's own: ``sales.order_items`` → ``order item``)."""
    parts = words_of(_own_name(table)).split()
    return " ".join(parts[:-1] + [singular(parts[-1])]) if parts else table


def name_forms(name: str) -> set[str]:
    """Ways a question may name a table or column: its words, singular and plural (a
    qualified table name, ``sales.orders``, by the table's own name)."""
    parts = words_of(_own_name(name)).split()
    if not parts:
        return set()
    one = " ".join(parts[:-1] + [singular(parts[-1])])
    many = " ".join(parts[:-1] + [plural(singular(parts[-1]))])
    return {" ".join(parts), one, many}


def show(value: object) -> str:
    """A value as a sentence quotes it: ``1299``, ``4.5``, ``'Rock'``; a float without a
    trailing ``.0`` unless it is too large for ``:g`` to keep every digit."""
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e15 else repr(value)
    return repr(value) if isinstance(value, str) else str(value)


# -- what a question says: its numbers, what it counts, the values it names ------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")


def question_numbers(question: str) -> list[float]:
    out = []
    for m in _NUMBER.finditer(question or ""):
        text = m.group(0).replace(",", "")
        try:
            out.append(float(text))
        except ValueError:
            continue
    return out


_STOP = {"the", "and", "for", "from", "with", "that", "this", "who", "which", "what", "are", "was", "were", "has",
         "have", "had", "each", "every", "all", "any", "per", "show", "list", "provide", "query", "shows", "include",
         "should", "table", "total", "number", "name", "names", "full", "their", "them", "they", "its", "our",
         "not", "but", "how", "many", "much", "most", "least", "more", "less", "than", "into", "over", "under",
         "sum", "count", "id", "ids", "one", "two", "three", "top", "bottom", "first", "last", "also", "only"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", (text or "").lower())


def named_values(question: str, column: "ColumnProfile", table_rows: int) -> list[tuple[str, int]]:
    """The values of a low-cardinality text column that the question names: more than half
    of a value's words (of three letters or more, singular or plural) appear among the
    question's words ("each sales agent" names 'Sales Support Agent'), the most completely
    named ones only. Read from the profile's most frequent values when they are every value
    of the column; each with its row count."""
    if not column.top_values or column.distinct_count > len(column.top_values) or column.distinct_estimated:
        return []
    if column.distinct_count >= table_rows:  # a unique column (a name) scopes nothing
        return []
    asked = {singular(w) for w in _words(question)}
    scored = []
    for value, count in column.top_values:
        if not isinstance(value, str):
            return []  # a number column: its values are not words
        words = {singular(w) for w in _words(value) if len(w) >= 3 and w not in _STOP}
        if not words:
            continue
        hits = len(words & asked)
        if hits * 2 > len(words):
            scored.append((hits / len(words), value, int(count)))
    best = max((s for s, _, _ in scored), default=None)
    # The values named most completely: "each sales manager" names 'Sales Manager', not
    # 'Sales Support Agent' (two of whose three words it also holds).
    return [(v, n) for s, v, n in scored if s == best]


__all__ = ["entity_word", "name_forms", "named_values", "plural", "question_numbers", "show",
           "singular", "words_of"]

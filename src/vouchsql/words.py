"""English words for names: one singular, one plural, the words of an identifier. Used by the
profile, the checks, the choice detectors and the question readers, so a table is named the
same way everywhere ("boxes" is "box" in all of them); and how a value reads in a sentence."""

from __future__ import annotations

import re

_KEEP = ("ss", "us", "is")
# Longest suffix first; each pair is (plural suffix, singular suffix).
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("uses", "us"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("s", ""))


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


def words_of(name: str) -> str:
    """``InvoiceLine`` → ``invoice line``; ``order_items`` → ``order items``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
    return " ".join(spaced.lower().split())


def entity_word(table: str) -> str:
    """How a description names one row of a table: ``order_items`` → ``order item``."""
    parts = words_of(table).split()
    return " ".join(parts[:-1] + [singular(parts[-1])]) if parts else table


def name_forms(name: str) -> set[str]:
    """Ways a question may name a table or column: its words, singular and plural."""
    parts = words_of(name).split()
    if not parts:
        return set()
    one = " ".join(parts[:-1] + [singular(parts[-1])])
    many = " ".join(parts[:-1] + [plural(singular(parts[-1]))])
    return {" ".join(parts), one, many}


def show(value) -> str:
    """A value as a sentence quotes it: ``1299``, ``4.5``, ``'Rock'``; a float without a
    trailing ``.0`` unless it is too large for ``:g`` to keep every digit."""
    if isinstance(value, float):
        return f"{value:g}" if abs(value) < 1e15 else repr(value)
    return repr(value) if isinstance(value, str) else str(value)


__all__ = ["entity_word", "name_forms", "plural", "show", "singular", "words_of"]

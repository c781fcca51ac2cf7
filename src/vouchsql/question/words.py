"""Small shared helpers for reading a question: normalising text, tokens with their place,
numbers written as digits or words, plural to singular, and quoted spans.

Everything here is deterministic and knows nothing about a database. :mod:`.filters` and
:mod:`.shape` build on it.
"""

from __future__ import annotations

import re
from functools import lru_cache
import unicodedata
from dataclasses import dataclass

from ..words import singular as singular  # re-exported: one singular for every reader
from ..words import words_of

# Words of a column's name that say nothing of what it holds ("num_of_ticket", "is_active").
COLUMN_STOP = frozenset({"of", "the", "a", "an", "and", "in", "on", "at", "to", "for", "by", "with", "is", "no",
                         "num", "nbr"})


def column_words(name: str) -> list[str]:
    """A column's name as the singular words a question would name it by: ``Level_of_membership``
    → level, membership; ``LastName`` → last, name. One reading for every reader of columns."""
    return [singular(w) for w in words_of(name).lower().split() if w not in COLUMN_STOP]

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12,
}

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"], start=1)}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

# Curly and straight quotes, normalised to straight ones.
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'",
                         "\u00ab": '"', "\u00bb": '"', "`": "'"})

_TOKEN = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?|[A-Za-z\u00c0-\u024f][\w\u00c0-\u024f'\-]*|[^\w\s]")
NUMBER_RE = re.compile(r"^\$?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?%?$")


def plain(text: str) -> str:
    """The question with curly quotes straightened (same length as the input)."""
    return text.translate(_QUOTES)


_SPACES = re.compile(r"[\s_\-]+")


@lru_cache(maxsize=65536)  # pure; called for every name of a catalogue
def unaccented(text: str) -> str:
    """``text`` decomposed (NFKD) without its combining marks: ``'São' → 'Sao'``."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def fold(text: str) -> str:
    """Case- and accent-insensitive form: lower case, accents dropped, runs of space and
    ``_``/``-`` collapsed to one space. ``fold('São  Paulo') == 'sao paulo'``."""
    text = str(text)
    if not text.isascii():  # (ASCII has no curly quotes and no accents to drop)
        text = unaccented(plain(text))
    return _SPACES.sub(" ", text.lower()).strip()


@lru_cache(maxsize=65536)
def squash(text: str) -> str:
    """``fold`` without any spaces or punctuation: 'Invoice ID' and 'InvoiceId' both give 'invoiceid'."""
    return re.sub(r"[^0-9a-z]", "", fold(text))




@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int
    sentence_start: bool  # first word of a sentence (or of a line/heading)

    @property
    def low(self) -> str:
        return self.text.lower()

    @property
    def is_word(self) -> bool:
        return self.text[:1].isalpha()

    @property
    def capitalised(self) -> bool:
        return self.text[:1].isupper()


def tokens(text: str) -> list[Token]:
    """Words, numbers and punctuation of ``text`` with offsets into it."""
    text = plain(text)
    out: list[Token] = []
    start_next = True
    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        gap = text[out[-1].end:m.start()] if out else ""
        if "\n" in gap:
            start_next = True
        out.append(Token(tok, m.start(), m.end(), start_next))
        start_next = tok in {".", "?", "!", ":", ";"} or (tok == "-" and "\n" in gap)
    return out


def number(text: str) -> float | None:
    """The number a token writes: '37', '10,000', '$15,000', '2.99', 'three'; else None."""
    low = text.lower()
    if low in NUMBER_WORDS:
        return float(NUMBER_WORDS[low])
    m = NUMBER_RE.match(text)
    if not m:
        return None
    return float(m.group(1).replace(",", "") + (m.group(2) or ""))


def quoted(text: str) -> list[tuple[str, int]]:
    """Spans in double quotes (straight or curly), or in single quotes that open and close at
    word boundaries (so apostrophes in "don't" or "Customer's" are not quotes): (text, start)."""
    text = plain(text)
    found = [(m.group(1), m.start(1)) for m in re.finditer(r'"([^"\n]{1,80})"', text)]
    for m in re.finditer(r"(?<![\w])'([^'\n]{1,80})'(?![\w])", text):
        found.append((m.group(1), m.start(1)))
    return sorted(found, key=lambda x: x[1])

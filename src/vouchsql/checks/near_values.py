"""Which value a column holds is closest to a string it does not hold, and how it is close.

Pure functions over strings: the engine has already said that no row holds the string as
written (by its own comparison), and handed over the values the column does hold. Forms of
closeness, most certain first:

- ``case``: equal once case and surrounding or repeated spaces are set aside;
- ``accents``: … and accents (``Zürich`` / ``Zurich``);
- ``punctuation``: … and every character that is not a letter or digit (``North Carolina`` /
  ``NorthCarolina``, ``The Rise of the Blue Beetle!``);
- ``plural``: … and a trailing plural ``s``/``es`` on a word (``Bachelors`` / ``Bachelor``);
- ``number``: both read as the same number (``'5'`` / ``'5.0'`` / ``'005'``);
- ``date``: both read as the same calendar day in common formats (``2020-01-05`` /
  ``05/01/2020`` is ambiguous and read day-first only when month-first is impossible);
- ``stem``: one is the other with a common word ending (``engineer`` / ``engineering``);
- ``initialism``: the initials of one's words (skipping *of*, *the*, *and*) are the other,
  or begin it with one letter more (``United States`` / ``USA``, ``US``);
- ``abbreviation``: one is a short code (at most 4 letters) whose letters appear in order in
  the other, starting with its first letter (``F`` / ``female``, ``hse`` / ``House``, ``apt``
  / ``Apartment``);
- ``spelling``: a close spelling (difflib ratio ≥ 0.85, both at least 5 characters).

No word list names any database's values: every rule is about the two strings alone.
"""

from __future__ import annotations

import difflib
import re
from datetime import date, datetime

from ..question.words import unaccented

FORMS = ("case", "accents", "punctuation", "plural", "number", "date", "stem", "initialism", "abbreviation",
         "spelling")
# Endings that make another word of the same stem (engineer / engineering, Canada / Canadian).
_ENDINGS = ("s", "es", "ing", "ed", "er", "ers", "al", "ic", "ical", "ist", "ists", "y", "ly", "ian", "ians", "an",
            "ans", "ese", "ish", "n")
_SKIP_WORDS = {"of", "the", "and", "for", "de", "du", "la", "le"}
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%Y.%m.%d", "%Y%m%d", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%d-%m-%Y",
                 "%m-%d-%Y", "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y")
SPELLING_RATIO = 0.85


def _case(s: str) -> str:
    return " ".join(s.split()).casefold()


def _accents(s: str) -> str:
    return unaccented(_case(s))


def _alnum(s: str) -> str:
    return "".join(ch for ch in _accents(s) if ch.isalnum())


def _singular_words(s: str) -> str:
    words = re.findall(r"[^\W_]+", _accents(s))
    return "".join(re.sub(r"(?<=[^s])e?s$", "", w) if len(w) > 3 else w for w in words)


def _number(s: str) -> float | None:
    t = s.strip().replace(",", "")
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", t):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _date(s: str) -> date | None:
    t = " ".join(s.split())
    t = re.sub(r"[T ]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$", "", t)  # a midnight-or-any time part is set aside
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(t, fmt).date()
        except ValueError:
            continue
    return None


def _initials(s: str) -> str:
    words = [w for w in re.findall(r"[^\W_]+", _accents(s)) if w not in _SKIP_WORDS]
    return "".join(w[0] for w in words) if len(words) >= 2 else ""


def _is_initialism(a: str, b: str) -> bool:
    """``b`` (a code) spells ``a``'s initials, or those initials and one letter more."""
    ini, code = _initials(a), _alnum(b)
    if not ini or not code.isalpha() or not 2 <= len(code) <= 6:
        return False
    return code == ini or (code.startswith(ini) and len(code) == len(ini) + 1)


def _is_abbreviation(short: str, long: str) -> bool:
    s, lng = _alnum(short), _alnum(long)
    if not s or not s.isalpha() or len(s) > 4 or len(s) >= len(lng) or s[0] != lng[0]:
        return False
    it = iter(lng[1:])
    return all(ch in it for ch in s[1:])


def closeness(literal: str, held: str) -> str | None:
    """The first form (of :data:`FORMS`) in which ``held`` is close to ``literal``, or None."""
    if held == literal:
        return None
    if _case(held) == _case(literal):
        return "case"
    if _accents(held) == _accents(literal):
        return "accents"
    a, b = _alnum(literal), _alnum(held)
    if a and a == b:
        return "punctuation"
    if a and _singular_words(literal) == _singular_words(held):
        return "plural"
    na, nb = _number(literal), _number(held)
    if na is not None and nb is not None:
        return "number" if na == nb else None
    da, db = _date(literal), _date(held)
    if da is not None and db is not None:
        return "date" if da == db else None
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 4 and long_.startswith(short) and long_[len(short):] in _ENDINGS:
        return "stem"
    if _is_initialism(literal, held) or _is_initialism(held, literal):
        return "initialism"
    if _is_abbreviation(held, literal) or _is_abbreviation(literal, held):
        return "abbreviation"
    if len(a) >= 5 and len(b) >= 5 and difflib.SequenceMatcher(None, a, b).ratio() >= SPELLING_RATIO:
        return "spelling"
    return None


def nearest(literal: str, held: list[tuple[str, int]]) -> tuple[str, str, int] | None:
    """The held value closest to ``literal`` as ``(value, form, rows)``: the most certain form
    first, then the value more rows hold, then the value itself (a stable order). ``held``:
    ``(value, rows)`` pairs as the engine returned them."""
    best: tuple[int, int, str, str] | None = None
    for value, rows in held:
        if value is None:
            continue
        form = closeness(literal, str(value))
        if form is None:
            continue
        key = (FORMS.index(form), -int(rows or 0), str(value), form)
        if best is None or key < best:
            best = key
    if best is None:
        return None
    rank, neg_rows, value, form = best
    return value, form, -neg_rows


def named_in(question: str, value: str) -> bool:
    """Whether the question writes ``value`` (case, accents and spacing aside, as whole words,
    a plural ending allowed: "houses" names ``House``)."""
    v = _accents(value)
    if len(_alnum(v)) < 2:
        return False
    q = _accents(question)
    return re.search(r"(?<![^\W_])" + re.escape(v) + r"(e?s)?(?![^\W_])", q) is not None

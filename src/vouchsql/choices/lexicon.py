"""Words that settle a choice (SpecBridge §2.3: "all" for ties, "distinct" for counts).

Rules, kept simple so they can be tested one by one:

- matching is case-insensitive and on word boundaries: ``unique`` does not match
  ``uniquely``, ``all`` does not match ``tall`` or ``ally``;
- a phrase of several words matches with any run of spaces or a hyphen between the words
  (``"at least"`` matches ``at  least``; ``"or more"`` matches ``or-more``);
- a phrase may end in ``*`` to allow any word ending (``"exceed*"`` matches ``exceeds``,
  ``exceeded``, ``exceeding``);
- ``patterns`` are extra regular expressions for forms a list cannot spell (``\\w+er than``),
  with ``unless`` naming matches that do not count (``rather than``, ``other than``);
- a match inside a longer idiom (:data:`IDIOMS`, plus a lexicon's own ``idioms``) does not
  count: "over all" (overall) and "of all time" hold no settling "all", "at all" no "all",
  "over all" no "over". A phrase that is the whole idiom still matches ("at all" settles a
  choice whose lexicon lists "at all").

A match returns the words as written in the question (lower-cased, spaces collapsed): that
text becomes the choice's ``settled_by``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Fixed phrases whose words do not carry their own meaning: a settling word inside one is
# not the settling word ("the top tracks over all" says nothing about ties).
IDIOMS = ("over all", "all time", "of all time", "at all", "above all", "after all", "all in all",
          "first of all", "in all", "all along", "all over", "all the way", "once and for all",
          "all but", "all of a sudden", "for good", "more or less", "all right")


def _phrase_regex(phrase: str) -> str:
    star = phrase.endswith("*")
    words = phrase.rstrip("*").split()
    body = r"(?:\s+|\s*-\s*)".join(re.escape(w) for w in words)
    tail = r"\w*" if star else ""
    left = r"(?<!\w)" if words and re.match(r"\w", words[0]) else ""
    right = r"(?!\w)" if star or (words and re.search(r"\w$", words[-1])) else ""
    return left + body + tail + right


# Compiled on first use, once per process: a check compiles only the phrases whose words
# its question holds (compiling all of them cost ~6 ms of every ``vouch check``).
_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(phrase: str) -> re.Pattern[str]:
    rx = _COMPILED.get(phrase)
    if rx is None:
        rx = _COMPILED[phrase] = re.compile(_phrase_regex(phrase), re.I)
    return rx


def _may_match(phrase: str, text: str, low: str | None) -> bool:
    """False only where ``phrase`` cannot match ``text``: its words are literal, so each is
    in the text, ignoring case. ``low`` is the text lower-cased when it is ASCII (else None:
    case-insensitive matching beyond ASCII is not a plain lower-casing, so no shortcut)."""
    if low is None or not phrase.isascii():
        return True
    return all(w.lower() in low for w in phrase.rstrip("*").split())


def _ascii_lower(text: str) -> str | None:
    return text.lower() if text.isascii() else None


@dataclass(frozen=True)
class Lexicon:
    phrases: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    idioms: tuple[str, ...] = ()

    def _regexes(self, text: str) -> list[re.Pattern[str]]:
        """The phrases' and patterns' regexes, in order, less the phrases ``text`` cannot hold."""
        low = _ascii_lower(text)
        found = [_compiled(p) for p in self.phrases if _may_match(p, text, low)]
        found.extend(re.compile(p, re.I) for p in self.patterns)
        return found

    def _idiom_spans(self, text: str) -> list[tuple[int, int]]:
        low = _ascii_lower(text)
        return [m.span() for p in IDIOMS + self.idioms if _may_match(p, text, low)
                for m in _compiled(p).finditer(text)]

    def match(self, text: str | None) -> str | None:
        """The first settling words found in ``text`` (earliest position), else ``None``."""
        if not text:
            return None
        blocked = [re.compile(u, re.I) for u in self.unless]
        idioms = self._idiom_spans(text)
        best: tuple[int, str] | None = None
        for rx in self._regexes(text):
            for m in rx.finditer(text):
                words = " ".join(m.group(0).lower().split())
                if any(b.fullmatch(words) for b in blocked):
                    continue
                if _inside_idiom(m.span(), idioms):
                    continue
                if best is None or m.start() < best[0]:
                    best = (m.start(), words)
                break
        return best[1] if best else None


def _inside_idiom(span: tuple[int, int], idioms: list[tuple[int, int]]) -> bool:
    """Whether ``span`` lies inside a longer idiom's span."""
    start, end = span
    return any(a <= start and end <= b and (b - a) > (end - start) for a, b in idioms)


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (case-insensitive)."""
    text = text or ""
    if not _may_match(phrase, text, _ascii_lower(text)):
        return False
    return bool(_compiled(phrase).search(text))

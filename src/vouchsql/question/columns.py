"""What the question asks to be returned, as opposed to what it asks to sort or rank by.

"Sort employee names by their age" asks for the names; the age only orders them. "Which grade
has the most high schoolers?" asks for the grade; the count only ranks. This module finds the
spans of a question that name a sort key or a ranking (:func:`ordering_spans`) so a reader can
tell whether a word the SQL returns is asked for outside them (:func:`asked_words`). It reads
English sentence shapes only, never names of a particular database.

Ordering spans:

- from *by*/*on* after an order verb (order, sort, rank, arrange) to the end of the clause:
  "sorted by rating", "ordered ascending by the number of final tables they have made";
- "in ascending/descending/alphabetical/… order of/by X": "sort in ascending order of age";
- "from high to low", "from old to young" (directions);
- the count words of a ranking: "the most number of", "the largest number of", "fewest".

The end of a clause is a comma, semicolon, full stop, question or exclamation mark, or an
"and" that starts another request ("and list", "and show" …).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..words import singular

_CLAUSE_END = r"(?=[,;.?!]|\band (?:list|show|return|give|find|display|what|which|who|how|also)\b|$)"
_SPANS = [
    re.compile(r"\b(?:order|sort|rank|arrang)\w*\b[^,;.?!]*?\b(by|on)\b.*?" + _CLAUSE_END, re.I),
    re.compile(r"\bin (?:ascending|descending|alphabetical|reverse|increasing|decreasing|numerical|"
               r"chronological|reverse alphabetical|lexicographic\w*)(?: \w+)? order\b(?: (?:of|by)\b.*?" +
               _CLAUSE_END + ")?", re.I),
    re.compile(r"\bfrom (?:the )?\w+(?:est)? to (?:the )?\w+(?:est)?\b", re.I),
    re.compile(r"\b(?:most|least|fewest|greatest|largest|highest|lowest|smallest|biggest|maximum|minimum)"
               r" (?:number|count|amount) of\b", re.I),
]
# Words that ask for a count to be returned.
COUNT_WORDS = re.compile(r"\b(number|numbers|count|counts|how many|total|amount|times|frequency|tally|quantity)\b",
                         re.I)
# A question that asks for every column.
EVERYTHING = re.compile(r"\b(everything|all (?:the )?(?:info|information|data|attributes|columns|fields|details|"
                        r"records?)|(?:full|complete|all) details|every (?:detail|column|field|attribute))\b", re.I)


@dataclass(frozen=True)
class Asked:
    """A question split into the words outside its ordering spans and those inside them."""

    outside: frozenset[str]  # singular lower-case words asked for (not inside an ordering span)
    inside: frozenset[str]  # singular lower-case words inside the ordering spans
    counts_asked: bool  # a count word outside the spans: a count is asked to be returned
    everything: bool  # the question asks for every column
    spans: tuple[str, ...]  # the ordering spans, as written


def word_set(text: str) -> frozenset[str]:
    """The singular lower-case words of ``text``."""
    return frozenset(singular(w) for w in re.findall(r"[a-z0-9]+", text.lower()))


def ordering_spans(question: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for rx in _SPANS:
        for m in rx.finditer(question):
            start = m.start(1) if rx is _SPANS[0] else m.start()
            if m.end() > start:
                spans.append((start, m.end()))
    return sorted(spans)


def asked_words(question: str) -> Asked:
    spans = ordering_spans(question)
    outside = list(question)
    for s, e in spans:
        for i in range(s, e):
            outside[i] = " "
    rest = "".join(outside)
    inside = " ".join(question[s:e] for s, e in spans)
    return Asked(outside=word_set(rest), inside=word_set(inside), counts_asked=bool(COUNT_WORDS.search(rest)),
                 everything=bool(EVERYTHING.search(question)), spans=tuple(question[s:e].strip() for s, e in spans))

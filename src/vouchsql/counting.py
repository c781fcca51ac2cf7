"""What a count counts: the one analysis of the counting unit (issue 28).

Three readers judge a count: the ``question_shape`` check (``count_unit``: "how many
customers" answered by counting rental rows), the ``join_fanout`` signal (a join repeats the
aggregated entity) and the ``counting_unit`` choice (count rows, or distinct entities?). They
used to read the question and measure the joins each their own way, so one counting mistake
could be told three ways that need not agree. All three now read this module:

- **What the question counts.** :func:`count_phrases` is the one reader of the counting words
  ("how many", "the number of", "count the", "the most", "fewer" …) and the words after them;
  :func:`counted_table` names the table those words count, and :func:`rows_asked` says when
  the question settles the unit itself ("counting every order row", "including repeats").
- **Whether the joins repeat it.** :func:`repetition` measures, within each group of a SELECT
  (its own FROM, joins, WHERE and GROUP BY), the rows that carry the entity's key against its
  distinct keys, summed over the groups: more rows than keys means a COUNT, SUM or AVG over
  those rows sees some entity several times. It asks the engine through the caller's
  :class:`~vouchsql.probe.Probe`, so it follows the engine's comparison, is charged to the
  caller's budget, is recorded and replays without a database, and an identical question
  asked twice for one answer is one query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from .errors import VouchError
from .words import name_forms

if TYPE_CHECKING:  # the probe imports the question readers, which import this module
    from .probe import Probe

# -- what the question counts -------------------------------------------------------------

# Words that introduce the noun being counted: "how many customers", "the number of tracks",
# "the most songs", "fewer orders".
_CUES = re.compile(r"(?<!\w)(how\s+many|number\s+of|count\s+of|count\s+the|counts\s+of|most|fewest|least|"
                   r"more|fewer)\s+", re.I)
# The cues that ask for a number of things (the others rank by one: "the most albums").
NUMBER_CUES = frozenset({"how many", "number of", "count of", "count the", "counts of"})
# Words that may stand between the counting words and the noun ("how many different albums").
FILLER = frozenset({"different", "distinct", "unique", "individual", "separate", "total", "the", "of", "all",
                    "our", "their", "its", "his", "her", "your"})
# The question itself asks for rows ("counting every order row", "each row", "including
# repeats"): the counting unit is settled by its words.
_ROWS_ASKED = re.compile(r"\b(counting|count|counts) (every|each|all)\b|\b(every|each|all) (\w+ ){0,2}rows?\b"
                         r"|\bincluding (repeats|repeated|duplicates)\b")


@dataclass(frozen=True)
class CountPhrase:
    """Counting words and what follows them, lower case: ``cue`` "how many", ``words``
    ("different", "customers", "bought", …) up to the end of the question."""

    cue: str
    words: tuple[str, ...]

    @property
    def asks_number(self) -> bool:
        """"how many X", "the number of X": a number of things is asked (not "the most X")."""
        return self.cue in NUMBER_CUES

    @property
    def text(self) -> str:
        """The phrase as the question reader quotes it: the first four words after the cue."""
        return " ".join(self.words[:4])

    @property
    def noun(self) -> tuple[str, ...]:
        """The words after the cue with the filler before the noun left out ("different")."""
        i = 0
        while i < len(self.words) and self.words[i] in FILLER:
            i += 1
        return self.words[i:]


def count_phrases(question: str) -> list[CountPhrase]:
    """Every counting phrase of the question, in order."""
    text = question or ""
    out = []
    for m in _CUES.finditer(text):
        cue = " ".join(m.group(1).lower().split())
        out.append(CountPhrase(cue, tuple(re.findall(r"[a-z0-9$]+", text[m.end():].lower()))))
    return out


def rows_asked(question: str) -> bool:
    """Whether the question asks for rows itself: the counting unit is settled by its words."""
    text = " " + " ".join(re.sub(r"[^a-z0-9$]+", " ", (question or "").lower()).split()) + " "
    return _ROWS_ASKED.search(text) is not None


def counted_table(question: str, tables: list[str]) -> str | None:
    """The table among ``tables`` whose rows the question counts: the noun of a counting
    phrase, matched by name, singular or plural (the longest name that the words spell).
    ``None`` when the question counts nothing it names, or names two different tables that way."""
    found: list[str] = []
    for phrase in count_phrases(question):
        rest = list(phrase.noun)
        if not rest:
            continue
        best = None
        for table in tables:
            for form in name_forms(table):
                parts = form.split()
                if rest[:len(parts)] == parts and (best is None or len(parts) > best[1]):
                    best = (table, len(parts))
        if best is not None and best[0] not in found:
            found.append(best[0])
    return found[0] if len(found) == 1 else None


# -- whether the joins repeat it ----------------------------------------------------------

# Newer sqlglot names a SELECT's WITH argument ``with_``, older ``with``.
_WITH = "with_" if "with_" in exp.Select.arg_types else "with"


@dataclass(frozen=True)
class Repetition:
    """Within the groups of a SELECT: ``rows`` that carry the entity's key, and the distinct
    keys among them (``entities``), each summed over the groups."""

    rows: int
    entities: int

    @property
    def repeats(self) -> bool:
        return self.rows > self.entities

    @property
    def factor(self) -> float:
        return round(self.rows / self.entities, 3) if self.entities else 0.0


def repetition_query(select: exp.Select, key: exp.Column) -> exp.Select:
    """The probe :func:`repetition` runs: the SELECT's own FROM, joins, WHERE and GROUP BY,
    counting ``key`` (rows that carry one; a LEFT JOIN's NULL rows carry none) and its
    distinct values within each group, summed."""
    inner = select.copy()
    for arg in ("having", "order", "limit", "offset", "distinct", "qualify", _WITH):
        inner.set(arg, None)
    inner.set("expressions", [exp.alias_(exp.Count(this=key.copy()), "vouch_n"),
                              exp.alias_(exp.Count(this=exp.Distinct(expressions=[key.copy()])), "vouch_d")])
    outer = exp.select(exp.Sum(this=exp.column("vouch_n")), exp.Sum(this=exp.column("vouch_d"))).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("vouch_groups"))))
    if select.args.get(_WITH) is not None:  # the query's CTEs, which its FROM may read
        outer.set(_WITH, select.args[_WITH].copy())
    return outer


def repetition(probe: Probe, select: exp.Select, key: exp.Column) -> Repetition | None:
    """Whether the joins of ``select`` repeat the entity whose key is ``key`` (a column as the
    SELECT writes it: ``c.CustomerId``), measured on the data. None when it cannot be
    measured (the engine refused the probe, the time limit or the budget ran out) or when no
    row carries a key."""
    try:
        got = probe.rows(repetition_query(select, key))
    except VouchError:
        return None
    if not got or got[0][1] is None or not got[0][1]:
        return None
    return Repetition(int(got[0][0]), int(got[0][1]))

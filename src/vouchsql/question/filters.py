"""The filters a question asks for, read from its English with a small grammar (issue 12,
part 1): the values it names, the years and months it scopes to, the numbers it compares
against, the ids it names, and how many rows it wants.

Reading only: nothing here knows the database or the SQL. :mod:`vouchsql.checks.question_filters`
links what is read to the profile and checks it against the SQL's tree. What the grammar
does not recognise is simply not read (the check reports it as not measured, never guesses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from .words import MONTHS, NUMBER_WORDS, Token, number, plain, quoted, tokens

# Words never read as a value on their own (function words, question words, verbs of asking).
STOP = {
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "by", "with", "from", "as",
    "is", "are", "was", "were", "be", "been", "do", "does", "did", "has", "have", "had", "not", "no",
    "which", "what", "who", "whom", "whose", "when", "where", "why", "how", "that", "this", "these",
    "those", "it", "its", "i", "we", "you", "they", "he", "she", "our", "your", "their", "my",
    "show", "list", "provide", "find", "give", "return", "write", "select", "get", "display",
    "count", "counts", "sum", "avg", "average", "total", "top", "all", "each", "every", "any",
    "some", "now", "then", "also", "only", "just", "please", "note", "id", "ids", "sql", "query",
    "table", "tables", "column", "columns", "field", "fields", "order", "group", "between", "like", "null", "true", "false", "yes", "ok", "okay", "instead", "however",
    "first", "last", "next", "one", "two", "three", "hint", "make", "sure", "let", "lets",
}
WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
_CONNECT = {"of", "de", "la", "le", "du", "da", "del", "van", "von", "and", "&"}

_NUM = r"(\$?\d[\d,]*(?:\.\d+)?|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
# Comparator phrases, most specific first: (regex with the number as group 'n', operator).
_COMPARATORS: list[tuple[str, str]] = [
    # a negated comparison bounds the other way: "not higher than 4" is <= 4, "not below 4" >= 4
    (r"(?:not|never|does not|do not|did not) (?:greater|more|higher|larger|bigger|longer|older|later|heavier|"
     r"over|above|exceed|exceeding) (?:than )?" + _NUM, "<="),
    (r"(?:not|never|does not|do not|did not) (?:less|fewer|lower|smaller|shorter|younger|earlier|lighter|"
     r"under|below) (?:than )?" + _NUM, ">="),
    (r"(?:greater|more|higher|larger|bigger) than or equal to " + _NUM, ">="),
    (r"(?:less|fewer|lower|smaller) than or equal to " + _NUM, "<="),
    (r"(?:at least|no less than|no fewer than|not less than|not fewer than|a minimum of|minimum of) " + _NUM, ">="),
    (r"(?:at most|no more than|not more than|no greater than|a maximum of|maximum of) " + _NUM, "<="),
    # "120 or more", "120 minutes or longer", "120 minutes long or more": up to two words
    # between, none a number (the number the phrase bounds is the one nearest to it)
    (_NUM + r"(?: (?!\d)\w+){0,2} or (?:more|greater|higher|above|over|larger|longer|older|"
            r"bigger|heavier)", ">="),
    (r"(?:equal to |equals )?" + _NUM + r"(?: (?!\d)\w+){0,2} or (?:less|fewer|lower|below|under|smaller|"
                                          r"shorter|younger|lighter)", "<="),
    (r"(?:more|greater|higher|larger|bigger|longer|older|later|heavier|costlier|pricier) than " + _NUM, ">"),
    (r"(?:less|fewer|lower|smaller|shorter|younger|earlier|lighter|cheaper) than " + _NUM, "<"),
    (r"(?:over|above|exceeding|exceeds|exceed) " + _NUM, ">"),
    (r"(?:under|below) " + _NUM, "<"),
    (r"exactly " + _NUM, "="),
]
_BETWEEN = r"\bbetween " + _NUM + r" and " + _NUM  # compiled on first use (_rx)
# Column-to-column comparisons: "<columns> is less than (or equal to) (the) <Column>".
_COLUMN_COMPARATORS: list[tuple[str, str]] = [
    (r"(?:is|are) (?:greater|more|higher|larger) than or equal to", ">="),
    (r"(?:is|are) (?:less|fewer|lower|smaller) than or equal to", "<="),
    (r"(?:is|are) (?:greater|more|higher|larger|later|after) than", ">"),
    (r"(?:is|are) (?:less|fewer|lower|smaller|earlier) than", "<"),
    (r"(?:is|are) (?:on or after|at or after)", ">="),
    (r"(?:is|are) (?:on or before|at or before)", "<="),
]
_SUPERLATIVE = (r"(?:most|best|highest|largest|biggest|greatest|lowest|least|fewest|smallest|cheapest|"
                r"longest|shortest|worst|latest|earliest|oldest|newest|top|heaviest|lightest|"
                r"best[- ]selling|most[- ]\w+)")
_ROWS_N = r"(\d{1,4}|" + "|".join(w for w in NUMBER_WORDS if w not in {"hundred", "dozen"}) + r")"
# Each holds a number (_ROWS_N); compiled on first use (_rx).
_ROW_PATTERNS = [
    r"\btop[- ]" + _ROWS_N + r"\b",
    r"\b(?:the|which|what|list|show|find|give|return|get|display)\s+" + _ROWS_N +
    r"\s+(?:[\w'-]+\s+){0,4}?" + _SUPERLATIVE + r"\b",
    r"\b(?:the|which|what)\s+" + _ROWS_N + r"\s+[\w'-]+(?:\s+[\w'-]+){0,2}\s+(?:with|that|who|having|by)\b",
]
# One row: a singular noun picked by a superlative. Group 1 is the noun; a plural one, or one
# that is no noun, may want several rows and is passed over. "at most"/"at least" are bounds.
_SUP_ALTERNATIVES = _SUPERLATIVE[3:-1] + r"|youngest|most common|most commonly"
_SUP_ONE = r"(?<!\bat )(?:" + _SUP_ALTERNATIVES + ")"
# The word each alternative starts with ("best" of "best[- ]selling"): every _ONE_ROW match holds one.
_SUP_WORDS = frozenset(alt.split("[")[0].split(" ")[0] for alt in _SUP_ALTERNATIVES.split("|"))
# Compiled on first use (_rx), and only for a text that may hold a superlative
# (_may_name_superlative): compiling the three costs ≈ 18 M instructions, and most questions
# have none ("How many tracks are there?").
_ONE_ROW = [
    # "the album with the most songs", "the employee who got the highest bonus",
    # "the shop whose number of products is the largest", "the template used by the most documents"
    r"\bthe\s+([a-z]+)\s+(?:with|having|that|who|which|whose|used|made|sold|bought|owned|"
    r"held|played|written|directed)\s+(?:[\w'-]+\s+){0,6}?(?:the\s+)?" + _SUP_ONE + r"\b",
    # "which actor has … the most", "Which employee received the most awards"
    r"\bwhich\s+([a-z]+)\s+(?:[\w'-]+\s+){0,4}?(?:the\s+)?" + _SUP_ONE + r"\b",
    # "the youngest dog", "the most common hometown of teachers": the noun ends the phrase
    r"\bthe\s+" + _SUP_ONE + r"\s+(?:[a-z]+\s+){0,2}?([a-z]+)"
    r"(?=\s+(?:of|in|from|who|that|which|with|for|at|on|among|is|was|did|does|has|had)\b|\s*[,.?!]|\s*$)",
]
_ORDINAL = re.compile(r"\b(second|third|fourth|fifth|next|\d+(?:st|nd|rd|th)|skip\w*|after the first|page|offset|"
                      r"runner[- ]up)\b", re.I)
_YEAR = re.compile(r"(?<![\d/$.,-])(1[89]\d\d|20\d\d)(?![\d/%]|,\d|\.\d)")
_YEAR_BEFORE = {"before": "before", "until": "before", "till": "before", "prior": "before", "through": "through",
                "after": "after", "since": "since", "from": "since", "in": "in", "during": "in", "of": "in",
                "for": "in", "year": "in", "and": "in", ",": "in", "or": "in", "to": "through"}


@dataclass(frozen=True)
class Mention:
    """A quoted string or a run of capitalised words that may name a value in the data."""
    text: str
    start: int
    quoted: bool
    words: str  # the run it was cut from (for the evidence)


@dataclass(frozen=True)
class YearFilter:
    year: int
    month: int | None
    relation: str  # in, before, after, since, through
    words: str


@dataclass(frozen=True)
class NumberFilter:
    op: str  # >, >=, <, <=, =, between
    value: float
    high: float | None
    words: str
    before: str  # up to four words before the phrase, within its clause (lower case)
    after: str  # up to three words after it, within its clause (lower case)


@dataclass(frozen=True)
class ColumnComparison:
    left: str  # the words before the comparator (one of them names a column)
    op: str
    right: str  # the word(s) after it: a column name
    words: str


@dataclass(frozen=True)
class IdFilter:
    column: str  # the words naming the column ("EmployeeID", "Invoice ID")
    value: float
    words: str


@dataclass(frozen=True)
class RowCount:
    n: int
    words: str
    ordinal: bool  # the question names a position ("second", "next"), so an OFFSET may be right


@dataclass
class QuestionFilters:
    mentions: list[Mention] = field(default_factory=list)
    years: list[YearFilter] = field(default_factory=list)
    numbers: list[NumberFilter] = field(default_factory=list)
    column_comparisons: list[ColumnComparison] = field(default_factory=list)
    ids: list[IdFilter] = field(default_factory=list)
    rows: RowCount | None = None


@lru_cache(maxsize=None)
def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


def _may_hold_number(text: str) -> bool:
    """False only where no pattern holding a number (_NUM, _ROWS_N) can match ``text``, so
    that a question without one compiles none of them (~5 ms of every check): an ASCII text
    (where the patterns' case-insensitive match is plain lower-casing) with no digit and no
    number word. Any other text may."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(c.isdigit() for c in low) or any(w in low for w in NUMBER_WORDS)


def _may_name_superlative(text: str) -> bool:
    """False only where no _ONE_ROW pattern can match ``text``, as :func:`_may_hold_number`:
    an ASCII text that holds none of the superlatives (_SUP_WORDS). Any other text may."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(w in low for w in _SUP_WORDS)


def _num(text: str) -> float | None:
    return number(text.strip())


def _spans_overlap(a: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(a[0] < e and s < a[1] for s, e in spans)


def _around(low: str, start: int, end: int) -> tuple[str, str]:
    """Up to four words before and three after a span, not crossing a clause boundary."""
    before = re.split(r"[.;:?!()\n]", low[max(0, start - 60):start])[-1]
    after = re.split(r"[.;:?!(),\n]", low[end:end + 40])[0]
    return " ".join(before.split()[-4:]), " ".join(after.split()[:3])


def read_numbers(text: str) -> tuple[list[NumberFilter], list[tuple[int, int]]]:
    """Comparator phrases with a number, and the spans of text they used."""
    low = plain(text).lower()
    found: list[NumberFilter] = []
    used: list[tuple[int, int]] = []
    if not _may_hold_number(low):
        return found, used
    for m in _rx(_BETWEEN).finditer(low):
        a, b = _num(m.group(1)), _num(m.group(2))
        if a is not None and b is not None:
            found.append(NumberFilter("between", a, b, text[m.start():m.end()], *_around(low, m.start(), m.end())))
            used.append((m.start(), m.end()))
    for pattern, op in _COMPARATORS:
        for m in re.finditer(r"\b" + pattern, low):
            span = (m.start(), m.end())
            if _spans_overlap(span, used):
                continue
            value = _num(m.group(1))
            if value is None:
                continue
            found.append(NumberFilter(op, value, None, text[m.start():m.end()], *_around(low, m.start(), m.end())))
            used.append(span)
    return found, used


def read_column_comparisons(text: str) -> list[ColumnComparison]:
    src = plain(text)
    out: list[ColumnComparison] = []
    # Each comparator holds " than" or " or " (matched ignoring case): without either in an
    # ASCII text none can match, and none is compiled.
    if src.isascii() and " than" not in src.lower() and " or " not in src.lower():
        return out
    for pattern, op in _COLUMN_COMPARATORS:
        for m in re.finditer(r"\b" + pattern + r"\s+(?:the\s+)?([A-Za-z_]\w*(?: [A-Za-z_]\w*){0,2})", src, re.I):
            left = src[max(0, m.start() - 60):m.start()]
            left = re.split(r"[.,;:?!(]", left)[-1]
            right = m.group(1).strip()
            if not right or _num(right.split()[0]) is not None:
                continue
            out.append(ColumnComparison(left.strip(), op, right, src[m.start() - len(left):m.end()].strip()))
    return out


def read_ids(toks: list[Token], is_id_column: Callable[[str], bool]) -> list[IdFilter]:
    """'<id column words> … N' within one clause: 'Invoice ID 37', 'EmployeeID 4',
    'The EmployeeID for this Employee (Steven Buchanan) is 5'. ``is_id_column(words)`` says
    whether the words name an id column of the schema."""
    out: list[IdFilter] = []
    for i in range(len(toks)):
        for n in (3, 2, 1):
            words = toks[i:i + n]
            if len(words) < n or not all(t.is_word for t in words):
                continue
            name = " ".join(t.text for t in words)
            if not is_id_column(name):
                continue
            for j in range(i + n, min(len(toks), i + n + 9)):
                t = toks[j]
                if t.text in {".", "?", "!", ";"}:
                    break
                # another id column named first ("OrderID, CustomerID and …"): the number is not this one's
                if t.is_word and is_id_column(t.text):
                    break
                value = number(t.text) if not t.is_word else None
                if value is not None:
                    # "InvoiceId … for invoices from 2022", "rental_id … in August 2005": a year, not an id
                    prev = toks[j - 1].low if j > i + n else ""
                    if value.is_integer() and 1800 <= value <= 2100 and (prev in _YEAR_BEFORE or prev in MONTHS):
                        break
                    out.append(IdFilter(name, value, " ".join(x.text for x in toks[i:j + 1])))
                    break
            break
    return out


def read_years(text: str, skip: list[tuple[int, int]]) -> list[YearFilter]:
    src = plain(text)
    out: list[YearFilter] = []
    for m in _YEAR.finditer(src):
        if _spans_overlap((m.start(), m.end()), skip):
            continue
        before = src[max(0, m.start() - 40):m.start()].lower()
        month = None
        mm = re.search(r"\b([a-z]+)\.?,?\s+$", before)
        if mm and mm.group(1) in MONTHS:
            month = MONTHS[mm.group(1)]
            before = before[:mm.start()]
        rel = "in"
        for w in reversed(re.findall(r"[a-z]+|,", before)[-3:]):
            if w in _YEAR_BEFORE:
                rel = _YEAR_BEFORE[w]
                break
        if re.search(r"prior to\s+(?:[a-z]+\s+)?$", before):
            rel = "before"
        lead = re.findall(r"[\w'()-]+", src[max(0, m.start() - 40):m.start()])[-2:]
        out.append(YearFilter(int(m.group(1)), month, rel, " ".join(lead + [m.group(1)])))
    return out


def read_rows(text: str) -> RowCount | None:
    src = plain(text)
    ordinal = bool(_ORDINAL.search(src))
    for pattern in _ROW_PATTERNS if _may_hold_number(src) else ():
        m = _rx(pattern).search(src)
        if m:
            raw = m.group(1).lower()
            n = int(raw) if raw.isdigit() else NUMBER_WORDS.get(raw)
            if n and 1 < n <= 1000 and not (1800 <= n <= 2100):
                return RowCount(n, m.group(0), ordinal)
    for one_row in _ONE_ROW if _may_name_superlative(src) else ():
        m = _rx(one_row).search(src)
        if m:
            noun = m.group(1).lower()
            if noun in STOP or noun.endswith("s") and not noun.endswith(("ss", "us", "is")):
                continue  # plural or not a noun: several rows may be right
            return RowCount(1, m.group(0), ordinal)
    return None


def read_mentions(toks: list[Token], text: str, skip: list[tuple[int, int]]) -> list[Mention]:
    """Quoted strings, and every sub-run (up to four words) of each run of capitalised words,
    longest first. Month and weekday names, stop words alone, and numbers are not mentions."""
    out: list[Mention] = []
    for q, start in quoted(text):
        if q.strip() and not _spans_overlap((start, start + len(q)), skip):
            out.append(Mention(q.strip(), start, True, q.strip()))
    runs: list[list[Token]] = []
    cur: list[Token] = []
    for t in toks:
        if t.is_word and (t.capitalised or (cur and t.low in _CONNECT)) and not _spans_overlap((t.start, t.end), skip):
            if t.sentence_start and cur:
                runs.append(cur)
                cur = []
            cur.append(t)
        else:
            if cur:
                runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    for run in runs:
        while run and run[-1].low in _CONNECT:
            run = run[:-1]
        whole = " ".join(t.text for t in run)
        for n in range(min(4, len(run)), 0, -1):
            for i in range(len(run) - n + 1):
                part = run[i:i + n]
                if part[0].low in _CONNECT or part[-1].low in _CONNECT:
                    continue
                words = [re.sub(r"'s$", "", t.text) for t in part]
                lows = [w.lower() for w in words]
                if all(w in STOP or w in MONTHS or w in WEEKDAYS or w in _CONNECT for w in lows):
                    continue
                if n == 1 and (len(lows[0]) < 2 or lows[0] in MONTHS or lows[0] in WEEKDAYS):
                    continue
                out.append(Mention(" ".join(words), part[0].start, False, whole))
    return out


def read_filters(question: str, is_id_column: Callable[[str], bool] = lambda words: False) -> QuestionFilters:
    """Everything the grammar reads in ``question``."""
    toks = tokens(question)
    numbers, used = read_numbers(question)
    ids = read_ids(toks, is_id_column)
    # An id phrase whose number is a comparator's ("OrderID of less than 10300") is a comparison.
    ids = [f for f in ids if not any(n.words and n.words in f.words for n in numbers)]
    id_spans = []
    for f in ids:
        i = plain(question).find(f.words)
        if i >= 0:
            id_spans.append((i, i + len(f.words)))
    years = read_years(question, used + id_spans)
    # A number read as a comparison or an id is not also a year, and vice versa a year is not
    # a threshold ("in 2021" is not "2021 or more").
    numbers = [n for n in numbers if not (n.op != "between" and 1800 <= n.value <= 2100 and n.value.is_integer())]
    return QuestionFilters(mentions=read_mentions(toks, question, []), years=years, numbers=numbers,
                           column_comparisons=read_column_comparisons(question), ids=ids,
                           rows=read_rows(question))

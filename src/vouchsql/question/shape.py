"""The SHAPE of a question in English: which way it ranks, what it aggregates, and which
entities it counts or names (issue 12, part 1: direction, aggregates, entities).

A small, deterministic grammar over the question's words; no model. Every claim carries the
words it was read from, so a finding can show them. What the grammar cannot read it leaves
out: an empty :class:`Shape` means "not measured", never a guess.

* **direction** — superlatives of size ("most", "highest", "top", "cheapest", …) and of time
  ("latest", "earliest", "first", "most recent", …), each with its polarity (``high`` or
  ``low``) and class (``size`` or ``time``); an explicit order ("in descending order",
  "from the longest to the shortest") as ``order``.
* **aggregates** — "average/mean" (``avg``), "total/sum/how much" (``sum``), "how many/number
  of/count" (``count``), "maximum/minimum" (``max``/``min``), and "spent/paid/sold … the
  most" (``accumulated``: a total or a count, never an average).
* **events** — a ranking by how often something happened ("best selling", "most purchased",
  "how many times"): what is counted is the events, not distinct things.
* **entities** — the nouns of the question that name exactly one table of the database
  (plural and singular, CamelCase and underscores split), see :func:`entity_tables`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..counting import count_phrases, rows_asked
from ..words import name_forms, singular, words_of
from ..db.profile import Profile, TableProfile


@dataclass(frozen=True)
class Claim:
    kind: str  # direction: "high"/"low"; aggregate: "avg", "sum", "count", "max", "min", "accumulated"
    words: str  # the question's words it was read from
    cls: str = ""  # direction only: "size" or "time"


@dataclass
class Shape:
    directions: list[Claim] = field(default_factory=list)
    order: Claim | None = None  # an explicit order: kind "high" (descending) or "low" (ascending)
    # "in alphabetical order" (kind "low"), "in reverse alphabetical order" ("high"): the rows
    # shown are to be in that order; ``alphabetical_key`` the words that name what is sorted
    # ("by surname", "of their last name"), where the question names it
    alphabetical: Claim | None = None
    alphabetical_key: str | None = None
    aggregates: list[Claim] = field(default_factory=list)
    events: Claim | None = None
    count_phrases: list[str] = field(default_factory=list)  # the words after "how many" / "number of"

    def polarity(self, cls: str) -> str | None:
        """The one polarity the question asks of ``cls`` (``size``/``time``); None when it asks
        none or both (both is not read: "cheapest of the most popular" is two rankings)."""
        kinds = {c.kind for c in self.directions if c.cls == cls}
        return kinds.pop() if len(kinds) == 1 else None


def words(text: str) -> str:
    """The question lower-cased, punctuation as spaces, one space between words."""
    return " " + " ".join(re.sub(r"[^a-z0-9$]+", " ", (text or "").lower()).split()) + " "


# -- direction ---------------------------------------------------------------------------
# Phrases first (longest wins); a span once read is not read again.
_TIME = [
    (r"most recent(ly)?", "high"), (r"latest", "high"), (r"newest", "high"), (r"youngest", "high"),
    (r"earliest", "low"), (r"oldest", "low"), (r"least recent(ly)?", "low"),
    (r"(the|their|its|his|her) first(?! name| names| \d| one| two| three| four| five| ten| time| of all| and last)",
     "low"),
]
_SIZE = [
    (r"(best|top|highest|biggest|largest) selling", "high"),
    (r"most", "high"), (r"highest", "high"), (r"largest", "high"), (r"biggest", "high"),
    (r"greatest", "high"), (r"longest", "high"), (r"best", "high"), (r"top(?! level)", "high"),
    (r"max(imum)?", "high"), (r"most expensive", "high"), (r"heaviest", "high"),
    (r"least", "low"), (r"lowest", "low"), (r"fewest", "low"), (r"smallest", "low"),
    (r"cheapest", "low"), (r"shortest", "low"), (r"min(imum)?", "low"), (r"worst", "low"),
    (r"lightest", "low"), (r"bottom", "low"),
]
# Not rankings: comparators and quantifiers that share the words.
_NOT_RANKING = re.compile(
    r" (at (most|least)|most of|most likely|the least of|not in the least|at the (top|bottom)|"
    r"top up|best practice|(one|two|three|four|five) of the (best|most)) ")
_ORDER = [
    (r"(in )?descending( order)?|highest (to|first)|largest (to|first)|most (to|first)|desc order", "high"),
    (r"(in )?ascending( order)?|lowest (to|first)|smallest (to|first)|least (to|first)|fewest (to|first)|asc order",
     "low"),
]
_FROM_TO = re.compile(r" from (the )?(\w+) to (the )?(\w+) ")
# The plain (not superlative) ends of a stated order: "from high to low", "from small to large".
_PLAIN = {"high": "high", "higher": "high", "large": "high", "larger": "high", "big": "high", "bigger": "high",
          "great": "high", "greater": "high", "many": "high", "more": "high", "long": "high", "longer": "high",
          "heavy": "high", "expensive": "high",
          "low": "low", "lower": "low", "small": "low", "smaller": "low", "little": "low", "few": "low",
          "fewer": "low", "less": "low", "short": "low", "shorter": "low", "light": "low", "cheap": "low"}
_AGE = {"old": "old", "older": "old", "oldest": "old", "young": "young", "younger": "young", "youngest": "young"}


def _mask(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


@lru_cache(maxsize=None)
def _literals(pattern: str) -> tuple[tuple[str, ...], ...] | None:
    """For each top-level alternative of ``pattern``, the runs of literal text outside its
    groups, all of which a match holds; None where ``pattern`` has syntax this does not read
    (then any text may match). ``"(the|its) first(?! name)|max(imum)?"`` gives
    ``((" first",), ("max",))``."""
    alternatives: list[tuple[str, ...]] = []
    runs: list[str] = []
    run, depth = "", 0
    for i, ch in enumerate(pattern):
        if ch == "(":
            if depth == 0:
                runs.append(run)
                run = ""
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth:
            continue
        elif ch == "|":
            runs.append(run)
            alternatives.append(tuple(r for r in runs if r))
            runs, run = [], ""
        elif ch == "?" and pattern[i - 1] == ")":  # an optional group: nothing it holds is required
            continue
        elif ch.isalnum() or ch == " ":
            run += ch
        else:
            return None
    runs.append(run)
    alternatives.append(tuple(r for r in runs if r))
    return tuple(alternatives)


def _may_match(pattern: str, text: str) -> bool:
    """False only where ``pattern`` (of the tables above, matched case-sensitively) cannot
    match ``text``: no alternative's literal runs are all in it. The tables' patterns are
    compiled one by one during each check (re's cache), ≈ 15 M instructions of a ``vouch check``
    start-up for all of them; most questions hold few of their words."""
    needs = _literals(pattern)
    return needs is None or any(all(r in text for r in runs) for runs in needs)


def _read_directions(text: str) -> tuple[list[Claim], Claim | None]:
    order: Claim | None = None
    m = _FROM_TO.search(text)
    if m:
        a = _polarity_of(m.group(2)) or _PLAIN.get(m.group(2))
        b = _polarity_of(m.group(4)) or _PLAIN.get(m.group(4))
        if {_AGE.get(m.group(2)), _AGE.get(m.group(4))} == {"old", "young"}:
            # "from old to young", "from the oldest to the youngest": descending on an age,
            # ascending on a birth date; the reader of the SQL knows which the key is (read
            # before the time words, which would call "oldest" early whatever the key)
            order = Claim("age:" + _AGE[m.group(2)], m.group(0).strip())
        elif a and b and a != b:
            order = Claim(a, m.group(0).strip())
    for pattern, pol in _ORDER:
        hit = re.search(rf" ({pattern}) ", text) if _may_match(pattern, text) else None
        if hit and order is None:
            order = Claim(pol, hit.group(1))
    masked = text
    for m in _NOT_RANKING.finditer(text):
        masked = _mask(masked, m.start() + 1, m.end() - 1)
    found: list[tuple[int, Claim]] = []
    for cls, table in (("time", _TIME), ("size", _SIZE)):
        # longest alternatives first so "most recent" is time, not "most"
        for pattern, pol in sorted(table, key=lambda p: -len(p[0])):
            for hit in re.finditer(rf"(?<= )({pattern})(?= )", masked) if _may_match(pattern, masked) else ():
                found.append((hit.start(), Claim(pol, hit.group(1), cls)))
                masked = _mask(masked, hit.start(), hit.end())
    found.sort(key=lambda f: f[0])
    return [c for _, c in found], order


def _polarity_of(word: str) -> str | None:
    for _, table in (("time", _TIME), ("size", _SIZE)):
        for pattern, pol in table:
            if re.fullmatch(pattern, word):
                return pol
    return None


# -- aggregates --------------------------------------------------------------------------
_AGG = [
    (r"average number of|mean number of|avg number of", "avg"),  # avg of counts: both
    (r"total number of|total count of|number of|count of|count the(?! number| total)|how many", "count"),
    (r"average|mean|avg", "avg"),
    (r"how much|in total|sum of|sum|total", "sum"),
    (r"maximum|max", "max"),
    (r"minimum|min", "min"),
]
# "average invoice total": the total is the thing averaged, not a second aggregate.
_TOTAL_AS_THING = re.compile(r" (average|mean|avg|maximum|minimum|max|min|highest|lowest|largest|smallest)"
                             r"( \w+)? total ")
_ACCUMULATE = re.compile(r" (spent|spend|spends|paid|pay|pays|earned|earn|made|make|generated|sold|bought|"
                         r"purchased|rented|brought in)( \w+){0,2} (the )?(most|least)( money| in \w+)? ")
_EVENTS = re.compile(r" ((best|top|worst|highest|lowest) selling|most (purchased|sold|bought|rented|ordered|"
                     r"played|popular)|least (purchased|sold|bought|rented|ordered|played)|how many times|"
                     r"number of times|times (was|were|has|have) )")


# Not aggregates: "we mean" (a verb), "phone number of"/"ID number of" (a label), and "how many
# minutes/days/pages …" (a measure, which a MAX, a difference or a column answers as well as a COUNT).
_NOT_AGGREGATE = re.compile(
    r" (?:we|i|you|they|to|does|do|did|which|that|this|it|what) (means?)(?= )"
    r"| (?:phone|telephone|fax|mobile|id|identification|serial|reference|account|part|model|version|"
    r"tracking|registration|invoice|order|item|row|line|page|record|ticket|room|house|postal|zip|contact) "
    r"(number of)(?= )"
    r"| (how many) (?=(?:more |)(?:seconds|minutes|hours|days|weeks|months|years|dollars|euros|pounds|cents|"
    r"percent|bytes|kilobytes|megabytes|miles|kilometers|kilometres|pages|units|points) )")
_MEASURE_COUNT = re.compile(r" (how many|number of) (\w+) ")
# "the maximum number of final tables", "the minimum staff number of …": the extreme of a
# number the rows hold (MAX/MIN of a column), which the max/min claim already asks for.
_EXTREME_NUMBER = re.compile(r" (?:maximum|minimum|max|min|highest|lowest|largest|smallest|greatest|biggest)"
                             r"(?: \w+)? (number of)(?= )")


def _read_aggregates(text: str) -> list[Claim]:
    out: list[Claim] = []
    masked = text
    m: re.Match[str] | None
    for m in _NOT_AGGREGATE.finditer(text):
        g = next(i for i in (1, 2, 3) if m.group(i))
        masked = _mask(masked, m.start(g), m.end(g))
    for m in _EXTREME_NUMBER.finditer(text):
        masked = _mask(masked, m.start(1), m.end(1))
    for m in _TOTAL_AS_THING.finditer(text):
        start = m.end() - len("total ") - 1
        masked = _mask(masked, start, m.end() - 1)
    for pattern, kind in _AGG:
        for hit in re.finditer(rf"(?<= )({pattern})(?= )", masked) if _may_match(pattern, masked) else ():
            out.append(Claim(kind, hit.group(1)))
            if kind == "avg" and "number of" in hit.group(1):
                out.append(Claim("count", hit.group(1)))
            masked = _mask(masked, hit.start(), hit.end())
    m = _ACCUMULATE.search(text)
    if m:
        out.append(Claim("accumulated", m.group(0).strip()))
    return out


def _count_phrases(question: str) -> list[str]:
    """The words after each "how many" / "number of" (four at most), unless the question asks
    for rows itself (:mod:`vouchsql.counting` reads both, for every counting reader)."""
    if rows_asked(question):
        return []
    return [p.text for p in count_phrases(question) if p.asks_number and p.words]


_ALPHA_WORDS = {"alphabetic", "alphabetical", "alphabetically", "lexicographic", "lexicographical",
                "lexicographically"}
# Words near an alphabetical order that turn it around: "in reverse alphabetical order",
# "alphabetically in descending order", "in alphabetical order, Z-A".
_REVERSED = {"descending", "decreasing", "reverse", "reversed", "reversely", "backward", "backwards", "inverse",
             "inverted", "anti", "desc"}
# "Alphabetically" asks for an order only beside a verb that shows rows in one.
_ORDER_VERBS = {"sort", "sorted", "sorting", "order", "ordered", "ordering", "arrange", "arranged", "list", "listed",
                "show", "display", "return", "give", "rank", "ranked", "organize", "organized", "put", "present"}
# Not an order of the rows: "non-alphabetic characters", "alphabetically before 'C'", "which
# comes first alphabetically" (a comparison or an extreme, which other parts read).
_NOT_AN_ORDER_AFTER = {"character", "characters", "letter", "letters", "symbol", "symbols", "only", "before",
                       "after", "between", "first", "last", "earlier", "later", "earliest", "latest", "smaller",
                       "greater", "lower", "higher", "less", "more", "precede", "precedes", "follow", "follows"}
_NOT_AN_ORDER_BEFORE = {"non", "first", "last", "earliest", "latest"}
_CLAUSE = {"and", "then", "while", "whereas"}


def _window(tokens: list[str], start: int, stop: int) -> list[str]:
    """The words from ``start`` to ``stop`` (either way) up to the first that starts another clause."""
    out: list[str] = []
    step = 1 if stop >= start else -1
    for i in range(start, stop, step):
        if not 0 <= i < len(tokens) or tokens[i] in _CLAUSE:
            break
        out.append(tokens[i])
    return out if step == 1 else out[::-1]


def _read_alphabetical(text: str) -> tuple[Claim | None, str | None]:
    """The alphabetical order the question asks the rows to be shown in, and the words naming
    its key where it names one. Read word by word: "alphabetical/lexicographic order" or
    "alphabetically" beside a verb that shows rows; reversed by a word such as "reverse" or
    "descending", or "Z to A", within four words of it in the same clause."""
    tokens = text.split()
    for i, word in enumerate(tokens):
        if word not in _ALPHA_WORDS:
            continue
        end = i + 1 if i + 1 < len(tokens) and tokens[i + 1] == "order" else i
        after = _window(tokens, end + 1, end + 5)
        before = _window(tokens, i - 1, i - 5)
        nxt = tokens[end + 1] if end + 1 < len(tokens) else ""
        prev = [t for t in tokens[max(0, i - 2):i] if t != "in"]
        if nxt in _NOT_AN_ORDER_AFTER or (prev and prev[-1] in _NOT_AN_ORDER_BEFORE):
            continue
        if end == i and not set(before + after) & _ORDER_VERBS:
            continue
        # the words around, by place, and the span the claim was read from
        near = list(range(i - len(before), i)) + list(range(end + 1, end + 1 + len(after)))
        turn = [j for j in near if tokens[j] in _REVERSED]
        # "Z to A", "Z-A": the span ends at the A
        turn += [k for j in near if tokens[j] == "z" for k in (j + 1, j + 2) if k in near and tokens[k] == "a"][:1]
        reversed_ = bool(turn)
        lo, hi = (min([i] + turn[:1]), max([end] + turn[:1])) if turn else (i, end)
        key = None
        for side in (after, before):
            if "by" in side or (side is after and side[:1] == ["of"]):
                at = side.index("by") if "by" in side else 0
                key = " ".join(side[at:at + 4]) if side is after else " ".join(side[at:])
                break
        return Claim("high" if reversed_ else "low", " ".join(tokens[lo:hi + 1])), key
    m = re.search(r" (from )?(a to z|z to a) ", text)
    if m:
        return Claim("high" if m.group(2) == "z to a" else "low", m.group(0).strip()), None
    return None, None


def read_shape(question: str) -> Shape:
    text = words(question)
    directions, order = _read_directions(text)
    events = _EVENTS.search(text)
    alphabetical, alphabetical_key = _read_alphabetical(text)
    return Shape(directions=directions, order=order, alphabetical=alphabetical, alphabetical_key=alphabetical_key,
                 aggregates=_read_aggregates(text),
                 events=Claim("events", events.group(1)) if events else None,
                 count_phrases=_count_phrases(question))


# -- entities ----------------------------------------------------------------------------

def _forms(table: TableProfile) -> set[str]:
    return {f for f in name_forms(table.name) if f}


# Words after an entity's name that leave it the head of its phrase ("rentals in July",
# "customers who …"); any other word after it makes the name a modifier where columns are
# named after the entity.
_FUNCTION_WORDS = frozenset("""of for in by with and or that who whom which whose per is are was were be been to from
on at each the a an as than has have had did do does made make placed took rented bought ordered were not no
all any every this these those their its ?""".split())


def entity_tables(phrase: str, profile: Profile) -> dict[str, TableProfile]:
    """The tables each entity noun in ``phrase`` names, keyed by the words that name it,
    only where the words name exactly one table. Longest names first: "invoice lines" is
    InvoiceLine, not Invoice; a word inside a longer table name that the question does not
    spell out is not read ("film" is ``film``, never ``film_actor``)."""
    text = words(phrase)
    named, by_form, columns = profile.memo("entity_forms", lambda: _entity_forms(profile))
    out: dict[str, TableProfile] = {}
    masked = _mask_imperatives(phrase, text)
    for form, t in named:
        if f" {form} " not in masked:  # the common case, without a regular expression
            continue
        for hit in re.finditer(rf"(?<= ){re.escape(form)}(?= )", masked):
            same = by_form[form]
            after = text[hit.end():].split()[:1]
            # "rental rate" is the column rental_rate, not the entity rental; and where columns
            # are named after the entity ("rental_duration", "rental_date"), the entity's name
            # before another noun ("rental price", "rental days") is a modifier too.
            in_column = bool(after) and (
                any(c == f"{form} {after[0]}" or c.startswith(f"{form} {after[0]} ") for c in columns)
                or (after[0] not in _FUNCTION_WORDS and any(c.startswith(f"{form} ") for c in columns)))
            if len({u.name for u in same}) == 1 and not in_column:
                # this profile's own copy of the table (the memo holds the first profile's)
                out.setdefault(form, profile.find(t.qualified) or t)
            masked = _mask(masked, hit.start(), hit.end())
    return out


# A clause that starts with a verb and then its object ("Show the names…", "List all …",
# "Count each …", "Name the …"), after a courtesy ("Please show…", "Can you list…") or not:
# that first word asks, it names no entity, even where a table is called ``show`` or ``list``.
# A verb of asking opens a request whatever follows ("Show names of…"); another word only
# where its object follows ("Name the…", not "Name of the conductor").
_IMPERATIVE = re.compile(
    r"(?:^\s*|[.?!;:]\s+|\band\s+)(?:(?:please|kindly|also|then|now|just)\s+|"
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?:(show|list|display|give|find|return|tell|report|output|retrieve|fetch|provide|identify|compute|"
    r"calculate)\s+|([a-z]+)\s+(?=(?:the|all|me|us|each|every|a|an|how|what|which|who|whose|any|those|these|"
    r"only|them|it|its|their|his|her|our|my)\b))", re.I)


def entity_words(question: str) -> str:
    """:func:`words` of ``question`` with each clause's opening verb blanked: what entity
    readers read (the clause punctuation is still there to find the verbs)."""
    return _mask_imperatives(question, words(question))


def _mask_imperatives(phrase: str, text: str) -> str:
    """``text`` (:func:`words` of ``phrase``) with each clause's opening verb blanked."""
    starts = []
    for m in _IMPERATIVE.finditer(phrase or ""):
        verb = 1 if m.group(1) else 2
        starts.append(len(re.findall(r"[a-z0-9$]+", phrase[:m.start(verb)].lower())))
    if not starts:
        return text
    spans = [(m.start(), m.end()) for m in re.finditer(r"[a-z0-9$]+", text)]
    for k in starts:
        if k < len(spans):
            text = _mask(text, *spans[k])
    return text


def _entity_forms(profile: Profile) -> tuple[list[tuple[str, TableProfile]], dict[str, list[TableProfile]], set[str]]:
    """Every table's name forms, longest first; the tables each form names; the words of
    every column name. Built once per catalogue (Profile.memo)."""
    named: list[tuple[str, TableProfile]] = []
    for t in profile.tables:
        for f in _forms(t):
            named.append((f, t))
    named.sort(key=lambda p: -len(p[0]))
    by_form: dict[str, list[TableProfile]] = {}
    for f, t in named:
        by_form.setdefault(f, []).append(t)
    columns = {words_of(c) for c in profile.column_owners()}
    return named, by_form, columns


def names_entity(column: str, table: TableProfile) -> bool:
    """Whether a column names one row of ``table`` by its name: ``ArtistId``/``artist_id``/
    ``artist`` for ``Artist``, ``Region`` for ``Region``."""
    cw = words_of(column).split()
    if cw and cw[-1] in ("id", "key", "code", "no", "num"):
        cw = cw[:-1]
    if not cw:
        return False
    tw = words_of(table.name).split()
    if bool(tw) and [singular(w) for w in cw] == [singular(w) for w in tw]:
        return True
    # an abbreviation of a one-word table's name, as the last word: ``dept``/``owner_dept`` for
    # ``departments``, ``emp`` for ``employees``, ``cust_no`` for ``customer``
    return len(tw) == 1 and len(cw) <= 2 and _abbreviates(cw[-1], singular(tw[0]))


@lru_cache(maxsize=65536)  # a warehouse repeats its column names across thousands of tables
def _column_key(column: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """What :func:`names_entity` compares of a column: its singular words without a trailing
    id/key/code/no/num, and those words as written."""
    cw = words_of(column).split()
    if cw and cw[-1] in ("id", "key", "code", "no", "num"):
        cw = cw[:-1]
    return (tuple(singular(w) for w in cw), tuple(cw)) if cw else None


@lru_cache(maxsize=65536)
def table_words(name: str) -> tuple[str, ...]:
    """A table name's words, each singular: ``film_categories`` → ``("film", "category")``."""
    return tuple(singular(w) for w in words_of(name).split())


class EntityNames:
    """:func:`names_entity` over a whole catalogue, by lookup instead of a scan of every
    (column, table) pair: which tables a column names, and which tables have a column naming
    a table. Built once per catalogue (``Profile.memo``); 20,000 tables scanned pair by pair
    cost seconds per question."""

    def __init__(self, profile: Profile) -> None:
        self.by_words: dict[tuple[str, ...], set[str]] = {}  # a table's singular words → its names
        self.one_word: dict[str, list[tuple[str, str]]] = {}  # 3-letter prefix → (singular word, table)
        self.naming: dict[tuple[str, ...], set[str]] = {}  # a column key → tables with such a column
        self.short: dict[str, set[tuple[str, str]]] = {}  # 3-letter prefix → (last column word, table)
        # Each table's singular words, and the tables holding a foreign key to each table
        # (lower case): what the checks' entity lookups read, table by table.
        self.words: list[tuple[str, tuple[str, ...]]] = []
        self.referrers: dict[str, set[str]] = {}
        for t in profile.tables:
            tw = table_words(t.name)
            self.words.append((t.name, tw))
            if tw:
                self.by_words.setdefault(tw, set()).add(t.name)
                if len(tw) == 1:
                    self.one_word.setdefault(tw[0][:3], []).append((tw[0], t.name))
            for fk in t.foreign_keys:
                # by the referenced table's own name, as every other index here (a foreign
                # key names a table outside the default schema ``schema.table``)
                self.referrers.setdefault(fk.ref_table.rpartition(".")[2].lower(), set()).add(t.name)
        for column, owners in profile.column_owners().items():
            key = _column_key(column)
            if key is None:
                continue
            self.naming.setdefault(key[0], set()).update(owners)
            if len(key[1]) <= 2 and len(key[1][-1]) >= 3:
                self.short.setdefault(key[1][-1][:3], set()).update((key[1][-1], o) for o in owners)

    def named_by(self, column: str) -> set[str]:
        """The tables ``column`` names (``names_entity(column, t)``)."""
        key = _column_key(column)
        if key is None:
            return set()
        out = set(self.by_words.get(key[0], ()))
        if len(key[1]) <= 2:
            short = key[1][-1]
            out |= {name for word, name in self.one_word.get(short[:3], []) if _abbreviates(short, word)}
        return out

    def naming_tables(self, table: str) -> set[str]:
        """The tables with a column that names ``table`` (``names_entity(c, table)``)."""
        tw = table_words(table)
        if not tw:
            return set()
        out = set(self.naming.get(tw, ()))
        if len(tw) == 1:
            word = tw[0]
            out |= {name for short, name in self.short.get(word[:3], set()) if _abbreviates(short, word)}
        return out


def _abbreviates(short: str, word: str) -> bool:
    if not (3 <= len(short) < len(word)) or short[:3] != word[:3]:
        return False
    rest = iter(word[3:])
    return all(ch in rest for ch in short[3:])


__all__ = ["Claim", "EntityNames", "Shape", "entity_tables", "names_entity", "read_shape", "table_words", "words"]

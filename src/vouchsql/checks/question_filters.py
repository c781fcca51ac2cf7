"""Cap: the SQL leaves out or changes a filter the question asks for (issue 12, part 1,
the filter half of question–SQL alignment).

The question is read by :mod:`vouchsql.question.filters` (values it names, years and months,
comparisons with numbers or columns, ids, how many rows) and each constraint is linked to the
database (the value index of :mod:`vouchsql.question.values`, the profile's date columns and
column names) and checked against the SQL's tree:

- a named value held by a column of a table the SQL reads must be filtered on: a literal that
  matches it (``=``, ``IN``, ``LIKE``), or any condition on a column holding it, or on the key
  of its table (``EmployeeId = 5`` for "Steven Buchanan");
- a named value only a table the SQL does not read holds, exactly ('Rock', a ``Genre.Name``,
  for ``SELECT COUNT(*) FROM Track``), is looked for through a table the SQL reads that holds
  that table's key (``Track.GenreId``): a constant compared with that key is the filter; with
  none, the filter is added as ``GenreId IN (SELECT GenreId FROM Genre WHERE Name = 'Rock')``
  and fires only if the answer changes (the index covers the tables the SQL reads, one join
  away, and those the question names: a value two joins away is not looked for);
- a year (and month) inside the range of a date column the SQL reads must appear as a literal;
- "more than N", "at least N", … against the operator used with N (``>`` vs ``>=``);
- "top 5", "the 10 … with the most", "the album with the most …" against LIMIT and OFFSET.

Precision first: anything the grammar or the database cannot settle is "not measured".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from sqlglot import exp

from ..answer import CheckResult
from ..db.profile import Profile, TableProfile
from ..db.keys import key_map
from ..errors import VouchError
from ..sql.edit import column as column_ref
from ..sql.inspect import table_key
from ..sql.scope import Ref, Scope
from ..sql.tree import literal_comparisons, selects
from ..question.filters import STOP, Mention, NumberFilter, QuestionFilters as FiltersRead, read_filters
from ..question.words import fold, singular, squash
from ..words import words_of
from . import evidence as ev
from .base import CheckContext, report, unparsed

if TYPE_CHECKING:  # only annotations name it: vouchsql.question.values is imported where the probe reads values
    from ..question.values import Match

_INEQ: dict[type[exp.Expr], str] = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.In,
               exp.Between, exp.Is, exp.Glob)
_YEAR_IN_TEXT = re.compile(r"(?<!\d)(1[89]\d\d|20\d\d)(?!\d)")
_DATE_LIKE = re.compile(r"^(\d{4})-\d{2}")


def _names_its_column(question: str, text: str, column: str) -> bool:
    """Whether ``text`` is written in the question as part of ``column``'s own name ("Package
    Option" for Package_Option): every word of ``text`` is a word of the column's name and the
    question writes the whole name (singular or plural) around it."""
    cw = [singular(w) for w in words_of(column).lower().split()]
    tw = [singular(w) for w in fold(text).split()]
    if len(cw) < 2 or not tw or not set(tw) <= set(cw):
        return False
    q = [singular(w) for w in re.findall(r"[a-z0-9]+", fold(question))]
    return any(q[i:i + len(cw)] == cw for i in range(len(q) - len(cw) + 1))


def _sql(node: exp.Expr) -> str:
    text = node.sql(dialect="sqlite")
    return text if len(text) <= 160 else text[:157] + "..."


def _number(node: exp.Expression | None) -> float | None:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = _number(node.this)
        return -v if v is not None else None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def _like_regex(pattern: str) -> re.Pattern[str]:
    # LIKE's one-character wildcard stands in as NUL while the pattern is folded: fold() reads
    # '_' as a space, and 'b_a%l' would then match only 'b a…l', never 'Brazil'.
    folded = fold(pattern.replace("_", "\0"))
    out = "".join(".*" if ch == "%" else "." if ch == "\0" else re.escape(ch) for ch in folded)
    return re.compile("^" + out + "$")


class _Sql:
    """What the check reads from the SQL's tree."""

    def __init__(self, tree: exp.Expression, tables: list[str]) -> None:
        self.tree = tree
        self.tables = {t.lower() for t in tables}
        self.strings: list[str] = [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string]
        self.numbers = [v for v in (_number(lit) for lit in tree.find_all(exp.Literal)) if v is not None]
        self.predicates = [p for p in tree.find_all(*_PREDICATES)]
        self.inequalities: list[tuple[str, float, exp.Expr]] = []
        for node in tree.find_all(*_INEQ):
            op = _INEQ[type(node)]
            right, left = _number(node.expression), _number(node.this)
            if right is not None and left is None:
                self.inequalities.append((op, right, node))
            elif left is not None and right is None:
                self.inequalities.append((_FLIP[op], left, node))
        for node in tree.find_all(exp.Between):
            lo, hi = _number(node.args.get("low")), _number(node.args.get("high"))
            if lo is not None and hi is not None:
                self.inequalities.append((">=", lo, node))
                self.inequalities.append(("<=", hi, node))
        # every ordering comparison, readable or not (``BirthDate < date('now', '-60 years')``)
        self.comparisons = list(tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between))
        self.years: set[int] = set()
        for s in self.strings:
            self.years.update(int(y) for y in _YEAR_IN_TEXT.findall(s))
        self.years.update(int(v) for v in self.numbers if v.is_integer() and 1800 <= v <= 2100)

    def predicate_on(self, columns: set[str], *, with_literal: bool = False) -> exp.Expr | None:
        """A condition on one of ``columns``; with ``with_literal``, only one that compares it
        with a constant (``EmployeeId = 5``, not the join ``c.CustomerId = i.CustomerId``)."""
        for p in self.predicates:
            if with_literal and not any(True for _ in p.find_all(exp.Literal)):
                continue
            if any(c.name.lower() in columns for c in p.find_all(exp.Column)):
                return p
        return None

    def literal_matches(self, texts: set[str]) -> str | None:
        """A string literal that names one of ``texts`` (folded), directly or as a LIKE pattern."""
        for s in self.strings:
            f = fold(s)
            if not f:
                continue
            if f in texts or (len(f) >= 3 and any(f in t for t in texts)) or any(t in f for t in texts if len(t) >= 3):
                return s
            if "%" in s or "_" in s:
                rx = _like_regex(s)
                if any(rx.match(t) for t in texts):
                    return s
        return None


def _rows_with(ctx: CheckContext,
               condition: Callable[[str, exp.Identifier], exp.Expr | None]) -> list[tuple[Any, ...]] | None:
    """The shown query's rows with ``condition(table, ref)`` added to the WHERE of every SELECT
    that itself reads ``table`` (the profile's key, lower case; ``ref`` its alias as written,
    quotes included) where it gives a condition; at most one row more than the result's. None
    when that cannot be tried: no result or a cut one, a query qualify could not read, no SELECT
    given a condition, a probe error."""
    result, insp = ctx.result, ctx.inspection
    if result.error is not None or result.truncated or insp is None or not insp.qualified_ok:
        return None
    probe = insp.qualified.copy()
    added = 0
    for select in list(probe.find_all(exp.Select)):
        for t in select.find_all(exp.Table):
            if t.parent_select is not select:
                continue
            cond = condition(table_key(t, ctx.profile.default_schema).lower(), t.args["alias"].this if t.alias else t.this)
            if cond is not None:
                select.where(cond, copy=False)
                added += 1
    if not added:
        return None
    try:
        return ctx.probe.rows(probe, max_rows=len(result.rows) + 1)
    except VouchError:
        return None


def _same_rows(a: Sequence[Sequence[Any]], b: Sequence[Sequence[Any]]) -> bool:
    key: Callable[[Sequence[Sequence[Any]]], list[str]] = lambda rs: sorted(repr(tuple(r)) for r in rs)  # noqa: E731
    return key(a) == key(b)


def _filter_changes_nothing(ctx: CheckContext, raw: set[tuple[str, str, str]]) -> bool:
    """Adding the filter the question names (``Title = 'Sales Support Agent'`` on every SELECT
    that reads its table) leaves the result as it is: the rows the SQL reads all hold the value
    already (every support rep is a Sales Support Agent), so its absence is not evidence.
    False when it cannot be tried (no result, a truncated one, an empty one, a probe error)."""
    if not ctx.result.rows:
        return False
    by_table: dict[str, dict[str, set[str]]] = {}
    for table, column, value in raw:
        by_table.setdefault(table.lower(), {}).setdefault(column, set()).add(value)

    def condition(table: str, ref: exp.Identifier) -> exp.Expr | None:
        if table not in by_table:
            return None
        return exp.or_(*[column_ref(ref, col, ctx.probe.dialect).isin(*[exp.Literal.string(v) for v in sorted(vals)])
                         for col, vals in sorted(by_table[table].items())])

    rows = _rows_with(ctx, condition)
    return rows is not None and _same_rows(rows, ctx.result.rows)


def _key_rows_hold(ctx: CheckContext, raw: set[tuple[str, str, str]], on_key: exp.Expr, sql_columns: set[str],
                   key_of: dict[str, str]) -> bool | None:
    """Whether the rows a key constant picks (``degree_program_id = 1``) hold one of the values
    the question names (``'Bachelor'`` in ``Degree_Programs.degree_summary_name``), asked of the
    value's own table by its key. ``on_key``: the SQL's predicate on a key; ``sql_columns``: the
    names (lower case) the SQL compares with constants there; ``key_of``: each value table's key
    column. None where it cannot be told (no constant compared by = or IN, a probe error)."""
    # the comparison itself, where the predicate holds it deeper (an IN subquery, an AND)
    cmp = next((n for n in on_key.find_all(exp.EQ, exp.In)
                if isinstance(n.this, exp.Column) and n.this.name.lower() in sql_columns
                and (isinstance(n, exp.In) or isinstance(n.expression, exp.Literal))), None)
    if cmp is None:
        return None
    constants = [n for n in ([cmp.expression] if isinstance(cmp, exp.EQ) else cmp.expressions)
                 if isinstance(n, exp.Literal)]
    if not constants:
        return None
    by_table: dict[str, dict[str, set[str]]] = {}
    for table, column, value in raw:
        by_table.setdefault(table, {}).setdefault(column, set()).add(value)
    asked = False
    for table, columns in sorted(by_table.items()):
        tp = ctx.profile.table(table)
        key = key_of.get(table)
        if tp is None or key is None:
            continue
        asked = True
        cond = exp.and_(exp.column(key, quoted=True).isin(*[c.copy() for c in constants]),
                        exp.or_(*[exp.column(col, quoted=True).isin(*[exp.Literal.string(v) for v in sorted(vals)])
                                  for col, vals in sorted(columns.items())]))
        probe = (exp.select(exp.Literal.number(1)).from_(exp.to_table(tp.qualified, dialect=ctx.probe.dialect))
                 .where(cond).limit(1))
        try:
            if ctx.probe.rows(probe, max_rows=1):
                return True
        except VouchError:
            return None
    return False if asked else None


def _link_to(ctx: CheckContext, sql: "_Sql", table: str) -> tuple[str, str, str] | None:
    """(read table, its column, ``table``'s key) for a table the SQL reads whose column holds
    the key of ``table`` (``Track.GenreId`` for ``Genre``), declared links first; None if none."""
    km = key_map(ctx.profile)
    target = km.table(table)
    key = km.own_key(target) if target is not None else None
    if target is None or key is None:
        return None
    for read in sorted(sql.tables):
        for mine, theirs, _, _ in km.links(read, table):
            if theirs.table.lower() == target.qualified.lower() and theirs.column.lower() == key.lower() \
                    and mine.table.lower() != target.qualified.lower():
                return mine.table, mine.column, key
    return None


def _with_link_filter(ctx: CheckContext, link: tuple[str, str, str], table: str, column: str,
                      values: list[str]) -> bool | None:
    """Whether the answer changes once every SELECT that reads the linked table keeps only the
    rows whose key is one of ``table``'s rows holding ``values`` (``t.GenreId IN (SELECT GenreId
    FROM Genre WHERE Name IN ('Rock'))``); None where that cannot be told."""
    read, col, key = link
    target = ctx.profile.table(table)
    assert target is not None  # _link_to found the table
    dialect = ctx.probe.dialect
    inner = (exp.select(column_ref(None, key, dialect))
             .from_(exp.to_table(ctx.probe.table_sql(target.name, target.schema_name), dialect=dialect))
             .where(column_ref(None, column, dialect).isin(*[exp.Literal.string(v) for v in values])))
    rows = _rows_with(ctx, lambda t, ref: column_ref(ref, col, dialect).isin(query=inner.copy())
                      if t == read.lower() else None)
    return None if rows is None else not _same_rows(rows, ctx.result.rows)


def _unread_table(ctx: CheckContext, sql: "_Sql", m: Mention, matches: list[Match], findings: list[dict[str, Any]],
                  measured: list[str], not_measured: list[str]) -> None:
    """A value the question names that only a table the SQL does not read holds ('Rock', a
    Genre.Name, for ``SELECT COUNT(*) FROM Track``). A finding when a table the SQL reads holds
    that table's key (``Track.GenreId``), the SQL compares that key with no constant, and
    keeping only the rows that hold the value changes the answer; "not measured" otherwise.
    Only an exact (or singular) match counts: a near spelling in another table is no evidence."""
    first = matches[0]
    where = f"'{m.text}': a value of {first.table}.{first.column}, a table the SQL does not read"
    strong = [x for x in matches if x.how in ("exact", "singular")]
    tables = sorted({x.table for x in strong}, key=str.lower)
    if len(tables) != 1:  # a near spelling, or several tables hold it: which one is meant is not read
        not_measured.append(where)
        return
    table = tables[0]
    columns = sorted({x.column for x in strong})
    link = _link_to(ctx, sql, table) if len(columns) == 1 else None
    if link is None:
        not_measured.append(where + (f", and no table it reads holds {table}'s key" if len(columns) == 1 else ""))
        return
    read, col, key = link
    on_key = sql.predicate_on({col.lower()}, with_literal=True)
    if on_key is not None:
        ref = f"{table}.{columns[0]}"
        raw = {(table, columns[0], x.value) for x in strong}
        if _key_rows_hold(ctx, raw, on_key, {col.lower()}, {table: key}) is False:
            findings.append({"kind": "value", "words": f"'{m.text}'", "expected": f"a filter on {ref}",
                             "sql": _sql(on_key),
                             "problem": f"the question names '{m.text}' ({ref}) but the SQL filters {_sql(on_key)}, "
                                        f"whose {table} row holds no such value"})
            return
        measured.append(f"'{m.text}' ({ref}): the SQL filters on {read}.{col} instead ({_sql(on_key)})")
        return
    changes = _with_link_filter(ctx, link, table, columns[0], sorted({x.value for x in strong}))
    if changes is None:
        not_measured.append(where + " (the filter through its key could not be tried)")
    elif not changes:
        not_measured.append(f"'{m.text}' ({table}.{columns[0]}): every row the SQL reads already holds it "
                            f"through {read}.{col} (adding the filter changes nothing)")
    else:
        ref = f"{table}.{columns[0]}"
        findings.append({"kind": "value", "words": f"'{m.text}'", "expected": f"a filter on {ref}",
                         "sql": None,
                         "problem": f"the question names '{m.text}' ({ref}) but the SQL reads no {table} and "
                                    f"does not filter {read}.{col} on it; with that filter the answer changes"})


def _schema_names(profile: Profile) -> set[str]:
    names = {squash(c) for c in profile.column_owners()}
    for t in profile.tables:
        names.add(squash(t.name))
        names.add(squash(" ".join(singular(w) for w in fold(t.name).split())))
    return names


def _is_schema_words(text: str, names: set[str]) -> bool:
    words = fold(re.sub(r"'s\b", "", text)).split()
    whole = squash(text)
    if whole in names or squash(" ".join(singular(w) for w in words)) in names:
        return True
    return all(squash(w) in names or squash(singular(w)) in names for w in words)


class QuestionFilters:
    name = "question_filters"
    kind = "cap"
    Evidence = ev.QuestionFiltersEvidence
    # COMPLETE: the share of the question's filters read that the SQL has (IES §3.2's judge
    # term, measured deterministically where a filter was read).
    feeds = ("complete",)

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None or ctx.inspection is None:
            return unparsed(self)
        profile = ctx.profile
        insp = ctx.inspection
        names = profile.memo("schema_names", lambda: _schema_names(profile))
        id_columns = profile.memo("id_columns", lambda: {
            squash(c) for c in profile.column_owners() if squash(c).endswith("id")} | {
            squash(k) for t in profile.tables for k in t.primary_key if any(c.name == k for c in t.columns)})
        read = read_filters(ctx.question, lambda words: squash(words) in id_columns)
        sql = _Sql(insp.qualified if insp.qualified_ok else ctx.tree, insp.tables)
        # each one found: a table of the profile, by its own key
        read_tables = cast("list[TableProfile]", [profile.table(t.qualified) for t in profile.tables
                                                  if t.qualified.lower() in sql.tables])
        findings: list[dict[str, Any]] = []
        measured: list[str] = []
        not_measured: list[str] = []
        self._values(ctx, read, sql, names, findings, measured, not_measured)
        self._years(read, sql, read_tables, findings, measured, not_measured)
        self._numbers(read, sql, read_tables, names, findings, measured, not_measured)
        self._columns(read, sql, read_tables, findings, measured, not_measured)
        self._ids(read, sql, read_tables, findings, measured, not_measured)
        self._rows(read, ctx.tree, findings, measured, not_measured)
        if not any(f["kind"] == "value" for f in findings):
            self._sibling_values(ctx, names, findings, measured)
        parts = len(measured) + len(findings)
        terms = {"complete": len(measured) / parts} if parts else None
        if findings:
            detail = "; ".join(f["problem"] for f in findings)
            return report(self, True, detail, findings=findings, measured=measured, not_measured=not_measured,
                          terms=terms)
        if measured:
            detail = "the SQL has the filters the question asks for: " + ", ".join(measured)
        else:
            detail = "not measured: the question names no filter this check can read"
        return report(self, False, detail, measured=measured, not_measured=not_measured, terms=terms)

    # -- values -----------------------------------------------------------------------
    def _values(self, ctx: CheckContext, read: FiltersRead, sql: _Sql, names: set[str],
                findings: list[dict[str, Any]], measured: list[str], not_measured: list[str]) -> None:
        assert ctx.inspection is not None  # run() reads only an inspected SQL
        index = None
        consumed: list[tuple[int, int]] = []
        outputs = {fold(o.name) for o in ctx.inspection.outputs}
        groups: dict[frozenset[str], dict[str, Any]] = {}
        # the question's words that an SQL string literal writes out whole ("government is US
        # territory" filtered by 'US Territory'): a mention inside them is that value, filtered
        stated = [(h.start(), h.end(), lit) for lit in sql.strings if len(lit.strip()) >= 3
                  for h in re.finditer(rf"(?<!\w){re.escape(lit.strip())}(?!\w)", ctx.question, re.I)]
        for m in read.mentions:
            span = (m.start, m.start + len(m.text))
            if any(span[0] < e and s < span[1] for s, e in consumed):
                continue
            inside = next((lit for s, e, lit in stated if s <= span[0] and span[1] <= e and e - s > span[1] - span[0]),
                          None)
            if inside is not None:
                measured.append(f"'{m.text}': part of '{inside}', which the SQL filters on")
                consumed.append(span)
                continue
            if _is_schema_words(m.text, names) or fold(m.text) in outputs:
                continue
            if index is None:
                index = ctx.probe.values(ctx.question)
            matches = index.lookup(m.text, quoted=m.quoted)
            if not matches:
                continue
            consumed.append(span)
            # "the Package Option of …" names the column Package_Option, whose values include
            # 'Option': the words name the column, not one of its values
            matches = [x for x in matches if not _names_its_column(ctx.question, m.text, x.column)]
            if not matches:
                continue
            here = [x for x in matches if x.table.lower() in sql.tables]
            if not here:
                _unread_table(ctx, sql, m, matches, findings, measured, not_measured)
                continue
            columns = frozenset(x.column.lower() for x in here)
            g = groups.setdefault(columns, {"mentions": [], "values": set(), "tables": set(), "refs": set()})
            if m.text not in [x.text for x in g["mentions"]]:
                g["mentions"].append(m)
            g["values"].update(fold(x.value) for x in here)
            g["values"].add(fold(m.text))
            g["tables"].update(x.table for x in here)
            g["refs"].update(f"{x.table}.{x.column}" for x in here)
            g.setdefault("raw", set()).update((x.table, x.column, x.value) for x in here)
        for columns, g in groups.items():
            words = ", ".join(f"'{m.text}'" for m in g["mentions"])
            refs = ", ".join(sorted(g["refs"]))
            literal = sql.literal_matches(g["values"])
            if literal is not None:
                measured.append(f"{words} ({refs}) filtered by '{literal}'")
                continue
            on_column = sql.predicate_on(set(columns))
            # the value index holds only the profile's tables
            keys = {k.lower() for t in g["tables"] for k in (cast(TableProfile, ctx.profile.table(t)).primary_key or [])}
            on_key = sql.predicate_on(keys, with_literal=True) if keys else None
            if on_key is not None:
                pks = {t: tp.primary_key[0] for t in g["tables"]
                       if (tp := ctx.profile.table(t)) is not None and len(tp.primary_key) == 1}
                held = _key_rows_hold(ctx, g["raw"], on_key, keys, pks)
                if held is False:
                    findings.append({"kind": "value", "words": words, "expected": f"a filter on {refs}",
                                     "sql": _sql(on_key),
                                     "problem": f"the question names {words} ({refs}) but the SQL filters "
                                                f"{_sql(on_key)}, whose row holds no such value"})
                    continue
                measured.append(f"{words}: the SQL filters on the key instead ({_sql(on_key)})")
                continue
            if on_column is None and _filter_changes_nothing(ctx, g["raw"]):
                not_measured.append(f"{words} ({refs}): every row the SQL reads already holds it "
                                    f"(adding the filter changes nothing)")
                continue
            if on_column is None:
                findings.append({"kind": "value", "words": words, "expected": f"a filter on {refs}",
                                 "sql": None,
                                 "problem": f"the question names {words} ({refs}) but the SQL has no filter on it"})
                continue
            strings = [lit.this for lit in on_column.find_all(exp.Literal) if lit.is_string]
            question = fold(ctx.question)
            if strings and all(fold(s) not in question for s in strings) and not any(
                    "%" in s or "_" in s for s in strings):
                findings.append({"kind": "value", "words": words, "expected": f"a filter on {refs} for {words}",
                                 "sql": _sql(on_column),
                                 "problem": f"the question names {words} ({refs}) but the SQL filters "
                                            f"{_sql(on_column)}"})
            else:
                not_measured.append(f"{words}: the SQL filters {_sql(on_column)}")

    # -- other values of a column the SQL filters --------------------------------------------
    def _sibling_values(self, ctx: CheckContext, names: set[str], findings: list[dict[str, Any]],
                        measured: list[str]) -> None:
        """The SQL compares a column with some strings ('cat'); the question names, in its own
        lower-case words, another value that column holds ("dog" in "cat or dog pets", "dog
        pets" answered with 'cat'): a value asked for and left out. Only values of columns the
        SQL itself filters are read, so a common word is read as a value only where the SQL
        already says that column matters."""
        filtered: dict[tuple[str, str], tuple[str, set[str], list[str]]] = {}
        ref: Ref | str | None  # a column the SQL compares; below, a filtered column's label
        assert ctx.tree is not None  # run() reads only a parsed tree
        for select in selects(ctx.tree):
            scope = None
            for col, lit, node in literal_comparisons(select):
                if not isinstance(node, (exp.EQ, exp.In)) or not (isinstance(lit, exp.Literal) and lit.is_string):
                    continue
                scope = scope or Scope(select, ctx.profile)
                ref = scope.resolve(col)
                if ref is None:
                    continue
                _, folded, sqls = filtered.setdefault((ref.table.lower(), ref.column.lower()),
                                                      (f"{ref.table}.{ref.column}", set(), []))
                folded.add(fold(lit.this))
                if _sql(node) not in sqls:
                    sqls.append(_sql(node))
        if not filtered:
            return
        index = ctx.probe.values(ctx.question)
        held: dict[tuple[str, str], set[str]] = {k: set() for k in filtered}
        for value, hits in index.exact.items():
            for t, c, _ in hits:
                if (t.lower(), c.lower()) in held:
                    held[(t.lower(), c.lower())].add(value)
        # words the question writes in lower case: a capitalised name is the mention reader's
        # (_values), which also reads the narrative a long question tells around its request
        raw = re.findall(r"[^\W_]+", ctx.question or "")
        words = [fold(w) if w.islower() else "" for w in raw]
        grams = {" ".join(words[i:i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)
                 if all(words[i:i + n])}
        grams |= {" ".join(singular(w) for w in g.split()) for g in grams}
        for key, (ref, lits, sqls) in sorted(filtered.items()):
            named = sorted(v for v in held[key] if v in grams and v not in lits and len(v) >= 3
                           and v not in STOP and not _is_schema_words(v, names)
                           and not any(v in lit or lit in v for lit in lits))
            if named:
                said = ", ".join(f"'{v}'" for v in named)
                findings.append({"kind": "value", "words": said, "expected": f"a filter on {ref} for {said}",
                                 "sql": "; ".join(sqls),
                                 "problem": f"the question names {said}, a value of {ref}, but the SQL compares "
                                            f"{ref} with {', '.join(repr(x) for x in sorted(lits))} only"})

    # -- years and months -----------------------------------------------------------------
    def _years(self, read: FiltersRead, sql: _Sql, read_tables: list[TableProfile], findings: list[dict[str, Any]],
               measured: list[str], not_measured: list[str]) -> None:
        ranges = []
        for t in read_tables:
            for c in t.columns:
                lo, hi = c.min, c.max
                if isinstance(lo, str) and isinstance(hi, str) and _DATE_LIKE.match(lo) and _DATE_LIKE.match(hi):
                    ranges.append((int(lo[:4]), int(hi[:4])))
                elif ("year" in c.name.lower() and isinstance(lo, (int, float)) and isinstance(hi, (int, float))
                      and 1800 <= lo <= hi <= 2100):
                    ranges.append((int(lo), int(hi)))
        seen = set()
        for y in read.years:
            if (y.year, y.month, y.relation) in seen:
                continue
            seen.add((y.year, y.month, y.relation))
            inside = [r for r in ranges if r[0] <= y.year <= r[1]] if y.relation == "in" else ranges
            if not inside:
                not_measured.append(f"'{y.words}': no date column the SQL reads covers {y.year}")
                continue
            if all(lo == hi for lo, hi in inside):
                not_measured.append(f"'{y.words}': every row is from {y.year}, the filter changes nothing")
                continue
            # "since 2021", "from 2021 to 2025" where a date column read holds nothing outside
            # that range: the filter may change nothing, so its absence is not evidence
            if y.relation != "in" and any(
                    {"before": hi < y.year, "after": lo > y.year, "since": lo >= y.year,
                     "through": hi <= y.year}[y.relation] for lo, hi in inside):
                not_measured.append(f"'{y.words}': a date column the SQL reads holds only such years")
                continue
            ok = {"in": {y.year}, "before": {y.year, y.year - 1}, "after": {y.year, y.year + 1},
                  "since": {y.year, y.year - 1}, "through": {y.year, y.year + 1}}[y.relation]
            if not (ok & sql.years):
                other = sorted(sql.years)
                findings.append({"kind": "year", "words": y.words, "expected": f"a filter on the year {y.year}",
                                 "sql": ", ".join(map(str, other)) or None,
                                 "problem": (f"the question says '{y.words}' but the SQL filters the year(s) "
                                             f"{', '.join(map(str, other))}" if other else
                                             f"the question says '{y.words}' but the SQL has no filter on that year")})
                continue
            if y.month is not None:
                mm = f"{y.month:02d}"
                month_ok = (any(f"{y.year}-{mm}" in s or s.strip() in {mm, str(y.month)} for s in sql.strings)
                            or float(y.month) in sql.numbers)
                if not month_ok:
                    findings.append({"kind": "month", "words": y.words, "expected": f"{y.year}-{mm}", "sql": None,
                                     "problem": f"the question says '{y.words}' but the SQL has no filter on that month"})
                    continue
            measured.append(f"'{y.words}'")

    # -- numbers ----------------------------------------------------------------------
    def _anchored(self, nf: NumberFilter, read_tables: list[TableProfile], names: set[str]) -> bool:
        before = [squash(w) for w in nf.before.split()]
        after = nf.after.split()
        cols = {squash(c.name) for t in read_tables for c in t.columns}
        tabs = {squash(singular(t.name)) for t in read_tables} | {squash(t.name) for t in read_tables}
        if any(b in cols for b in before) or any(squash(singular(w)) in tabs for w in nf.before.split()[-2:]):
            return True
        return any(squash(singular(w)) in tabs or squash(w) in tabs for w in after[:2])

    def _numbers(self, read: FiltersRead, sql: _Sql, read_tables: list[TableProfile], names: set[str],
                 findings: list[dict[str, Any]], measured: list[str], not_measured: list[str]) -> None:
        for nf in read.numbers:
            if nf.op == "between":
                if any(op == ">=" and v == nf.value for op, v, _ in sql.inequalities) and \
                        any(op == "<=" and v == nf.high for op, v, _ in sql.inequalities):
                    measured.append(f"'{nf.words}'")
                else:
                    not_measured.append(f"'{nf.words}'")
                continue
            n = nf.value
            same = [(op, node) for op, v, node in sql.inequalities if v == n]
            equivalent = {">": (">=", n + 1), "<": ("<=", n - 1), ">=": (">", n - 1), "<=": ("<", n + 1)}.get(nf.op)
            if n.is_integer() and equivalent and any(op == equivalent[0] and v == equivalent[1]
                                                     for op, v, _ in sql.inequalities):
                measured.append(f"'{nf.words}'")
                continue
            if same:
                if any(op == nf.op for op, _ in same):
                    measured.append(f"'{nf.words}'")
                    continue
                op, node = same[0]
                if nf.op == "=":
                    not_measured.append(f"'{nf.words}'")
                    continue
                findings.append({"kind": "comparison", "words": nf.words, "expected": f"{nf.op} {n:g}",
                                 "sql": _sql(node),
                                 "problem": f"the question says '{nf.words}' ({nf.op} {n:g}) but the SQL has {_sql(node)}"})
                continue
            if nf.op in {">", ">=", "<", "<="} and n.is_integer():
                near = [(op, v, node) for op, v, node in sql.inequalities
                        if abs(v - n) == 1 and op[0] == nf.op[0]]
                if near:
                    op, v, node = near[0]
                    findings.append({"kind": "comparison", "words": nf.words, "expected": f"{nf.op} {n:g}",
                                     "sql": _sql(node),
                                     "problem": f"the question says '{nf.words}' ({nf.op} {n:g}) but the SQL has {_sql(node)}"})
                    continue
            if not sql.inequalities and not sql.comparisons and n != 1 and nf.op != "=" \
                    and self._anchored(nf, read_tables, names) \
                    and n not in sql.numbers:
                findings.append({"kind": "comparison", "words": nf.words, "expected": f"{nf.op} {n:g}", "sql": None,
                                 "problem": f"the question says '{nf.words}' but the SQL has no such comparison"})
                continue
            not_measured.append(f"'{nf.words}'")

    # -- column against column --------------------------------------------------------------
    def _columns(self, read: FiltersRead, sql: _Sql, read_tables: list[TableProfile], findings: list[dict[str, Any]],
                 measured: list[str], not_measured: list[str]) -> None:
        cols = {squash(c.name): c.name.lower() for t in read_tables for c in t.columns}
        for cc in read.column_comparisons:
            words = cc.right.split()
            right = next((cols[squash(" ".join(words[:k]))] for k in range(len(words), 0, -1)
                          if squash(" ".join(words[:k])) in cols), None)
            lefts = [cols[squash(w)] for w in cc.left.split() if squash(w) in cols]
            if right is None or not lefts:
                continue
            left = lefts[-1]
            hits = []
            for node in sql.tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
                a = {c.name.lower() for c in node.this.find_all(exp.Column)}
                b = {c.name.lower() for c in node.expression.find_all(exp.Column)}
                op = ">" if isinstance(node, exp.GT) else ">=" if isinstance(node, exp.GTE) else \
                    "<" if isinstance(node, exp.LT) else "<=" if isinstance(node, exp.LTE) else "="
                if left in a and right in b:
                    hits.append((op, node))
                elif right in a and left in b:
                    hits.append((_FLIP[op], node))
            if any(op == cc.op for op, _ in hits):
                measured.append(f"'{cc.words}'")
            elif hits:
                op, node = hits[0]
                findings.append({"kind": "column_comparison", "words": cc.words, "expected": f"{left} {cc.op} {right}",
                                 "sql": _sql(node),
                                 "problem": f"the question says '{cc.words}' ({cc.op}) but the SQL has {_sql(node)}"})
            elif sql.predicate_on({right}) is None:
                findings.append({"kind": "column_comparison", "words": cc.words, "expected": f"{left} {cc.op} {right}",
                                 "sql": None,
                                 "problem": f"the question says '{cc.words}' but the SQL does not compare {left} with {right}"})
            else:
                not_measured.append(f"'{cc.words}'")

    # -- ids --------------------------------------------------------------------------------
    def _ids(self, read: FiltersRead, sql: _Sql, read_tables: list[TableProfile], findings: list[dict[str, Any]],
             measured: list[str], not_measured: list[str]) -> None:
        seen = set()
        for f in read.ids:
            key = (squash(f.column), f.value)
            if key in seen:
                continue
            seen.add(key)
            holders = [t.name for t in read_tables for c in t.columns if squash(c.name) == key[0]]
            if f.value in sql.numbers or any(s.strip() == f"{f.value:g}" for s in sql.strings):
                measured.append(f"'{f.words}'")
            elif holders:
                findings.append({"kind": "id", "words": f.words, "expected": f"{f.column} = {f.value:g}", "sql": None,
                                 "problem": f"the question names {f.column} {f.value:g} but the SQL has no filter on it"})
            else:
                not_measured.append(f"'{f.words}': no table the SQL reads has {f.column}")

    # -- how many rows ---------------------------------------------------------------------
    def _rows(self, read: FiltersRead, tree: exp.Expression, findings: list[dict[str, Any]], measured: list[str],
              not_measured: list[str]) -> None:
        rc = read.rows
        if rc is None:
            return
        if not isinstance(tree, exp.Select):
            not_measured.append(f"'{rc.words}'")
            return
        limit, offset = tree.args.get("limit"), tree.args.get("offset")
        k = _number(limit.expression) if isinstance(limit, exp.Limit) else None
        off = _number(offset.expression) if isinstance(offset, exp.Offset) else 0
        if k is None:
            not_measured.append(f"'{rc.words}': the SQL has no LIMIT")
            return
        assert limit is not None  # k was read from it
        if k != rc.n:
            findings.append({"kind": "rows", "words": rc.words, "expected": f"{rc.n} row(s)", "sql": _sql(limit),
                             "problem": f"the question asks for {rc.n} row(s) ('{rc.words}') but the SQL has {_sql(limit)}"})
        elif off and not rc.ordinal:
            assert offset is not None  # off was read from it
            findings.append({"kind": "rows", "words": rc.words, "expected": f"the first {rc.n} row(s)",
                             "sql": _sql(offset),
                             "problem": f"the question asks for the first {rc.n} row(s) but the SQL skips {off:g}"})
        else:
            measured.append(f"'{rc.words}'")

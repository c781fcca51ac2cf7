"""Cap: on SQLite, numbers stored as text are compared and ranked as text, and the answer
changes when they are read as numbers.

A column declared ``TEXT`` (or ``VARCHAR``, or with no type) that holds numbers as strings
(``'46'``, ``'150'``, ``'null'``) is compared by SQLite's affinity rules: in ``Horsepower >
150`` the 150 becomes the text ``'150'``, so ``'46' > '150'`` holds and ``'230' > '150'`` does
not decide by size; ``MAX(Horsepower)`` is ``'98'``, and ``ORDER BY Horsepower DESC LIMIT 1``
keeps it. Agreement cannot see it: every sample writes the same comparison.

Read on SQLite only (PostgreSQL refuses such a comparison, MariaDB and DuckDB convert the text
to a number): each ordering comparison of such a column with a number, each MIN/MAX of one and
each ORDER BY key of a SELECT with a LIMIT, and each SUM/AVG of one that also holds text that
is no number (SQLite adds a ``'null'`` as 0). The SQL runs again with those columns read as
numbers (``CAST(x AS REAL)``), and the check fires only where the answer changes, showing both.
A column is such a column when the profile's most frequent values include a number written as
text and at least four in five of its non-empty values are numbers (one probe). Read as numbers
means: where the text is a number; a marker such as ``'TBC'`` or ``'null'`` stays text and
ranks as before, and is left out of a SUM/AVG. A MIN/MAX or ORDER BY with no number written beside it is not read on a
column named as a code or an identifier (a postal code, a phone number, an extension): those
rank as text on purpose.
"""

from __future__ import annotations

import re
import sqlglot
from sqlglot import exp

from ..agreement import strict_match
from ..answer import CheckResult
from ..db.figures import TableProfile
from ..errors import VouchError
from ..words import words_of
from ..sql.scope import Scope
from ..sql.tree import limit_value, literal_value, own_nodes, selects, twin
from . import evidence as ev
from .base import CheckContext, report, unparsed
from .unmatched_literal import brief

_ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE)
# SQLite's affinity: a declared type with CHAR, CLOB or TEXT is TEXT; none at all is BLOB
_TEXT_AFFINITY = re.compile(r"CHAR|CLOB|TEXT", re.I)
_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


MIN_NUMERIC_SHARE = 0.8  # of a column's non-empty values, written as numbers
# SQLite reads the text as a number where it is one (digits, a point, a leading minus) and
# leaves the rest as it is, so a marker such as 'TBC' or 'null' still ranks as text
_AS_NUMBER = ("CASE WHEN TRIM(vouch_x) GLOB '[0-9]*' AND NOT TRIM(vouch_x) GLOB '*[^0-9.]*' THEN CAST(vouch_x AS REAL) "
              "WHEN TRIM(vouch_x) GLOB '-[0-9]*' AND NOT SUBSTR(TRIM(vouch_x), 2) GLOB '*[^0-9.]*' "
              "THEN CAST(vouch_x AS REAL) ELSE vouch_x END")
_CODE_WORDS = {"code", "zip", "postal", "postcode", "phone", "fax", "tel", "extension", "ext", "id", "isbn", "ssn",
               "sku", "number", "no", "num"}


def _as_number(col: exp.Expression) -> exp.Expression:
    """``col`` read as a number where its text is one, as itself where it is not."""
    template = sqlglot.parse_one(_AS_NUMBER, read="sqlite")
    return template.transform(lambda n: col.copy() if isinstance(n, exp.Column) and n.name == "vouch_x" else n)


def _numbers_only(col: exp.Expression) -> exp.Expression:
    """``col`` read as a number where its text is one, NULL where it is not."""
    case = _as_number(col)
    case.set("default", None)
    return case


def _code(col: exp.Column) -> bool:
    """A column named as a code or an identifier (``PostalCode``, ``Phone``, ``Extension``)."""
    return bool(set(words_of(col.name).lower().split()) & _CODE_WORDS)


def _numeric_share(ctx: CheckContext, table: TableProfile, column: str) -> float:
    """The share of the column's non-empty values written as numbers (one probe, kept per run)."""
    key = ("numbers_as_text", table.qualified.lower(), column.lower())
    if key not in ctx.cache:
        x = exp.column(column, quoted=True)
        numeric = _as_number(x)
        probe = sqlglot.parse_one(
            "SELECT COUNT(*), SUM(CASE WHEN TYPEOF(vouch_n) IN ('real', 'integer') THEN 1 ELSE 0 END) "
            "FROM t WHERE TRIM(vouch_c) <> ''", read="sqlite")
        probe = probe.transform(lambda n: numeric.copy() if isinstance(n, exp.Column) and n.name == "vouch_n"
                                else x.copy() if isinstance(n, exp.Column) and n.name == "vouch_c" else n)
        from_ = probe.args.get("from_") or probe.args.get("from")
        assert from_ is not None  # the template has a FROM
        from_.this.replace(exp.to_table(ctx.probe.table_sql(table.name, table.schema_name), dialect="sqlite"))
        try:
            rows = ctx.probe.rows(probe, max_rows=1)
            total, numbers = (int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else (0, 0)
            ctx.cache[key] = numbers / total if total else 0.0
        except VouchError:
            ctx.cache[key] = 0.0
    return float(ctx.cache[key])


def _number(node: exp.Expression) -> bool:
    return isinstance(literal_value(node.unnest()), float)


class NumbersAsText:
    name = "numbers_as_text"
    kind = "cap"
    Evidence = ev.NumbersAsTextEvidence
    feeds = ()

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.tree is None:
            return unparsed(self)
        if ctx.probe.engine != "sqlite":
            return report(self, False, "not measured: only SQLite compares numbers stored as text as text",
                          columns=[], uses=[])
        sites: list[exp.Column] = []
        uses: list[str] = []
        dialect = ctx.probe.dialect
        for select in selects(ctx.tree):
            for node in own_nodes(select, exp.Binary):
                if not isinstance(node, _ORDERING):
                    continue
                sides: tuple[tuple[exp.Expression, exp.Expression], ...] = (
                    (node.this, node.expression), (node.expression, node.this))
                for col, against in sides:
                    if isinstance(col, exp.Column) and _number(against) and self._text_numbers(ctx, select, col):
                        sites.append(col)
                        uses.append(node.sql(dialect=dialect))
            for between in own_nodes(select, exp.Between):
                col = between.this
                if (isinstance(col, exp.Column) and _number(between.args["low"]) and _number(between.args["high"])
                        and self._text_numbers(ctx, select, col)):
                    sites.append(col)
                    uses.append(between.sql(dialect=dialect))
            # ranked with no number written beside it: a code (a postal code, a phone number)
            # ranks as text on purpose, so only a column named as a quantity is read
            for agg in own_nodes(select, (exp.Max, exp.Min)):
                if (isinstance(agg.this, exp.Column) and not _code(agg.this)
                        and self._text_numbers(ctx, select, agg.this)):
                    sites.append(agg.this)
                    uses.append(agg.sql(dialect=dialect))
            order = select.args.get("order")
            if order is not None and limit_value(select) is not None:
                for o in order.expressions:
                    if isinstance(o.this, exp.Column) and not _code(o.this) and self._text_numbers(ctx, select, o.this):
                        sites.append(o.this)
                        uses.append(f"ORDER BY {o.sql(dialect=dialect)} LIMIT {limit_value(select)}")
        # SUM and AVG read text that is no number ('null', 'n/a') as 0: read those as NULL
        summed: list[exp.Column] = []
        sums: list[str] = []
        for select in selects(ctx.tree):
            for total in own_nodes(select, (exp.Sum, exp.Avg)):
                col = total.this
                if isinstance(col, exp.Column) and self._text_numbers(ctx, select, col, markers=True):
                    summed.append(col)
                    sums.append(total.sql(dialect=dialect))
        if not sites and not summed:
            return report(self, False, "no number stored as text is compared or ranked", columns=[], uses=[])
        columns = sorted({c.sql(dialect=dialect) for c in sites + summed})
        uses += sums
        tree = ctx.tree.copy()
        # every twin found before any is replaced: a replacement adds nodes to the walk
        ranked = [twin(tree, ctx.tree, col) for col in sites + self._matched_with(ctx, sites)]
        counted = [twin(tree, ctx.tree, col) for col in summed]
        for targets, edit in ((ranked, _as_number), (counted, _numbers_only)):
            for target in targets:
                assert target is not None  # each site is in ctx.tree, so its copy has a twin
                target.replace(edit(target.copy()))
        other = ctx.probe.run(tree)
        shown = ctx.result
        if other.error is not None or shown.error is not None or shown.truncated or other.truncated:
            return report(self, False, f"not measured: {', '.join(uses)} (the query read as numbers did not run "
                                       f"whole)", columns=columns, uses=uses)
        if strict_match(shown, other):
            return report(self, False, f"{', '.join(columns)} stored as text; {', '.join(uses)} gives the same "
                                       f"answer read as numbers", columns=columns, uses=uses)
        how = []
        if sites:
            how.append(f"compares and ranks them as text in {', '.join(u for u in uses if u not in sums)} "
                       f"(as text '9' > '10')")
        if summed:
            how.append(f"counts the text that is no number (such as 'null') as 0 in {', '.join(sums)}")
        return report(self, True, f"{', '.join(columns)} {'holds' if len(columns) == 1 else 'hold'} numbers stored "
                                  f"as text, so SQLite {' and '.join(how)}; read as numbers (CAST(… AS REAL)) the "
                                  f"answer is {brief(other)} instead of {brief(shown)}",
                      columns=columns, uses=uses, as_numbers=brief(other), shown=brief(shown))

    def _matched_with(self, ctx: CheckContext, sites: list[exp.Column]) -> list[exp.Column]:
        """The other places the SQL compares the same columns with something that is not a
        string (``Age = (SELECT MIN(Age) …)``, ``hp > (SELECT MIN(hp) …)``, ``a.x = b.x``,
        ``x IN (…)``): read as numbers too, so the edit changes how the values rank and
        nothing else."""
        assert ctx.tree is not None
        names = {c.name.lower() for c in sites}
        binary = (exp.EQ, exp.NEQ, *_ORDERING)
        found: list[exp.Column] = []
        for col in ctx.tree.find_all(exp.Column):
            if (any(col is s for s in sites) or col.name.lower() not in names
                    or not isinstance(col.parent, (*binary, exp.In))):
                continue
            cmp = col.parent
            if isinstance(cmp, binary):
                others = [cmp.this if cmp.expression is col else cmp.expression]
            else:
                others = list(cmp.expressions)
            if isinstance(cmp, exp.In) and cmp.this is not col:
                continue
            if any(isinstance(o, exp.Literal) and o.is_string for o in others):
                continue
            select = col.find_ancestor(exp.Select)
            if isinstance(select, exp.Select) and self._text_numbers(ctx, select, col):
                found.append(col)
        return found

    @staticmethod
    def _text_numbers(ctx: CheckContext, select: exp.Select, col: exp.Column, *, markers: bool = False) -> bool:
        """Whether ``col`` (in ``select``) is a column of text affinity whose frequent values
        include a number written as text, and most of its values are numbers; with
        ``markers``, only where some are not."""
        ref = Scope(select, ctx.profile).resolve(col)
        table = ctx.profile.table(ref.table) if ref is not None else None
        cp = table.column(ref.column) if table is not None and ref is not None else None
        if table is None or cp is None:
            return False
        if (cp.type or "").strip() and not _TEXT_AFFINITY.search(cp.type):
            return False
        if not any(isinstance(v, str) and _NUMBER.fullmatch(v) for v, _n in cp.top_values):
            return False
        share = _numeric_share(ctx, table, cp.name)
        return share >= MIN_NUMERIC_SHARE and (not markers or share < 1.0)

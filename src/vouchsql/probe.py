"""The one path from the checks and the choice detectors to the engine: facts, on a budget.

A check or a detector reasons from facts the data alone can give — a count, the rows of a
small query, how many keys a join matches, the shown query re-run with one part edited —
and asks the :class:`Probe` for each. The probe runs it read-only through the engine layer
(the engine's own comparison, quoting, collation and affinity, since the SQL is the
engine's), under one time limit (the ``timeout`` setting) and one deterministic budget, and
keeps a ledger of what it asked. Nothing in ``checks/`` or ``choices/`` reaches the engine
any other way (``tests/test_probe.py`` reads the source to hold that).

The budget is counted in queries and in rows read, never in time, so the same input gets
the same facts on any machine under any load. A query's cost is the rows of the tables it
reads, from the profile (a table read twice counts twice); a probe may read
``BUDGET_FACTOR`` times what the shown query reads (at least ``MIN_BUDGET_ROWS``) in at most
``Budget.queries`` queries. A query the budget cannot cover is not started: the fact is
"not measured" (:class:`ProbeSkipped`, a :class:`~vouchsql.errors.VouchError`, or ``None``).
The checks and the detectors each get a probe of their own with a budget of this kind, so
what one spends never changes what the other finds.

Without a database (``db=None``) a probe answers from ``facts``: a mapping from each fact to
what the engine gave for it. A fact is keyed by the name its caller gives (the choice
detectors' ``"nulls"``, ``"cutoff_rows"``…) or else by what was asked (``rows:<SQL>``,
``run:<SQL>``, ``overlap:<join>``, ``values:<question>``, ``table_sql:<name>``). With
``record=True`` a live probe keeps every fact it read, and the dialect, engine and settings,
in ``recorded``: a check run once on a database can be run again from that record with no
engine, and gives the same result (``tests/test_probe.py`` does so for every check case). The
SQL-to-SQL goldens of the choice detectors run from named facts the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from sqlglot import exp

from .answer import Result, ResultError
from .db.base import Database
from .db.profile import JoinPair, Profile, TableProfile, key_overlap
from .errors import ProbeSkipped, VouchError
from .settings import Config
from .sql.inspect import table_key

if TYPE_CHECKING:
    from .question.values import ValueIndex
    from .semantic.model import LogicalTable

BUDGET_FACTOR = 8
MIN_BUDGET_ROWS = 1_000_000
MAX_QUERIES = 40


@dataclass(frozen=True)
class Budget:
    """What a probe may spend: rows read (``None``: derived from the shown query) and queries."""
    rows: int | None = None
    queries: int = MAX_QUERIES


def rows_read(tree: exp.Expression | None, profile: Profile) -> int:
    """The rows of every table ``tree`` reads, by the profile: the deterministic cost of a query.
    Names the profile does not know (a CTE's, a derived table's) cost nothing themselves; the
    tables inside them are counted where they are read."""
    total = 0
    for table in tree.find_all(exp.Table) if tree is not None else ():
        known = profile.table(table_key(table, profile.default_schema)) if table.name else None
        total += known.row_count if known is not None else 0
    return total


class Probe:
    """Facts from the engine for one stage (the checks, or the detectors) of one answer (see the
    module docstring).

    ``shown``: the shown query's tree, whose cost sets the row budget when ``budget.rows``
    is None. ``dialect``: the SQL dialect without a database (default ``sqlite``)."""

    def __init__(self, db: Database | None, profile: Profile, *, budget: Budget | None = None,
                 shown: exp.Expression | None = None, dialect: str | None = None,
                 facts: Mapping[str, Any] | None = None, record: bool = False) -> None:
        self.db = db
        self.profile = profile
        self.budget = budget or Budget()
        self.budget_rows = self.budget.rows if self.budget.rows is not None else max(
            BUDGET_FACTOR * rows_read(shown, profile), MIN_BUDGET_ROWS)
        self.facts = facts
        self._dialect = dialect or (facts or {}).get("dialect")
        self.recorded: dict[str, Any] | None = None
        if record and db is not None:
            self.recorded = {"dialect": db.dialect, "engine": db.engine, "config": db.config}
        self.queries = 0
        self.spent_rows = 0
        self.skipped = 0  # queries the budget could not cover
        # rows:<SQL> already read for this answer: the data does not change within one answer,
        # so a second reader of the same fact (question_shape and join_fanout both measure a
        # join's repetition) gets it without a second query or a second charge.
        self._read: dict[tuple[str, int], list[tuple[Any, ...]]] = {}

    # -- what the callers read ------------------------------------------------------------
    @property
    def dialect(self) -> str:
        return self._dialect or (self.db.dialect if self.db is not None else "sqlite")

    @property
    def engine(self) -> str:
        return self.db.engine if self.db is not None else str((self.facts or {}).get("engine", "sqlite"))

    @property
    def config(self) -> Config:
        """The settings the checks read (``exact_columns``, ``definitions``…)."""
        if self.db is not None:
            return self.db.config
        got = (self.facts or {}).get("config")
        return got if isinstance(got, Config) else Config()

    def table_sql(self, name: str, schema: str | None = None) -> str:
        """How the engine writes a table's name (quoted, with its schema outside the default)."""
        key = f"table_sql:{schema}.{name}"
        if self.db is None:
            return str(self._fact(key))
        out = self.db.table_sql(name, schema)
        self._keep(key, out)
        return out

    @property
    def over_budget(self) -> bool:
        return self.queries >= self.budget.queries or self.spent_rows >= self.budget_rows

    def sql(self, tree: exp.Expression) -> str:
        return tree.sql(dialect=self.dialect)

    def logical_sql(self, sql: str, tables: list[LogicalTable]) -> str:
        """A semantic model's SQL over its logical tables, written over the physical ones (the
        catalogue names them, never the data)."""
        key = f"logical_sql:{sql}"
        if self.db is None:
            return str(self._fact(key))
        # Imported here: only verified queries of a semantic model need it, and the semantic
        # package is most of the ≈ 60 M instructions vouchsql/in_effect.py keeps out of a check.
        from .semantic.model import logical_sql

        out = logical_sql(sql, tables, self.db)
        self._keep(key, out)
        return out

    # -- the ledger ------------------------------------------------------------------------
    def _afford(self, cost: int) -> bool:
        """Charge one query of ``cost`` rows, when the budget covers it."""
        if self.queries >= self.budget.queries or self.spent_rows + cost > self.budget_rows:
            self.skipped += 1
            return False
        self.queries += 1
        self.spent_rows += cost
        return True

    def _charge(self, tree: exp.Expression | None) -> None:
        if not self._afford(rows_read(tree, self.profile)):
            raise ProbeSkipped(f"not run: the probe budget ({self.budget.queries} queries, "
                               f"{self.budget_rows:,} rows read) cannot cover it")

    def _fact(self, fact: str | None) -> Any:
        if fact is None or self.facts is None or fact not in self.facts:
            raise ProbeSkipped(f"no database, and the fixture gives no fact {fact!r}")
        return self.facts[fact]

    def _keep(self, fact: str | None, value: Any) -> None:
        if self.recorded is not None and fact is not None:
            self.recorded[fact] = value

    # -- facts -----------------------------------------------------------------------------
    def rows(self, tree: exp.Expression, *, max_rows: int = 1, fact: str | None = None) -> list[tuple[Any, ...]]:
        """The rows of a small query over the data (at most ``max_rows``). Raises
        :class:`~vouchsql.errors.VouchError` when it cannot be read: the engine refused it,
        it ran past the time limit, or the budget did not cover it (:class:`ProbeSkipped`)."""
        key = fact or f"rows:{self.sql(tree)}"
        if self.db is None:
            return [tuple(r) for r in self._fact(key)]
        if (key, max_rows) in self._read:
            return list(self._read[key, max_rows])
        self._charge(tree)
        got = self.db.query(self.sql(tree), max_rows=max_rows, timeout=self.db.config.timeout, from_tree=True)
        self._keep(key, [list(r) for r in got])
        self._read[key, max_rows] = list(got)
        return got

    def count(self, tree: exp.Expression, fact: str = "count") -> int | None:
        """A one-value query (``SELECT COUNT(*) …``): its value, 0 for NULL; None when it
        cannot be read."""
        if self.db is None:
            value = (self.facts or {}).get(fact)
            return None if value is None else int(value)
        try:
            got = self.rows(tree)  # kept as rows:<SQL> too, so a record replays it whole
        except VouchError:
            return None
        value = got[0][0] if got else None
        try:
            out = 0 if value is None else int(value)
        except (TypeError, ValueError):
            return None
        self._keep(fact, out)
        return out

    def result(self, tree: exp.Expression, fact: str) -> Result | None:
        """A query's rows as a :class:`Result` (None when they cannot be read); without a
        database, the fact's rows as the fixture gives them."""
        if self.db is None:
            rows = (self.facts or {}).get(fact)
            if rows is None:
                return None
            return Result(columns=[f"c{i}" for i in range(len(rows[0]) if rows else 0)], rows=rows,
                          row_count=len(rows))
        got = self.run(tree)
        if not got.ok:
            return None
        self._keep(fact, got.rows)
        return got

    def run(self, query: exp.Expression | str) -> Result:
        """A whole query's result, as the shown query's is read (the ``max_rows`` and byte
        caps): an edited copy of the shown tree, or SQL text that goes through the gate (a
        verified query). Never raises: a refusal, an error or a spent budget is the result's
        ``error``."""
        key = "run:" + (query if isinstance(query, str) else self.sql(query))
        try:
            if self.db is None:
                got = self._fact(key)
                return got if isinstance(got, Result) else Result.model_validate(got)
            tree = self.db.parse(query) if isinstance(query, str) else query
            self._charge(tree)
        except VouchError as exc:
            return Result(error=ResultError(kind=exc.kind, message=exc.message))
        out = self.db.execute(query) if isinstance(query, str) else self.db.execute(self.sql(query), from_tree=True)
        self._keep(key, out)
        return out

    def overlap(self, lt: str, lc: str, rt: str, rc: str) -> JoinPair | None:
        """How many keys an equi-join's two columns share, by the join's own comparison
        (IES eq. 2: :func:`~vouchsql.db.profile.key_overlap`); None when it cannot be read."""
        key = f"overlap:{lt}.{lc}={rt}.{rc}"
        if self.db is None:
            got = (self.facts or {}).get(key)
            return got if got is None or isinstance(got, JoinPair) else JoinPair.model_validate(got)
        sides = [self.profile.table(t) for t in (lt, rt)]
        if not self._afford(sum(_side_rows(t, self.db) for t in sides)):
            return None
        out = key_overlap(self.db, self.profile, lt, lc, rt, rc)
        self._keep(key, out)
        return out

    def values(self, question: str | None) -> ValueIndex:
        """The index of the text values the question may name (:func:`~vouchsql.question.values.value_index`):
        read once per connection and bounded by its own limits (columns, distinct values,
        table size), so it is not charged to the budget; without a database, the recorded index
        (an empty one when none was recorded)."""
        # Imported here: only a question that names values reads them, and the module (two
        # dataclasses) costs ≈ 6 M instructions of a ``vouch check`` start-up.
        from .question.values import ValueIndex, value_index

        key = f"values:{question}"
        if self.db is None:
            got = (self.facts or {}).get(key)
            return got if isinstance(got, ValueIndex) else ValueIndex()
        out = value_index(self.db, self.profile, question)
        self._keep(key, out)
        return out


def _side_rows(table: TableProfile | None, db: Database) -> int:
    """The rows one side of an overlap query reads: the sample where the profile sampled."""
    if table is None:
        return 0
    return min(table.row_count, db.config.sample_rows) if table.sampled else table.row_count

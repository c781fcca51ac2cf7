"""The schema-and-data profile: what the checks and choice detectors know about a database.

Everything is computed by the engine with aggregates, never by pulling a table into Python:
one grouped pass per batch of columns gives NULL counts, min/max, distinct counts, top values
and what the stand-in test needs; a sampled table's NULL and min/max figures come from plain
aggregates over the whole table instead. Tables above ``sample_threshold`` rows get distinct counts, top values,
stand-in codes and key overlaps from a sample of ``sample_rows`` rows, marked ``estimated``.
The profile is cached on disk per database identity.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import time
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Iterator, NamedTuple, Sequence, TypeVar, cast

from pydantic import BaseModel, Field, PrivateAttr

from ..errors import VouchError
from ..factories import new_list
from ..words import singular
from .catalog import TableInfo
from .figures import SAMPLE_ROWS_SHOWN as SAMPLE_ROWS_SHOWN  # re-exported: other modules import these from here
from .figures import STAND_IN_SHARE as STAND_IN_SHARE
from .figures import TOP_VALUES as TOP_VALUES
from .figures import ColumnProfile as ColumnProfile
from .figures import ForeignKey as ForeignKey
from .figures import StandIn as StandIn
from .figures import TableProfile as TableProfile
from .figures import _is_numeric as _is_numeric
from .shared import is_shared, keyed_on

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from .base import Database

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
# ``progress(done, total, table)``: told of each table a whole profile measures.
Progress = Callable[[int, int, str], object]

PROFILE_FORMAT = 4  # 4: a 0 is a stand-in only where the column cannot mean 0; 3: join overlap by the join comparison
class JoinPair(BaseModel):
    left_table: str
    left_column: str
    right_table: str
    right_column: str
    source: str  # "declared" or "name"
    left_distinct: int
    right_distinct: int
    overlap: int
    rho: float | None
    estimated: bool = False


class JoinCandidate(NamedTuple):
    """A pair of columns the catalogue says may join (a declared foreign key, or names that
    match a key): known for every table at once, measured (as a JoinPair) only on demand."""

    left_table: str
    left_column: str
    right_table: str
    right_column: str
    source: str


class Profile(BaseModel):
    """What Vouch knows of a database. Every table is listed with its catalogue facts
    (columns, types, keys); a table's figures (row count, NULLs, distinct counts, top values,
    stand-in codes) are ``measured`` for the tables this profile was made for — the whole
    database for :meth:`Database.profile`, the tables a query reads and their join neighbours
    for :meth:`Database.profile_for` — and on first use through :meth:`table` for any other.
    Which tables :attr:`tables` shows measured never depends on what was asked before, so the
    same query gets the same checks whatever ran earlier in the process."""

    format: int = PROFILE_FORMAT
    engine: str
    target: str
    identity: str
    built_seconds: float = 0.0
    default_schema: str | None = None
    tables: list[TableProfile]
    join_pairs: list[JoinPair] = Field(default_factory=new_list)
    _store: "_Store | None" = PrivateAttr(default=None)
    _index: "dict[str, list[int]] | None" = PrivateAttr(default=None)
    _index_size: int = PrivateAttr(default=-1)
    _memo: dict[Hashable, Any] = PrivateAttr(default_factory=dict)

    def _repr_html_(self) -> str:  # Jupyter (display.py)
        from ..display import profile_html

        return profile_html(self)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:  # rich's REPL: what `vouch profile` prints
        from ..display import rich_lines
        from ..render import print_profile

        yield from rich_lines(print_profile, self, console, options)

    # -- lookups -------------------------------------------------------------------------
    def _find(self, name: str) -> TableProfile | None:
        """The listed table ``name`` names: ``schema.table`` or a bare name (the default
        schema's table, else the one table of that name in any schema), case-blind."""
        if self._index is None or self._index_size != len(self.tables):
            store = self._store
            # Every profile of one database lists its tables in the catalogue's order, so
            # they share one index of positions (a 20,000-table index is built once).
            if store is not None and len(self.tables) == len(store.infos):
                self._index = store.positions()
            else:
                self._index = _positions(self.tables)
            self._index_size = len(self.tables)
        low = name.lower()
        hit = self._index.get(low)
        if hit:
            return self.tables[hit[0]]
        schema, dot, bare = low.rpartition(".")
        if dot and self.default_schema and schema == self.default_schema.lower():
            hit = self._index.get(bare)
            if hit and self.tables[hit[0]].schema_name is None:
                return self.tables[hit[0]]
        if not dot:
            others = self._index.get("\0" + low) or []
            if len(others) == 1:
                return self.tables[others[0]]
        return None

    def find(self, name: str) -> TableProfile | None:
        """The listed table ``name`` names, as this profile holds it: its catalogue facts
        always, its figures only if ``measured``. For code that needs names, columns and keys."""
        return self._find(name)

    def has_table(self, name: str) -> bool:
        """Whether the catalogue lists ``name`` (no figures are measured)."""
        return self._find(name) is not None

    def memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """A value derived from the catalogue alone (names, columns, keys), built once per
        database and shared by every profile of it: indexes over thousands of tables."""
        box = self._store.memo if self._store is not None else self._memo
        if key not in box:
            with quiet_gc():
                box[key] = build()
        return cast(T, box[key])  # what ``build`` made for this key

    def data_memo(self, key: Hashable, build: Callable[[], T]) -> T:
        """A value read from the rows (a column's distinct values), built once per connection
        and never shared with another: a connection opened after a write sees the write, as
        a fresh process does. (:meth:`memo` is for what the catalogue alone decides.)"""
        box = self._store.data_memo if self._store is not None else self._memo
        if key not in box:
            box[key] = build()
        return cast(T, box[key])  # what ``build`` made for this key

    def column_owners(self) -> dict[str, list[str]]:
        """Every column name of the catalogue as spelled, with the tables (bare names, in the
        catalogue's order) that have a column of that name: an index over all names then reads
        a warehouse's distinct column names, not each of its hundreds of thousands of columns."""
        def build() -> dict[str, list[str]]:
            owners: dict[str, list[str]] = {}
            for t in self.tables:
                for c in t.columns:
                    owners.setdefault(c.name, []).append(t.name)
            return owners

        return self.memo("column_owners", build)

    def table(self, name: str) -> TableProfile | None:
        """The table with its figures: measured now if this profile lists it unmeasured."""
        t = self._find(name)
        if t is not None and not t.measured and self._store is not None:
            return self._store.measured(t.qualified)
        return t

    def column(self, table: str, column: str) -> ColumnProfile | None:
        t = self._find(table)
        return t.column(column) if t else None

    def measured_tables(self) -> list[TableProfile]:
        """The tables whose figures this profile holds (what an index over data may read)."""
        return [t for t in self.tables if t.measured]

    def entity_key(self, table: str) -> str | None:
        """The column that identifies one row of ``table``: its single-column primary key."""
        t = self._find(table)
        return t.primary_key[0] if t is not None and len(t.primary_key) == 1 else None

    def is_unique(self, table: str, column: str) -> bool:
        """Whether ``column`` identifies one row of ``table``: its single-column primary key,
        or (an exact profile) as many distinct values as non-NULL rows."""
        tp = self._find(table)
        if tp is None:
            return False
        if len(tp.primary_key) == 1 and tp.primary_key[0].lower() == column.lower():
            return True
        tp = self.table(table)
        assert tp is not None  # listed (found above), so measured
        cp = tp.column(column)
        if cp is None or cp.distinct_estimated or tp.sampled or not tp.row_count:
            return False
        return cp.distinct_count == tp.row_count - cp.null_count

    def join_candidates(self) -> list[JoinCandidate]:
        """Every pair of columns the catalogue says may join (no figures needed)."""
        if self._store is not None:
            return self._store.candidates()
        return [JoinCandidate(p.left_table, p.left_column, p.right_table, p.right_column, p.source)
                for p in self.join_pairs]

    def is_key_column(self, table: str, column: str) -> bool:
        """A primary key, a declared foreign key, or one end of a candidate join pair."""
        tp = self._find(table)
        if tp is None:
            return False
        low = column.lower()
        if any(c.lower() == low for c in tp.primary_key):
            return True
        if any(len(fk.columns) == 1 and fk.columns[0].lower() == low for fk in tp.foreign_keys):
            return True
        me = tp.qualified.lower()
        for p in self.join_candidates():
            if ((p.left_table.lower() == me and p.left_column.lower() == low)
                    or (p.right_table.lower() == me and p.right_column.lower() == low)):
                return True
        return False

    def referenced_table(self, table: str, column: str) -> str | None:
        """The table a foreign-key column refers to: declared, or a candidate join pair whose
        other end is that table's key."""
        tp = self._find(table)
        low = column.lower()
        for fk in tp.foreign_keys if tp is not None else []:
            if len(fk.columns) == 1 and fk.columns[0].lower() == low:
                return fk.ref_table
        me = tp.qualified.lower() if tp is not None else table.lower()
        for p in self.join_candidates():
            ends = ((p.left_table, p.left_column, p.right_table, p.right_column),
                    (p.right_table, p.right_column, p.left_table, p.left_column))
            for t, c, other, other_col in ends:
                if t.lower() == me and c.lower() == low:
                    key = self.entity_key(other)
                    if key is not None and key.lower() == other_col.lower() and other.lower() != me:
                        return other
        return None

    def join_pair(self, t1: str, c1: str, t2: str, c2: str) -> JoinPair | None:
        """The measured overlap of a candidate join pair (measured now if it was not)."""
        a, b = (t1.lower(), c1.lower()), (t2.lower(), c2.lower())
        for p in self.join_pairs:
            ends = {(p.left_table.lower(), p.left_column.lower()), (p.right_table.lower(), p.right_column.lower())}
            if ends == {a, b}:
                return p
        if self._store is None:
            return None
        for cand in self._store.candidates():
            ends = {(cand.left_table.lower(), cand.left_column.lower()),
                    (cand.right_table.lower(), cand.right_column.lower())}
            if ends == {a, b}:
                return self._store.pair(cand)
        return None


# -- building ----------------------------------------------------------------------------

def build_profile(db: Database, *, refresh: bool = False, progress: Progress | None = None) -> Profile:
    """Every table of ``db`` measured, and every candidate join pair: what ``vouch profile``
    shows. ``progress(done, total, table)`` is called before each table."""
    return _store(db).full(refresh=refresh, progress=progress)


def _table_profile(db: Database, info: TableInfo) -> TableProfile:
    """One table measured: its row count and every column's figures, each exact or marked as
    an estimate with its source, within the table's budget (see :mod:`.measure`)."""
    # Imported here: only a table not in the profile cache is measured, and .measure with
    # .stats (four dataclasses) cost ≈ 10 M instructions of a ``vouch check`` start-up.
    from .measure import measure_table

    return measure_table(db, info)


# -- join pairs and key overlap ----------------------------------------------------------

def _join_candidates(schema: list[TableInfo]) -> list[JoinCandidate]:
    """Declared single-column foreign keys, then pairs the names suggest: a column named
    like another table's primary key (``AlbumId`` → ``Album.AlbumId``) or ``<table>_id`` →
    that table's ``id``. Tables are named by their qualified key (``schema.table`` outside
    the default schema)."""
    seen: set[frozenset[tuple[str, str]]] = set()
    out: list[JoinCandidate] = []

    def add(a: tuple[str, str], b: tuple[str, str], source: str) -> None:
        key = frozenset({(a[0].lower(), a[1].lower()), (b[0].lower(), b[1].lower())})
        if len(key) == 2 and key not in seen:
            seen.add(key)
            out.append(JoinCandidate(a[0], a[1], b[0], b[1], source))

    for t in schema:
        for fk in t.foreign_keys:
            if len(fk.columns) == 1 and len(fk.ref_columns) == 1:
                add((t.qualified, fk.columns[0]), (fk.ref_table, fk.ref_columns[0]), "declared")
    pk_owner: dict[str, list[TableInfo]] = {}
    for t in schema:
        if len(t.primary_key) == 1:
            pk_owner.setdefault(t.primary_key[0].lower(), []).append(t)
    # A key name that many tables use for their own rows (``id``, ``entry_id`` in 2,000
    # ledger tables) says nothing about which of them a column refers to; left alone it
    # would pair every such table with every other.
    pk_owner = {k: v for k, v in pk_owner.items() if len(v) <= MAX_KEY_NAME_OWNERS}
    # ``customer_id`` names the customers table of its own schema, else the default schema's.
    by_singular: dict[tuple[str | None, str], TableInfo] = {}
    owner: TableInfo | None
    for t in schema:
        by_singular[(t.schema, singular(t.name))] = t
    for t in schema:
        for c in t.columns:
            low = c.name.lower()
            for owner in pk_owner.get(low, []):
                if owner is not t and low != "id":
                    add((t.qualified, c.name), (owner.qualified, owner.primary_key[0]), "name")
            m = _ID_SUFFIX.fullmatch(low)
            if m and low != "id":
                word = singular(m.group(1))
                owner = by_singular.get((t.schema, word)) or by_singular.get((None, word))
                if owner and owner is not t and len(owner.primary_key) == 1:
                    add((t.qualified, c.name), (owner.qualified, owner.primary_key[0]), "name")
    return out


_ID_SUFFIX = re.compile(r"(.+?)_?id")
MAX_KEY_NAME_OWNERS = 4
MAX_NEIGHBOURS = 24  # per table a query reads


def key_overlap(db: Database, tables: "Profile | dict[str, TableProfile]", lt: str, lc: str, rt: str, rc: str,
                source: str = "query") -> JoinPair | None:
    """ρ = max(|Ka∩Kb|/|Ka|, |Ka∩Kb|/|Kb|) over distinct non-null values (IES eq. 2).
    A side above the sample threshold is read from its sample, and ρ is marked estimated.
    ``tables``: a profile (its tables are measured as needed) or tables by name."""
    q = db.quote
    if isinstance(tables, Profile):
        lookup = tables.table
    else:
        by_lower = {name.lower(): tp for name, tp in tables.items()}
        lookup = lambda name: by_lower.get(name.lower())  # noqa: E731
    sides, names = [], []
    estimated = False
    for t, c in ((lt, lc), (rt, rc)):
        tp = lookup(t)
        col = tp.column(c) if tp is not None and not tp.error else None
        if col is None:
            return None
        assert tp is not None  # (col is None otherwise)
        names.append((tp.qualified, col.name))  # the database's own spelling, for quoting
        if tp.sampled:
            estimated = True
            # (schema= only where there is one: engines of one schema take no such argument)
            where = {"schema": tp.schema_name} if tp.schema_name else {}
            src = f"{db.sample_source(tp.name, db.config.sample_rows, tp.row_count, **where)} AS s"
        else:
            src = db.table_sql(tp.name, tp.schema_name)
        sides.append(f"SELECT DISTINCT {q(col.name)} AS {q('k')} FROM {src} WHERE {q(col.name)} IS NOT NULL")
    # The shared keys are counted by the join's own comparison (a = b), not by INTERSECT:
    # the engine compares under its rules (SQLite's type affinity matches TEXT '1' to INTEGER 1,
    # a derived table keeps its column's affinity; padding and collation likewise), and a key
    # the join matches is a shared key whatever its spelling. Each side counts its own values
    # that find a partner, so ρ keeps IES eq. 2's two directions.
    a, b = sides
    matched = "SELECT COUNT(*) FROM ({}) AS x WHERE EXISTS (SELECT 1 FROM ({}) AS y WHERE x.{k} = y.{k})"
    k = q("k")
    try:
        ka, kb, in_a, in_b = db.query(
            f"SELECT (SELECT COUNT(*) FROM ({a}) AS a), (SELECT COUNT(*) FROM ({b}) AS b), "
            f"({matched.format(a, b, k=k)}), ({matched.format(b, a, k=k)})")[0]
    except VouchError:
        return None
    ka, kb, in_a, in_b = int(ka), int(kb), int(in_a), int(in_b)
    both = max(in_a, in_b)
    # With no keys on one side the overlap is undefined (the join returns nothing, which the
    # empty-result signal reports), not evidence of a wrong key.
    rho = max(in_a / ka, in_b / kb) if ka and kb else None
    (lt, lc), (rt, rc) = names
    return JoinPair(left_table=lt, left_column=lc, right_table=rt, right_column=rc, source=source,
                    left_distinct=ka, right_distinct=kb, overlap=both, rho=None if rho is None else round(rho, 6),
                    estimated=estimated)


# -- the store: the catalogue, and figures measured per table on first use, cached on disk ---

class _Catalogue:
    """A database's catalogue by qualified key, and what is derived from it alone: the stubs,
    the positions index, the join candidates, :meth:`Profile.memo`'s indexes. Shared by every
    store whose database returns the same catalogue list (db/shared.py: connections to an
    unchanged SQLite file), so a server's requests build the indexes of 20,000 tables once."""

    def __init__(self, schema: list[TableInfo]) -> None:
        with quiet_gc():
            self.infos = {info.qualified.lower(): info for info in schema}
        self._stubs: list[TableProfile] | None = None
        self._positions: dict[str, list[int]] | None = None
        self._candidates: list[JoinCandidate] | None = None
        self._by_table: dict[str, list[JoinCandidate]] | None = None
        self.memo: dict[Hashable, Any] = {}

    def positions(self) -> dict[str, list[int]]:
        if self._positions is None:
            self._positions = _positions(list(self.infos.values()))
        return self._positions

    def stubs(self) -> list[TableProfile]:
        if self._stubs is None:
            with quiet_gc():
                self._stubs = [_stub(info) for info in self.infos.values()]
        return self._stubs

    def candidates(self) -> list[JoinCandidate]:
        if self._candidates is None:
            self._candidates = _join_candidates(list(self.infos.values()))
        return self._candidates

    def by_table(self) -> dict[str, list[JoinCandidate]]:
        if self._by_table is None:
            by_table: dict[str, list[JoinCandidate]] = {}
            for c in self.candidates():
                by_table.setdefault(c.left_table.lower(), []).append(c)
                by_table.setdefault(c.right_table.lower(), []).append(c)
            self._by_table = by_table
        return self._by_table


_CATALOGUES: "OrderedDict[tuple[Any, ...], tuple[list[TableInfo], _Catalogue]]" = OrderedDict()


class _Store:
    """One database's profile state: the catalogue (every table's columns and keys, read once)
    and the figures of each table measured so far, each cached on disk under the table's own
    identity (:meth:`Database.table_identity`), so a change to one table re-measures only it
    where the engine can tell, and a 2,000-table database costs only the tables queries use."""

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Store":
        # A copied profile measures through the same database: the store is not data.
        return self

    def __init__(self, db: Database) -> None:
        self.db = db
        schema = db.schema()
        if is_shared(schema):
            # Some indexes read figures too (the question's values index reads the distinct
            # values of measured tables): connections with other profile settings keep theirs.
            self.catalogue = keyed_on(schema, tuple(self._knobs()), lambda: _Catalogue(schema), _CATALOGUES)
        else:
            self.catalogue = _Catalogue(schema)
        self.infos = self.catalogue.infos
        self.memo = self.catalogue.memo  # Profile.memo's indexes over the catalogue
        # Profile.data_memo's: what was read from the rows. Never shared with other
        # connections, so a new connection sees the data as it is now (issue 28).
        self.data_memo: dict[Hashable, Any] = {}
        self._measured: dict[str, TableProfile] = {}
        self._pairs: dict[JoinCandidate, JoinPair | None] = {}
        self._probe: Profile | None = None
        self.refresh = db.config.no_cache

    # -- catalogue --------------------------------------------------------------------
    def positions(self) -> dict[str, list[int]]:
        return self.catalogue.positions()

    def stubs(self) -> list[TableProfile]:
        return self.catalogue.stubs()

    def candidates(self) -> list[JoinCandidate]:
        return self.catalogue.candidates()

    def neighbours(self, keys: set[str]) -> set[str]:
        """The tables one candidate join away from any of ``keys`` (qualified, lower case):
        for each, at most MAX_NEIGHBOURS, declared foreign keys first, then by name — a
        dimension that hundreds of fact tables refer to does not measure them all (a check
        that needs another measures it on first use)."""
        by_table = self.catalogue.by_table()
        out = set()
        for k in sorted(keys):
            near: dict[str, int] = {}
            for c in by_table.get(k, []):
                for end in (c.left_table.lower(), c.right_table.lower()):
                    if end != k and end in self.infos:
                        near[end] = min(near.get(end, 1), 0 if c.source == "declared" else 1)
            out |= set(sorted(near, key=lambda e: (near[e], e))[:MAX_NEIGHBOURS])
        return out

    # -- figures ----------------------------------------------------------------------
    def measured(self, key: str) -> TableProfile | None:
        low = key.lower()
        hit = self._measured.get(low)
        if hit is not None:
            return hit
        info = self.infos.get(low)
        if info is None:
            return None
        path = self._path("t", self._table_key(info))
        tp = None if self.refresh else _read(path, TableProfile)
        if tp is None:
            tp = _table_profile(self.db, info)
            tp.schema_name, tp.comment = info.schema, info.comment
            comments = {c.name: c.comment for c in info.columns}
            for c in tp.columns:
                c.comment = comments.get(c.name)
            # A table cut short by the clock may come out differently next time: not cached.
            # (Cut short by its statement budget, it comes out the same: cached.)
            if not getattr(tp, "timed_out", False):
                _write(path, tp)
        self._measured[low] = tp
        return tp

    def pair(self, cand: JoinCandidate) -> JoinPair | None:
        if cand in self._pairs:
            return self._pairs[cand]
        ends = [self.infos.get(cand.left_table.lower()), self.infos.get(cand.right_table.lower())]
        key = None
        if all(ends):
            assert ends[0] is not None and ends[1] is not None  # (all() says so)
            key = "|".join([self._table_key(ends[0]), self._table_key(ends[1]), *cand])
        path = self._path("j", key) if key else None
        pair = None
        if path is not None and not self.refresh:
            pair = _read(path, JoinPair)
        if pair is None:
            pair = key_overlap(self.db, {k: t for k in (cand.left_table, cand.right_table)
                                         if (t := self.measured(k)) is not None}, *cand[:4], source=cand.source)
            if pair is not None and path is not None:
                _write(path, pair)
        self._pairs[cand] = pair
        return pair

    # -- profiles ---------------------------------------------------------------------
    def full(self, refresh: bool = False, progress: Progress | None = None) -> Profile:
        start = time.perf_counter()
        if refresh:  # measure every table again (and overwrite its cache entry), once
            self._measured.clear()
            self._pairs.clear()
        keep, self.refresh = self.refresh, self.refresh or refresh
        try:
            return self._full(start, progress)
        finally:
            self.refresh = keep

    def _full(self, start: float, progress: Progress | None) -> Profile:
        keys = list(self.infos)
        tables: list[TableProfile] = []
        for i, k in enumerate(keys):
            if progress is not None:
                progress(i, len(keys), self.infos[k].qualified)
            tables.append(cast(TableProfile, self.measured(k)))  # a listed key: measured, never None
        if progress is not None:
            progress(len(keys), len(keys), "")
        pairs = [self.pair(c) for c in self.candidates()]
        return self._profile(tables, [p for p in pairs if p is not None], start)

    def scoped(self, names: Iterable[str]) -> Profile:
        """The tables ``names`` name and their join neighbours measured, every other table
        listed from the catalogue; the candidate pairs among the measured tables measured."""
        start = time.perf_counter()
        reads = set()
        if self._probe is None:
            self._probe = self._profile(self.stubs(), [], start)
        probe = self._probe
        for n in names:
            t = probe._find(n)
            if t is not None:
                reads.add(t.qualified.lower())
        scope = reads | self.neighbours(reads)
        tables = [cast(TableProfile, self.measured(k)) if k in scope else stub  # a listed key: never None
                  for k, stub in zip(self.infos, self.stubs())]
        pairs = [self.pair(c) for c in self.candidates()
                 if c.left_table.lower() in scope and c.right_table.lower() in scope
                 and (c.left_table.lower() in reads or c.right_table.lower() in reads)]
        return self._profile(tables, [p for p in pairs if p is not None], start)

    def _profile(self, tables: list[TableProfile], pairs: list[JoinPair], start: float) -> Profile:
        profile = Profile.model_construct(format=PROFILE_FORMAT, engine=self.db.engine, target=self.db.target,
                                          identity=self.db.identity(), default_schema=self.db.default_schema,
                                          built_seconds=round(time.perf_counter() - start, 3),
                                          tables=tables, join_pairs=pairs)
        profile._store = self
        return profile

    # -- cache ------------------------------------------------------------------------
    def _table_key(self, info: TableInfo) -> str:
        shape = "|".join(f"{c.name} {c.type} {c.nullable}" for c in info.columns)
        keys = f"{info.primary_key}|{[(f.columns, f.ref_table, f.ref_columns) for f in info.foreign_keys]}"
        knobs = self._knobs()
        return f"{PROFILE_FORMAT}|{self.db.table_identity(info)}|{info.qualified}|{info.is_view}|{shape}|{keys}|{knobs}"

    def _knobs(self) -> list[Any]:
        """Every setting that changes a table's figures."""
        return [getattr(self.db.config, k, None) for k in ("sample_threshold", "sample_rows", "scan_threshold",
                                                           "profile_statements")]

    def _path(self, kind: str, key: str) -> Path:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.db.config.cache_path / "profiles" / digest[:2] / f"{kind}-{digest}.json"


@contextmanager
def quiet_gc() -> Iterator[None]:
    """No cyclic garbage collection while a catalogue's objects are made: they all live on,
    and a 20,000-table catalogue (160,000 objects) otherwise triggers collections that scan
    every live object again and again (3.6 s of stubs became 0.6 s). Nothing is collected
    later that would not have been: the collector only runs again, as usual."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _positions(tables: Sequence[TableInfo | TableProfile]) -> dict[str, list[int]]:
    """Where each table sits in ``tables``, by qualified key and (outside the default schema)
    by bare name after a NUL."""
    index: dict[str, list[int]] = {}
    for i, t in enumerate(tables):
        index.setdefault(t.qualified.lower(), []).append(i)
        if t.schema is not None if isinstance(t, TableInfo) else t.schema_name:
            index.setdefault("\0" + t.name.lower(), []).append(i)
    return index


def _stub(info: TableInfo) -> TableProfile:
    """A table as the catalogue knows it (no query run). Built without validation or
    pydantic's per-call work: a 20,000-table catalogue is 100,000 columns, and these fields
    are plain already."""
    columns = [_construct(ColumnProfile, name=c.name, type=c.type, nullable=c.nullable, comment=c.comment)
               for c in info.columns]
    fks = [_construct(ForeignKey, columns=list(f.columns), ref_table=f.ref_table, ref_columns=list(f.ref_columns))
           for f in info.foreign_keys]
    return _construct(TableProfile, row_count=0, name=info.name, schema_name=info.schema, is_view=info.is_view,
                      primary_key=list(info.primary_key), foreign_keys=fks, columns=columns,
                      comment=info.comment, measured=False)


_TEMPLATES: dict[type[BaseModel], tuple[dict[str, Any], tuple[tuple[str, Callable[..., Any]], ...]]] = {}
# pydantic keeps these three in slots of BaseModel: their descriptors set them directly.
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def _construct(model: type[M], **given: Any) -> M:
    """``model.model_construct(**given)``, its defaults read from the fields once (mutable
    defaults fresh each time): what model_construct does, without its per-call overhead."""
    spec = _TEMPLATES.get(model)
    if spec is None:
        plain = {k: f.default for k, f in model.model_fields.items() if f.default_factory is None}
        made = tuple((k, f.default_factory) for k, f in model.model_fields.items() if f.default_factory is not None)
        spec = _TEMPLATES[model] = (plain, made)
    plain, made = spec
    values = {**plain, **given}
    for k, make in made:
        if k not in given:
            values[k] = make()
    obj = object.__new__(model)
    object.__setattr__(obj, "__dict__", values)
    _SET_FIELDS_SET(obj, set(given))
    _SET_EXTRA(obj, None)
    _SET_PRIVATE(obj, None)
    return obj


def _read(path: Path, model: type[M]) -> M | None:
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None  # absent, unreadable or of an older format: measured again


def _write(path: Path, item: BaseModel) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        tmp.write_text(item.model_dump_json(), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache folder costs a measurement next time, nothing more


def _store(db: Database) -> _Store:
    store = getattr(db, "_profile_store", None)
    if store is None or store.db is not db:
        store = db._profile_store = _Store(db)
    return store


def catalogue(db: Database) -> Profile:
    """Every table from the catalogue, none measured yet; :meth:`Profile.table` measures."""
    store = _store(db)
    return store._profile(store.stubs(), [], time.perf_counter())


def profile_for(db: Database, tables: Iterable[str]) -> Profile:
    """The profile a query over ``tables`` needs: those tables and their join neighbours
    measured (see :meth:`_Store.scoped`)."""
    return _store(db).scoped(tables)


@contextmanager
def patched_profile(db: Database) -> Iterator[Profile]:
    """The whole profile, for figures changed by hand for the length of the block (the
    planted-errors harness records a stand-in code that is not in the data): every profile
    made in the block, the checks' included, sees the change; after it, the measured figures
    are as before and nothing changed was written to the cache."""
    store = _store(db)
    saved, full = store._measured, db._profile
    store._measured = {k: t.model_copy(deep=True) for k, t in saved.items()}
    db._profile = None
    try:
        yield db.profile()
    finally:
        store._measured, db._profile = saved, full


def cache_file(db: Database, table: str) -> Path:
    """Where ``table``'s measured figures are cached."""
    store = _store(db)
    info = store.infos.get(table.lower())
    if info is None:
        raise KeyError(table)
    return store._path("t", store._table_key(info))


def profile_json(profile: Profile) -> str:
    return json.dumps(profile.model_dump(mode="json"), indent=2, ensure_ascii=False)

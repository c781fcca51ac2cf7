"""What a column identifies: the key domain of a column, read from the profile.

A column's *domain* is the key it holds values of, followed to its root: a declared foreign
key is followed to the column it references (``Invoice.CustomerId`` → ``Customer.CustomerId``),
and so is a foreign key the names imply (``customer_id`` → the key of ``customer`` or
``customers``; ``SupportRepId`` has no table ``support_rep``, so only a declared key can place
it); a table's own key is its own root. Two columns hold the same kind of thing when their
roots are the same column; a column with no root (a name, a country, a code the names do not
place) has no domain, and nothing is guessed about it.

Names are compared case- and separator-insensitively (``CustomerId``, ``customer_id`` and
``customerid`` are one name) and table names singular (``customers`` is ``customer``).

Tables are keyed as the profile keys them (:attr:`TableProfile.qualified`: ``schema.table``
outside the default schema), so ``sales.orders`` and ``orders`` are two tables, and every
:class:`Col` names its table that way. A name given to the map is read as the profile reads it
(:meth:`Profile.find`: ``public.track`` in the default schema is ``track``; a bare name is the
default schema's table, else the one table of that name). A ``<table>_id`` name places its
column in the table of that name in the column's own schema first, then in the default schema.
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Iterable, cast

from ..words import singular as _singular
from .profile import ColumnProfile, Profile, TableProfile

# Column names that say nothing about the entity they identify: two tables' ``id`` columns
# are not one domain because they share the name.
GENERIC = {"id", "key", "code", "name", "uuid", "guid", "pk", "rowid", "oid", "no", "num", "number",
           "value", "type", "ref", "fk"}
# The endings that make a name a reference: ``<entity>_id``, ``<entity>Key``, ``<entity>_code``.
_SUFFIXES = ("id", "key", "code", "number", "num", "no", "nr")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@lru_cache(maxsize=65536)  # pure; called for every column name of a catalogue
def norm(name: str) -> str:
    """Lower case without separators: ``Customer_Id`` → ``customerid``."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def singular(name: str) -> str:
    """The singular of a name without separators: ``Categories`` → ``category``."""
    return _singular(norm(name))



def words(name: str) -> list[str]:
    """``manager_staff_id`` → manager, staff, id; ``BillingAddressId`` → billing, address, id."""
    return [w.lower() for part in re.split(r"[^0-9A-Za-z]+", name) for w in _WORDS.findall(part)]


def ref_words(name: str) -> list[str]:
    """The words of a name, a run-together one split before its reference suffix
    (``customerid`` → customer, id), so every spelling of a reference ends in its suffix."""
    ws = words(name)
    if len(ws) == 1:
        for suffix in _SUFFIXES:
            if ws[0].endswith(suffix) and len(ws[0]) > len(suffix) + 1:
                return [ws[0][: -len(suffix)], suffix]
    return ws


@dataclass(frozen=True)
class Col:
    table: str
    column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class Step:
    """One link followed: ``source`` references ``target``, ``how`` ``declared`` or ``name``."""

    source: Col
    target: Col
    how: str

    def __str__(self) -> str:
        return f"{self.source} references {self.target}" + (", by its name" if self.how == "name" else "")


@dataclass(frozen=True)
class Domain:
    root: Col
    steps: tuple[Step, ...] = ()
    how: str = "key"  # how the root itself is a key: "primary key", "referenced", "unique id"


@dataclass
class KeyMap:
    """The key domains of one profile's columns, computed on demand and kept."""

    profile: Profile
    _domains: dict[tuple[str, str], Domain | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._own: dict[str, str | None] = {}
        self._edges: dict[str, list[tuple[str, Step]]] | None = None
        tables = self.profile.tables
        index = self.profile.memo(("key_index", len(tables)), lambda: _KeyIndex(tables))
        if not index.lists(tables):  # a profile listing other tables than the one indexed
            index = _KeyIndex(tables)
        self._index = index
        self._prefix = index.prefix
        self._referenced = index.referenced
        # The index took every table at its catalogue key; a measured table without a declared
        # key may have another (or none) once its uniqueness is known.
        self._pk_owner = dict(index.pk_owner)
        # (Tables whose qualified names differ only in case share the first one's key, as
        # own_key keeps it.)
        for low, at in index.first.items():
            t = tables[at]
            if not t.measured or t.primary_key:
                continue
            was, now = index.catalogue_key[at], _owner_name(self.own_key(t), self._prefix.get(low, ""))
            if was == now:
                continue
            same = index.named[low]
            if was is not None:
                self._pk_owner[was] = [j for j in self._pk_owner[was] if j not in same]
            if now is not None:
                self._pk_owner[now] = sorted([*self._pk_owner.get(now, []), *same])

    def table(self, name: str) -> TableProfile | None:
        """The table ``name`` names: a key of the profile (``sweep.track``, ``track``), or any
        name :meth:`Profile.find` reads (``public.track`` for the default schema's ``track``)."""
        i = self._index.first.get(name.lower())
        if i is not None:
            return self.profile.tables[i]
        t = self.profile.find(name)
        if t is None:
            return None
        i = self._index.first.get(t.qualified.lower())
        return None if i is None else self.profile.tables[i]

    def _tiers(self, t: TableProfile, positions: Iterable[int]) -> list[list[TableProfile]]:
        """The tables at ``positions`` in the order a name places a column of ``t``: those of
        ``t``'s own schema, then the default schema's, then every schema's. Tables of one
        schema: one tier, all of them."""
        tables = self._tables_at(positions)
        own = [u for u in tables if u.schema_name == t.schema_name]
        if len(own) == len(tables):
            return [tables]
        return [own, [u for u in tables if u.schema_name is None], tables]

    def _tables_at(self, positions: Iterable[int]) -> list[TableProfile]:
        tables = self.profile.tables
        return [tables[i] for i in positions]

    def bare(self, table: str, column: str) -> str:
        """A column's name without the prefix every column of its table carries (TPC-H's
        ``l_orderkey`` is ``orderkey``)."""
        t = self.table(table)
        key = t.qualified.lower() if t is not None else table.lower()
        return _strip(column, self._prefix.get(key, ""))

    # -- keys of a table -------------------------------------------------------------

    def own_key(self, t: TableProfile) -> str | None:
        """The single column that identifies a row of ``t``: its declared one-column primary
        key, or, with none declared, a column named ``id`` or ``<table>_id`` whose values the
        profile found unique and never NULL (on a table the profile holds measured; on one
        known from the catalogue only, the name alone)."""
        low = t.qualified.lower()
        if low not in self._own:
            self._own[low] = self._find_own_key(t)
        return self._own[low]

    def _find_own_key(self, t: TableProfile) -> str | None:
        return _own_key(t, self._prefix.get(t.qualified.lower(), ""), by_name=not t.measured)

    # -- what a column refers to -----------------------------------------------------

    def _declared(self, t: TableProfile, column: str) -> Col | None:
        low = column.lower()
        for fk in t.foreign_keys:
            for i, fc in enumerate(fk.columns):
                if fc.lower() == low and i < len(fk.ref_columns) and fk.ref_columns[i]:
                    ref = self.table(fk.ref_table)
                    col = ref.column(fk.ref_columns[i]) if ref is not None else None
                    if col is not None:
                        assert ref is not None  # (col is None otherwise)
                        return Col(ref.qualified, col.name)
        return None

    def _named(self, t: TableProfile, column: str) -> Col | None:
        """The key another table's name and key imply: ``<entity><suffix>`` where a table
        ``entity`` (singular or plural) has a key ending in the same suffix, tried on the whole
        stem, then without leading role words (``manager_staff_id`` → ``staff``); or, failing
        that, exactly the name of one other table's key (``SupplierID`` → ``Suppliers.SupplierID``).
        Each is looked for in the column's own schema, then the default schema, then any
        (:meth:`_tiers`): the first that has tables of the name decides."""
        ws = ref_words(self.bare(t.qualified, column))
        if len(ws) >= 2 and ws[-1] in _SUFFIXES:
            suffix = ws[-1]
            for start in range(len(ws) - 1):
                stem = "".join(ws[start:-1])
                for tier in self._tiers(t, self._index.by_singular.get(singular(stem), [])):
                    if not tier:
                        continue
                    hits = []
                    for u in tier:
                        key = self.own_key(u) if u is not t else None
                        if key is not None and norm(self.bare(u.qualified, key)).endswith(suffix):
                            hits.append(Col(u.qualified, key))
                    # The stem names a table (maybe this one) but not one key: no guess.
                    return hits[0] if len(hits) == 1 else None
        n = norm(self.bare(t.qualified, column))
        if n in GENERIC:
            return None
        for tier in self._tiers(t, self._pk_owner.get(n, [])):
            owners = [u for u in tier if u is not t]
            if owners:
                # (an owner of a key name has an own key: that is how it was listed)
                return Col(owners[0].qualified, cast(str, self.own_key(owners[0]))) if len(owners) == 1 else None
        return None

    def domain(self, table: str, column: str) -> Domain | None:
        t = self.table(table)
        col = t.column(column) if t is not None else None
        if col is None:
            return None
        assert t is not None  # (col is None otherwise)
        return self._domain(t, col, frozenset())

    def _domain(self, t: TableProfile, col: ColumnProfile, seen: frozenset[tuple[str, str]]) -> Domain | None:
        here = (t.qualified.lower(), col.name.lower())
        if here in self._domains:
            return self._domains[here]
        if here in seen:
            return None
        seen = seen | {here}
        me = Col(t.qualified, col.name)
        found: Domain | None = None
        declared = self._declared(t, col.name)
        own = self.own_key(t)
        is_own = own is not None and own.lower() == col.name.lower()
        named = self._named(t, col.name)
        if declared is not None and declared != me:
            found = self._follow(me, declared, "declared", seen)
        elif is_own:
            # A table's key is its own root, unless its name places it in another table
            # (``film_text.film_id`` is a film's key): then it is that table's key.
            if named is not None and _names_other(self.bare(t.qualified, col.name), t.name):
                found = self._follow(me, named, "name", seen)
            found = found or Domain(me, (), "primary key" if t.primary_key else "unique id")
        elif here in self._referenced:
            found = Domain(me, (), "referenced")  # a unique column a declared foreign key points at
        elif named is not None:
            found = self._follow(me, named, "name", seen)
        self._domains[here] = found
        return found

    def _follow(self, me: Col, target: Col, how: str, seen: frozenset[tuple[str, str]]) -> Domain | None:
        u = self.table(target.table)
        col = u.column(target.column) if u is not None else None
        if col is None:
            return None
        assert u is not None  # (col is None otherwise)
        inner = self._domain(u, col, seen) or Domain(Col(u.qualified, col.name), (), "referenced")
        return Domain(inner.root, (Step(me, Col(u.qualified, col.name), how),) + inner.steps, inner.how)

    # -- links between two tables ----------------------------------------------------

    def links(self, a: str, b: str) -> list[tuple[Col, Col, Domain, Domain]]:
        """Every pair of columns (one of ``a``, one of ``b``) whose domains share a root, the
        declared ones first."""
        ta, tb = self.table(a), self.table(b)
        if ta is None or tb is None:
            return []
        by_root: dict[Col, list[tuple[Col, Domain]]] = {}
        for cb in tb.columns:
            db = self._domain(tb, cb, frozenset())
            if db is not None:
                by_root.setdefault(db.root, []).append((Col(tb.qualified, cb.name), db))
        out = []
        for ca in ta.columns:
            da = self._domain(ta, ca, frozenset())
            if da is None:
                continue
            for cb_col, db in by_root.get(da.root, []):
                if not (ta is tb and ca.name == cb_col.column):
                    out.append((Col(ta.qualified, ca.name), cb_col, da, db))
        # Declared links first, then the shorter ones; the order of the columns otherwise.
        return sorted(out, key=lambda x: (any(s.how != "declared" for s in x[2].steps + x[3].steps),
                                          len(x[2].steps) + len(x[3].steps)))

    def path(self, a: str, b: str, max_links: int = 4) -> list[Step] | None:
        """The shortest chain of references joining table ``a`` to table ``b`` (each step one
        column's reference to another table's key, either way round), or None. Ties go to the
        tables in the profile's order, so the answer is the same every time."""
        graph = self._graph()
        ta, tb = self.table(a), self.table(b)
        if ta is None or tb is None:
            return None
        start, goal = ta.qualified.lower(), tb.qualified.lower()
        if start not in graph or goal not in graph or start == goal:
            return None
        back: dict[str, tuple[str, Step] | None] = {start: None}
        frontier = [start]
        for _ in range(max_links):
            nxt = []
            for t in frontier:
                for u, step in graph[t]:
                    if u in back:
                        continue
                    back[u] = (t, step)
                    if u == goal:
                        steps = []
                        while back[u] is not None:
                            u, st = cast("tuple[str, Step]", back[u])  # (not None: the loop's test)
                            steps.append(st)
                        return steps[::-1]
                    nxt.append(u)
            frontier = nxt
        return None

    def _graph(self) -> dict[str, list[tuple[str, Step]]]:
        if self._edges is None:
            edges: dict[str, list[tuple[str, Step]]] = {t.qualified.lower(): [] for t in self.profile.tables}
            for t in self.profile.tables:
                for c in t.columns:
                    d = self._domain(t, c, frozenset())
                    if d is None or not d.steps:
                        continue
                    step = d.steps[0]
                    here, other = t.qualified.lower(), step.target.table.lower()
                    if other == here or other not in edges:
                        continue
                    edges[here].append((other, step))
                    edges[other].append((here, step))
            self._edges = edges
        return self._edges


class _KeyIndex:
    """What a key map reads of the catalogue alone, by table position: built once per
    database (``Profile.memo``) and shared by every profile of it, which lists the same tables
    in the same order; a 20,000-table catalogue is read once, not once per check. Each table's
    own key is taken as the catalogue gives it (see :meth:`KeyMap._find_own_key`). Tables are
    keyed by their qualified names, lower case, as a foreign key's ``ref_table`` names them."""

    def __init__(self, tables: list[TableProfile]) -> None:
        self.names = [t.qualified.lower() for t in tables]
        self.first: dict[str, int] = {}  # the first table of each lower-case name
        self.named: dict[str, list[int]] = {}  # every table of it
        for i, low in enumerate(self.names):
            self.first.setdefault(low, i)
            self.named.setdefault(low, []).append(i)
        self.prefix = {t.qualified.lower(): _column_prefix(t) for t in tables}
        self.by_singular: dict[str, list[int]] = {}
        self.referenced: set[tuple[str, str]] = set()
        self.pk_owner: dict[str, list[int]] = {}
        self.catalogue_key: list[str | None] = []  # each table's own key at its name, normalised
        own: dict[str, str | None] = {}  # by lower-case name, as KeyMap.own_key keeps them
        for i, t in enumerate(tables):
            low = self.names[i]
            self.by_singular.setdefault(singular(t.name), []).append(i)
            for fk in t.foreign_keys:
                at = self.first.get(fk.ref_table.lower())
                ref = tables[at] if at is not None else None
                for rc in fk.ref_columns:
                    col = ref.column(rc) if ref is not None and rc else None
                    if col is not None:
                        assert ref is not None  # (col is None otherwise)
                        self.referenced.add((ref.qualified.lower(), col.name.lower()))
            if low not in own:
                own[low] = _own_key(t, self.prefix.get(low, ""), by_name=True)
            n = _owner_name(own[low], self.prefix.get(low, ""))
            self.catalogue_key.append(n)
            if n is not None:
                self.pk_owner.setdefault(n, []).append(i)

    def lists(self, tables: list[TableProfile]) -> bool:
        return len(tables) == len(self.names) and all(
            tables[i].qualified.lower() == self.names[i] for i in (0, len(tables) // 2, len(tables) - 1) if tables)


def _own_key(t: TableProfile, prefix: str, by_name: bool) -> str | None:
    """See :meth:`KeyMap.own_key`; ``by_name``: a key-named column is taken at its name."""
    if len(t.primary_key) == 1:
        col = t.column(t.primary_key[0])
        return col.name if col else t.primary_key[0]
    if t.primary_key:
        return None
    for c in t.columns:
        n = norm(_strip(c.name, prefix))
        if n == "id" or n == singular(t.name) + "id" or n == norm(t.name) + "id":
            # Uniqueness is a figure. A table known from the catalogue only (not read by
            # the query, nor next to it) is not measured for it: measuring every such
            # table of a warehouse without declared keys would profile them all. Its
            # key-named column is taken at its name there.
            if by_name or _unique(t, c):
                return c.name
    return None


def _owner_name(key: str | None, prefix: str) -> str | None:
    """The normalised name under which a table's own key ``key`` is looked up, or None."""
    n = norm(_strip(key, prefix)) if key is not None else None
    return n if n is not None and n not in GENERIC else None


def _strip(column: str, prefix: str) -> str:
    return column[len(prefix):] if prefix and column.lower().startswith(prefix) else column


def _unique(t: TableProfile, c: ColumnProfile) -> bool:
    if t.row_count <= 0 or c.null_count:
        return False
    if c.distinct_estimated:
        return c.distinct_count >= 0.95 * t.row_count
    return c.distinct_count == t.row_count


def _column_prefix(t: TableProfile) -> str:
    """``l_`` when every column of ``t`` (two or more) starts with the same short ``<letters>_``."""
    if len(t.columns) < 2:
        return ""
    first = re.match(r"([A-Za-z]{1,4}_)", t.columns[0].name)
    if not first:
        return ""
    prefix = first.group(1).lower()
    if all(c.name.lower().startswith(prefix) and len(c.name) > len(prefix) for c in t.columns):
        return prefix
    return ""


def _names_other(column: str, table: str) -> bool:
    """Whether a key's name names some entity other than its own table: ``film_id`` in
    ``film_text`` does, ``AlbumId`` in ``Album`` and ``id`` anywhere do not."""
    ws = ref_words(column)
    if len(ws) < 2 or ws[-1] not in _SUFFIXES:
        return False
    stem = "".join(ws[:-1])
    return singular(stem) != singular(table) and stem != norm(table)


_MAPS: dict[int, KeyMap] = {}


def key_map(profile: Profile) -> KeyMap:
    """The profile's key map, built once per profile object."""
    hit = _MAPS.get(id(profile))
    if hit is None or hit.profile is not profile:
        if len(_MAPS) > 32:
            _MAPS.clear()
        hit = _MAPS[id(profile)] = KeyMap(profile)
    return hit

"""Catalogues shared by every connection of this process to the same unchanged database.

`vouch serve` opens a connection per request. On a file of 20,000 tables, reading the
catalogue and building the indexes the checks read over it cost ~2.5 s, which every request
paid again although nothing had changed. An engine whose identity is cheap to read and
changes with any write (SQLite's file: path, size, modification time) reads its catalogue
through :func:`shared_schema`; the profile's catalogue-wide indexes are then shared
too (``db.profile._Store``), since they are keyed on the very list returned here. A changed
file has another identity, so it is read anew; the oldest entries are dropped past
``KEEP``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Hashable, TypeVar

if TYPE_CHECKING:
    from .catalog import TableInfo

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
KEEP = 4  # catalogues kept: a server's few databases, not a history of one

_LOCK = threading.Lock()
_SCHEMAS: "OrderedDict[str, list[TableInfo]]" = OrderedDict()


def shared_schema(key: str, read: Callable[[], list[TableInfo]]) -> list[TableInfo]:
    """The catalogue ``read()`` returns, read once per ``key`` (the database's identity and
    whatever settings change what is read) and then handed to every caller with that key.
    Callers must not change the list or its tables."""
    return _kept(_SCHEMAS, key, read)


def is_shared(tables: list[TableInfo]) -> bool:
    """Whether ``tables`` is a catalogue :func:`shared_schema` hands out."""
    with _LOCK:
        return any(kept is tables for kept in _SCHEMAS.values())


def keyed_on(source: list[TableInfo], extra: tuple[Any, ...], build: Callable[[], T],
             cache: "OrderedDict[tuple[Any, ...], tuple[list[TableInfo], T]]") -> T:
    """``build()``, once per ``source`` list object and ``extra`` key, in ``cache`` (at most
    ``KEEP`` entries). An entry keeps its list alive, so no other list has its id meanwhile."""
    return _kept(cache, (id(source), *extra), lambda: (source, build()))[1]


def _kept(cache: "OrderedDict[K, V]", key: K, build: Callable[[], V]) -> V:
    """``cache[key]``, built if absent (outside the lock: two first callers of one key both
    build, one is kept), the oldest entries dropped past ``KEEP``."""
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = build()
    with _LOCK:
        value = cache.setdefault(key, value)
        cache.move_to_end(key)
        while len(cache) > KEEP:
            cache.popitem(last=False)
    return value


__all__ = ["KEEP", "is_shared", "keyed_on", "shared_schema"]

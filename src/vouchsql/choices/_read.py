"""Dissolved: the tree helpers live in :mod:`vouchsql.sql.tree`, scopes in
:mod:`vouchsql.sql.scope`, key and type predicates on :class:`~vouchsql.db.profile.Profile`
and :class:`~vouchsql.db.profile.ColumnProfile`, question words and the value display in
:mod:`vouchsql.words`. The detectors import from there; these names stay only for the
modules outside ``choices/`` that still import them (checks, question readers)."""

from __future__ import annotations

from ..db.profile import ColumnProfile, Profile
from ..sql.edit import column, conjuncts, from_node, set_from  # noqa: F401
from ..sql.scope import Edge, Ref, Scope  # noqa: F401
from ..sql.tree import (and_all, edit_copy, expand_key, has_aggregate, has_window, limit_value,  # noqa: F401
                        literal_value, null_supplied, output_name, own_nodes, projection_for, selects, set_having,
                        set_where, twin, unalias, written_ident)
from ..words import (counted_table, entity_word, name_forms, named_values, question_numbers, show,  # noqa: F401
                     singular, words_of)


def is_unique(profile: Profile, table: str, column: str) -> bool:
    return profile.is_unique(table, column)


def is_key_column(profile: Profile, table: str, column: str) -> bool:
    return profile.is_key_column(table, column)


def is_integer_type(cp: ColumnProfile | None) -> bool:
    return cp is not None and cp.is_integer()


def is_numeric_type(cp: ColumnProfile | None) -> bool:
    return cp is not None and cp.is_number()

"""What the boundary tests compare in code where a message's words are the snapshot's."""

from __future__ import annotations


class Prose:
    """A message's words, which the snapshot holds: equal to any text that is not empty and names
    each of ``facts`` (what the test is about that no other field of the evidence holds: the SQL
    quoted, the tables, columns and aggregates)."""

    def __init__(self, *facts: str) -> None:
        self.facts = facts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other) and all(f in other for f in self.facts)

    def __repr__(self) -> str:
        return f"Prose{self.facts!r}"

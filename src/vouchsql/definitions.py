"""Recorded definitions: what words mean in this organisation, and which tables answer which
kind of question (IES §10 "Definitions as checks", Appendix D).

A TOML file (YAML or JSON with the same keys; a semantic layer — Cortex Analyst, dbt,
WrenAI — is read by :mod:`vouchsql.semantic` into the same object)::

    notes = ["Quantities in storage_report_* are signed deltas: removals are negative."]

    [definitions]
    usage = "the weight of the chemical itself in what was issued, from the issue transactions through each product's composition"

    [[rules]]
    name = "usage_reads_issues"
    when = ["usage", "used", "use*"]          # the question holds one of these words
    must_read = ["inventory_issue_history"]   # every pattern must match a table the SQL reads
    must_not_read = ["storage_report_*"]      # no table the SQL reads may match these
    note = "usage questions follow the issue transactions"

    [[rules]]
    name = "storage_tables_only_for_storage"
    unless = ["storage", "stored"]            # applies to every question without these words
    must_not_read = ["storage_report_*"]
    note = "the storage_report tables answer only storage questions"

Everything is given to the model in the prompts; each rule is also checked on the shown
SQL's tables by the ``definition_rule`` veto, which names the rule it finds broken, and each
``[[verified_queries]]`` entry (name, question, sql) by the ``verified_query`` check. Words
match whole words, case-insensitively; ``*`` in a word matches any letters (``use*``).
Table patterns are globs, case-insensitive.

The check reads the definitions in effect: those passed to :func:`use_definitions` (what
``ask(definitions=…)`` does), else the file named by the ``definitions`` setting.
"""

from __future__ import annotations

import contextvars
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import TYPE_CHECKING, Any, Iterator

from .errors import UserInputError
from .semantic import LogicalTable, Mapped, Runnable, VerifiedQuery

if TYPE_CHECKING:
    from .settings import Config

_TOP_KEYS = {"definitions", "rules", "notes", "verified_queries"}
_VERIFIED_KEYS = {"name", "question", "sql", "verified_by", "verified_at"}
_RULE_KEYS = {"name", "when", "unless", "must_read", "must_not_read", "note"}


@dataclass(frozen=True)
class Rule:
    name: str
    when: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    must_read: tuple[str, ...] = ()
    must_not_read: tuple[str, ...] = ()
    note: str = ""

    def applies_to(self, question: str) -> bool:
        if self.when and not any(_word(w).search(question) for w in self.when):
            return False
        return not any(_word(w).search(question) for w in self.unless)

    def broken_by(self, tables: list[str]) -> dict[str, list[str]] | None:
        """What the tables read break: ``{"read": [...], "not_read": [...]}``, or None."""
        read = [t for t in tables if any(_glob(t, p) for p in self.must_not_read)]
        not_read = [p for p in self.must_read if not any(_glob(t, p) for t in tables)]
        return {"read": read, "not_read": not_read} if read or not_read else None

    def describe(self) -> str:
        parts = []
        if self.when:
            parts.append("for questions about " + " / ".join(self.when))
        if self.unless:
            parts.append(("unless" if self.when else "for questions not about") + " " + " / ".join(self.unless))
        scope = ", ".join(parts) or "for every question"
        needs = []
        if self.must_read:
            needs.append("read " + ", ".join(self.must_read))
        if self.must_not_read:
            needs.append("do not read " + ", ".join(self.must_not_read))
        text = f"{scope}: {'; '.join(needs)}"
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class Definitions:
    """What words mean here. From Vouch's own file: ``definitions``, ``rules``, ``notes`` and
    ``verified`` queries; a semantic layer (:mod:`vouchsql.semantic`) also gives the words of
    each table and column (``synonyms``), their ``values``, the ``logical_tables`` its SQL is
    written over, what ``vouch definitions check`` runs, and the fields it could not map."""

    definitions: dict[str, str] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    notes: tuple[str, ...] = ()
    source: str | None = None
    verified: tuple[VerifiedQuery, ...] = ()
    synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)  # table or table.column -> words
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # table.column -> sample values
    logical_tables: tuple[LogicalTable, ...] = ()
    runnables: tuple[Runnable, ...] = ()
    unmapped: tuple[str, ...] = ()
    format: str = "vouch"

    def meanings(self) -> Iterator[tuple[str, str]]:
        """Each term or word with what it means: the definitions, and each table's and
        column's words pointing to the table or column (what schema retrieval reads)."""
        yield from self.definitions.items()
        for target, words in self.synonyms.items():
            for word in words:
                yield word, target.replace(".", " ")

    def rules_for(self, question: str) -> list[Rule]:
        return [r for r in self.rules if r.applies_to(question)]


@lru_cache(maxsize=256)
def _word(word: str) -> re.Pattern[str]:
    body = r"\w*".join(re.escape(part) for part in word.strip().split("*"))
    return re.compile(rf"(?<!\w){body}(?!\w)", re.I)


def _glob(table: str, pattern: str) -> bool:
    return fnmatchcase(table.lower(), pattern.lower())


# -- reading ---------------------------------------------------------------------------------

def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise UserInputError(f"{where}: expected a list of words or table names")
    return tuple(v.strip() for v in value)


def definitions_from_dict(data: Any, source: str | None = None) -> Definitions:
    where = source or "definitions"
    if not isinstance(data, dict):
        raise UserInputError(f"{where}: expected a table of definitions, rules and notes")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise UserInputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_TOP_KEYS))}")
    terms = data.get("definitions") or {}
    if not isinstance(terms, dict) or not all(isinstance(v, str) for v in terms.values()):
        raise UserInputError(f"{where}: [definitions] maps each term to a string that says what it means")
    rules = []
    for i, raw in _entries(data.get("rules") or [], where, "rules", "rule", _RULE_KEYS):
        name = str(raw.get("name") or f"rule_{i}").strip()
        rule = Rule(name=name, when=_strings(raw.get("when"), f"{where}: rule {name}: when"),
                    unless=_strings(raw.get("unless"), f"{where}: rule {name}: unless"),
                    must_read=_strings(raw.get("must_read"), f"{where}: rule {name}: must_read"),
                    must_not_read=_strings(raw.get("must_not_read"), f"{where}: rule {name}: must_not_read"),
                    note=str(raw.get("note") or "").strip())
        if not rule.must_read and not rule.must_not_read:
            raise UserInputError(f"{where}: rule {name} names no table (give must_read or must_not_read)")
        rules.append(rule)
    names = [r.name for r in rules]
    if len(names) != len(set(names)):
        raise UserInputError(f"{where}: two rules share a name; each rule needs its own")
    return Definitions(definitions={str(k): v.strip() for k, v in terms.items()}, rules=tuple(rules),
                       notes=_strings(data.get("notes"), f"{where}: notes"), source=source,
                       verified=_verified(data.get("verified_queries"), where))


def _entries(raw: Any, where: str, key: str, what: str, known: set[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each table of a ``[[key]]`` list with its number, checked: a list of tables holding
    only ``known`` keys."""
    if not isinstance(raw, list):
        raise UserInputError(f"{where}: {key} must be a list ([[{key}]] in TOML)")
    for i, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise UserInputError(f"{where}: {what} {i} is not a table")
        bad = set(item) - known
        if bad:
            raise UserInputError(f"{where}: {what} {i}: unknown key(s) {', '.join(sorted(bad))}; "
                                 f"known: {', '.join(sorted(known))}")
        yield i, item


def _verified(raw: Any, where: str) -> tuple[VerifiedQuery, ...]:
    if raw is None:
        return ()
    out = []
    for i, item in _entries(raw, where, "verified_queries", "verified query", _VERIFIED_KEYS):
        for key in ("question", "sql"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise UserInputError(f"{where}: verified query {i}: {key} is missing (give it as text)")
        out.append(VerifiedQuery(name=str(item.get("name") or f"verified_{i}").strip(), question=item["question"].strip(),
                                 sql=item["sql"].strip(), verified_by=item.get("verified_by"), source=where))
    names = [v.name for v in out]
    if len(names) != len(set(names)):
        raise UserInputError(f"{where}: two verified queries share a name; each needs its own")
    return tuple(out)


def from_semantic(mapped: Mapped, source: str) -> Definitions:
    return Definitions(definitions=dict(mapped.terms), notes=tuple(mapped.notes), source=source,
                       verified=tuple(mapped.verified), synonyms=dict(mapped.synonyms), values=dict(mapped.values),
                       logical_tables=tuple(mapped.logical_tables), runnables=tuple(mapped.runnables),
                       unmapped=tuple(mapped.unmapped), format=mapped.format)


def load_definitions(source: "str | os.PathLike[str] | dict[str, Any] | Definitions | None") -> Definitions | None:
    """Definitions from a file (Vouch's TOML/YAML/JSON, a Cortex Analyst semantic model, a
    WrenAI MDL manifest, a YAML file of dbt semantic models and metrics), a dbt project folder,
    a dict, or as given; None stays None."""
    if source is None or isinstance(source, Definitions):
        return source
    if isinstance(source, dict):
        return definitions_from_dict(source)
    path = Path(source).expanduser()
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise UserInputError(f"no definitions file at {path}") from None
    except OSError as exc:  # a symlink loop, a path through a file, no permission
        raise UserInputError(f"cannot read definitions file {path}: {exc.strerror}") from None
    if S_ISDIR(stat.st_mode):  # a dbt project, read afresh each time (its files change one by one)
        from .semantic import read_dbt_project

        return from_semantic(read_dbt_project(path), str(path))
    if not S_ISREG(stat.st_mode):  # a device such as /dev/zero that never ends
        raise UserInputError(f"cannot read definitions file {path}: not a regular file")
    return _load_file(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=32)
def _load_file(path: str, _mtime: int, _size: int) -> Definitions:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserInputError(f"cannot read definitions file {p}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UserInputError(f"cannot read definitions file {p}: not UTF-8 text "
                             f"(byte {exc.object[exc.start]:#04x} at offset {exc.start})") from None
    if p.suffix.lower() in {".yaml", ".yml", ".json"}:
        from .semantic import load_structured, read_semantic

        data = load_structured(text, p)
        mapped = read_semantic(data, p)
        if mapped is not None:
            return from_semantic(mapped, str(p))
        data = _plain(data)
    else:
        import tomllib  # only when a definitions file is read: `vouch check` without one never imports it

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UserInputError(f"cannot read definitions file {p}: {exc}") from None
    return definitions_from_dict(data, str(p))


def _plain(data: Any) -> Any:
    """The line-remembering mappings and lists of the YAML reader as plain ones."""
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return {} if data is None else data


# -- the definitions in effect -------------------------------------------------------------

_ACTIVE: contextvars.ContextVar[Definitions | None] = contextvars.ContextVar("vouch_definitions", default=None)


@contextmanager
def use_definitions(definitions: Definitions | None) -> Iterator[None]:
    """Make ``definitions`` the ones the ``definition_rule`` check reads, in this context."""
    token = _ACTIVE.set(definitions)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def definitions_in_effect(config: Config | None = None) -> Definitions | None:
    active = _ACTIVE.get()
    if active is not None:
        return active
    path = getattr(config, "definitions", None)
    return load_definitions(path) if path else None


__all__ = ["Definitions", "Rule", "VerifiedQuery", "load_definitions", "definitions_from_dict", "use_definitions",
           "definitions_in_effect"]

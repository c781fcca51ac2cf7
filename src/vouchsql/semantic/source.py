"""Reading a semantic-layer file with the line of every mapping, so an error names the file, the
line and the field ("models/semantic.yml:14: semantic_models[0].measures[2].agg: …").

YAML (PyYAML's safe loader) and JSON (checked by ``json`` first, which allows no trailing
comma, then read as YAML where it can be for the lines; plain ``json`` otherwise, without
lines) give :class:`Node` dicts and :class:`Items` lists that remember where they start and
where each key is. A key given twice in one mapping is an error naming its line.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from ..errors import UserInputError

if TYPE_CHECKING:
    import yaml


class Node(dict[str, Any]):
    """A mapping that knows its line and the line of each key (1-based; 0 when unknown)."""

    line: int = 0
    lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return cast(int, getattr(self, "lines", {}).get(key, self.line))


_DUPLICATE = "duplicate key"


class Items(list[Any]):
    line: int = 0


def _loader() -> tuple[type[yaml.SafeLoader], ModuleType]:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Node:
        out = Node()
        out.line = node.start_mark.line + 1
        out.lines = {}
        loader.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if key in out:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{_DUPLICATE} {key!r} (the second would replace the first)", key_node.start_mark)
            out[key] = loader.construct_object(value_node, deep=True)
            out.lines[key] = key_node.start_mark.line + 1
        return out

    def sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Items:
        out = Items(loader.construct_object(child, deep=True) for child in node.value)
        out.line = node.start_mark.line + 1
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, sequence)
    return Loader, yaml


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserInputError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UserInputError(f"cannot read {path}: not UTF-8 text (offset {exc.start})") from None


def load_structured(text: str, path: Path, *, empty_ok: bool = False) -> Any:
    """The file's data, dicts as :class:`Node` with lines. A ``.json`` file must be JSON as
    ``json`` reads it (no trailing comma, no comment); JSON that YAML cannot read (a tab inside
    a string, say) is read by ``json`` without lines. An empty file is an error (None where
    ``empty_ok``: a placeholder YAML file in a dbt project)."""
    if not text.strip():
        if empty_ok:
            return None
        raise UserInputError(f"{path}: the file is empty")
    plain: Any = None
    if path.suffix.lower() == ".json":
        try:
            plain = json.loads(text)
        except json.JSONDecodeError as jexc:
            raise UserInputError(f"{path}:{jexc.lineno}: not valid JSON: {_json_problem(text, jexc)}") from None
    try:
        Loader, yaml = _loader()
    except ImportError:
        if plain is not None:
            return plain
        raise UserInputError(f"{path} is YAML, which needs PyYAML (pip install pyyaml)") from None
    try:
        data = yaml.load(text, Loader=Loader)  # noqa: S506 — a SafeLoader subclass
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if plain is not None and not problem.startswith(_DUPLICATE):
            return plain
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        kind = "JSON" if plain is not None else "YAML"
        raise UserInputError(f"{where}: not valid {kind}: {problem}") from None
    if data is None and not empty_ok:
        raise UserInputError(f"{path}: the file is empty (only comments)")
    return data


def _json_problem(text: str, exc: json.JSONDecodeError) -> str:
    """``json``'s message, saying so where the cause is a trailing comma, which JSON (and
    Python's ``json``) does not allow."""
    before = text[:exc.pos].rstrip()
    if before.endswith(",") and text[exc.pos:exc.pos + 1] in "]}":
        return f"a trailing comma before '{text[exc.pos]}' (column {exc.colno}): JSON allows none"
    return f"{exc.msg} (column {exc.colno})"


class Where:
    """Errors about one file: ``fail(node, "tables[0].name", "…")`` names file, line and field."""

    def __init__(self, path: Path | str):
        self.path = str(path)

    def fail(self, node: Any, field: str, message: str, key: str | None = None) -> UserInputError:
        line = 0
        if isinstance(node, Node):
            line = node.line_of(key) if key else node.line
        elif isinstance(node, Items):
            line = node.line
        at = f"{self.path}:{line}" if line else self.path
        return UserInputError(f"{at}: {field}: {message}")

    def mapping(self, node: Any, field: str) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise self.fail(node, field, f"expected a mapping, got {_kind(node)}")
        return node

    def sub(self, parent: dict[str, Any], key: str, field: str) -> dict[str, Any]:
        """``parent[key]`` as a mapping (empty where it is absent); anything else is an error
        naming the key's line."""
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(parent, f"{field}.{key}" if field else key, f"expected a mapping, got {_kind(value)}", key)
        return value

    def items(self, parent: dict[str, Any], key: str, field: str) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(parent, f"{field}.{key}" if field else key, "expected a list", key)
        return value

    @overload
    def text(self, parent: dict[str, Any], key: str, field: str, *, required: Literal[True] = True) -> str: ...

    @overload
    def text(self, parent: dict[str, Any], key: str, field: str, *, required: bool) -> str | None: ...

    def text(self, parent: dict[str, Any], key: str, field: str, *, required: bool = True) -> str | None:
        value = parent.get(key)
        name = f"{field}.{key}" if field else key
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self.fail(parent, name, "missing (give it as text)", key if key in parent else None)
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise self.fail(parent, name, f"expected text, got {_kind(value)}", key)
        return str(value).strip()

    @overload
    def sql(self, parent: dict[str, Any], key: str, field: str, *, required: Literal[True] = True) -> str: ...

    @overload
    def sql(self, parent: dict[str, Any], key: str, field: str, *, required: bool) -> str | None: ...

    def sql(self, parent: dict[str, Any], key: str, field: str, *, required: bool = True) -> str | None:
        """An SQL expression or statement: text only (a number or true/false is an error)."""
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(parent, f"{field}.{key}" if field else key,
                            f"expected text, got {_kind(value)}", key)
        return self.text(parent, key, field, required=required)

    def words(self, parent: dict[str, Any], key: str, field: str) -> tuple[str, ...]:
        value = parent.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise self.fail(parent, f"{field}.{key}" if field else key, "expected a list of words", key)
        return tuple(str(v).strip() for v in value if str(v).strip())


def _kind(value: Any) -> str:
    """What a YAML/JSON value is, in the file's terms."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def line_of(node: Any) -> int:
    return cast(int, getattr(node, "line", 0))


def line_at(node: Any, key: str) -> int:
    """The line of ``key`` in ``node`` (the node's own line where the key is not there)."""
    return node.line_of(key) if isinstance(node, Node) else line_of(node)

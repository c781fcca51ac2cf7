"""Reading a semantic-layer file with the line of every mapping, so an error names the file, the
line and the field ("models/semantic.yml:14: semantic_models[0].measures[2].agg: …").

YAML (PyYAML's safe loader) and JSON (read as YAML where it can be, which is JSON's common
case; plain ``json`` otherwise, without lines) give :class:`Node` dicts and :class:`Items`
lists that remember where they start and where each key is.
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


def load_structured(text: str, path: Path) -> Any:
    """The file's data, dicts as :class:`Node` with lines. JSON that YAML cannot read (a tab
    inside a string, say) is read by ``json`` without lines."""
    try:
        Loader, yaml = _loader()
    except ImportError:
        raise UserInputError(f"{path} is YAML, which needs PyYAML (pip install pyyaml)") from None
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 — a SafeLoader subclass
    except yaml.YAMLError as exc:
        if path.suffix.lower() == ".json":
            try:
                return json.loads(text)
            except json.JSONDecodeError as jexc:
                raise UserInputError(f"{path}:{jexc.lineno}: not valid JSON: {jexc.msg}") from None
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserInputError(f"{where}: not valid YAML: {problem}") from None


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

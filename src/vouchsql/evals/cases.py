"""Loading case files and resolving the databases they name.

A case's ``db`` is a path (relative to the case file's folder), ``demo`` (the demo database,
built on demand), or the name of a shared public database (``chinook``, ``sakila``,
``northwind``) looked up in ``--datasets`` or ``../shared/datasets``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UserInputError
from ..settings import Config

SHARED_NAMES = {"chinook", "sakila", "northwind"}


def read_jsonl(path: Path, *, line_numbers: bool = False) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one a line; blank lines and ``#`` comments skipped.
    With ``line_numbers`` each carries its line as ``_line`` (for errors that name it)."""
    if not path.is_file():
        raise UserInputError(f"{path}: no such case file")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise UserInputError(f"{path}:{n}: not a JSON object (each line is one {{...}})")
        rows.append({**row, "_line": n} if line_numbers else row)
    return rows


def read_items(path: Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    """The items of a JSONL input: each row with its ``id`` (``line-N`` when it has none; ids
    are unique) and every ``required`` field non-empty."""
    out, seen = [], set()
    for n, row in enumerate(read_jsonl(path), 1):
        item_id = str(row.get("id", f"line-{n}"))
        if item_id in seen:
            raise UserInputError(f"{path}: id {item_id!r} appears twice")
        seen.add(item_id)
        for key in required:
            if not row.get(key):
                raise UserInputError(f"{path}: item {item_id!r} has no {key}")
        out.append({**row, "id": item_id})
    if not out:
        raise UserInputError(f"{path}: no items")
    return out


def default_datasets_dirs(case_file: Path) -> list[Path]:
    here = Path.cwd()
    return [here / "../shared/datasets", here / "shared/datasets",
            Path(__file__).resolve().parents[3] / "../shared/datasets",
            case_file.parent / "../shared/datasets"]


class DatabaseResolver:
    def __init__(self, case_file: Path, config: Config, datasets: Path | None = None) -> None:
        self.case_file = case_file
        self.config = config
        self.dirs = [datasets] if datasets else default_datasets_dirs(case_file)
        self._demo: Path | None = None

    def resolve(self, name: str) -> Path | None:
        if name == "demo":
            if self._demo is None:
                from ..api import build_demo, demo_path
                path = demo_path(self.config)
                self._demo = path if path.is_file() else build_demo(config=self.config)
            return self._demo
        if name in SHARED_NAMES:
            for d in self.dirs:
                candidate = (d / f"{name}.sqlite").resolve()
                if candidate.is_file():
                    return candidate
            return None
        path = Path(name)
        return path if path.is_absolute() else (self.case_file.parent / path).resolve()

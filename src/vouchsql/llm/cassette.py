"""Cassettes: every model request of a run and its answer, in one JSON file.

``--record PATH`` writes one; ``replay:PATH`` answers from one. An entry is keyed by the
request's messages and parameters (:func:`vouchsql.llm.base.cassette_key`), so a replay
needs no model name and no network. A request the cassette does not hold is an error
(:class:`ReplayMiss`), never a guess.

Format (``format: "vouch-cassette/1"``)::

    {"format": "vouch-cassette/1",
     "entries": [{"key": "…", "model": "openai:gpt-4o-mini", "stage": "assess",
                  "request": {"messages": [{"role": …, "content": …}], "temperature": 0.0,
                              "max_tokens": 2048, "sample": 0},
                  "response": {"text": "…", "input_tokens": 812, "output_tokens": 64,
                               "finish_reason": "stop"}}]}
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from ..errors import UserInputError
from .base import Completion, ReplayMiss, Request, cassette_key

FORMAT = "vouch-cassette/1"


class Cassette:
    def __init__(self, path: "str | os.PathLike[str]", entries: dict[str, dict[str, Any]] | None = None) -> None:
        self.path = Path(path)
        self.entries: dict[str, dict[str, Any]] = entries or {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: "str | os.PathLike[str]", *, missing_ok: bool = False) -> "Cassette":
        p = Path(path).expanduser()
        if not p.is_file():
            if missing_ok:
                return cls(p)
            raise UserInputError(f"no cassette at {p} (record one with --record {p})")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserInputError(f"cannot read cassette {p}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), list):
            raise UserInputError(f"{p} is not a Vouch cassette (expected format {FORMAT!r})")
        return cls(p, {e["key"]: e for e in data["entries"] if isinstance(e, dict) and "key" in e})

    def lookup(self, request: Request) -> Completion | None:
        entry = self.entries.get(cassette_key(request))
        return Completion.from_dict(entry["response"]) if entry else None

    def record(self, request: Request, completion: Completion, *, model: str, stage: str) -> None:
        key = cassette_key(request)
        with self._lock:
            self.entries[key] = {"key": key, "model": model, "stage": stage, "request": request.identity(),
                                 "response": completion.to_dict()}

    def save(self) -> Path:
        with self._lock:
            entries = list(self.entries.values())
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "entries": entries}, indent=1, ensure_ascii=False),
                       encoding="utf-8")
        tmp.replace(self.path)
        return self.path

    def __len__(self) -> int:
        return len(self.entries)


class ReplayModel:
    """``replay:PATH``: answers only what the cassette recorded."""

    provider = "replay"

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.cassette = Cassette.load(path)
        self.name = str(self.cassette.path)
        self.endpoint = None

    def complete(self, request: Request) -> Completion:
        found = self.cassette.lookup(request)
        if found is None:
            first_user = next((c for r, c in request.messages if r == "user"), "")
            raise ReplayMiss(f"cassette {self.cassette.path} holds no answer for this request "
                             f"(sample {request.sample}, {len(request.messages)} messages, starting "
                             f"{_clip(first_user)!r}); record it again with --record")
        return found


    def complete_n(self, request: Request, n: int) -> list[Completion]:
        """A draw of ``n`` samples recorded choice by choice: each is looked up under its own
        sample number, so a replay of a batched draw is one call, as the recording was.
        (:class:`vouchsql.llm.LLM` looks each missing sample up itself; this is for direct use.)"""
        return [self.complete(Request(messages=request.messages, temperature=request.temperature,
                                      max_tokens=request.max_tokens, sample=request.sample + i))
                for i in range(n)]


def _clip(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"

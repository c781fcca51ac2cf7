"""The on-disk response cache: one JSON file per request, keyed by (provider, model, endpoint,
messages, parameters), under ``<cache_dir>/llm``. A rerun of the same question with the same
prompts, model and settings makes no request, and returns the same replies, so the same
Answer. Every reply is kept, a malformed one too, so a run that needed a repair replays the
same repair."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from .base import Completion

CACHE_FORMAT = 1


class ResponseCache:
    def __init__(self, folder: "str | os.PathLike[str]") -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent or unreadable: ask again
        if data.get("format") != CACHE_FORMAT or "response" not in data:
            return None
        return Completion.from_dict(data["response"])

    def put(self, key: str, completion: Completion, *, model: str, stage: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"format": CACHE_FORMAT, "model": model, "stage": stage,
                                       "response": completion.to_dict()}, ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass  # a read-only cache folder costs a request next time, nothing more

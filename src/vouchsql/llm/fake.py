"""A function-backed model for tests: ``FakeModel(fn)`` answers each request with
``fn(request)``, which returns the reply text (or a :class:`Completion`) or raises, for
example :class:`TransientModelError` to exercise retries. Never touches a network."""

from __future__ import annotations

import threading
from typing import Callable

from .base import Completion, Request


class FakeModel:
    provider = "fake"

    def __init__(self, fn: Callable[[Request], "str | Completion"], name: str = "fake") -> None:
        self.fn = fn
        self.name = name
        self.endpoint = None
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.requests.append(request)
        out = self.fn(request)
        if isinstance(out, Completion):
            return out
        text = "" if out is None else str(out)
        return Completion(text=text, input_tokens=sum(len(c.split()) for _, c in request.messages),
                          output_tokens=len(text.split()), finish_reason="stop")

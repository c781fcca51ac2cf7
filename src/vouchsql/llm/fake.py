"""A function-backed model for tests: ``FakeModel(fn)`` answers each request with
``fn(request)``, which returns the reply text (or a :class:`Completion`) or raises, for
example :class:`TransientModelError` to exercise retries. Never touches a network.

``FakeModel(fn, n=True)`` also draws several samples in one request, as an endpoint with
OpenAI's ``n`` does: ``fn`` is called once per choice with that choice's sample number, and
``requests`` records the request once."""

from __future__ import annotations

import threading
from typing import Callable

from .base import Completion, Request


class FakeModel:
    provider = "fake"

    def __init__(self, fn: Callable[[Request], "str | Completion"], name: str = "fake", *, n: bool = False) -> None:
        self.fn = fn
        if n:  # only then: LLM draws in one request exactly when the model has complete_n
            self.complete_n = self._complete_n
        self.name = name
        self.endpoint = None
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    def complete(self, request: Request) -> Completion:
        with self._lock:
            self.requests.append(request)
        return self._answer(request)

    def _complete_n(self, request: Request, n: int) -> list[Completion]:
        with self._lock:
            self.requests.append(request)
        return [self._answer(Request(messages=request.messages, temperature=request.temperature,
                                     max_tokens=request.max_tokens, sample=request.sample + i)) for i in range(n)]

    def _answer(self, request: Request) -> Completion:
        out = self.fn(request)
        if isinstance(out, Completion):
            return out
        text = "" if out is None else str(out)
        return Completion(text=text, input_tokens=sum(len(c.split()) for _, c in request.messages),
                          output_tokens=len(text.split()), finish_reason="stop")

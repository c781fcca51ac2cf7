"""What the pipeline calls: one :class:`LLM` wraps a provider with the response cache,
cassette recording, retries with backoff, a concurrency limit, JSON reading with one repair
request, and per-stage accounting."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..answer import StageUsage, Usage
from ..errors import ModelError
from .base import (BadOutput, Completion, Model, ReplayMiss, Request, TransientModelError, cache_key,
                   spec_of)
from .cache import ResponseCache
from .cassette import Cassette
from .jsonparse import parse_json_object

MAX_BACKOFF_S = 30.0
REPAIR_JSON = ("Your reply could not be used: {problem}. Reply again with only the JSON object the "
               "instructions ask for, complete, and no other text.")
REPAIR_TEXT = "Your reply was empty. Reply with the answer text only."
EMPTY_TURN = "(empty reply)"  # an assistant turn may not be empty (Anthropic refuses one)


class Accounting:
    """Calls, requests, tokens and latency per stage, and the sequential rounds of calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, StageUsage] = {}
        self.rounds = 0

    def add(self, stage: str, **deltas: float) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, StageUsage())
            for name, value in deltas.items():
                setattr(usage, name, getattr(usage, name) + value)

    def begin_round(self) -> None:
        with self._lock:
            self.rounds += 1

    def snapshot(self, model: str, prompts: dict[str, str]) -> Usage:
        with self._lock:
            stages = {k: v.model_copy() for k, v in self.stages.items()}
            rounds = self.rounds
        total = StageUsage()
        for s in stages.values():
            for name in StageUsage.model_fields:
                setattr(total, name, getattr(total, name) + getattr(s, name))
        for s in (*stages.values(), total):
            s.latency_ms, s.wall_ms = round(s.latency_ms, 3), round(s.wall_ms, 3)
        return Usage(model=model, prompts=prompts, stages=stages, total=total, rounds=rounds)


class LLM:
    def __init__(self, model: Model, *, cache: ResponseCache | None = None, cassette: Cassette | None = None,
                 max_retries: int = 3, backoff: float = 1.0, concurrency: int = 8,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.spec = spec_of(model)
        self.cache = cache if model.provider != "replay" else None  # a cassette is already a cache
        self.cassette = cassette
        self.max_retries = max_retries
        self.backoff = backoff
        self.sleep = sleep
        self.accounting = Accounting()
        self._slots = threading.BoundedSemaphore(max(1, concurrency))

    # -- one request -----------------------------------------------------------------------
    def complete(self, request: Request, *, stage: str, repair: bool = False) -> Completion:
        extra = {"repairs": 1} if repair else {}
        key = cache_key(self.model, request) if self.cache is not None else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._account(stage, hit, cached=1, **extra)
                self._record(request, hit, stage)
                return hit
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                with self._slots:
                    start = time.perf_counter()
                    completion = self.model.complete(request)
            except TransientModelError as exc:
                self.accounting.add(stage, requests=1, latency_ms=_ms(start))
                if attempt >= self.max_retries:
                    raise ModelError(f"{stage}: {exc.message} (gave up after {attempt + 1} attempt"
                                     f"{'s' if attempt else ''})", kind=exc.kind, stage=stage) from None
                self.accounting.add(stage, retries=1)
                self.sleep(min(self.backoff * (2 ** attempt), MAX_BACKOFF_S))
                attempt += 1
                continue
            except ReplayMiss:
                raise
            except ModelError as exc:
                self.accounting.add(stage, requests=1, calls=1, latency_ms=_ms(start))
                raise ModelError(f"{stage}: {exc.message}", kind=exc.kind, stage=stage) from None
            break
        replayed = self.model.provider == "replay"
        self._account(stage, completion, requests=0 if replayed else 1, cached=1 if replayed else 0,
                      latency_ms=_ms(start), **extra)
        if key is not None:
            self.cache.put(key, completion, model=self.spec, stage=stage)
        self._record(request, completion, stage)
        return completion

    def _account(self, stage: str, c: Completion, **counts: float) -> None:
        self.accounting.add(stage, calls=1, input_tokens=c.input_tokens, output_tokens=c.output_tokens, **counts)

    def _record(self, request: Request, completion: Completion, stage: str) -> None:
        if self.cassette is not None:
            self.cassette.record(request, completion, model=self.spec, stage=stage)

    # -- structured replies ----------------------------------------------------------------
    def complete_json(self, request: Request, *, stage: str, validate: Callable[[dict], Any] = lambda d: d) -> Any:
        """The reply read as one JSON object and checked by ``validate`` (which raises
        :class:`BadOutput`); one repair request when it cannot be read, then ModelError."""
        first = self.complete(request, stage=stage)
        try:
            return validate(parse_json_object(first.text))
        except BadOutput as exc:
            problem = str(exc)
        repair = request.with_turns(("assistant", first.text.strip() or EMPTY_TURN),
                                    ("user", REPAIR_JSON.format(problem=problem)))
        second = self.complete(repair, stage=stage, repair=True)
        try:
            return validate(parse_json_object(second.text))
        except BadOutput as exc:
            raise ModelError(f"{stage}: the model's reply could not be read ({problem}), nor its repair ({exc})",
                             kind="model_bad_output", stage=stage) from None

    def complete_text(self, request: Request, *, stage: str) -> str:
        first = self.complete(request, stage=stage)
        if first.text.strip():
            return first.text.strip()
        second = self.complete(request.with_turns(("assistant", EMPTY_TURN), ("user", REPAIR_TEXT)),
                               stage=stage, repair=True)
        if second.text.strip():
            return second.text.strip()
        raise ModelError(f"{stage}: the model's reply was empty, twice", kind="model_bad_output", stage=stage)

    # -- bookkeeping -----------------------------------------------------------------------
    def usage(self, prompts: dict[str, str]) -> Usage:
        return self.accounting.snapshot(self.spec, prompts)

    def save_cassette(self):
        return self.cassette.save() if self.cassette is not None else None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000

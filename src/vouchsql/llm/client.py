"""What the pipeline calls: one :class:`LLM` wraps a provider with the response cache,
cassette recording, retries with backoff, a concurrency limit, JSON reading with one repair
request, and per-stage accounting."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Protocol, TypeVar, cast

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

T = TypeVar("T")


class _DrawsSamples(Protocol):
    """A provider that answers ``n`` choices of one prompt in one request (not every one does)."""

    def complete_n(self, request: Request, n: int) -> list[Completion]: ...


class Accounting:
    """Calls, requests, tokens and latency per stage, and the sequential rounds of calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stages: dict[str, StageUsage] = {}
        self.rounds = 0
        self._extra_after = -1

    def add(self, stage: str, **deltas: float) -> None:
        with self._lock:
            usage = self.stages.setdefault(stage, StageUsage())
            for name, value in deltas.items():
                setattr(usage, name, getattr(usage, name) + value)

    def begin_round(self) -> None:
        with self._lock:
            self.rounds += 1

    def extra_round(self, during: int) -> None:
        """One more sequential round after round ``during`` (calls that had to wait for an
        earlier reply in the same stage), counted once however many draws needed it."""
        with self._lock:
            if self._extra_after != during:
                self._extra_after = during
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
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._account(stage, hit, cached=1, **extra)
                self._record(request, hit, stage)
                return hit
        completion, start = self._send(lambda: self.model.complete(request), stage)
        replayed = self.model.provider == "replay"
        self._account(stage, completion, requests=0 if replayed else 1, cached=1 if replayed else 0,
                      latency_ms=_ms(start), **extra)
        if key is not None and self.cache is not None:
            self.cache.put(key, completion, model=self.spec, stage=stage)
        self._record(request, completion, stage)
        return completion

    def _send(self, call: Callable[[], T], stage: str) -> tuple[T, float]:
        """``call()`` under a concurrency slot, retried with backoff on a transient error;
        returns its value and when the successful attempt started (for the latency)."""
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                with self._slots:
                    start = time.perf_counter()
                    return call(), start
            except TransientModelError as exc:
                self.accounting.add(stage, requests=1, latency_ms=_ms(start))
                if attempt >= self.max_retries:
                    raise ModelError(f"{stage}: {exc.message} (gave up after {attempt + 1} attempt"
                                     f"{'s' if attempt else ''})", kind=exc.kind, stage=stage) from None
                self.accounting.add(stage, retries=1)
                self.sleep(min(self.backoff * (2 ** attempt), MAX_BACKOFF_S))
                attempt += 1
            except ReplayMiss:
                raise
            except ModelError as exc:
                self.accounting.add(stage, requests=1, calls=1, latency_ms=_ms(start))
                raise ModelError(f"{stage}: {exc.message}", kind=exc.kind, stage=stage) from None

    # -- several samples of one prompt ---------------------------------------------------------
    def complete_samples(self, request: Request, samples: "list[int] | range", *, stage: str) -> dict[int, Completion]:
        """Samples ``samples`` of one prompt (``request`` with each sample number), drawn in
        ONE request where the provider returns several choices per request (OpenAI-compatible
        ``n``) and, where it does not (Anthropic) or returns fewer choices than asked, by
        parallel single requests. Each choice is cached and recorded under its own sample's
        identity, so a rerun, a replay and a later single-sample request all find it.

        Accounting: a draw answered in one request is ONE call (that is the budget the issue
        states, and what the endpoint bills as one prompt); a fallback sample is one call each.
        On a rerun from the cache the same rule applies by the provider's capability."""
        wanted = [Request(messages=request.messages, temperature=request.temperature,
                          max_tokens=request.max_tokens, sample=s) for s in samples]
        batched = callable(getattr(self.model, "complete_n", None)) and len(wanted) > 1
        if not batched:
            return self._single_each(wanted, stage)
        out: dict[int, Completion] = {}
        missing: list[Request] = []
        for req in wanted:
            key = cache_key(self.model, req) if self.cache is not None else None
            hit = self.cache.get(key) if key is not None and self.cache is not None else None
            if hit is None:
                missing.append(req)
            else:
                out[req.sample] = hit
                self._record(req, hit, stage)
        if not missing:
            self._account_draw(stage, list(out.values()), cached=1)
            return out
        during = self.accounting.rounds
        got = self._send_n(missing, stage)
        for req, completion in zip(missing, got):
            out[req.sample] = completion
            if self.cache is not None:
                self.cache.put(cache_key(self.model, req), completion, model=self.spec, stage=stage)
            self._record(req, completion, stage)
        rest = missing[len(got):]
        if rest:  # the endpoint ignored n (or returned fewer choices): the others one by one,
            self.accounting.extra_round(during)  # after the reply that said so: one more round
            out.update(self._single_each(rest, stage))
        return out

    def _send_n(self, missing: list[Request], stage: str) -> list[Completion]:
        """One request for ``len(missing)`` choices, with the same retries as :meth:`complete`."""

        def send() -> list[Completion]:
            if self.model.provider == "replay":  # recorded choice by choice, under each sample
                return [self.model.complete(r) for r in missing]
            # only a provider with complete_n gets here (complete_samples checked)
            return list(cast(_DrawsSamples, self.model).complete_n(missing[0], len(missing)))

        choices, start = self._send(send, stage)
        choices = choices[: len(missing)]
        replayed = self.model.provider == "replay"
        self._account_draw(stage, choices, requests=0 if replayed else 1, cached=1 if replayed else 0,
                           latency_ms=_ms(start))
        return choices

    def _single_each(self, wanted: list[Request], stage: str) -> dict[int, Completion]:
        if len(wanted) == 1:
            return {wanted[0].sample: self.complete(wanted[0], stage=stage)}
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
            done = list(pool.map(lambda r: self.complete(r, stage=stage), wanted))
        return {r.sample: c for r, c in zip(wanted, done)}

    def _account_draw(self, stage: str, choices: list[Completion], **counts: float) -> None:
        self.accounting.add(stage, calls=1, input_tokens=sum(c.input_tokens for c in choices),
                            output_tokens=sum(c.output_tokens for c in choices), **counts)

    def _account(self, stage: str, c: Completion, **counts: float) -> None:
        self.accounting.add(stage, calls=1, input_tokens=c.input_tokens, output_tokens=c.output_tokens, **counts)

    def _record(self, request: Request, completion: Completion, stage: str) -> None:
        if self.cassette is not None:
            self.cassette.record(request, completion, model=self.spec, stage=stage)

    # -- structured replies ----------------------------------------------------------------
    def complete_json(self, request: Request, *, stage: str,
                      validate: Callable[[dict[str, Any]], Any] = lambda d: d) -> Any:
        """The reply read as one JSON object and checked by ``validate`` (which raises
        :class:`BadOutput`); one repair request when it cannot be read, then ModelError."""
        return self._read_json(request, self.complete(request, stage=stage), stage, validate)

    def complete_json_samples(self, request: Request, samples: "list[int] | range", *, stage: str,
                              validate: Callable[[dict[str, Any]], Any] = lambda d: d) -> dict[int, Any]:
        """:meth:`complete_samples`, each reply read as :meth:`complete_json` reads one (a
        reply that cannot be read gets its own repair request, outside the draw)."""
        drawn = self.complete_samples(request, samples, stage=stage)
        out: dict[int, Any] = {}
        for s, completion in sorted(drawn.items()):
            req = Request(messages=request.messages, temperature=request.temperature,
                          max_tokens=request.max_tokens, sample=s)
            out[s] = self._read_json(req, completion, stage, validate)
        return out

    def _read_json(self, request: Request, first: Completion, stage: str,
                   validate: Callable[[dict[str, Any]], Any]) -> Any:
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

    def save_cassette(self) -> Path | None:
        return self.cassette.save() if self.cassette is not None else None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000

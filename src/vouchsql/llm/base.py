"""The one small protocol every model provider implements, and what goes through it.

A provider is an object with ``provider`` (``"openai"``, ``"anthropic"``, ``"replay"``,
``"fake"``), ``name`` (the model), ``endpoint`` (where it sends requests, or ``None``) and
``complete(request) -> Completion``. It sends one request, once: retries, the response
cache, cassettes, the concurrency limit and accounting live in :class:`vouchsql.llm.LLM`,
so every provider gets them the same way.

A provider raises :class:`TransientModelError` for what a retry can cure (a timeout, a 429,
a 5xx, a dropped connection) and :class:`vouchsql.errors.ModelError` for the rest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import ModelError


@dataclass(frozen=True)
class Request:
    """One prompt to answer. ``sample`` tells apart the K identical generate prompts: it is
    part of the cache and cassette identity (sample 3 of a rerun gets sample 3's answer) and
    is never sent to the provider."""

    messages: tuple[tuple[str, str], ...]  # (role, content); roles: system, user, assistant
    temperature: float | None = 0.0
    max_tokens: int = 2048
    sample: int = 0

    @classmethod
    def of(cls, messages: list[dict[str, str]] | list[tuple[str, str]], **params: Any) -> "Request":
        pairs = tuple((m["role"], m["content"]) if isinstance(m, dict) else (m[0], m[1]) for m in messages)
        return cls(messages=pairs, **params)

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def identity(self) -> dict[str, Any]:
        return {"messages": self.message_dicts(), "temperature": self.temperature,
                "max_tokens": self.max_tokens, "sample": self.sample}

    def with_turns(self, *turns: tuple[str, str]) -> "Request":
        return Request(messages=self.messages + tuple(turns), temperature=self.temperature,
                       max_tokens=self.max_tokens, sample=self.sample)


@dataclass
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Completion":
        return cls(text=data.get("text") or "", input_tokens=int(data.get("input_tokens") or 0),
                   output_tokens=int(data.get("output_tokens") or 0), finish_reason=data.get("finish_reason"))


@runtime_checkable
class Model(Protocol):
    # Read-only members: a provider sets them as plain attributes of narrower types
    # (``endpoint = None`` on a replay or fake model), which a mutable member would refuse.
    @property
    def provider(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def endpoint(self) -> str | None: ...

    def complete(self, request: Request) -> Completion: ...


class TransientModelError(ModelError):
    """A failure a retry may cure: timeout, 429, 5xx, a dropped connection."""

    kind = "model_transient"


class ReplayMiss(ModelError):
    """A cassette has no recorded answer for a request. Never guessed, never retried."""

    kind = "replay_miss"


@dataclass
class BadOutput(Exception):
    """The model's reply is not what the prompt asked for (not JSON, a field missing)."""

    message: str
    details: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return self.message


def spec_of(model: Model) -> str:
    return f"{model.provider}:{model.name}"


def digest(data: object) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cache_key(model: Model, request: Request) -> str:
    """Response-cache identity: provider, model, endpoint, messages and parameters."""
    return digest({"provider": model.provider, "model": model.name, "endpoint": model.endpoint,
                   **request.identity()})


def cassette_key(request: Request) -> str:
    """Cassette identity: messages and parameters only, so ``replay:`` needs no model name."""
    return digest(request.identity())

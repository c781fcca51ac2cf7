"""The model layer: a small :class:`Model` protocol, providers chosen by ``provider:model``
strings, and :class:`LLM`, which adds the response cache, cassettes, retries, a concurrency
limit, JSON reading with one repair, and accounting.

Providers:

- ``openai:MODEL`` — the official ``openai`` SDK; any OpenAI-compatible endpoint through a
  base URL (the ``base_url`` setting, ``--base-url``, or ``OPENAI_BASE_URL``);
- ``anthropic:MODEL`` — the official ``anthropic`` SDK;
- ``replay:PATH`` — answers from a cassette written by ``--record PATH``; a request it does
  not hold is an error, never a guess;
- a :class:`FakeModel` (a Python function) for tests, passed as an object.

Vendor SDKs are imported only when their provider is used; a missing one is named in the
error (``pip install 'vouchsql[openai]'``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UserInputError
from .base import (BadOutput, Completion, Model, ReplayMiss, Request, TransientModelError, cache_key,
                   cassette_key, spec_of)
from .cache import ResponseCache
from .cassette import Cassette, ReplayModel
from .client import LLM, Accounting
from .fake import FakeModel
from .jsonparse import parse_json_object
from .prompts import PROMPT_NAMES, Prompt, list_prompts, load_prompt, prompt_hashes

if TYPE_CHECKING:
    from ..settings import Config

PROVIDERS = ("openai", "anthropic", "replay")


def get_model(spec: "str | Model", *, base_url: str | None = None, timeout: float = 60.0) -> Model:
    """A provider from a ``provider:model`` string (a Model object is returned as it is)."""
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise UserInputError(f"not a model: {spec!r}; give a provider:model string")
    provider, sep, name = spec.strip().partition(":")
    provider = provider.lower()
    if not sep or not name.strip() or provider not in PROVIDERS:
        raise UserInputError(f"model {spec!r}: write provider:model, with provider one of {', '.join(PROVIDERS)} "
                             f"(for example openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, replay:run.json)")
    name = name.strip()
    if provider == "openai":
        from .openai_provider import OpenAIModel
        return OpenAIModel(name, base_url=base_url, timeout=timeout)
    if provider == "anthropic":
        from .anthropic_provider import AnthropicModel
        return AnthropicModel(name, base_url=base_url, timeout=timeout)
    return ReplayModel(os.path.expanduser(name))


def llm_from_config(model: "str | Model", config: Config, *, record: "str | os.PathLike[str] | None" = None,
                    base_url: str | None = None, sleep: Callable[[float], None] | None = None) -> LLM:
    """An :class:`LLM` set up from the settings (``base_url``, ``model_timeout``,
    ``max_retries``, ``retry_backoff``, ``concurrency``, ``no_model_cache``, ``cache_dir``)."""
    provider = get_model(model, base_url=base_url or config.base_url, timeout=config.model_timeout)
    cache = None if config.no_model_cache else ResponseCache(config.cache_path / "llm")
    cassette = Cassette.load(record, missing_ok=True) if record else None
    kwargs: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
    return LLM(provider, cache=cache, cassette=cassette, max_retries=config.max_retries,
               backoff=config.retry_backoff, concurrency=config.concurrency, **kwargs)


__all__ = ["Model", "Request", "Completion", "LLM", "Accounting", "FakeModel", "ReplayModel", "Cassette",
           "ResponseCache", "TransientModelError", "ReplayMiss", "BadOutput", "get_model", "llm_from_config",
           "parse_json_object", "cache_key", "cassette_key", "spec_of", "Prompt", "load_prompt", "list_prompts",
           "prompt_hashes", "PROMPT_NAMES"]

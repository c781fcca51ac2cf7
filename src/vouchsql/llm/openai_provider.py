"""``openai:MODEL`` through the official ``openai`` SDK, for OpenAI and any OpenAI-compatible
endpoint (vLLM, Ollama, llama.cpp server, LM Studio, OpenRouter) reached by a base URL.

The SDK's own retries are off (``max_retries=0``): :class:`vouchsql.llm.LLM` retries, so
every provider backs off the same way and a test can count each request.
"""

from __future__ import annotations

import os

from ..errors import ModelError, UserInputError
from .base import Completion, Request, TransientModelError

DEFAULT_ENDPOINT = "https://api.openai.com/v1"
# Local OpenAI-compatible servers ignore the key, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"


class OpenAIModel:
    provider = "openai"

    def __init__(self, name: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        try:
            import openai
        except ImportError:
            raise UserInputError("the openai: provider needs the openai SDK: pip install 'vouchsql[openai]'") from None
        self._sdk = openai
        self.name = name
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if not base_url:
                raise UserInputError("openai: needs OPENAI_API_KEY, or a base URL (--base-url / OPENAI_BASE_URL) "
                                     "of an OpenAI-compatible server that needs no key")
            key = _PLACEHOLDER_KEY
        self.endpoint = (base_url or DEFAULT_ENDPOINT).rstrip("/")
        self._client = openai.OpenAI(api_key=key, base_url=self.endpoint, timeout=timeout, max_retries=0)

    def complete(self, request: Request) -> Completion:
        sdk = self._sdk
        params: dict = {}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        try:
            # No max_tokens: newer OpenAI models refuse it (they take max_completion_tokens,
            # which many compatible servers do not know); the prompts ask for short replies.
            resp = self._client.chat.completions.create(model=self.name, messages=request.message_dicts(),
                                                        **params)
        except sdk.APITimeoutError as exc:
            raise TransientModelError(f"openai:{self.name} timed out ({exc})", kind="model_timeout") from None
        except sdk.APIStatusError as exc:
            raise _status_error(self.name, exc.status_code, exc) from None
        except sdk.APIConnectionError as exc:
            raise TransientModelError(f"openai:{self.name}: cannot reach {self.endpoint} ({exc})",
                                      kind="model_connection") from None
        except Exception as exc:  # noqa: BLE001 - a reply the SDK cannot read (HTML from a proxy, bad JSON)
            raise ModelError(f"openai:{self.name}: unreadable reply from {self.endpoint} "
                             f"({type(exc).__name__}: {_short(exc)})", kind="model_response") from None
        choices = getattr(resp, "choices", None) or []
        message = choices[0].message if choices else None
        text = (getattr(message, "content", None) or "") if message is not None else ""
        usage = getattr(resp, "usage", None)
        return Completion(text=text,
                          input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                          finish_reason=getattr(choices[0], "finish_reason", None) if choices else None)


def _status_error(name: str, status: int, exc: Exception) -> ModelError:
    text = f"openai:{name} answered HTTP {status}: {_short(exc)}"
    if status == 429:
        return TransientModelError(text, kind="model_rate_limited", status=status)
    if status >= 500 or status == 408:
        return TransientModelError(text, kind="model_server_error", status=status)
    return ModelError(text, kind="model_request", status=status)


def _short(exc: Exception, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

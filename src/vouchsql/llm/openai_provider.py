"""``openai:MODEL`` through the official ``openai`` SDK, for OpenAI and any OpenAI-compatible
endpoint (vLLM, Ollama, llama.cpp server, LM Studio, OpenRouter) reached by a base URL.

The SDK's own retries are off (``max_retries=0``): :class:`vouchsql.llm.LLM` retries, so
every provider backs off the same way and a test can count each request.
"""

from __future__ import annotations

from ..errors import UserInputError
from .base import Completion, Request
from .sdk import endpoint_and_key, sdk_errors

DEFAULT_ENDPOINT = "https://api.openai.com/v1"


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
        self.endpoint, key = endpoint_and_key(
            base_url, api_key, default=DEFAULT_ENDPOINT, url_env="OPENAI_BASE_URL", key_env="OPENAI_API_KEY",
            no_key="openai: needs OPENAI_API_KEY, or a base URL (--base-url / OPENAI_BASE_URL) "
                   "of an OpenAI-compatible server that needs no key")
        self._client = openai.OpenAI(api_key=key, base_url=self.endpoint, timeout=timeout, max_retries=0)

    def complete(self, request: Request) -> Completion:
        params: dict = {}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        with sdk_errors(self._sdk, f"openai:{self.name}", self.endpoint):
            # No max_tokens: newer OpenAI models refuse it (they take max_completion_tokens,
            # which many compatible servers do not know); the prompts ask for short replies.
            resp = self._client.chat.completions.create(model=self.name, messages=request.message_dicts(),
                                                        **params)
        choices = getattr(resp, "choices", None) or []
        message = choices[0].message if choices else None
        text = (getattr(message, "content", None) or "") if message is not None else ""
        usage = getattr(resp, "usage", None)
        return Completion(text=text,
                          input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                          output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                          finish_reason=getattr(choices[0], "finish_reason", None) if choices else None)

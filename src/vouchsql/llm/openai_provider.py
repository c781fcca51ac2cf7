"""``openai:MODEL`` through the official ``openai`` SDK, for OpenAI and any OpenAI-compatible
endpoint (vLLM, Ollama, llama.cpp server, LM Studio, OpenRouter) reached by a base URL.

The SDK's own retries are off (``max_retries=0``): :class:`vouchsql.llm.LLM` retries, so
every provider backs off the same way and a test can count each request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..errors import UserInputError
from .base import Completion, Request
from .sdk import endpoint_and_key, sdk_errors

if TYPE_CHECKING:  # the SDK is imported only when the provider is used
    from openai.types.chat import ChatCompletionMessageParam

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
        return self.complete_n(request, 1)[0]

    def complete_n(self, request: Request, n: int) -> list[Completion]:
        """``n`` choices of one prompt in one request (the ``n`` parameter). A server that
        ignores ``n`` returns one choice; :meth:`vouchsql.llm.LLM.complete_samples` then asks
        for the rest one by one."""
        params: dict[str, Any] = {"n": n} if n > 1 else {}
        if request.temperature is not None:
            params["temperature"] = request.temperature
        with sdk_errors(self._sdk, f"openai:{self.name}", self.endpoint):
            # No max_tokens: newer OpenAI models refuse it (they take max_completion_tokens,
            # which many compatible servers do not know); the prompts ask for short replies.
            messages = cast("list[ChatCompletionMessageParam]", request.message_dicts())  # role/content dicts
            resp = self._client.chat.completions.create(model=self.name, messages=messages, **params)
        choices = sorted(getattr(resp, "choices", None) or [], key=lambda c: getattr(c, "index", 0) or 0)
        usage = getattr(resp, "usage", None)
        texts = [(getattr(c.message, "content", None) or "") if getattr(c, "message", None) is not None else ""
                 for c in choices] or [""]
        return split_usage(texts, [getattr(c, "finish_reason", None) for c in choices] or [None],
                           int(getattr(usage, "prompt_tokens", 0) or 0),
                           int(getattr(usage, "completion_tokens", 0) or 0))


def split_usage(texts: list[str], finish: list[str | None], input_tokens: int, output_tokens: int) -> list[Completion]:
    """One Completion per choice. The endpoint reports the request's tokens once: the prompt
    is read once, so its tokens go to the first choice; the completion tokens are shared
    evenly (remainder to the first), so the choices' sums are the request's, also when each
    choice is later read back from the cache on its own."""
    n = len(texts)
    share, rest = divmod(output_tokens, n)
    return [Completion(text=t, input_tokens=input_tokens if i == 0 else 0,
                       output_tokens=share + (rest if i == 0 else 0), finish_reason=f)
            for i, (t, f) in enumerate(zip(texts, finish))]

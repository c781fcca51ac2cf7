"""``anthropic:MODEL`` through the official ``anthropic`` SDK (Messages API). The SDK's own
retries are off; :class:`vouchsql.llm.LLM` retries."""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import UserInputError
from .base import Completion, Request
from .sdk import endpoint_and_key, sdk_errors

DEFAULT_ENDPOINT = "https://api.anthropic.com"


class AnthropicModel:
    provider = "anthropic"

    def __init__(self, name: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        try:
            import anthropic
        except ImportError:
            raise UserInputError("the anthropic: provider needs the anthropic SDK: "
                                 "pip install 'vouchsql[anthropic]'") from None
        self._sdk = anthropic
        self.name = name
        self.endpoint, key = endpoint_and_key(
            base_url, api_key, default=DEFAULT_ENDPOINT, url_env="ANTHROPIC_BASE_URL", key_env="ANTHROPIC_API_KEY",
            no_key="anthropic: needs ANTHROPIC_API_KEY (or a base URL of a compatible server)")
        self._client = anthropic.Anthropic(api_key=key, base_url=self.endpoint, timeout=timeout, max_retries=0)
        # Recent SDKs dropped the sampling parameters (recent models refuse them): send a
        # temperature only where the SDK still takes one, else the model's default applies.
        self._takes_temperature = "temperature" in inspect.signature(self._client.messages.create).parameters

    def complete(self, request: Request) -> Completion:
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        messages = [{"role": r, "content": c} for r, c in request.messages if r != "system"]
        params: dict[str, Any] = {"model": self.name, "messages": messages, "max_tokens": request.max_tokens}
        if system:
            params["system"] = system
        if request.temperature is not None and self._takes_temperature:
            params["temperature"] = request.temperature
        with sdk_errors(self._sdk, f"anthropic:{self.name}", self.endpoint):
            resp = self._client.messages.create(**params)
        text = "".join(getattr(block, "text", "") or "" for block in (resp.content or [])
                       if getattr(block, "type", "") == "text")
        usage = getattr(resp, "usage", None)
        return Completion(text=text, input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                          output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
                          finish_reason=getattr(resp, "stop_reason", None))

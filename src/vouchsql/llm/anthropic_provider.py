"""``anthropic:MODEL`` through the official ``anthropic`` SDK (Messages API). The SDK's own
retries are off; :class:`vouchsql.llm.LLM` retries."""

from __future__ import annotations

import inspect
import os

from ..errors import ModelError, UserInputError
from .base import Completion, Request, TransientModelError
from .openai_provider import _short

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
        base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            if not base_url:
                raise UserInputError("anthropic: needs ANTHROPIC_API_KEY (or a base URL of a compatible server)")
            key = "not-needed"
        self.endpoint = (base_url or DEFAULT_ENDPOINT).rstrip("/")
        self._client = anthropic.Anthropic(api_key=key, base_url=self.endpoint, timeout=timeout, max_retries=0)
        # Recent SDKs dropped the sampling parameters (recent models refuse them): send a
        # temperature only where the SDK still takes one, else the model's default applies.
        self._takes_temperature = "temperature" in inspect.signature(self._client.messages.create).parameters

    def complete(self, request: Request) -> Completion:
        sdk = self._sdk
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        messages = [{"role": r, "content": c} for r, c in request.messages if r != "system"]
        params: dict = {"model": self.name, "messages": messages, "max_tokens": request.max_tokens}
        if system:
            params["system"] = system
        if request.temperature is not None and self._takes_temperature:
            params["temperature"] = request.temperature
        try:
            resp = self._client.messages.create(**params)
        except sdk.APITimeoutError as exc:
            raise TransientModelError(f"anthropic:{self.name} timed out ({exc})", kind="model_timeout") from None
        except sdk.APIStatusError as exc:
            status = exc.status_code
            text = f"anthropic:{self.name} answered HTTP {status}: {_short(exc)}"
            if status == 429:
                raise TransientModelError(text, kind="model_rate_limited", status=status) from None
            if status >= 500 or status == 408:  # 529 is Anthropic's "overloaded"
                raise TransientModelError(text, kind="model_server_error", status=status) from None
            raise ModelError(text, kind="model_request", status=status) from None
        except sdk.APIConnectionError as exc:
            raise TransientModelError(f"anthropic:{self.name}: cannot reach {self.endpoint} ({exc})",
                                      kind="model_connection") from None
        except Exception as exc:  # noqa: BLE001 - a reply the SDK cannot read (HTML from a proxy, bad JSON)
            raise ModelError(f"anthropic:{self.name}: unreadable reply from {self.endpoint} "
                             f"({type(exc).__name__}: {_short(exc)})", kind="model_response") from None
        text = "".join(getattr(block, "text", "") or "" for block in (resp.content or [])
                       if getattr(block, "type", "") == "text")
        usage = getattr(resp, "usage", None)
        return Completion(text=text, input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                          output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
                          finish_reason=getattr(resp, "stop_reason", None))

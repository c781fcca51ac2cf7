"""What the two vendor-SDK providers (``openai:``, ``anthropic:``) share: finding the endpoint
and key, and reading the SDK's exceptions as Vouch's, so that both retry the same failures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from ..errors import ModelError, UserInputError
from .base import TransientModelError

# Local compatible servers ignore the key, but the SDKs insist on one.
PLACEHOLDER_KEY = "not-needed"


def endpoint_and_key(base_url: str | None, api_key: str | None, *, default: str, url_env: str, key_env: str,
                     no_key: str) -> tuple[str, str]:
    """The base URL (argument, then ``url_env``, then ``default``) and the key (argument, then
    ``key_env``). A server reached by a base URL may need no key; the vendor's own does."""
    base_url = base_url or os.environ.get(url_env) or None
    key = api_key or os.environ.get(key_env)
    if not key:
        if not base_url:
            raise UserInputError(no_key)
        key = PLACEHOLDER_KEY
    return (base_url or default).rstrip("/"), key


@contextmanager
def sdk_errors(sdk: ModuleType, label: str, endpoint: str) -> Iterator[None]:
    """Raise what the SDK raises inside as :class:`TransientModelError` where a retry may cure
    it (a timeout, 408, 429, a 5xx, a dropped connection), else as :class:`ModelError`."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise TransientModelError(f"{label} timed out ({exc})", kind="model_timeout") from None
    except sdk.APIStatusError as exc:
        raise status_error(label, exc.status_code, exc) from None
    except sdk.APIConnectionError as exc:
        raise TransientModelError(f"{label}: cannot reach {endpoint} ({exc})", kind="model_connection") from None
    except Exception as exc:  # noqa: BLE001 - a reply the SDK cannot read (HTML from a proxy, bad JSON)
        raise ModelError(f"{label}: unreadable reply from {endpoint} ({type(exc).__name__}: {short(exc)})",
                         kind="model_response") from None


def status_error(label: str, status: int, exc: Exception) -> ModelError:
    text = f"{label} answered HTTP {status}: {short(exc)}"
    if status == 429:
        return TransientModelError(text, kind="model_rate_limited", status=status)
    if status >= 500 or status == 408:  # 529 is Anthropic's "overloaded"
        return TransientModelError(text, kind="model_server_error", status=status)
    return ModelError(text, kind="model_request", status=status)


def short(exc: Exception, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

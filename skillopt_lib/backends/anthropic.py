"""Anthropic (Claude) chat backend through the official SDK.

The SDK retries 429, 5xx and connection errors with backoff (`max_retries`); what is left becomes a
`BackendError` with a plain message, and a refused key or unreachable endpoint a `BackendUnavailable`.
"""

from __future__ import annotations

import base64
import threading
from typing import Any

import anthropic

from skillopt_lib.backends import resolve_api_key
from skillopt_lib.backends.base import (
    BackendUnavailable,
    ChatMessage,
    ChatResponse,
    ImagePart,
    Usage,
    cost_usd,
)
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import BackendError

DEFAULT_MAX_TOKENS = 4096


def _content(message: ChatMessage) -> Any:
    if isinstance(message.content, str):
        return message.content
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode("ascii")
            parts.append(
                {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": data}}
            )
        else:
            parts.append({"type": "text", "text": part})
    return parts


class AnthropicChatBackend:
    def __init__(self, cfg: BackendConfig, client: Any, prices: Any = None) -> None:
        self.cfg = cfg
        self.client = client
        self.name = "anthropic"
        self.model = cfg.model
        self.prices = prices
        self.usage = Usage()
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return str(getattr(self.client, "base_url", "") or self.cfg.base_url or "the Anthropic API")

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResponse:
        systems = [m.text() for m in messages if m.role == "system"]
        if system:
            systems.insert(0, system)
        wire = [{"role": m.role, "content": _content(m)} for m in messages if m.role != "system"]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            "max_tokens": max_tokens or self.cfg.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if systems:
            kwargs["system"] = "\n\n".join(systems)
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            kwargs["temperature"] = temp
        try:
            resp = self.client.messages.create(**kwargs)
        except anthropic.AuthenticationError:
            raise BackendUnavailable(
                f"{self.where} refused the API key for model {self.model!r}",
                hint="check the key variable named by api_key_env",
            ) from None
        except anthropic.NotFoundError as exc:
            raise BackendUnavailable(
                f"{self.where} does not know model {self.model!r} ({exc})", hint="check the model name"
            ) from None
        except anthropic.APITimeoutError:
            raise BackendError(
                f"{self.where} did not answer within {self.cfg.timeout_s:g}s "
                f"(after {self.cfg.max_retries} retries)",
                hint="raise timeout_s or check the server",
            ) from None
        except anthropic.APIConnectionError:
            raise BackendUnavailable(
                f"cannot reach {self.where}", hint="check base_url and that the server is running"
            ) from None
        except anthropic.APIStatusError as exc:
            raise BackendError(
                f"{self.where} answered HTTP {exc.status_code} after {self.cfg.max_retries} retries: "
                f"{getattr(exc, 'message', exc)}"
            ) from None
        except anthropic.AnthropicError as exc:
            raise BackendError(f"{self.where} failed: {exc}") from None
        text = "".join(getattr(b, "text", "") for b in resp.content if getattr(b, "type", "") == "text")
        usage = Usage(calls=1)
        if resp.usage is not None:
            usage.input_tokens = int(resp.usage.input_tokens or 0)
            usage.output_tokens = int(resp.usage.output_tokens or 0)
        usage.cost_usd = cost_usd(self.model, usage.input_tokens, usage.output_tokens, self.prices)
        with self._lock:
            self.usage.add(usage)
        return ChatResponse(
            text=text, usage=usage, model=resp.model or self.model, finish_reason=resp.stop_reason or ""
        )


def create(cfg: BackendConfig, context: dict[str, Any]) -> AnthropicChatBackend:
    key = resolve_api_key(cfg, context.get("role", ""))
    client = anthropic.Anthropic(
        api_key=key or "not-needed",
        base_url=cfg.base_url or None,
        timeout=cfg.timeout_s,
        max_retries=cfg.max_retries,
    )
    return AnthropicChatBackend(cfg, client, context.get("prices"))

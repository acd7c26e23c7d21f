"""Anthropic (Claude) chat backend through the official SDK.

The `system` prompt (the task and the skill, the same for every agent call of a run) is sent as a block
marked `cache_control: ephemeral`, so repeated calls read it from Anthropic's prompt cache at a tenth of
the input price; cached tokens are reported in `Usage` and charged at the cache prices. Set
`options.prompt_caching = false` to send it unmarked. Replies are streamed (the SDK's `messages.stream`)
when `max_tokens` exceeds `STREAM_ABOVE_TOKENS`, as the SDK requires for long requests, or when
`options.stream = true`.

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
    merged_prices,
)
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import BackendError

DEFAULT_MAX_TOKENS = 4096
# The SDK refuses a non-streaming request that may run over ten minutes (about 21,000 output tokens, less
# for some models); streaming above this keeps long outputs working on every model.
STREAM_ABOVE_TOKENS = 16_384


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
        limit = max_tokens or self.cfg.max_tokens or DEFAULT_MAX_TOKENS
        kwargs: dict[str, Any] = {"model": self.model, "messages": wire, "max_tokens": limit}
        if systems:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in systems]
            if self.cfg.options.get("prompt_caching", True):
                blocks[0]["cache_control"] = {"type": "ephemeral"}
            kwargs["system"] = blocks
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            kwargs["temperature"] = temp
        stream = bool(self.cfg.options.get("stream", False)) or limit > STREAM_ABOVE_TOKENS
        try:
            if stream:
                with self.client.messages.stream(**kwargs) as events:
                    resp = events.get_final_message()
            else:
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
            # Anthropic's input_tokens leaves out the cached ones; Usage.input_tokens counts them all.
            usage.cache_read_tokens = int(getattr(resp.usage, "cache_read_input_tokens", 0) or 0)
            usage.cache_write_tokens = int(getattr(resp.usage, "cache_creation_input_tokens", 0) or 0)
            usage.input_tokens = (
                int(resp.usage.input_tokens or 0) + usage.cache_read_tokens + usage.cache_write_tokens
            )
            usage.output_tokens = int(resp.usage.output_tokens or 0)
        usage.cost_usd = cost_usd(
            self.model,
            usage.input_tokens,
            usage.output_tokens,
            self.prices,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
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
    return AnthropicChatBackend(cfg, client, merged_prices(context.get("prices"), cfg.options))

"""OpenAI chat backend through the official SDK: OpenAI, Azure OpenAI, and any OpenAI-compatible server.

Retries with exponential backoff on 429, 5xx and connection errors are the SDK's own (`max_retries`, honouring
`retry-after`); this module turns what is left into a `BackendError` with a plain message. A refused key or an
unreachable endpoint is `BackendUnavailable`: the run stops with a hint instead of scoring every item 0.

Reasoning models (o1, o3, o4-mini, gpt-5 and later) get the output limit as `max_completion_tokens`, which
they require; other models get `max_tokens`, which every OpenAI-compatible server understands
(`options.max_tokens_param` forces either name). Replies are streamed, with usage in the last chunk, when the
output limit exceeds `STREAM_ABOVE_TOKENS` (long generations then cannot hit a read timeout before the first
byte) or when `options.stream = true`. Cached prompt tokens (`prompt_tokens_details.cached_tokens`) are
reported in `Usage` and charged at the cached-input price.
"""

from __future__ import annotations

import base64
import re
import threading
from typing import Any

import openai

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
from skillopt_lib.errors import BackendError, ConfigError

STREAM_ABOVE_TOKENS = 16_384
_REASONING = re.compile(r"^(?:o\d|gpt-5)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether a model takes `max_completion_tokens` only (OpenAI's o-series and gpt-5 family)."""
    return bool(_REASONING.match(model.rsplit("/", 1)[-1]))


def _content(message: ChatMessage) -> Any:
    if isinstance(message.content, str):
        return message.content
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ImagePart):
            data = base64.b64encode(part.data).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": f"data:{part.media_type};base64,{data}"}})
        else:
            parts.append({"type": "text", "text": part})
    return parts


class OpenAIChatBackend:
    """Chat Completions against OpenAI, Azure or a compatible server; thread-safe (one shared client)."""

    def __init__(self, cfg: BackendConfig, client: Any, name: str = "openai", prices: Any = None) -> None:
        self.cfg = cfg
        self.client = client
        self.name = name
        self.model = cfg.model
        self.prices = prices
        self.usage = Usage()
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        return str(getattr(self.client, "base_url", "") or self.cfg.base_url or "the OpenAI API")

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResponse:
        wire: list[dict[str, Any]] = []
        if system:
            wire.append({"role": "system", "content": system})
        wire.extend({"role": m.role, "content": _content(m)} for m in messages)
        kwargs: dict[str, Any] = {"model": self.model, "messages": wire}
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            kwargs["temperature"] = temp
        limit = max_tokens if max_tokens is not None else self.cfg.max_tokens
        if limit is not None:
            kwargs[self.max_tokens_param] = limit
        if json_mode and self.cfg.json_response_format:
            kwargs["response_format"] = {"type": "json_object"}
        stream = bool(self.cfg.options.get("stream", False)) or (limit or 0) > STREAM_ABOVE_TOKENS
        try:
            resp = self._streamed(kwargs) if stream else self.client.chat.completions.create(**kwargs)
        except openai.AuthenticationError:
            raise BackendUnavailable(
                f"{self.where} refused the API key for model {self.model!r}",
                hint="check the key variable named by api_key_env",
            ) from None
        except openai.NotFoundError as exc:
            raise BackendUnavailable(
                f"{self.where} does not know model {self.model!r} ({_msg(exc)})",
                hint="check the model name and base_url",
            ) from None
        except openai.APITimeoutError:
            raise BackendError(
                f"{self.where} did not answer within {self.cfg.timeout_s:g}s "
                f"(after {self.cfg.max_retries} retries)",
                hint="raise timeout_s or check the server",
            ) from None
        except openai.APIConnectionError:
            raise BackendUnavailable(
                f"cannot reach {self.where}", hint="check base_url and that the server is running"
            ) from None
        except openai.APIStatusError as exc:
            raise BackendError(
                f"{self.where} answered HTTP {exc.status_code} after {self.cfg.max_retries} retries: "
                f"{_msg(exc)}"
            ) from None
        except openai.OpenAIError as exc:
            raise BackendError(f"{self.where} failed: {exc}") from None
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content if choice is not None else None) or ""
        usage = Usage(calls=1)
        if resp.usage is not None:
            usage.input_tokens = int(resp.usage.prompt_tokens or 0)
            usage.output_tokens = int(resp.usage.completion_tokens or 0)
            details = getattr(resp.usage, "prompt_tokens_details", None)
            usage.cache_read_tokens = int(getattr(details, "cached_tokens", 0) or 0)
        usage.cost_usd = cost_usd(
            self.model,
            usage.input_tokens,
            usage.output_tokens,
            self.prices,
            cache_read_tokens=usage.cache_read_tokens,
        )
        with self._lock:
            self.usage.add(usage)
        return ChatResponse(
            text=text,
            usage=usage,
            model=resp.model or self.model,
            finish_reason=(choice.finish_reason or "") if choice is not None else "",
            raw=None,
        )

    @property
    def max_tokens_param(self) -> str:
        forced = self.cfg.options.get("max_tokens_param")
        if forced in ("max_tokens", "max_completion_tokens"):
            return str(forced)
        return "max_completion_tokens" if is_reasoning_model(self.model) else "max_tokens"

    def _streamed(self, kwargs: dict[str, Any]) -> Any:
        """The same request streamed, assembled into a ChatCompletion by the SDK's own stream helper."""
        kwargs = {k: v for k, v in kwargs.items() if k != "stream"}
        with self.client.chat.completions.stream(**kwargs, stream_options={"include_usage": True}) as events:
            for _event in events:
                pass
            return events.get_final_completion()


def _msg(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", "") or exc)


def create(cfg: BackendConfig, context: dict[str, Any]) -> OpenAIChatBackend:
    key = resolve_api_key(cfg, context.get("role", ""))
    client = openai.OpenAI(
        api_key=key or "not-needed",
        base_url=cfg.base_url or None,
        timeout=cfg.timeout_s,
        max_retries=cfg.max_retries,
    )
    return OpenAIChatBackend(cfg, client, "openai", merged_prices(context.get("prices"), cfg.options))


def create_azure(cfg: BackendConfig, context: dict[str, Any]) -> OpenAIChatBackend:
    """Azure OpenAI: `base_url` is the resource endpoint, `model` the deployment name."""
    if not cfg.base_url:
        raise ConfigError(
            "the azure backend needs base_url (your resource endpoint, https://NAME.openai.azure.com)",
        )
    key = resolve_api_key(cfg, context.get("role", ""))
    client = openai.AzureOpenAI(
        api_key=key,
        azure_endpoint=cfg.base_url,
        api_version=cfg.azure_api_version or "2024-10-21",
        timeout=cfg.timeout_s,
        max_retries=cfg.max_retries,
    )
    return OpenAIChatBackend(cfg, client, "azure", merged_prices(context.get("prices"), cfg.options))

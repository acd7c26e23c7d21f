"""The chat backend protocol and the accounting types every backend shares.

A chat backend turns a list of messages into one reply. The trainer and the environments only see this
protocol, so OpenAI, Azure, Anthropic, any OpenAI-compatible server, or an agent CLI used as a chat model are
interchangeable. Exec backends (real agent CLIs working in a sandbox) live in `skillopt_lib.backends.exec_base`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from skillopt_lib.errors import BackendError
from skillopt_lib.usage import Usage

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ImagePart:
    """An image sent to a multimodal model, as bytes with its media type (the SDKs get base64)."""

    data: bytes
    media_type: str = "image/png"


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str | list[str | ImagePart]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p for p in self.content if isinstance(p, str))


@dataclass
class ChatResponse:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = ""
    raw: Any = None


@runtime_checkable
class ChatBackend(Protocol):
    """One model behind one API: the optimizer, the rubric judge, and the agent of chat environments.

    Built from a `skillopt_lib.config.BackendConfig` by `skillopt_lib.backends.create_backend`; the trainer,
    the reflection code and the environments see nothing but this protocol, so OpenAI, Azure, Anthropic, any
    OpenAI-compatible server and an agent CLI used as a chat model are interchangeable.

    Thread safety: one instance is shared by every rollout and optimizer call of a run, so `complete` is
    called concurrently from several threads and must keep no per-call state on the instance (SDK clients
    are thread-safe; anything else needs a lock).
    """

    name: str
    """The backend's registered name ("openai", "anthropic", "claude-code-chat", ...), recorded in history."""

    model: str
    """The model answering; keys price lookups and the run's usage accounting."""

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResponse:
        """Send one conversation and return the model's reply.

        Parameters:
            messages: the conversation so far, oldest first: `user` and `assistant` turns, and `system`
                messages the backend places where its API wants them. Content may carry `ImagePart`s for a
                multimodal model.
            system: the system prompt (the skill under training, for a chat agent), or None.
            temperature: sampling temperature; None means the configured value, else the API's default.
            max_tokens: cap on the reply's tokens; None means the configured value, else the API's default.
            json_mode: the caller wants one JSON object. Ask the server for JSON output where the API can
                (`json_response_format`); the caller still parses and repairs the text, so a backend that
                cannot enforce it just returns the text.

        Returns:
            A `ChatResponse` with the reply's `text` (may be empty, never None), `usage` with the tokens
            of this call (cached and uncached input, output) and `cost_usd` priced by `cost_usd` with the
            run's `prices`, `usage.calls == 1` per successful call, the `model` that answered and the
            provider's `finish_reason`.

        Raises:
            BackendUnavailable: the endpoint cannot be used at all (refused key, unknown model, unreachable
                host); environments let it propagate, since every other call would fail the same way.
            BackendError: any other failure left after the backend's own retries of transient errors (rate
                limits, time-outs, 5xx), with a plain message and a hint. Never an SDK exception, never a
                key in the message.
        """
        ...


class BackendUnavailable(BackendError):
    """The endpoint cannot be used at all (refused key, unreachable host, unknown model).

    Environments let this one propagate instead of scoring the item 0: every other item would fail the same
    way, and the user needs to fix the configuration, not read a history of zeros.
    """


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens: uncached input, output, input read from the prompt cache, input written to
    it (Anthropic charges cache writes above the input price; OpenAI does not charge them separately)."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _anthropic(inp: float, out: float) -> ModelPrice:
    # Anthropic: cache reads cost 0.1x the input price, 5-minute cache writes 1.25x.
    return ModelPrice(inp, out, round(inp * 0.1, 6), round(inp * 1.25, 6))


def _openai(inp: float, out: float, cached: float) -> ModelPrice:
    return ModelPrice(inp, out, cached, inp)


#: When the prices below were checked, and where they come from.
PRICES_AS_OF = "2026-12-03"
PRICES_SOURCE = (
    "the providers' public pricing pages: OpenAI API pricing, Anthropic's Claude pricing (models overview "
    "and prompt caching), DeepSeek's models and pricing page, Alibaba Cloud Model Studio (Qwen) pricing, "
    "MiniMax's API pricing"
)

# Standard (not batch, not priority) prices, matched by the longest model-name prefix. For cost accounting
# only: a config's `prices` overrides or extends the table (see `price_of`).
PRICES: dict[str, ModelPrice] = {
    "gpt-5.5": _openai(1.25, 10.0, 0.125),
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.4, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _openai(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _openai(0.1, 0.4, 0.025),
    "gpt-4o": _openai(2.5, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.6, 0.075),
    "o3": _openai(2.0, 8.0, 0.5),
    "o4-mini": _openai(1.1, 4.4, 0.275),
    # Opus 4 and 4.1 kept the old Opus price; Opus 4.5 and later cost a third of it.
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-opus-4-0": _anthropic(15.0, 75.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-7": _anthropic(5.0, 25.0),
    "claude-opus-4-8": _anthropic(5.0, 25.0),
    "claude-opus-5-5": _anthropic(4.0, 20.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-haiku-4": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "deepseek-chat": _openai(0.28, 0.42, 0.028),
    "deepseek-reasoner": _openai(0.28, 0.42, 0.028),
    "qwen-plus": _openai(0.4, 1.2, 0.4),
    "qwen-max": _openai(1.6, 6.4, 1.6),
    "qwen-turbo": _openai(0.05, 0.2, 0.05),
    "MiniMax-M1": _openai(0.4, 2.2, 0.4),
}
_FREE = ModelPrice(0.0, 0.0, 0.0, 0.0)


def _field(price: Any, name: str) -> float | None:
    value = price.get(name) if isinstance(price, Mapping) else getattr(price, name, None)
    return None if value is None else float(value)


def _lookup(model: str, table: Mapping[str, Any]) -> Any:
    if model in table:
        return table[model]
    best = ""
    for name in table:
        if model.startswith(name) and len(name) > len(best):
            best = name
    return table[best] if best else None


def price_of(model: str, overrides: Mapping[str, Any] | None = None) -> ModelPrice:
    """The price of `model`: an override (a mapping or object with `input`, `output` and optionally
    `cache_read`, `cache_write`, matched by longest prefix like the table) wins over the built-in table.
    An override without cache prices keeps the built-in ratio of cache to input price for that model
    (Anthropic's 0.1x / 1.25x for an unknown `claude-*`; cached input at the input price otherwise).
    Unknown models (local servers) cost 0."""
    builtin = _lookup(model, PRICES)
    override = _lookup(model, overrides or {})
    if override is None:
        return builtin if builtin is not None else _FREE
    inp, out = _field(override, "input") or 0.0, _field(override, "output") or 0.0
    if builtin is not None and builtin.input:
        read_ratio, write_ratio = builtin.cache_read / builtin.input, builtin.cache_write / builtin.input
    elif model.startswith("claude"):
        read_ratio, write_ratio = 0.1, 1.25
    else:
        read_ratio, write_ratio = 1.0, 1.0
    read, write = _field(override, "cache_read"), _field(override, "cache_write")
    return ModelPrice(
        inp,
        out,
        read if read is not None else round(inp * read_ratio, 6),
        write if write is not None else round(inp * write_ratio, 6),
    )


def cache_read_ratio(model: str, overrides: Mapping[str, Any] | None = None) -> float:
    """What one token read from the prompt cache costs next to an uncached input token, from the price
    table: 0.1 for Anthropic's models, the model's cached-input price over its input price for OpenAI's
    (0.1 for gpt-5, 0.25 for gpt-4.1). Budgets count a cache read at this fraction of a token (`Usage.
    input_equivalent`). An unpriced model counts it as Anthropic does when its name says Claude, else at 1
    (nothing is assumed cheaper than it is known to be)."""
    price = price_of(model, overrides)
    if price.input > 0:
        return price.cache_read / price.input
    return 0.1 if model.startswith("claude") else 1.0


def price_for(model: str, overrides: Mapping[str, Any] | None = None) -> tuple[float, float]:
    """(input, output) USD per million tokens; unknown models (local servers) cost 0."""
    price = price_of(model, overrides)
    return price.input, price.output


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    overrides: Mapping[str, Any] | None = None,
    *,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    """USD for one call; `input_tokens` includes the cached ones, which are charged at the cache prices."""
    p = price_of(model, overrides)
    plain = max(0, input_tokens - cache_read_tokens - cache_write_tokens)
    total = (
        plain * p.input
        + cache_read_tokens * p.cache_read
        + cache_write_tokens * p.cache_write
        + output_tokens * p.output
    )
    return total / 1_000_000


def merged_prices(run_prices: Mapping[str, Any] | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """The run's `prices` with a backend's own `options.prices` on top (the latter may give cache prices)."""
    own = options.get("prices") if isinstance(options, Mapping) else None
    return {**(run_prices or {}), **(own if isinstance(own, Mapping) else {})}

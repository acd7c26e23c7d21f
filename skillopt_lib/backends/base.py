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
class Usage:
    """Tokens and money spent; added up per role (agent / optimizer / judge) by the trainer."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls
        self.cost_usd += other.cost_usd
        return self

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "cost_usd": round(self.cost_usd, 6),
        }


@dataclass
class ChatResponse:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = ""
    raw: Any = None


@runtime_checkable
class ChatBackend(Protocol):
    """One model behind one API. Implementations retry transient failures themselves and raise
    `skillopt_lib.errors.BackendError` with a plain message when they give up."""

    name: str
    model: str

    def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResponse: ...


class BackendUnavailable(BackendError):
    """The endpoint cannot be used at all (refused key, unreachable host, unknown model).

    Environments let this one propagate instead of scoring the item 0: every other item would fail the same
    way, and the user needs to fix the configuration, not read a history of zeros.
    """


# USD per million tokens (input, output), matched by the longest model-name prefix. A small, dated table
# for cost accounting only; `TrainConfig.prices` overrides or extends it.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-5.5": (1.25, 10.0),
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "o4-mini": (1.1, 4.4),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "deepseek-chat": (0.27, 1.1),
    "deepseek-reasoner": (0.55, 2.19),
    "qwen-plus": (0.4, 1.2),
    "qwen-max": (1.6, 6.4),
    "qwen-turbo": (0.05, 0.2),
    "MiniMax-M1": (0.4, 2.2),
}


def price_for(model: str, overrides: Mapping[str, Any] | None = None) -> tuple[float, float]:
    """(input, output) USD per million tokens; unknown models (local servers) cost 0."""
    table: dict[str, tuple[float, float]] = dict(PRICES)
    for name, price in (overrides or {}).items():
        if isinstance(price, Mapping):
            table[name] = (float(price.get("input", 0.0)), float(price.get("output", 0.0)))
        else:
            table[name] = (float(getattr(price, "input", 0.0)), float(getattr(price, "output", 0.0)))
    if model in table:
        return table[model]
    best = ""
    for name in table:
        if model.startswith(name) and len(name) > len(best):
            best = name
    return table[best] if best else (0.0, 0.0)


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, overrides: Mapping[str, Any] | None = None
) -> float:
    pin, pout = price_for(model, overrides)
    return (input_tokens * pin + output_tokens * pout) / 1_000_000

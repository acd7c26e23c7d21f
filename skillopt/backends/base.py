"""The chat backend protocol and the accounting types every backend shares.

A chat backend turns a list of messages into one reply. The trainer and the environments only see this
protocol, so OpenAI, Azure, Anthropic, any OpenAI-compatible server, or an agent CLI used as a chat model are
interchangeable. Exec backends (real agent CLIs working in a sandbox) live in `skillopt.backends.exec_base`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

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
    `skillopt.errors.BackendError` with a plain message when they give up."""

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

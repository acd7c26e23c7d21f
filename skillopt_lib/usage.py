"""What a model call cost: tokens and money, shared by chat backends, exec backends and budgets.

Money is always an estimate: it is computed from token counts and a price table (`backends.base.PRICES`,
or the agent CLI's own figure), never read from a bill. Every face shows it through `format_cost`, in
cents and labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Usage:
    """Tokens and money spent; added up per role (agent / optimizer / judge) by the trainer.

    `input_tokens` counts every prompt token, cached or not; `cache_read_tokens` of them were read from the
    provider's prompt cache and `cache_write_tokens` written to it (both priced differently from the rest).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> Usage:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls
        self.cost_usd += other.cost_usd
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        return self

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def fresh_tokens(self) -> int:
        """Prompt tokens neither read from nor written to the prompt cache."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def input_equivalent(self, read_ratio: float) -> float:
        """Tokens at what they cost, in uncached input tokens: fresh input, cache writes and output count
        one each, a cache read `read_ratio` of one (`backends.base.cache_read_ratio`: 0.1 for Anthropic).
        A replay whose prompt is mostly read from the cache counts a fraction of its raw size, as it is
        billed; the night's token caps count this unit."""
        return self.input_tokens - self.cache_read_tokens * (1.0 - read_ratio) + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "calls": self.calls,
            "cost_usd": round(self.cost_usd, 6),
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


def format_cost(usd: float | None) -> str:
    """A cost as a person should read it: an estimate, to the cent ("≈ $0.42 est."); "-" when unknown."""
    if usd is None:
        return "-"
    value = float(usd)
    if 0 < value < 0.005:
        return "≈ <$0.01 est."
    return f"≈ ${max(value, 0.0):,.2f} est."

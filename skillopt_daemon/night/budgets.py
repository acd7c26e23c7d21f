"""The night's caps on tokens, money, wall time and replays, and the backends that count against them.

The optimizer, the judge and the replayed agent are wrapped so that every call is checked against the caps
before it is made and counted after it returns; when a cap is reached the call raises `NightBudgetExceeded`
and the cycle stops cleanly, registering nothing the gate did not verify.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatBackend, ChatMessage, ChatResponse, Usage, cache_read_ratio
from skillopt_lib.errors import SkillOptError
from skillopt_lib.execution import ExecBackend, ExecLimits, ExecResult
from skillopt_lib.skill import SkillBundle
from skillopt_lib.usage import format_cost


class NightBudgetExceeded(SkillOptError):
    """A per-night cap was reached; the cycle stops cleanly and registers nothing unverified."""


# The cap each of a night's limits is, and the setting that changes it unless the night says otherwise
# (`NightBudget.settings`: a night on the agent login names the login's caps).
CAP_SETTINGS: dict[str, str] = {
    "tokens": "night.max_tokens",
    "cost": "night.max_cost_usd",
    "wall": "night.max_wall_s",
    "replays": "night.max_replays",
}
CAP_WORDS = {"tokens": "token cap", "cost": "money cap", "wall": "time cap", "replays": "replay cap"}


@dataclass
class NightBudget:
    """What one night may spend, and what it has spent so far. Thread safe: replays run in parallel.

    `tokens` counts tokens at what they cost, in uncached input tokens (`Usage.input_equivalent`: a cache
    read is a tenth of one on Anthropic's models), and is what `max_tokens` caps; the raw counts (fresh,
    cache-write, cache-read and output tokens) are kept beside it for the night's report. A money cap of
    `math.inf` is no cap: a night on a subscription login is not billed per token (`agents.NightModel`).
    """

    max_tokens: int
    max_cost_usd: float
    max_wall_s: float
    max_replays: int
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    cost_usd: float = 0.0
    replays: int = 0
    model_calls: int = 0
    fresh_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    exceeded: str | None = None
    exceeded_cap: str | None = None  # a key of CAP_SETTINGS
    # The setting that changes each cap for this night (CAP_SETTINGS, or the login's caps).
    settings: dict[str, str] = field(default_factory=lambda: dict(CAP_SETTINGS))
    # What each agent tool's replays spent tonight: {tool: {"replays", "tokens", "cost_usd"}}; what the next
    # nights plan with before their first replay (`planning.measured_per_replay`).
    by_tool: dict[str, dict[str, float]] = field(default_factory=dict)
    # Per replay, as measured by the last nights, by tool: {tool: (tokens, usd)} (`planning.past_per_replay`).
    past: dict[str, tuple[float, float]] = field(default_factory=dict)
    # Who priced the money figures: the chat models by name, a CLI's replays by the CLI's own figure.
    priced_by: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve_replay(self) -> None:
        """Check the caps and count one replay, atomically: parallel replays must not overshoot the cap."""
        with self._lock:
            self.check()
            self.replays += 1

    def check(self) -> None:
        """Raise when a cap is reached; the message says which, how much was spent, and the setting that
        raises it."""
        cap = None
        if self.tokens >= self.max_tokens:
            cap = "tokens"
        elif self.cost_usd >= self.max_cost_usd:
            cap = "cost"
        elif time.monotonic() - self.started >= self.max_wall_s:
            cap = "wall"
        elif self.replays >= self.max_replays:
            cap = "replays"
        if cap:
            self.exceeded, self.exceeded_cap = f"the night's {self.cap_text(cap)} was reached", cap
            raise NightBudgetExceeded(self.exceeded, hint=f"raise it with `{self.raise_command(cap)}`")

    def cap_text(self, cap: str) -> str:
        """ "money cap (≈ $20.00 est., night.max_cost_usd)"."""
        limit = {
            "tokens": f"{self.max_tokens:,} tokens",
            "cost": format_cost(self.max_cost_usd),
            "wall": f"{self.max_wall_s:g} s",
            "replays": f"{self.max_replays} replays",
        }[cap]
        return f"{CAP_WORDS[cap]} ({limit}, {self.settings[cap]})"

    def raise_command(self, cap: str) -> str:
        """The command that doubles a cap: `skillopt config set night.max_cost_usd 40`."""
        limit: float = {
            "tokens": self.max_tokens,
            "cost": self.max_cost_usd,
            "wall": self.max_wall_s,
            "replays": self.max_replays,
        }[cap]
        return f"skillopt config set {self.settings[cap]} {2 * limit:g}"

    def spent_text(self) -> str:
        """What the night spent, as the user reads it: replays, tokens at cost, and money with its pricing."""
        return f"{self.replays} replays, {self.tokens:,} tokens (input-equivalent), {self.cost_text()}"

    def cost_text(self) -> str:
        """The money spent, as an estimate that says what priced it: "≈ $3.10 est. (claude-code's own
        figure, gpt-5.5)"."""
        who = ", ".join(sorted(self.priced_by))
        return format_cost(self.cost_usd) + (f" ({who})" if who else "")

    def stopped(self) -> dict[str, Any] | None:
        """The cap that stopped the night, what was spent, and the command that raises it; None when no cap
        did."""
        cap = self.exceeded_cap
        if cap is None:
            return None
        command = self.raise_command(cap)
        return {
            "cap": cap,
            "setting": self.settings[cap],
            "spent": self.spent_text(),
            "raise": command,
            "note": f"stopped by the {self.cap_text(cap)} after {self.spent_text()}; raise it with "
            f"`{command}`",
        }

    def add(
        self, usage: Usage, *, read_ratio: float = 1.0, tool: str | None = None, priced_by: str = ""
    ) -> None:
        """Count one call's usage: `read_ratio` prices its cache reads (`cache_read_ratio`), `tool` files a
        replay's spend under its agent tool, `priced_by` names what priced its money."""
        with self._lock:
            self._add(usage, read_ratio, tool, priced_by)

    def _add(
        self, usage: Usage, read_ratio: float = 1.0, tool: str | None = None, priced_by: str = ""
    ) -> None:
        weighted = round(usage.input_equivalent(read_ratio))
        self.tokens += weighted
        self.cost_usd += usage.cost_usd
        self.model_calls += usage.calls
        self.fresh_tokens += usage.fresh_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.output_tokens += usage.output_tokens
        if priced_by and usage.cost_usd > 0:
            self.priced_by.add(priced_by)
        if tool is not None:
            row = self.by_tool.setdefault(tool, {"replays": 0, "tokens": 0, "cost_usd": 0.0})
            row["replays"] += 1
            row["tokens"] += weighted
            row["cost_usd"] += usage.cost_usd

    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def caps(self) -> dict[str, Any]:
        """The night's caps (money None when there is none), with the setting of each."""
        return {
            "replays": self.max_replays,
            "tokens": self.max_tokens,
            "cost_usd": None if math.isinf(self.max_cost_usd) else self.max_cost_usd,
            "settings": dict(self.settings),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "tokens_unit": "input-equivalent: fresh input, cache writes and output, cache reads at their price",
            "fresh_tokens": self.fresh_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "priced_by": sorted(self.priced_by),
            "replays": self.replays,
            "model_calls": self.model_calls,
            "wall_s": round(self.wall_s(), 3),
            "by_tool": {
                t: {
                    "replays": int(r["replays"]),
                    "tokens": int(r["tokens"]),
                    "cost_usd": round(r["cost_usd"], 6),
                }
                for t, r in sorted(self.by_tool.items())
            },
            "caps": self.caps(),
            "exceeded": self.exceeded,
            "stopped": self.stopped(),
        }


# The model family an agent CLI (or a chat backend on its login) runs when none is configured, for pricing its
# cache reads (`cache_read_ratio`): every Claude model reads the cache at a tenth of its input price, and
# Codex's default GPT-5 models do too.
TOOL_MODELS: dict[str, str] = {
    "claude-code": "claude-sonnet-4",
    "claude-code-chat": "claude-sonnet-4",
    "codex": "gpt-5",
    "codex-chat": "gpt-5",
}


class BudgetedAgent:
    """An exec backend that counts replays and spend against the night's caps before each run."""

    def __init__(self, inner: ExecBackend, budget: NightBudget) -> None:
        self._inner = inner
        self._budget = budget
        self.name = inner.name
        self.tool = inner.tool
        self.limits = inner.limits
        model = getattr(inner.limits, "model", None) or TOOL_MODELS.get(_tool_name(inner.tool), "")
        self._ratio = cache_read_ratio(model)
        self._priced_by = f"{inner.tool}'s own figure"

    def preflight(self) -> list[str]:
        return self._inner.preflight()

    def install_skill(self, workspace: Path, skill: SkillBundle) -> Path:
        return Path(self._inner.install_skill(workspace, skill))

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        return dict(self._inner.prepare_home(home, workspace))

    def run(
        self, prompt: str, *, cwd: Path, env: Mapping[str, str], limits: ExecLimits | None = None
    ) -> ExecResult:
        self._budget.reserve_replay()
        result: ExecResult = self._inner.run(prompt, cwd=cwd, env=env, limits=limits)
        self._budget.add(
            result.usage, read_ratio=self._ratio, tool=_tool_name(self.tool), priced_by=self._priced_by
        )
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class BudgetedChat:
    """A chat backend whose calls count against the night's caps."""

    def __init__(self, inner: ChatBackend, budget: NightBudget) -> None:
        self._inner = inner
        self._budget = budget
        self.name = inner.name
        self.model = inner.model
        self._ratio = cache_read_ratio(inner.model or TOOL_MODELS.get(inner.name, ""))

    def complete(self, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._budget.check()
        resp: ChatResponse = self._inner.complete(messages, **kwargs)
        self._budget.add(resp.usage, read_ratio=self._ratio, priced_by=resp.model or self.model or self.name)
        return resp


def _tool_name(tool: Any) -> str:
    return str(getattr(tool, "value", tool))

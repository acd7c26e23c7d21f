"""The night's caps on tokens, money, wall time and replays, and the backends that count against them.

The optimizer, the judge and the replayed agent are wrapped so that every call is checked against the caps
before it is made and counted after it returns; when a cap is reached the call raises `NightBudgetExceeded`
and the cycle stops cleanly, registering nothing the gate did not verify.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatBackend, ChatMessage, ChatResponse, Usage
from skillopt_lib.errors import SkillOptError
from skillopt_lib.execution import ExecBackend, ExecLimits, ExecResult
from skillopt_lib.skill import SkillBundle


class NightBudgetExceeded(SkillOptError):
    """A per-night cap was reached; the cycle stops cleanly and registers nothing unverified."""


@dataclass
class NightBudget:
    """What one night may spend, and what it has spent so far. Thread safe: replays run in parallel."""

    max_tokens: int
    max_cost_usd: float
    max_wall_s: float
    max_replays: int
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    cost_usd: float = 0.0
    replays: int = 0
    model_calls: int = 0
    exceeded: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve_replay(self) -> None:
        """Check the caps and count one replay, atomically: parallel replays must not overshoot the cap."""
        with self._lock:
            self.check()
            self.replays += 1

    def check(self) -> None:
        """Raise when a cap is reached; the message says which and how much was measured."""
        reason = None
        if self.tokens >= self.max_tokens:
            reason = f"the night's token cap ({self.max_tokens:,}) was reached"
        elif self.cost_usd >= self.max_cost_usd:
            reason = f"the night's money cap (${self.max_cost_usd:.2f}) was reached"
        elif time.monotonic() - self.started >= self.max_wall_s:
            reason = f"the night's time cap ({self.max_wall_s:g} s) was reached"
        elif self.replays >= self.max_replays:
            reason = f"the night's replay cap ({self.max_replays}) was reached"
        if reason:
            self.exceeded = reason
            raise NightBudgetExceeded(
                reason, hint="raise the night.max_* settings with `skillopt config set`"
            )

    def add(self, usage: Usage) -> None:
        with self._lock:
            self._add(usage)

    def _add(self, usage: Usage) -> None:
        self.tokens += usage.input_tokens + usage.output_tokens
        self.cost_usd += usage.cost_usd
        self.model_calls += usage.calls

    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "replays": self.replays,
            "model_calls": self.model_calls,
            "wall_s": round(self.wall_s(), 3),
            "exceeded": self.exceeded,
        }


class BudgetedAgent:
    """An exec backend that counts replays and spend against the night's caps before each run."""

    def __init__(self, inner: ExecBackend, budget: NightBudget) -> None:
        self._inner = inner
        self._budget = budget
        self.name = inner.name
        self.tool = inner.tool
        self.limits = inner.limits

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
        self._budget.add(result.usage)
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

    def complete(self, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._budget.check()
        resp: ChatResponse = self._inner.complete(messages, **kwargs)
        self._budget.add(resp.usage)
        return resp

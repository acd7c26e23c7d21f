"""Each replay's turns and time, capped relative to the session it replays.

A replay's CLI resends its whole prompt (system prompt, tool definitions, the conversation so far) on every
model request, so what a replay costs grows faster than its turns. A replay that wanders (retries a failing
command again and again, explores the whole repository) costs the night what several well-behaved ones do,
and tells the gate no more than its first turns did. The user's own session says how much work the task
took: a replay may take at most `TURNS_FACTOR` times the agent's steps in the recorded attempt (its tool
calls, plus one for the final answer) and `TIME_FACTOR` times the seconds the agent worked on it, never less
than the floors (a short session still leaves room to load the skill, read a file and run the check twice)
and never more than the replay's own limits (`[replay] max_turns` and `timeout_s`).

A task mined before its session's figures were kept (or from a transcript without timestamps) gets the
replay's own limits for what is unknown. A replay stopped by its cap is scored by what it produced: its
checks run on its work as they would on a finished one (`ReplayEnvironment.run`).

How the factors and floors were chosen: docs/replay.md, "Caps relative to the recorded session".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus

TURNS_FACTOR = 2.0
FLOOR_TURNS = 10
TIME_FACTOR = 3.0
FLOOR_S = 180.0


@dataclass(frozen=True)
class ReplayCap:
    """The limits one replay runs with, and whether they came from its recorded session."""

    max_turns: int | None
    timeout_s: float
    sized_from_session: bool

    def limits(self, base: ExecLimits) -> ExecLimits:
        return base.with_(max_turns=self.max_turns, timeout_s=self.timeout_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_turns": self.max_turns,
            "timeout_s": round(self.timeout_s, 1),
            "sized_from": "session" if self.sized_from_session else "default",
        }


def cap_for(task: NightTask, base: ExecLimits) -> ReplayCap:
    """The cap of a replay of `task`: relative to its recorded session where that is known, within `base`."""
    turns = base.max_turns
    timeout = base.timeout_s
    if task.recorded_tool_calls is not None:
        own = max(FLOOR_TURNS, math.ceil(TURNS_FACTOR * (task.recorded_tool_calls + 1)))
        turns = own if not turns else min(turns, own)
    if task.recorded_work_s is not None:
        timeout = min(timeout, max(FLOOR_S, TIME_FACTOR * task.recorded_work_s))
    known = task.recorded_tool_calls is not None or task.recorded_work_s is not None
    return ReplayCap(turns, timeout, known)


def stopped_by(result: ExecResult) -> str | None:
    """Which cap stopped a replay: `turns`, `time`, or None when it ended on its own."""
    if result.status is ExecStatus.MAX_TURNS:
        return "turns"
    if result.status is ExecStatus.TIMEOUT:
        return "time"
    return None

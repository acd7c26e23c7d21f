"""The one protocol every environment implements.

An environment is everything the trainer needs to know about a task set, and nothing else: which items
belong to which split, how to run one item with a given skill and agent, how to score the outcome, and what
feedback an optimizer may read about it. A public benchmark, a coding task suite and the nightly replay of a
user's own recurring tasks are all environments; the trainer never knows which one it is driving.

Implementing an environment
---------------------------
Required members (the `Environment` protocol):

`name: str`
    Short, stable identifier; recorded in every run's history and summary.
`agent_kind: "chat" | "exec"`
    `chat`: `agent` is a `skillopt_lib.backends.base.ChatBackend` (one `complete()` per turn).
    `exec`: `agent` is an exec backend (a real agent CLI in a sandbox, `skillopt_lib.backends.exec_base`); the
    environment calls it itself. The trainer passes the agent object through untouched either way.
`splits() -> Splits`
    The items of each split. Splits must be deterministic (same data and options, same items in the same
    order) and disjoint. The trainer draws training batches from `train`, gates on `val`, and touches
    `test` only for the final report. Item ids must be unique across all splits: they key gate statistics,
    histories and checkpoints.
`seed_skill() -> SkillBundle`
    The skill training starts from when the user gives none (may be a near-empty SKILL.md). Its
    frontmatter `name` is kept for the whole run.
`run(item, skill, agent) -> ItemResult`
    Run the agent once on one item with the skill in front of it, and score the outcome.

    - It is called concurrently from several threads (the executor's pool) and several times for the same
      item and skill (the paired gate repeats runs of a stochastic agent), so keep it free of shared mutable
      state, or lock it.
    - It must not raise for an agent failure: a crash, time-out or garbled answer is a result with
      `hard = 0` and the reason in `error`. Raise only for a broken environment (missing data), and let
      `skillopt_lib.backends.base.BackendUnavailable` propagate (a refused key or unreachable endpoint is the
      user's configuration to fix, not a score).
    - `hard` is the pass/fail score in [0, 1] (1 means passed) that the gate and the failure/success
      split use; `soft` a graded score in [0, 1] for partial credit (the gate can use it: `gate.metric`).
    - `feedback` is what the optimizer reads about the outcome: say what went wrong in terms of the task.
      Never paste hidden checks or gold answers verbatim when they would let the optimizer overfit (it must
      not learn to write the grader's wording into the skill).
    - `trajectory` is the agent's work as text (messages, tool calls, output), truncated by the trainer for
      reflection; `answer` the final answer; `usage` the tokens and cost the agent spent on this item (the
      trainer adds these up per role).

Optional members, used when present:

`describe(item) -> str`
    The task as the optimizer should read it (default: the item's `data` as JSON).
`close() -> None`
    Release resources (sandboxes, servers) at the end of a run.

Determinism: for a given seed and recorded model outputs a run must be reproducible, which is what makes
`skillopt train --resume` continue exactly where it stopped. Use no randomness in `run` beyond the agent's
own, and derive any sampling in `splits()` from an explicit seed option.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from skillopt_lib.backends.base import Usage
from skillopt_lib.skill import SkillBundle

Split = Literal["train", "val", "test"]


@dataclass(frozen=True)
class Item:
    """One task. `data` holds what the agent may see; `gold` what only the scorer may see."""

    id: str
    data: dict[str, Any]
    gold: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ItemResult:
    item_id: str
    hard: float
    soft: float
    feedback: str = ""
    trajectory: str = ""
    answer: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    duration_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.hard >= 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "hard": self.hard,
            "soft": self.soft,
            "feedback": self.feedback,
            "answer": self.answer,
            "error": self.error,
            "duration_s": round(self.duration_s, 3),
            "usage": self.usage.to_dict(),
            "details": self.details,
        }


@dataclass(frozen=True)
class Splits:
    train: list[Item]
    val: list[Item]
    test: list[Item]

    def get(self, split: Split) -> list[Item]:
        return {"train": self.train, "val": self.val, "test": self.test}[split]


@runtime_checkable
class Environment(Protocol):
    name: str
    agent_kind: Literal["chat", "exec"]

    def splits(self) -> Splits: ...

    def seed_skill(self) -> SkillBundle: ...

    def run(self, item: Item, skill: SkillBundle, agent: Any) -> ItemResult: ...


def describe_item(env: Any, item: Item) -> str:
    """The task text the optimizer reads: the environment's own `describe`, else the item's data as JSON."""
    describe = getattr(env, "describe", None)
    if callable(describe):
        return str(describe(item))
    import json

    return json.dumps(item.data, ensure_ascii=False, indent=1, default=str)

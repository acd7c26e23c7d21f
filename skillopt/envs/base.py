"""The one protocol every environment implements.

An environment is everything the trainer needs to know about a task set, and nothing else: which items
belong to which split, how to run one item with a given skill and agent, how to score the outcome, and what
feedback an optimizer may read about it. A public benchmark, a coding task suite and the nightly replay of a
user's own recurring tasks are all environments; the trainer never knows which one it is driving.

Implementing an environment
---------------------------
1. `splits()` returns the items of each split. Splits must be deterministic (same data, same seed, same
   items) and disjoint; the trainer gates on `val` and never looks at `test` until the final report.
2. `seed_skill()` returns the skill training starts from (may be a near-empty SKILL.md).
3. `run(item, skill, agent)` runs the agent on one item with the skill in front of it and returns an
   `ItemResult`. It must not raise for an agent failure: a crash, time-out or garbled answer is a result
   with hard score 0 and the reason in `error`. Raise only for a broken environment (missing data).
4. `feedback` in the result is what the optimizer reads: describe what went wrong in terms of the task,
   never the hidden checks or gold answers verbatim when they would let the optimizer overfit (the
   optimizer must not learn to write the grader's wording into the skill).

`agent` is a `ChatBackend` for chat environments and an `ExecBackend` for environments whose items are run
by a real agent CLI in a sandbox; an environment declares which it needs in `agent_kind`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from skillopt.backends.base import Usage
from skillopt.skill import SkillBundle

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

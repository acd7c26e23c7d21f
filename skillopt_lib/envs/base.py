"""The one protocol every environment implements, and the types it speaks in.

An environment is everything the trainer needs to know about a task set, and nothing else: which items
belong to which split, how to run one item with a given skill and agent, how to score the outcome, and what
feedback an optimizer may read about it. A public benchmark, a coding task suite and the nightly replay of a
user's own recurring tasks are all environments; the trainer never knows which one it is driving.

To implement one, write a class with the members of `Environment` below (no base class is needed;
`skillopt_lib.envs.bench.BenchmarkEnv` is a convenient one for datasets). Each member's docstring is its
contract. `skillopt_lib.envs._template` is a starting point.

Determinism: for a given seed and recorded model outputs a run must be reproducible, which is what makes
`skillopt train --resume` continue exactly where it stopped. Use no randomness in `run` beyond the agent's
own, and derive any sampling in `splits()` from an explicit seed option.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from skillopt_lib.backends.base import ChatBackend, Usage
from skillopt_lib.execution import ExecBackend
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


AgentBackend: TypeAlias = ChatBackend | ExecBackend
"""What plays the agent: a chat model for `chat` environments, an agent CLI for `exec` ones."""


@runtime_checkable
class Environment(Protocol):
    """A task set the trainer can train and score a skill on.

    Required: `name`, `agent_kind`, `splits`, `seed_skill`, `run`. Optional, used when present:
    `describe(item) -> str` (the task as the optimizer should read it; default: the item's `data` as JSON,
    see `describe_item`), `close() -> None` (release sandboxes or servers at the end of a run) and
    `recorded(item) -> ItemResult | None` (a train item's outcome already on record, read instead of a
    rollout when `TrainConfig.use_recorded` is set: see `recorded_result`).

    Thread safety: `run` is called concurrently from the executor's threads (or Ray workers, which receive a
    pickled copy), and several times for the same item and skill (the paired gate repeats runs of a
    stochastic agent), so keep it free of shared mutable state, or lock it. `splits` and `seed_skill` are
    called from one thread.
    """

    name: str
    """Short, stable identifier; recorded in every run's history and summary."""

    agent_kind: Literal["chat", "exec"]
    """`chat`: the agent is a `ChatBackend` (one `complete()` per turn). `exec`: it is an `ExecBackend` (a real
    agent CLI in a sandbox) that the environment calls itself. The trainer checks the configured backend
    against this before the first rollout and passes the agent through untouched."""

    def splits(self) -> Splits:
        """The items of each split.

        Returns:
            Deterministic splits (same data and options: same items in the same order), disjoint, with item
            ids unique across all three: they key gate statistics, histories and checkpoints. The trainer
            draws batches from `train`, gates on `val` (both must be non-empty to train) and touches `test`
            only for the final report.

        Raises:
            ConfigError (or another `SkillOptError`) with a hint for a broken environment: data not
            downloaded, a file in the wrong format. Never a bare exception for the user's mistake.
        """
        ...

    def seed_skill(self) -> SkillBundle:
        """The skill training starts from when the user gives none (may be a near-empty SKILL.md).

        Returns:
            A fresh bundle; its frontmatter `name` is kept for the whole run. Never raises for a valid
            environment.
        """
        ...

    def run(self, item: Item, skill: SkillBundle, agent: AgentBackend) -> ItemResult:
        """Run the agent once on `item` with `skill` in front of it, and score the outcome.

        Parameters:
            item: one item of this environment's splits.
            skill: the candidate skill (read-only; never modify it).
            agent: a `ChatBackend` or an `ExecBackend`, as `agent_kind` says.

        Returns:
            An `ItemResult` for `item.id` with `hard`, the pass/fail score in [0, 1] (1 means passed) that
            the gate and the failure/success split use, and `soft`, a graded score in [0, 1] for partial
            credit (the gate can use it: `gate.metric`). `feedback` is what the optimizer reads: what went
            wrong in terms of the task, never hidden checks or gold answers verbatim (the optimizer must not
            learn to write the grader's wording into the skill). `trajectory` is the agent's work as text
            (truncated by the trainer for reflection), `answer` the final answer, `usage` the tokens and cost
            the agent spent on this item (the trainer adds these up per role).

        Raises:
            Never for an agent failure: a crash, time-out or garbled answer is a result with `hard = 0` and
            the reason in `error`. `BackendUnavailable` propagates (a refused key or unreachable endpoint is
            the user's configuration to fix, not a score), and a broken environment (missing data) raises a
            `SkillOptError`.
        """
        ...


def recorded_result(env: Environment, item: Item) -> ItemResult | None:
    """The environment's recorded outcome of a train `item`, or None when it has none (or no `recorded`).

    An environment returns one only when the record shows what a rollout would: the night's replays of a
    session whose user corrected the agent (the failure and the user's words are on record, so replaying
    it with the same skill would pay for what is already known). The result must read like a rollout's:
    `hard`/`soft` scores, `feedback` and `trajectory` for the optimizer, `usage` empty (nothing was spent).
    """
    recorded = getattr(env, "recorded", None)
    if not callable(recorded):
        return None
    result = recorded(item)
    return result if isinstance(result, ItemResult) else None


def describe_item(env: Environment, item: Item) -> str:
    """The task text the optimizer reads: the environment's own `describe`, else the item's data as JSON."""
    describe = getattr(env, "describe", None)
    if callable(describe):
        return str(describe(item))
    return json.dumps(item.data, ensure_ascii=False, indent=1, default=str)

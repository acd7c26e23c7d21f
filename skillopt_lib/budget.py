"""The textual learning rate: how much of a skill one step may change.

A skill is trained like weights: big steps early, small ones late. The budget of a step is a number of edits
and a number of changed tokens (the published method only counted edits, so one "edit" could rewrite the
whole skill). Both follow a schedule from `max_*` at the first step down to the floor `min_*` at the last, and
the analysts are told the current budget (the published method told them a constant).

A skill's total size is bounded too (`max_skill_tokens`, from the method's 300-2,000-token skills): a step's
cap alone lets a skill grow without end, one small step at a time. And a candidate that loses more than half of
the skill's content is refused unless the run allows it: a gate measures a handful of tasks, not everything the
deleted text was there for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillopt_lib.skill import SkillBundle

if TYPE_CHECKING:
    from skillopt_lib.edits import Edit

# The edits module (its models and patterns) is imported by the functions that measure or apply edits: the
# learning rate is part of every config model, which `skillopt status` loads and which measures nothing.

Schedule = Literal["constant", "linear", "cosine", "step"]


class LearningRate(BaseModel):
    # Built when a training config is validated: see `config._BUILT_WHEN_USED`.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    schedule: Schedule = "cosine"
    max_edits: int = Field(default=4, ge=1, description="edits allowed at the first step")
    min_edits: int = Field(default=2, ge=1, description="floor: edits allowed at the last step")
    max_tokens: int = Field(default=400, ge=1, description="changed tokens allowed at the first step")
    min_tokens: int = Field(default=150, ge=1, description="floor for changed tokens")
    step_every: int = Field(default=4, ge=1, description="`step` schedule: decay every this many steps")
    step_factor: float = Field(default=0.5, gt=0, le=1, description="`step` schedule: multiply by this")

    @model_validator(mode="after")
    def _floors(self) -> LearningRate:
        if self.min_edits > self.max_edits:
            raise ValueError("min_edits must not exceed max_edits")
        if self.min_tokens > self.max_tokens:
            raise ValueError("min_tokens must not exceed max_tokens")
        return self


@dataclass(frozen=True)
class StepBudget:
    edits: int
    tokens: int

    def to_dict(self) -> dict[str, int]:
        return {"edits": self.edits, "tokens": self.tokens}


def _factor(lr: LearningRate, step: int, total_steps: int) -> float:
    """Fraction of the way from the floor (0) to the maximum (1) at 0-based `step` of `total_steps`."""
    if lr.schedule == "constant" or total_steps <= 1:
        return 1.0
    progress = min(max(step, 0), total_steps - 1) / (total_steps - 1)
    if lr.schedule == "linear":
        return 1.0 - progress
    if lr.schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return lr.step_factor ** (max(step, 0) // lr.step_every)


def budget_at(lr: LearningRate, step: int, total_steps: int) -> StepBudget:
    f = _factor(lr, step, total_steps)
    edits = lr.min_edits + (lr.max_edits - lr.min_edits) * f
    tokens = lr.min_tokens + (lr.max_tokens - lr.min_tokens) * f
    return StepBudget(edits=max(lr.min_edits, round(edits)), tokens=max(lr.min_tokens, round(tokens)))


def fit_budget(edits: Sequence[Edit], budget: StepBudget) -> tuple[list[Edit], list[tuple[Edit, str]]]:
    """Take edits in the given (ranked) order while they fit; returns (kept, [(dropped, why)])."""
    kept: list[Edit] = []
    dropped: list[tuple[Edit, str]] = []
    spent = 0
    for edit in edits:
        cost = edit.tokens()
        if len(kept) >= budget.edits:
            dropped.append((edit, f"over the edit budget ({budget.edits} per step)"))
        elif spent + cost > budget.tokens:
            dropped.append((edit, f"over the token budget ({spent + cost} > {budget.tokens} changed tokens)"))
        else:
            kept.append(edit)
            spent += cost
    return kept, dropped


def skill_tokens(bundle: SkillBundle) -> int:
    """A skill's size in the learning rate's token units: every text file, front matter included."""
    from skillopt_lib.edits import count_tokens

    return sum(count_tokens(text) for text in bundle.text_files().values())


def size_problem(
    incumbent: SkillBundle, candidate: SkillBundle, max_skill_tokens: int, allow_large_deletions: bool
) -> str | None:
    """Why `candidate` may not replace `incumbent` on size grounds, or None.

    Over `max_skill_tokens` is refused unless the candidate is no larger than an incumbent that was already over
    (a too-large seed skill can still be trained down). Losing more than half of the incumbent's tokens needs
    `allow_large_deletions`.
    """
    from skillopt_lib.edits import lost_tokens

    size, before = skill_tokens(candidate), skill_tokens(incumbent)
    if size > max_skill_tokens and size > before:
        return f"the skill would have {size} tokens, over max_skill_tokens={max_skill_tokens}"
    lost = lost_tokens(incumbent, candidate)
    if not allow_large_deletions and before and lost * 2 > before:
        return (
            f"the candidate loses {lost} of the skill's {before} tokens (more than half); "
            "set allow_large_deletions=true to permit it"
        )
    return None


def fit_skill_size(
    incumbent: SkillBundle, edits: Sequence[Edit], max_skill_tokens: int, allow_large_deletions: bool
) -> tuple[list[Edit], list[tuple[Edit, str]]]:
    """Keep edits, in their ranked order, while the edited skill stays within the size limits."""
    from skillopt_lib.edits import apply_edits

    kept: list[Edit] = []
    dropped: list[tuple[Edit, str]] = []
    for edit in edits:
        candidate, applied, _ = apply_edits(incumbent, [*kept, edit])
        if edit not in applied:
            kept.append(edit)  # it will conflict anyway; apply_edits reports that later
            continue
        problem = size_problem(incumbent, candidate, max_skill_tokens, allow_large_deletions)
        if problem:
            dropped.append((edit, problem))
        else:
            kept.append(edit)
    return kept, dropped

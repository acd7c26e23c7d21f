"""One training step as a pipeline of named phases: roll out the incumbent on the batch, reflect on what
happened, aggregate the analysts' edits and choose those that fit the step's budget (each screened before
it takes a seat), update the skill within its size limits, then screen the candidate and gate it
(`Trainer._judge`), and record the step.

Each phase is a function that receives what it works with as values and objects (the optimizer's caller,
the environment, the screen, the step's plan) and returns a typed value the next phase reads, so a phase
can be read, changed and tested alone; the trainer (`loop.py`) only runs them in order and keeps the
run's state. `step_record` builds the step's history line from the phases' values, in one place.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from skillopt_lib.aggregate import Aggregation, RunParallel, aggregate
from skillopt_lib.budget import StepBudget, fit_skill_size
from skillopt_lib.config import ReflectConfig
from skillopt_lib.edits import Conflict, Edit, apply_edits
from skillopt_lib.envs.base import Environment, Item, ItemResult
from skillopt_lib.reflect import OptimizerCaller, Reflection, reflect
from skillopt_lib.seating import Screen, Seating, seat_screen
from skillopt_lib.selection import Selection, select_edits
from skillopt_lib.skill import SkillBundle, SkillIssue
from skillopt_lib.training.records import HistoryRecord

# Called for each edit the screen rejects before it could take a seat: (edit, the screen's reason).
OnRejected = Callable[[Edit, str], None]


@dataclass(frozen=True)
class StepPlan:
    """What a step works on: its place in the run (0-based), the incumbent, the textual learning rate's
    budget for it, and its train batch."""

    step: int
    epoch: int
    batch: int
    incumbent: SkillBundle
    budget: StepBudget
    items: list[Item]
    # Whether the incumbent is still the skill the run started from (what an environment's record shows).
    initial: bool


@dataclass(frozen=True)
class Rollout:
    """The incumbent's run on each train item of the step, in item order."""

    pairs: list[tuple[Item, ItemResult]]

    @property
    def hard(self) -> float:
        return sum(r.hard for _, r in self.pairs) / len(self.pairs)

    @property
    def soft(self) -> float:
        return sum(r.soft for _, r in self.pairs) / len(self.pairs)

    def figures(self) -> dict[str, Any]:
        """The record's `train` figures."""
        return {
            "n": len(self.pairs),
            "hard": round(self.hard, 6),
            "soft": round(self.soft, 6),
            "failures": sum(1 for _, r in self.pairs if not r.passed),
            "successes": sum(1 for _, r in self.pairs if r.passed),
        }


def reflect_on(
    caller: OptimizerCaller,
    env: Environment,
    plan: StepPlan,
    rollout: Rollout,
    rejected: list[dict[str, Any]],
    meta_notes: str,
    cfg: ReflectConfig,
    seed: int,
    parallel: RunParallel,
) -> Reflection:
    """The analysts' patches on the rollout's failures and successes. Minibatches and prompts derive from
    the seed and the step number, so a resumed run reflects as an uninterrupted one did."""
    rng = random.Random(f"{seed}:step:{plan.step}")
    return reflect(
        caller, env, rollout.pairs, plan.incumbent, plan.budget, rejected, meta_notes, cfg, rng, parallel
    )


@dataclass(frozen=True)
class Choice:
    """The edits the step chose: the aggregation of the analysts' edits, what the screen let take a seat,
    and the selection within the budget; `prescreened` holds the screen's verdicts on the edits it
    rejected before they could take a seat (`screened`, in order)."""

    aggregation: Aggregation
    seating: Seating
    selection: Selection
    prescreened: list[dict[str, Any]]
    screened: list[Edit]


def choose(
    caller: OptimizerCaller,
    screen: Screen | None,
    shown: Sequence[ItemResult],
    plan: StepPlan,
    reflection: Reflection,
    context: dict[str, Any],
    rejected_keys: set[str],
    merge_group_size: int,
    parallel: RunParallel,
    on_rejected: OnRejected,
) -> Choice:
    """Aggregate the analysts' edits (never one already rejected), screen each before it takes a seat in
    the budget (a rejected edit never crowds out a clean one; `on_rejected` hears each), then select
    within the step's budget."""
    agg = aggregate(
        caller,
        reflection.failure_patches,
        reflection.success_patches,
        rejected_keys,
        merge_group_size,
        context,
        parallel,
    )
    seating = Seating(list(agg.candidates))
    prescreened: list[dict[str, Any]] = []
    screened: list[Edit] = []
    if screen is not None:
        seating = seat_screen(screen, plan.incumbent, agg.candidates, shown)
        for edit, verdict in seating.rejected:
            reason = verdict.reason()
            on_rejected(edit, reason)
            screened.append(edit)
            prescreened.append(
                {
                    "reason": reason,
                    "findings": [f.to_dict() for f in verdict.rejects()],
                    "edits": [edit.model_dump()],
                }
            )
    sel = select_edits(caller, seating.eligible, plan.budget, context, seating.held_back)
    return Choice(agg, seating, sel, prescreened, screened)


@dataclass(frozen=True)
class Update:
    """The candidate built from the chosen edits: the edits it applied, those that conflicted, those the
    skill's size limits left out (`too_big`, with why), and what makes it an invalid SKILL.md."""

    candidate: SkillBundle
    applied: list[Edit]
    conflicts: list[Conflict]
    too_big: list[tuple[Edit, str]]
    issues: list[SkillIssue]


def update(
    plan: StepPlan, selected: list[Edit], max_skill_tokens: int, allow_large_deletions: bool
) -> Update:
    """Apply the chosen edits to the incumbent within the skill's size limits."""
    sized, too_big = fit_skill_size(plan.incumbent, selected, max_skill_tokens, allow_large_deletions)
    candidate, applied, conflicts = apply_edits(plan.incumbent, sized)
    issues = list(candidate.validate()) if applied else []
    return Update(candidate, applied, conflicts, too_big, issues)


def step_record(
    plan: StepPlan, rollout: Rollout, reflection: Reflection, choice: Choice, upd: Update
) -> HistoryRecord:
    """The step's history line as far as the update: the gate's part is added by `Trainer._judge`, the
    spend and the incumbent's figures by `Trainer._record_step`."""
    proposed = [e for p in reflection.failure_patches + reflection.success_patches for e in p.edits]
    agg, sel = choice.aggregation, choice.selection
    record: HistoryRecord = {
        "kind": "step",
        "step": plan.step + 1,
        "epoch": plan.epoch + 1,
        "batch": plan.batch + 1,
        "train": rollout.figures(),
        "budget": plan.budget.to_dict(),
        "proposed": [e.model_dump() for e in proposed],
        "candidates": [e.model_dump() for e in agg.candidates],
        "selected": [e.model_dump() for e in sel.selected],
        "ranked_by": sel.ranked_by,
        "dropped": [
            {"reason": why, "edit": e.model_dump()} for e, why in [*agg.dropped, *sel.dropped, *upd.too_big]
        ],
        "applied": [e.model_dump() for e in upd.applied],
        "conflicts": [c.to_dict() for c in upd.conflicts],
        "optimizer_calls": [c.to_dict() for c in [*reflection.calls, *agg.calls, *sel.calls]],
    }
    if choice.prescreened:
        record["screened"] = list(choice.prescreened)
    if choice.seating.held_back:
        record["held_back"] = [e.model_dump() for e in choice.seating.held_back]
    return record

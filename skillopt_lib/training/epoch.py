"""An epoch's end as named phases: the slow update and the meta notes.

A step learns from one batch; at an epoch's end the optimizer looks at everything the epoch accepted and
rejected. The **slow update** consolidates it into standing guidance, kept in the skill's protected
region so that step edits never overwrite it; the candidate it makes is vetoed like a step's (unchanged,
too large, flagged by the screen) before the gate decides it. The **meta notes** are what the optimizer
tells itself for the next epochs; they change no skill, so nothing decides them.

Like a step's phases (`step.py`), each function receives its collaborators and returns a value;
`Trainer._slow_update` and `Trainer._meta_notes` run them, decide, and record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from skillopt_lib.budget import size_problem
from skillopt_lib.edits import GUIDANCE_REGION, Edit, get_protected_region, set_protected_region
from skillopt_lib.envs.base import ItemResult
from skillopt_lib.errors import SkillOptError
from skillopt_lib.reflect import CallRecord, OptimizerCaller, render_edits, render_rejected, render_skill
from skillopt_lib.seating import Screen
from skillopt_lib.skill import SkillBundle

# What the meta notes may hold: they ride along in every later prompt.
META_NOTES_MAX = 2000


class _Guidance(BaseModel):
    reasoning: str = ""
    guidance: str = ""


class _Notes(BaseModel):
    notes: str = ""


@dataclass(frozen=True)
class SlowCandidate:
    """The slow update's candidate, or why there is none to decide (`refusal`, with the screen's verdict
    in `screened` when it was the screen)."""

    call: CallRecord
    guidance: str = ""
    candidate: SkillBundle | None = None
    refusal: str | None = None
    screened: list[dict[str, Any]] = field(default_factory=list)

    def edit(self, incumbent: SkillBundle) -> Edit:
        """The guidance as the edit a rejection remembers (the rejected-edit buffer holds edits)."""
        region = get_protected_region(incumbent)
        return Edit(
            op="replace" if region else "append",
            target=region or None,
            content=self.guidance,
            source_type="slow_update",
            rationale="epoch consolidation",
        )


def slow_candidate(
    caller: OptimizerCaller,
    incumbent: SkillBundle,
    accepted: Sequence[dict[str, Any]],
    rejected: Sequence[dict[str, Any]],
    *,
    max_skill_tokens: int,
    allow_large_deletions: bool,
    screen: Screen | None,
    shown: Sequence[ItemResult],
) -> SlowCandidate:
    """Ask the optimizer for the epoch's guidance and make the candidate that holds it, vetoed as a step's
    candidate is: no guidance, an unchanged skill, one past the size budget, one the screen rejects."""
    answer, call = caller.call_json(
        "slow_update",
        _Guidance,
        skill=render_skill(incumbent),
        guidance=get_protected_region(incumbent, GUIDANCE_REGION) or "(none yet)",
        accepted=render_edits([Edit.model_validate(a["edit"]) for a in accepted]),
        rejected=render_rejected(list(rejected)),
    )
    if answer is None or not answer.guidance.strip():
        return SlowCandidate(call, refusal="no usable guidance returned")
    guidance = answer.guidance
    try:
        candidate = set_protected_region(incumbent, guidance, GUIDANCE_REGION)
    except SkillOptError as exc:
        return SlowCandidate(call, guidance, refusal=exc.message)
    if candidate.content_hash == incumbent.content_hash:
        return SlowCandidate(call, guidance, refusal="guidance unchanged")
    problem = size_problem(incumbent, candidate, max_skill_tokens, allow_large_deletions)
    if problem:
        return SlowCandidate(call, guidance, refusal=problem)
    if screen is not None and (verdict := screen.check(incumbent, candidate, shown)).rejected:
        found = {"reason": verdict.reason(), "findings": verdict.to_dict()["findings"]}
        return SlowCandidate(call, guidance, refusal=verdict.reason(), screened=[found])
    return SlowCandidate(call, guidance, candidate)


def meta_notes(
    caller: OptimizerCaller,
    notes: str,
    accepted: Sequence[dict[str, Any]],
    rejected: Sequence[dict[str, Any]],
) -> tuple[str, CallRecord]:
    """The optimizer's notes for the next epochs, from the last ones and what this epoch decided; the last
    ones kept when it returns none."""
    lines = [
        f"- {Edit.model_validate(a['edit']).short(160)} (gate: {json.dumps(a.get('stats', {}))[:200]})"
        for a in accepted
    ]
    answer, call = caller.call_json(
        "meta_skill",
        _Notes,
        meta_notes=notes or "(none yet)",
        accepted="\n".join(lines) or "(none)",
        rejected=render_rejected(list(rejected)),
    )
    if answer is not None and answer.notes.strip():
        return answer.notes.strip()[:META_NOTES_MAX], call
    return notes, call

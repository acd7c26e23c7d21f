"""Why a version was proposed: `Evidence`, what `Decisions.propose` validates a proposal's evidence with.

Its own module, imported where evidence is validated, so that what only reads versions does not build the
model (`skillopt diff`, and the proposals lists through `models.evidence_figures`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Evidence(BaseModel):
    """Why a version was proposed. Known fields are typed; anything else a producer adds is kept.

    `delta` is the candidate's score minus the baseline's on held-out tasks; `confidence` is how sure the
    gate is that the candidate is better (0..1). The nightly cycle adds per-task outcomes under `tasks`.
    """

    model_config = ConfigDict(extra="allow")

    baseline_score: float | None = None
    candidate_score: float | None = None
    delta: float | None = None
    confidence: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None  # the sequential gate's exact test, against `alpha`
    alpha: float | None = None
    task_ids: list[str | int] = []
    gate: dict[str, Any] | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    # A night's new skill: drafted for a recurring task family no skill covered. `install_to` lists the
    # targets (`TOOL:user` or `TOOL:project:PATH`) its family's sessions came from.
    new_skill: bool = False
    family: dict[str, Any] | None = None
    install_to: list[str] = []
    # For each line the proposal adds: the user corrections, sessions and failed replays behind it.
    provenance: list[dict[str, Any]] = []

    def score_change(self) -> float | None:
        if self.delta is not None:
            return self.delta
        if self.baseline_score is not None and self.candidate_score is not None:
            return self.candidate_score - self.baseline_score
        return None

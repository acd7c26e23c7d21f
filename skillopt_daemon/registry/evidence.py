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

    What is stored is what its producer set (`stored`): a field left at its default is not written, so a
    proposal's stored evidence says only what was measured.
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

    def stored(self) -> dict[str, Any]:
        """The evidence as the registry stores it: every field its producer set (None included), and no
        other."""
        return self.model_dump(exclude_unset=True)

    def score_change(self) -> float | None:
        if self.delta is not None:
            return self.delta
        if self.baseline_score is not None and self.candidate_score is not None:
            return self.candidate_score - self.baseline_score
        return None


class NightEvidence(Evidence):
    """What skillopt's own producers write beside `Evidence`'s fields: a night's proposal
    (`night/learning/evidence.py`, `night/learning/target.py`), a gated removal (`night/installed/removals.py`)
    and a teammate's rule proposed unproven (`team/pull.py`).

    Typed where they build it, so a producer that writes a field the faces do not know, or the wrong shape
    of one, fails type checking or validation there. The registry validates any other evidence (a
    hand-made proposal's `--evidence` file, a plugin's) only against `Evidence`: these names were free for
    such evidence to use as it liked before they were declared here, and stay so.
    """

    # The gate's session of the decision, the proposal's tier and that tier in the reviewer's words.
    gate_session: int | None = None
    tier: str | None = None
    tier_note: str | None = None
    # What the figures cost and what priced them; the replays and wall time of the training.
    priced_by: list[str] = []
    replays: int | None = None
    wall_s: float | None = None
    # Each replayed task with its runs under the installed skill and under the candidate.
    tasks: list[dict[str, Any]] = []
    test: dict[str, Any] | None = None
    tool: str | None = None
    run_dir: str | None = None
    # The candidate screen's verdict, and the added lines no correction of the user's stands behind.
    screen: dict[str, Any] | None = None
    provenance_missing: list[str] = []
    # The candidate is a text the user took back before (what they did, and when).
    same_as_retracted: str | None = None
    # A new skill's scope: where it installs, and why (`registry/scope.py` reads it).
    scope: dict[str, Any] | None = None
    # Rules installed in another scope that the proposal says the opposite of.
    conflicts: list[dict[str, Any]] = []
    # A teammate's rule: who published it, their gate, and whether it was proved again here.
    team: dict[str, Any] | None = None
    reverify: bool | None = None
    # A removal: the lines it removes, the verdict that made them go, whether replays measured it, and a
    # stale rule's figures.
    removal: bool = False
    removes: list[str] = []
    reason: str | None = None
    replayed: bool | None = None
    staleness: dict[str, Any] | None = None

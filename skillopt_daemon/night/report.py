"""What a night reports: one outcome per skill it looked at, and the night as a whole.

The same report is printed by `skillopt sleep run`, returned by the MCP tool, and stored as JSON in the
night's `night_runs` row, where `skillopt status` and the dashboard read it back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class SkillOutcome:
    skill: str
    # proposed | approved | pending | waited | awaiting-review | no-improvement | leak | screened | retracted |
    # budget |
    # too-few-tasks | error | dry-run | skipped (installed nowhere)
    status: str
    reason: str = ""
    tasks: int = 0
    proposal_id: str | None = None
    run_dir: str | None = None
    baseline: float | None = None
    candidate: float | None = None
    new: bool = False  # a new skill, drafted tonight for a recurring family no skill covered
    family: str | None = None  # the family a new skill was drafted for
    # What the gate can decide with tonight's validation tasks, said before any replay is spent
    # (`skillopt_lib.gate.plan_gate`): decidable, changed items needed, replays for one decision.
    gate_plan: dict[str, Any] | None = None
    # What it still needs before it can be decided, in the user's terms ("2 more sessions of this work").
    needs: str = ""
    # A proposal's tier: `proven`, or `likely` (shown for review, never auto-approved).
    tier: str | None = None
    # The candidate screen's verdict when it found something (`skillopt_lib.screen.ScreenResult.to_dict`):
    # the lines and why, for a `screened` outcome (nothing proposed) or a proposal shown with its warnings.
    screen: dict[str, Any] | None = None
    # What its plan was projected to cost before it started (`training.Projection.to_dict`): replays,
    # input-equivalent tokens, dollars, the user's corrections it holds; for a `waited` one, when it is
    # expected to run.
    projected: dict[str, Any] | None = None


def trained_nothing(skills: list[dict[str, Any]]) -> bool:
    """Whether a night took up skills and every one of them errored: such a night trained nothing, so it
    neither counts as having consumed the sessions nor as a success. Skills it skipped (installed nowhere)
    were not taken up."""
    taken = [s for s in skills if s.get("status") != "skipped"]
    return bool(taken) and all(s.get("status") == "error" for s in taken)


@dataclass
class CycleReport:
    run_id: str
    trigger: str
    status: str  # completed | budget | failed | nothing-to-do | dry-run | skipped (| running, interrupted)
    dry_run: bool
    started_at: str
    finished_at: str | None = None
    resumed_from: str | None = None
    start_note: str = ""
    ingest: dict[str, Any] = field(default_factory=dict)
    mining: dict[str, Any] = field(default_factory=dict)
    skills: list[SkillOutcome] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    # Families with no skill that did not get a new one tonight: {family, name, tasks, reason}.
    families: list[dict[str, Any]] = field(default_factory=list)
    spend: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    # Why a night that trained nothing had nothing to do, in the user's terms (never a bare status).
    reason: str = ""
    # The model the night's optimizer used or would have used, and the night's caps (`agents.NightModel`).
    model: dict[str, Any] = field(default_factory=dict)
    # The cap that stopped the night, when one did (`NightBudget.stopped`): cap, setting, spent, the command
    # that raises it, and a note saying all of it.
    stopped: dict[str, Any] | None = None
    # Things the night set aside and the user should know (damaged pending evidence, ...).
    warnings: list[str] = field(default_factory=list)
    # What became of the installed rules (`night/installed/outcomes.py`): verdicts, attempts sent back to train,
    # removal proposals.
    outcomes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def proposals(self) -> list[str]:
        return [s.proposal_id for s in self.skills if s.proposal_id]

    def conclude(self) -> None:
        """Settle the status the night's record keeps: `failed` with the reason when the night did not do
        its work (what `skillopt sleep run` exits 1 for), else `dry-run` for a rehearsal; a real night keeps
        what its steps found (completed, nothing-to-do, budget)."""
        why = self.failure
        if why is not None:
            self.status, self.error = "failed", why
        elif self.dry_run:
            self.status = "dry-run"

    @property
    def failure(self) -> str | None:
        """Why the night did not do its work, or None when it did: it failed, or every skill errored."""
        if self.status == "failed":
            return self.error or "the night failed"
        if trained_nothing([asdict(s) for s in self.skills]):
            errored = [s for s in self.skills if s.status == "error"]
            return "no skill was trained: " + "; ".join(f"{s.skill}: {s.reason}" for s in errored)
        return None

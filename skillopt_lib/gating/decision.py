"""A gate's verdict, the protocols a decision rule follows, and the figures any reader may ask of one."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from skillopt_lib.gating.config import GateKind, Outcome, ScoreTable, Tier
from skillopt_lib.gating.evidence import PairedEvidence


@dataclass
class GateDecision:
    """One gate verdict. `outcome` is "pending" only for the sequential gate: not accepted, not refuted, and
    `evidence` can be carried to a later measurement (the next night) to finish the decision."""

    accepted: bool
    gate: GateKind
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None
    evidence: PairedEvidence | None = None
    # For an accepted candidate: `proven` at the gate's confidence, or `likely` at its lower tier.
    tier: Tier | None = None

    def __post_init__(self) -> None:
        if self.outcome is None:
            self.outcome = "accepted" if self.accepted else "rejected"

    @property
    def pending(self) -> bool:
        return self.outcome == "pending"

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "gate": self.gate,
            "outcome": self.outcome,
            "tier": self.tier,
            "reason": self.reason,
            "stats": self.stats,
        }


class FixedRepeatRule(Protocol):
    """A rule that decides on two separately measured batches (the strict and the paired gate)."""

    kind: GateKind

    def decide(self, candidate: ScoreTable, incumbent: ScoreTable) -> GateDecision:
        """Decide whether `candidate` (scores per item, one per repeat) replaces the incumbent measured as
        `incumbent`. Contract: never measures anything; `stats` holds the rule's own typed figures."""
        ...


class SequentialRule(Protocol):
    """A rule that decides on interleaved paired evidence, possibly over several sessions."""

    def decide(
        self, evidence: PairedEvidence, exclude: Collection[str] = (), agent_runs: int = 0
    ) -> GateDecision:
        """Decide on all of `evidence` but the items in `exclude`: accepted, rejected or pending (the
        evidence then goes to a later session). Contract: never measures anything; may fix what the
        evidence records once (its bet); `agent_runs` is what this session spent, reported as is."""
        ...


class GateStats(BaseModel):
    """A gate decision's figures, as history records and a proposal's evidence keep them.

    Typed so that code reading a figure no gate writes fails type checking (every gate writes a subset:
    each rule's own figures are typed where it writes them, `StrictStats`, `PairedStats`, `SignFlipStats`
    and `EValueStats`, and a test keeps this model declaring every one of them).
    """

    # Built at the first decision or evidence read, not by every command that imports the gate's settings.
    model_config = ConfigDict(extra="allow", defer_build=True)

    candidate_mean: float | None = None
    incumbent_mean: float | None = None
    mean_difference: float | None = None
    difference: float | None = None
    lower_bound: float | None = None
    confidence: float | None = None
    likely_confidence: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    likely_alpha: float | None = None
    e_value: float | None = None
    share: float | None = None
    bet: str | None = None
    test: str | None = None
    tier: str | None = None
    n: int | None = None
    items: int | None = None
    improved_items: int | None = None
    worsened_items: int | None = None
    session: int | None = None
    replays_total: int | None = None
    agent_runs: int | None = None
    more_items_needed: int | None = None
    more_items_proven: int | None = None
    informative_items: int | None = None
    repeats: int | None = None
    p_worse: float | None = None
    sd_difference: float | None = None
    sign_flip_p: float | None = None
    regressions: list[str] | None = None
    sessions_max: int | None = None
    outcome: str | None = None
    futile: bool | None = None

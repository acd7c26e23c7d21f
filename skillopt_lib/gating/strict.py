"""The strict gate, the published rule: the candidate's mean validation score must strictly beat the
incumbent's (its cached score: the incumbent is not measured again). On a small validation split an edit
with no effect passes it almost half the time; it is kept to compare with."""

from __future__ import annotations

from typing import TypedDict

from skillopt_lib.gating.config import GateKind, ScoreTable
from skillopt_lib.gating.decision import GateDecision
from skillopt_lib.gating.scores import mean_score


class StrictStats(TypedDict, total=False):
    """The strict gate's figures."""

    candidate_mean: float
    incumbent_mean: float
    difference: float
    n: int
    repeats: int
    agent_runs: int


class StrictRule:
    """Accept when the candidate's mean score beats the incumbent's."""

    kind: GateKind = "strict"

    def decide(self, candidate: ScoreTable, incumbent: ScoreTable) -> GateDecision:
        return self.against(candidate, mean_score(incumbent))

    def against(self, candidate: ScoreTable, incumbent_score: float) -> GateDecision:
        """The decision against the incumbent's score alone (what the published rule caches)."""
        cand = mean_score(candidate)
        repeats = max((len(v) for v in candidate.values()), default=0)
        stats: StrictStats = {
            "candidate_mean": round(cand, 6),
            "incumbent_mean": round(incumbent_score, 6),
            "difference": round(cand - incumbent_score, 6),
            "n": len(candidate),
            "repeats": repeats,
        }
        if cand > incumbent_score:
            return GateDecision(
                True, "strict", f"validation score {cand:.3f} beats {incumbent_score:.3f}", dict(stats)
            )
        word = "ties" if cand == incumbent_score else "is below"
        return GateDecision(
            False, "strict", f"validation score {cand:.3f} {word} {incumbent_score:.3f}", dict(stats)
        )

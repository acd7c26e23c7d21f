"""Acceptance gates: does a candidate skill replace the incumbent?

`strict` is the published rule: the candidate's validation score must strictly beat the incumbent's cached
score. On a small validation split an edit with no effect passes that test almost half the time, and the
cached incumbent score keeps whatever luck it had.

`paired` (the default) scores candidate and incumbent on the same validation items, each `repeats` times, in
the same decision (the incumbent is re-measured, never trusted from an earlier run). Per item it takes the
difference of mean scores; the candidate is accepted only when the one-sided lower confidence bound of the
mean difference (Student t at `confidence`) is above `min_delta`, and no item the incumbent passed on every
repeat now fails on every repeat. Ties are rejected. Every decision returns its statistics for the history.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skillopt_lib.skill import SkillBundle

GateKind = Literal["strict", "paired"]
Metric = Literal["hard", "soft", "mix"]
# item id -> the item's scores, one per repeat
ScoreTable = dict[str, list[float]]


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: GateKind = "paired"
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0, description="one-sided level of the paired bound")
    repeats: int = Field(default=3, ge=1, description="runs per validation item and skill (paired gate)")
    metric: Metric = "hard"
    hard_weight: float = Field(
        default=0.5, ge=0, le=1, description="weight of the hard score when metric=mix"
    )
    no_regression: bool = Field(
        default=True, description="veto when an item the incumbent always passed now always fails"
    )
    min_delta: float = Field(default=0.0, ge=0, description="the improvement the bound must exceed")


def item_score(hard: float, soft: float, cfg: GateConfig) -> float:
    if cfg.metric == "hard":
        return hard
    if cfg.metric == "soft":
        return soft
    return cfg.hard_weight * hard + (1 - cfg.hard_weight) * soft


def mean_score(table: Mapping[str, Sequence[float]]) -> float:
    """Mean over items of each item's mean over repeats (items weigh equally, whatever their repeats)."""
    if not table:
        return 0.0
    return sum(sum(v) / len(v) for v in table.values() if v) / len(table)


def t_quantile(p: float, df: int) -> float:
    """Student t quantile by the Cornish-Fisher expansion around the normal (error < 1e-3 for df >= 3)."""
    z = NormalDist().inv_cdf(p)
    if df <= 0:
        return z
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def sign_flip_p(diffs: Sequence[float], scale: int, max_exact: int = 40) -> float | None:
    """Exact one-sided p-value of the paired sign-flip test; None when too many items differ.

    Under "the edit has no effect" candidate and incumbent runs of an item are exchangeable, so each item's
    difference is as likely negative as positive. With few differing items the t bound is optimistic (three
    items improved and none worsened happens by chance one time in eight), so the gate also asks this exact
    test. `scale` turns the differences into integers (the product of the two repeat counts).
    """
    values = [round(abs(d) * scale) for d in diffs]
    values = [v for v in values if v]
    if len(values) > max_exact:
        return None
    observed = round(sum(d * scale for d in diffs))
    dist: dict[int, float] = {0: 1.0}
    for v in values:
        nxt: dict[int, float] = {}
        for total, prob in dist.items():
            nxt[total + v] = nxt.get(total + v, 0.0) + prob / 2
            nxt[total - v] = nxt.get(total - v, 0.0) + prob / 2
        dist = nxt
    return sum(prob for total, prob in dist.items() if total >= observed)


@dataclass
class GateDecision:
    accepted: bool
    gate: GateKind
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "gate": self.gate, "reason": self.reason, "stats": self.stats}


def strict_decision(candidate: ScoreTable, incumbent_score: float) -> GateDecision:
    cand = mean_score(candidate)
    repeats = max((len(v) for v in candidate.values()), default=0)
    stats = {
        "candidate_mean": round(cand, 6),
        "incumbent_mean": round(incumbent_score, 6),
        "difference": round(cand - incumbent_score, 6),
        "n": len(candidate),
        "repeats": repeats,
    }
    if cand > incumbent_score:
        return GateDecision(True, "strict", f"validation score {cand:.3f} beats {incumbent_score:.3f}", stats)
    word = "ties" if cand == incumbent_score else "is below"
    return GateDecision(False, "strict", f"validation score {cand:.3f} {word} {incumbent_score:.3f}", stats)


def paired_decision(
    candidate: ScoreTable,
    incumbent: ScoreTable,
    *,
    confidence: float = 0.95,
    no_regression: bool = True,
    min_delta: float = 0.0,
    pass_threshold: float = 1.0,
) -> GateDecision:
    items = sorted(set(candidate) & set(incumbent))
    diffs = [
        sum(candidate[i]) / len(candidate[i]) - sum(incumbent[i]) / len(incumbent[i])
        for i in items
        if candidate[i] and incumbent[i]
    ]
    n = len(diffs)
    repeats = min((len(candidate[i]) for i in items), default=0)
    inc_repeats = min((len(incumbent[i]) for i in items), default=0)
    cand_mean = mean_score({i: candidate[i] for i in items})
    inc_mean = mean_score({i: incumbent[i] for i in items})
    mean_diff = sum(diffs) / n if n else 0.0
    sd = math.sqrt(sum((d - mean_diff) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    se = sd / math.sqrt(n) if n else 0.0
    tq = t_quantile(confidence, n - 1) if n > 1 else float("inf")
    bound = mean_diff - tq * se if n > 1 else (mean_diff if se == 0 and n == 1 else float("-inf"))
    p_value = sign_flip_p(diffs, max(repeats, 1) * max(inc_repeats, 1)) if n else None
    regressions: list[str] = []
    if no_regression and min(repeats, inc_repeats) >= 2:
        for i in items:
            if all(s >= pass_threshold for s in incumbent[i]) and all(
                s < pass_threshold for s in candidate[i]
            ):
                regressions.append(i)
    stats: dict[str, Any] = {
        "candidate_mean": round(cand_mean, 6),
        "incumbent_mean": round(inc_mean, 6),
        "mean_difference": round(mean_diff, 6),
        "sd_difference": round(sd, 6),
        "lower_bound": round(bound, 6) if math.isfinite(bound) else None,
        "confidence": confidence,
        "sign_flip_p": round(p_value, 6) if p_value is not None else None,
        "n": n,
        "repeats": repeats,
        "improved_items": sum(1 for d in diffs if d > 0),
        "worsened_items": sum(1 for d in diffs if d < 0),
        "regressions": regressions,
    }
    if n == 0:
        return GateDecision(False, "paired", "no validation items were scored for both skills", stats)
    if mean_diff <= 0:
        word = "ties" if mean_diff == 0 else "is worse than"
        return GateDecision(
            False, "paired", f"candidate {word} the incumbent ({cand_mean:.3f} vs {inc_mean:.3f})", stats
        )
    if regressions:
        shown = ", ".join(regressions[:5])
        return GateDecision(
            False,
            "paired",
            f"{len(regressions)} item(s) the incumbent always passed now always fail ({shown})",
            stats,
        )
    if not bound > min_delta:
        return GateDecision(
            False,
            "paired",
            f"improvement {mean_diff:+.3f} is within noise: {confidence:.0%} lower bound {bound:+.3f} "
            f"is not above {min_delta:g} (n={n}, repeats={repeats})",
            stats,
        )
    if p_value is not None and p_value > 1 - confidence:
        return GateDecision(
            False,
            "paired",
            f"improvement {mean_diff:+.3f} rests on too few items: exact sign-flip p={p_value:.3f} "
            f"> {1 - confidence:.3f} (n={n}, repeats={repeats})",
            stats,
        )
    return GateDecision(
        True,
        "paired",
        f"improvement {mean_diff:+.3f} with {confidence:.0%} lower bound {bound:+.3f} "
        f"(n={n}, repeats={repeats})",
        stats,
    )


Measure = Callable[[SkillBundle, int], ScoreTable]


class Gate:
    """Runs a gate decision: asks `measure(skill, repeats)` for the scores it needs and decides.

    `measure` is the trainer's rollout on the validation split, so a gate never knows about environments.
    For the strict gate `incumbent_scores` is the cached measurement (the published behaviour); the paired
    gate ignores it and re-measures.
    """

    def __init__(self, cfg: GateConfig) -> None:
        self.cfg = cfg

    @property
    def repeats(self) -> int:
        return self.cfg.repeats

    def decide(
        self,
        measure: Measure,
        candidate: SkillBundle,
        incumbent: SkillBundle,
        incumbent_scores: ScoreTable | None,
    ) -> tuple[GateDecision, ScoreTable, ScoreTable]:
        """Returns (decision, candidate scores, incumbent scores used)."""
        if self.cfg.kind == "strict":
            inc = incumbent_scores if incumbent_scores is not None else measure(incumbent, self.cfg.repeats)
            cand = measure(candidate, self.cfg.repeats)
            decision = strict_decision(cand, mean_score(inc))
            decision.stats["agent_runs"] = sum(len(v) for v in cand.values()) + (
                0 if incumbent_scores is not None else sum(len(v) for v in inc.values())
            )
            return decision, cand, inc
        inc = measure(incumbent, self.cfg.repeats)
        cand = measure(candidate, self.cfg.repeats)
        decision = paired_decision(
            cand,
            inc,
            confidence=self.cfg.confidence,
            no_regression=self.cfg.no_regression,
            min_delta=self.cfg.min_delta,
        )
        decision.stats["agent_runs"] = sum(len(v) for v in cand.values()) + sum(len(v) for v in inc.values())
        return decision, cand, inc

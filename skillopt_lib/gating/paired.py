"""The paired gate, the earlier fixed-repeat rule, kept for comparison: both skills measured as two separate
batches, `repeats` times per item; accepted when the one-sided Student t bound of the mean difference is
above `min_delta`, an exact sign-flip test agrees, and no item the incumbent passed on every repeat now
fails on every repeat. Separate batches let drift between them through, and correlated repeats make its
veto fire on real gains; see docs/performance.md."""

from __future__ import annotations

import math
from typing import TypedDict

from skillopt_lib.gating.config import GateKind, ScoreTable
from skillopt_lib.gating.decision import GateDecision
from skillopt_lib.gating.scores import mean_score, sign_flip_p, t_quantile


class PairedStats(TypedDict, total=False):
    """The paired gate's figures."""

    candidate_mean: float
    incumbent_mean: float
    mean_difference: float
    sd_difference: float
    lower_bound: float | None
    confidence: float
    sign_flip_p: float | None
    n: int
    repeats: int
    improved_items: int
    worsened_items: int
    regressions: list[str]
    agent_runs: int


class PairedRule:
    """Accept on a t bound above `min_delta` that the exact sign-flip test confirms, with no item that the
    incumbent always passed now always failing (`no_regression`)."""

    kind: GateKind = "paired"

    def __init__(
        self,
        *,
        confidence: float = 0.95,
        no_regression: bool = True,
        min_delta: float = 0.0,
        pass_threshold: float = 1.0,
    ) -> None:
        self.confidence = confidence
        self.no_regression = no_regression
        self.min_delta = min_delta
        self.pass_threshold = pass_threshold

    def decide(self, candidate: ScoreTable, incumbent: ScoreTable) -> GateDecision:
        confidence, no_regression = self.confidence, self.no_regression
        min_delta, pass_threshold = self.min_delta, self.pass_threshold
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
        stats: PairedStats = {
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
            return GateDecision(
                False, "paired", "no validation items were scored for both skills", dict(stats)
            )
        if mean_diff <= 0:
            word = "ties" if mean_diff == 0 else "is worse than"
            return GateDecision(
                False,
                "paired",
                f"candidate {word} the incumbent ({cand_mean:.3f} vs {inc_mean:.3f})",
                dict(stats),
            )
        if regressions:
            shown = ", ".join(regressions[:5])
            return GateDecision(
                False,
                "paired",
                f"{len(regressions)} item(s) the incumbent always passed now always fail ({shown})",
                dict(stats),
            )
        if not bound > min_delta:
            return GateDecision(
                False,
                "paired",
                f"improvement {mean_diff:+.3f} is within noise: {confidence:.0%} lower bound {bound:+.3f} "
                f"is not above {min_delta:g} (n={n}, repeats={repeats})",
                dict(stats),
            )
        if p_value is not None and p_value > 1 - confidence:
            return GateDecision(
                False,
                "paired",
                f"improvement {mean_diff:+.3f} rests on too few items: exact sign-flip p={p_value:.3f} "
                f"> {1 - confidence:.3f} (n={n}, repeats={repeats})",
                dict(stats),
            )
        return GateDecision(
            True,
            "paired",
            f"improvement {mean_diff:+.3f} with {confidence:.0%} lower bound {bound:+.3f} "
            f"(n={n}, repeats={repeats})",
            dict(stats),
        )

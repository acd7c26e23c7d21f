"""The e-value test, the night's sequential rule: an anytime-valid betting test for evidence that keeps
arriving. Each item (near-duplicates merged into one) multiplies a bettor's wealth by 1 + lambda * g(d), d
the item's mean paired difference (`scores.stake`, `scores.e_value`); by Ville's inequality the wealth
reaches 1/a under "no effect" with probability at most a however many sessions look at it, so evidence is
kept and extended night after night. An optional lower tier (`likely_confidence`) reports a candidate a
person may review before it is proven."""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from skillopt_lib.gating.config import GateConfig, Outcome, Tier
from skillopt_lib.gating.decision import GateDecision
from skillopt_lib.gating.evidence import PairedEvidence
from skillopt_lib.gating.scores import e_value, evalue_items_needed
from skillopt_lib.gating.sequential import SequentialStats, _shared_stats


class EValueStats(SequentialStats, total=False):
    """The e-value test's own figures."""

    test: str
    items: int
    e_value: float
    likely_alpha: float | None
    share: float
    bet: str
    likely_confidence: float | None
    more_items_proven: int


class EValueRule:
    """Accepted (`proven`, or `likely` at the lower tier), rejected, or pending on the e-value of the
    evidence's independent items."""

    def __init__(self, cfg: GateConfig) -> None:
        self.cfg = cfg

    def decide(
        self, evidence: PairedEvidence, exclude: Collection[str] = (), agent_runs: int = 0
    ) -> GateDecision:
        """Decide on all the evidence so far with the anytime-valid e-value test: accepted (`proven`, or
        `likely` at the lower tier), rejected, or pending until more items arrive.

        Accepted when 1 / e_value <= the candidate's share of 1 - confidence *and* the mean paired difference is
        above zero: exact however many sessions looked before (Ville's inequality), so pending evidence can wait
        for new items without limit. Requiring a better mean only removes acceptances, so it never raises the
        false-accept rate; it refuses an edit that wins more items than it loses but loses more than it wins.
        Rejected when it is no better on average (ties or worse); the veto is the mirror test at
        `veto_confidence`. The evidence's bet is fixed at its first decision (`cfg.bet` then).
        """
        cfg = self.cfg
        if evidence.bet is None:
            evidence.bet = cfg.bet
        bet = evidence.bet
        diffs = list(evidence.differences(exclude).values())
        values = list(evidence.cluster_differences(exclude).values())
        n = len(values)
        e_plus = e_value(values, bet) if n else 1.0
        e_minus = e_value([-v for v in values], bet) if n else 1.0
        p_better = min(1.0, 1.0 / e_plus) if e_plus > 0 else 1.0
        p_worse = min(1.0, 1.0 / e_minus) if e_minus > 0 else 1.0
        alpha = (1 - cfg.confidence) * evidence.share
        likely_alpha = (1 - cfg.likely_confidence) * evidence.share if cfg.likely_confidence else None
        mean_diff = sum(values) / n if n else 0.0
        shared = _shared_stats(
            evidence, cfg, values, mean_diff, (p_better, p_worse, alpha), agent_runs, exclude
        )
        stats = cast(EValueStats, shared)
        stats["test"] = "e-value"
        stats["items"] = len(diffs)
        stats["e_value"] = round(e_plus, 6)
        stats["likely_alpha"] = round(likely_alpha, 6) if likely_alpha is not None else None
        stats["share"] = evidence.share
        stats["bet"] = bet
        stats["likely_confidence"] = cfg.likely_confidence
        stats["session"] = max(evidence.sessions, 1)

        def verdict(outcome: Outcome, reason: str, tier: Tier | None = None) -> GateDecision:
            stats["outcome"] = outcome
            stats["tier"] = tier
            return GateDecision(
                outcome == "accepted", "sequential", reason, dict(stats), outcome, evidence, tier
            )

        where = f"{n} independent item(s), {stats['improved_items']} better, {stats['worsened_items']} worse"
        if n == 0:
            return verdict("rejected", "no validation items were scored for both skills")
        better = mean_diff > 0
        if better and p_better <= alpha + 1e-12:
            return verdict(
                "accepted",
                f"proven: improvement {mean_diff:+.3f}, e-value {e_plus:.1f} >= {1 / alpha:.1f} "
                f"(false accepts <= {alpha:.1%}; {where})",
                "proven",
            )
        if better and likely_alpha is not None and p_better <= likely_alpha + 1e-12:
            need = evalue_items_needed(values, alpha, bet=bet)
            return verdict(
                "accepted",
                f"likely, not yet proven: improvement {mean_diff:+.3f}, e-value {e_plus:.1f} >= "
                f"{1 / likely_alpha:.1f} (false proposals <= {likely_alpha:.1%}); proven needs {1 / alpha:.1f}, "
                f"about {need} more improved item(s) ({where})",
                "likely",
            )
        if cfg.no_regression and mean_diff < 0 and p_worse <= 1 - cfg.veto_confidence:
            return verdict(
                "rejected",
                f"the paired evidence says the candidate is worse: e-value {e_minus:.1f} ({where})",
            )
        if mean_diff <= 0:
            word = "ties" if mean_diff == 0 else "is worse than"
            return verdict(
                "rejected",
                f"candidate {word} the incumbent ({stats['candidate_mean']:.3f} vs {stats['incumbent_mean']:.3f})",
            )
        more = evalue_items_needed(values, likely_alpha if likely_alpha is not None else alpha, bet=bet)
        stats["more_items_needed"] = more
        stats["more_items_proven"] = evalue_items_needed(values, alpha, bet=bet)
        return verdict(
            "pending",
            f"pending evidence: improvement {mean_diff:+.3f}, e-value {e_plus:.1f} < {1 / (likely_alpha or alpha):.1f} "
            f"({where}); needs about {more} more improved item(s), kept for later sessions",
        )

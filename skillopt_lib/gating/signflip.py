"""The exact sign-flip test, the library's sequential rule for training on a benchmark: a one-sided exact
test of the items' paired differences, its false-accept rate spent over a fixed number of sessions
(`GateConfig.spending`, Bonferroni)."""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

from skillopt_lib.gating.config import GateConfig, Outcome
from skillopt_lib.gating.decision import GateDecision
from skillopt_lib.gating.evidence import PairedEvidence
from skillopt_lib.gating.scores import session_alpha, sign_flip_tail
from skillopt_lib.gating.sequential import SequentialStats, _integer_differences, _shared_stats


class SignFlipStats(SequentialStats, total=False):
    """The sign-flip test's own figures."""

    sessions_max: int


class SignFlipRule:
    """Accepted, rejected, or pending on the exact sign-flip test at the rate this session spends."""

    def __init__(self, cfg: GateConfig) -> None:
        self.cfg = cfg

    def decide(
        self, evidence: PairedEvidence, exclude: Collection[str] = (), agent_runs: int = 0
    ) -> GateDecision:
        """Decide on the evidence of `evidence.sessions` sessions: accepted, rejected, or pending.

        The test: one-sided exact sign-flip test of the items' paired differences, at the false-accept rate spent
        on this session (`session_alpha`). Each session's test is exact under "the edit has no effect" (each
        item's difference is then symmetric about zero, whatever the repeats and however correlated), so the
        chance of any false accept over all sessions is at most their sum, 1 - confidence, however the caller
        decides to stop or continue. The veto is the mirror test ("the candidate is worse") at veto_confidence.
        """
        cfg = self.cfg
        session = max(evidence.sessions - 1, 0)
        diffs = list(evidence.differences(exclude).values())
        values, scale = _integer_differences(evidence, exclude)
        n = len(diffs)
        observed = sum(values)
        p_better = sign_flip_tail(values, observed) if n else 1.0
        p_worse = sign_flip_tail(values, -observed) if n else 1.0
        alpha = session_alpha(cfg, session)
        mean_diff = sum(diffs) / n if n else 0.0
        shared = _shared_stats(
            evidence, cfg, values, mean_diff, (p_better, p_worse, alpha), agent_runs, exclude
        )
        stats = cast(SignFlipStats, shared)
        stats["session"] = session + 1
        stats["sessions_max"] = len(cfg.spending)

        def verdict(outcome: Outcome, reason: str) -> GateDecision:
            stats["outcome"] = outcome
            return GateDecision(outcome == "accepted", "sequential", reason, dict(stats), outcome, evidence)

        where = f"n={n}, {stats['improved_items']} better, {stats['worsened_items']} worse"
        if n == 0:
            return verdict("rejected", "no validation items were scored for both skills")
        if p_better <= alpha + 1e-12:  # 2^-k tails land exactly on the spent rate
            return verdict(
                "accepted", f"improvement {mean_diff:+.3f}: paired p={p_better:.4f} <= {alpha:.4f} ({where})"
            )
        if cfg.no_regression and mean_diff < 0 and p_worse <= 1 - cfg.veto_confidence:
            return verdict(
                "rejected",
                f"the paired evidence says the candidate is worse: p={p_worse:.3f} <= {1 - cfg.veto_confidence:.3f} "
                f"({where})",
            )
        if mean_diff <= 0:
            word = "ties" if mean_diff == 0 else "is worse than"
            return verdict(
                "rejected",
                f"candidate {word} the incumbent ({stats['candidate_mean']:.3f} vs {stats['incumbent_mean']:.3f})",
            )
        if session + 1 >= len(cfg.spending):
            return verdict(
                "rejected",
                f"undecided after {session + 1} session(s): improvement {mean_diff:+.3f}, p={p_better:.4f} ({where})",
            )
        nxt = session_alpha(cfg, session + 1)
        more = 0
        while (
            more < 10_000
            and sign_flip_tail([*values, *([scale] * more)], observed + scale * more) > nxt + 1e-12
        ):
            more += 1
        stats["more_items_needed"] = more
        return verdict(
            "pending",
            f"pending evidence: improvement {mean_diff:+.3f}, p={p_better:.4f} > {alpha:.4f} ({where}); "
            f"next session needs at least {more} more improved item(s)",
        )

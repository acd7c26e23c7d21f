"""What the two sequential tests share: the evidence's figures both report (`SequentialStats`), the
integer grid of the exact test."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TypedDict

from skillopt_lib.gating.config import GateConfig, Outcome, Tier
from skillopt_lib.gating.evidence import PairedEvidence
from skillopt_lib.gating.scores import mean_score


class SequentialStats(TypedDict, total=False):
    """The figures both sequential tests report; each test adds its own (`SignFlipStats`, `EValueStats`)."""

    candidate_mean: float
    incumbent_mean: float
    mean_difference: float
    n: int
    informative_items: int
    improved_items: int
    worsened_items: int
    repeats: int
    p_value: float
    p_worse: float
    alpha: float
    confidence: float
    replays_total: int
    agent_runs: int
    session: int
    outcome: Outcome
    tier: Tier | None
    more_items_needed: int
    futile: bool


def _integer_differences(evidence: PairedEvidence, exclude: Collection[str]) -> tuple[list[int], int]:
    """Item differences on an integer grid (for the exact test) and the grid's scale."""
    counts = {len(ps) for item, ps in evidence.pairs.items() if ps and item not in exclude}
    scale = math.lcm(*counts) if counts else 1
    binary = all(x in (0.0, 1.0) for ps in evidence.pairs.values() for pair in ps for x in pair)
    if not binary:
        scale *= 20  # soft scores: a 1/20 grid; rounding is symmetric, so the test stays exact for it
    diffs = evidence.differences(exclude)
    return [int(round(d * scale)) for d in diffs.values()], scale


def _shared_stats(
    evidence: PairedEvidence,
    cfg: GateConfig,
    values: Sequence[float],
    mean_diff: float,
    tests: tuple[float, float, float],
    agent_runs: int,
    exclude: Collection[str] = (),
) -> SequentialStats:
    """The figures both sequential tests report: means, items better and worse, `tests` = (p better, p worse,
    alpha), replays."""
    cand, inc = evidence.tables(exclude)
    p_better, p_worse, alpha = tests
    return {
        "candidate_mean": round(mean_score(cand), 6),
        "incumbent_mean": round(mean_score(inc), 6),
        "mean_difference": round(mean_diff, 6),
        "n": len(values),
        "informative_items": sum(1 for v in values if v),
        "improved_items": sum(1 for v in values if v > 0),
        "worsened_items": sum(1 for v in values if v < 0),
        "repeats": max((len(v) for v in cand.values()), default=0),
        "p_value": round(p_better, 6),
        "p_worse": round(p_worse, 6),
        "alpha": round(alpha, 6),
        "confidence": cfg.confidence,
        "replays_total": evidence.replays,
        "agent_runs": agent_runs,
    }

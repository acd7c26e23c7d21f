"""The sequential gate's evidence about one candidate against one incumbent, kept between sessions."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from skillopt_lib.gating.config import Bet, ScoreTable


@dataclass
class PairedEvidence:
    """The sequential gate's evidence about one candidate against one incumbent; serialisable.

    `pairs[item]` holds [incumbent score, candidate score] per interleaved replay pair; an item's evidence is
    the mean of its pairs' differences. `clusters` maps an item to its group of near-duplicates (the e-value
    test counts a group as one item: near-copies answered alike are not independent evidence), and `share` is
    the candidate's share of the incumbent's error rate (`GateLedger`). `bet` is what its items stake
    (`stake`), fixed when its first decision is taken: a running test never changes its bet. `fingerprints`
    maps a measured item to a fingerprint of its request (the caller's, e.g. the night's near-copy check),
    so a later near-copy of it can be counted in its cluster however the caller regroups its items. Store
    `to_dict()` with the candidate and pass `PairedEvidence.from_dict(...)` to `Gate.decide_paired` in the
    next session (night).
    """

    candidate_hash: str = ""
    incumbent_hash: str = ""
    pairs: dict[str, list[list[float]]] = field(default_factory=dict)
    sessions: int = 0
    share: float = 1.0
    clusters: dict[str, str] = field(default_factory=dict)
    bet: Bet | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)

    def cluster_of(self, item: str) -> str:
        return self.clusters.get(item, item)

    def differences(self, exclude: Collection[str] = ()) -> dict[str, float]:
        return {
            item: sum(c - i for i, c in ps) / len(ps)
            for item, ps in self.pairs.items()
            if ps and item not in exclude
        }

    def cluster_differences(self, exclude: Collection[str] = ()) -> dict[str, float]:
        """Each cluster's mean item difference: the e-value test's independent items."""
        grouped: dict[str, list[float]] = {}
        for item, d in self.differences(exclude).items():
            grouped.setdefault(self.cluster_of(item), []).append(d)
        return {c: sum(ds) / len(ds) for c, ds in grouped.items()}

    def tables(self, exclude: Collection[str] = ()) -> tuple[ScoreTable, ScoreTable]:
        """(candidate scores, incumbent scores) per item, as the fixed-repeat gates report them."""
        items = [i for i in self.pairs if i not in exclude and self.pairs[i]]
        cand = {i: [c for _, c in self.pairs[i]] for i in items}
        inc = {i: [x for x, _ in self.pairs[i]] for i in items}
        return cand, inc

    @property
    def replays(self) -> int:
        return 2 * sum(len(ps) for ps in self.pairs.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate_hash": self.candidate_hash,
            "incumbent_hash": self.incumbent_hash,
            "pairs": {k: [list(p) for p in v] for k, v in self.pairs.items()},
            "sessions": self.sessions,
            "share": self.share,
            "clusters": dict(self.clusters),
            "bet": self.bet,
            "fingerprints": dict(self.fingerprints),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedEvidence:
        """Raises ValueError for anything that is not evidence the gate could have written (a list, scores
        outside [0, 1] or not finite, a pair that is not two scores, a share outside (0, 1])."""
        if not isinstance(data, Mapping):
            raise ValueError("paired evidence must be an object")
        raw_pairs = data.get("pairs") or {}
        if not isinstance(raw_pairs, Mapping):
            raise ValueError("paired evidence: `pairs` must map items to lists of pairs")
        pairs: dict[str, list[list[float]]] = {}
        for item, runs in raw_pairs.items():
            if not isinstance(runs, list):
                raise ValueError(f"paired evidence: item {item!r} holds no list of pairs")
            pairs[str(item)] = [_score_pair(p) for p in runs]
        share = float(data.get("share", 1.0))
        if not (math.isfinite(share) and 0 < share <= 1):
            raise ValueError(f"paired evidence: share {share!r} is outside (0, 1]")
        clusters = data.get("clusters") or {}
        if not isinstance(clusters, Mapping):
            raise ValueError("paired evidence: `clusters` must map items to groups")
        sessions = int(data.get("sessions", 0))
        if sessions < 0:
            raise ValueError("paired evidence: negative session count")
        # Evidence written before the bet was recorded was measured on signs: it keeps that bet.
        bet = data.get("bet", "sign" if pairs else None)
        if bet not in ("size", "sign", None):
            raise ValueError(f"paired evidence: unknown bet {str(bet)[:40]!r}")
        fingerprints = data.get("fingerprints") or {}
        if not isinstance(fingerprints, Mapping):
            raise ValueError("paired evidence: `fingerprints` must map items to fingerprints")
        return cls(
            candidate_hash=str(data.get("candidate_hash", "")),
            incumbent_hash=str(data.get("incumbent_hash", "")),
            pairs=pairs,
            sessions=sessions,
            share=share,
            clusters={str(k): str(v) for k, v in clusters.items()},
            bet=bet,
            fingerprints={str(k): str(v) for k, v in fingerprints.items()},
        )


def _score_pair(pair: Any) -> list[float]:
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValueError(f"paired evidence: {pair!r} is not an [incumbent, candidate] pair")
    a, b = float(pair[0]), float(pair[1])
    if not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in (a, b)):
        raise ValueError(f"paired evidence: scores {pair!r} are not in [0, 1]")
    return [a, b]

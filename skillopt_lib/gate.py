"""Acceptance gates: does a candidate skill replace the incumbent?

`sequential` (the default) measures incumbent and candidate *interleaved and paired*: item by item, one
incumbent run and one candidate run back to back (which goes first alternating), so a shared shift in the agent
or provider (a slow hour, a flaky sandbox) hits both arms alike and cancels in the difference. Every item gets
`first_pairs` pairs; items where the two arms ever disagree get more (up to `repeats` per arm and session),
items where they always agree are not replayed further. The test is an exact one-sided sign-flip test on the
items' mean paired differences. The item is the unit of evidence: with a near-deterministic agent, repeats of one item are strongly correlated, so a test
that counted runs would accept an edit that merely reshuffles which items pass.

A night rarely has enough items to decide, so the evidence (`PairedEvidence`) is serialisable and a candidate
that is neither accepted nor refuted stays `pending`; the next session adds new items (and more pairs on the
items that disagreed) and tests again. Each session spends a fixed share of the false-accept rate
(`spending`, Bonferroni): every session's test is exact on its own, so the chance of a false accept over all
sessions is at most 1 - confidence under any rule for stopping or continuing. The regression veto is the
mirror test on the same evidence ("the candidate is worse"), not one flipped item. `plan_gate` says before
any replay whether a split can ever decide (k changed items reach at best p = 2^-k).

`strict` is the published rule: the candidate's validation score must strictly beat the incumbent's cached
score. On a small validation split an edit with no effect passes that test almost half the time.

`paired` is the earlier fixed-repeat rule, kept for comparison: both skills are measured as two separate
batches, `repeats` times per item; accepted when the one-sided Student t bound of the mean difference is
above `min_delta`, an exact sign-flip test agrees, and no item the incumbent passed on every repeat now fails
on every repeat. Separate batches let drift between them through, and correlated repeats make its veto fire
on real gains; see docs/performance.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skillopt_lib.skill import SkillBundle

GateKind = Literal["strict", "paired", "sequential"]
Outcome = Literal["accepted", "rejected", "pending"]
Arm = Literal["incumbent", "candidate"]
Metric = Literal["hard", "soft", "mix"]
# item id -> the item's scores, one per repeat
ScoreTable = dict[str, list[float]]


class GateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: GateKind = "sequential"
    confidence: float = Field(
        default=0.95,
        gt=0.5,
        lt=1.0,
        description="1 - the false-accept rate the gate allows (sequential: W must reach 1/(1-confidence))",
    )
    repeats: int = Field(
        default=3,
        ge=1,
        description="paired/strict: runs per validation item and skill; sequential: the cap per arm and item",
    )
    veto_confidence: float = Field(
        default=0.9,
        gt=0.5,
        lt=1.0,
        description="sequential: level of the evidence that the candidate is worse",
    )
    first_pairs: int = Field(
        default=2,
        ge=1,
        description="sequential: pairs every new item gets before deciding whether it needs more",
    )
    spending: list[float] = Field(
        default=[0.625, 0.375],
        min_length=1,
        description="sequential: shares of the false-accept rate spent per session (night); their count is "
        "how many sessions a pending candidate may use",
    )
    metric: Metric = "hard"
    hard_weight: float = Field(
        default=0.5, ge=0, le=1, description="weight of the hard score when metric=mix"
    )
    no_regression: bool = Field(
        default=True,
        description="paired: veto when an item the incumbent always passed now always fails; "
        "sequential: veto when the paired evidence says the candidate is worse",
    )
    min_delta: float = Field(default=0.0, ge=0, description="the improvement the bound must exceed")

    @field_validator("spending")
    @classmethod
    def _positive_shares(cls, shares: list[float]) -> list[float]:
        if any(not share > 0 for share in shares):
            raise ValueError("every spending share must be positive")
        return shares


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
    """One gate verdict. `outcome` is "pending" only for the sequential gate: not accepted, not refuted, and
    `evidence` can be carried to a later measurement (the next night) to finish the decision."""

    accepted: bool
    gate: GateKind
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None
    evidence: PairedEvidence | None = None

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
            "reason": self.reason,
            "stats": self.stats,
        }


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


# ------------------------------------------------------------------------------ the sequential gate
Request = tuple[str, Arm]


class PairedMeasure(Protocol):
    """Runs agent replays for the sequential gate.

    Contract: run each `(item id, arm)` request exactly once and return its score in [0, 1], one per request
    and in request order. Requests come interleaved (an item's incumbent and candidate runs side by side, the
    order alternating); an implementation may run them concurrently but should start them in the given order,
    so both runs of a pair see the same conditions. The gate only asks about the item ids it was given.
    """

    def __call__(self, requests: Sequence[Request], /) -> list[float]: ...


def sign_flip_tail(values: Sequence[int], observed: int) -> float:
    """Exact P(sum_i s_i * v_i >= observed) for independent fair signs s_i.

    The null distribution of the paired sign-flip test. The generating function prod_i (x^-v_i + x^v_i) is
    built as one packed integer (a slot of len(values) + 2 bits per sum), so the test stays exact and fast for
    hundreds of items; the tail's coefficients are summed by reducing modulo 2^slot - 1.
    """
    vals = [abs(v) for v in values if v]
    n = len(vals)
    total = sum(vals)
    k = observed + total  # slot of the observed sum; slot 0 is "every sign negative"
    if k <= 0:
        return 1.0
    if k > 2 * total:
        return 0.0
    width = n + 2
    poly = 1
    for v in vals:
        poly += poly << (2 * v * width)
    count = (poly >> (k * width)) % ((1 << width) - 1)
    return count / 2**n


def session_alpha(cfg: GateConfig, session: int) -> float:
    """The false-accept rate spent at 0-based `session`; over all sessions they add up to 1 - confidence."""
    if session >= len(cfg.spending):
        return 0.0
    return (1 - cfg.confidence) * cfg.spending[session] / sum(cfg.spending)


def min_informative_items(cfg: GateConfig, session: int = 0) -> int:
    """Fewest changed items that can reach acceptance at `session`: all of them improved (p = 2^-k)."""
    alpha = session_alpha(cfg, session)
    if alpha <= 0:
        return 10**9
    return max(1, math.ceil(math.log2(1 / alpha) - 1e-9))


@dataclass(frozen=True)
class GatePlan:
    """What a validation split of `n_items` can decide, before any replay is spent."""

    n_items: int
    decidable: bool
    min_items: int  # changed items the first decision needs at least
    replays_min: int  # agent runs of one decision when exactly `min_items` items disagree
    replays_max: int  # every item disagreeing and replayed to the cap
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "decidable": self.decidable,
            "min_items": self.min_items,
            "replays_min": self.replays_min,
            "replays_max": self.replays_max,
            "reason": self.reason,
        }


def plan_gate(n_items: int, cfg: GateConfig) -> GatePlan:
    """Can a validation split of `n_items` ever reach a decision, and roughly what does one cost?

    A paired test's unit of evidence is an item (repeats of one item are not independent when the agent is
    near-deterministic), and k changed items can at best reach p = 2^-k: a split with fewer items than
    `min_items` can never accept, whatever the edit does, until later sessions bring new items.
    """
    cap = cfg.repeats
    if cfg.kind == "strict":
        return GatePlan(
            n_items, n_items > 0, 1, n_items * cap, 2 * n_items * cap, "the strict gate has no test"
        )
    if cfg.kind == "paired":
        k = max(1, math.ceil(math.log2(1 / (1 - cfg.confidence)) - 1e-12))
        replays_min = 2 * cap * n_items
    else:
        k = min_informative_items(cfg)
        first = min(cfg.first_pairs, cap)
        replays_min = 2 * first * n_items + 2 * (cap - first) * k
    decidable = n_items >= k
    replays_max = 2 * cap * n_items
    if decidable:
        reason = f"{n_items} validation items; a decision needs at least {k} of them to change"
    else:
        reason = (
            f"{n_items} validation item(s) can never pass the gate: it needs at least {k} items that change "
            f"(confidence {cfg.confidence:g}); add validation items or carry the evidence to later runs"
        )
    return GatePlan(n_items, decidable, k, replays_min if decidable else 0, replays_max, reason)


@dataclass
class PairedEvidence:
    """The sequential gate's evidence about one candidate against one incumbent; serialisable.

    `pairs[item]` holds [incumbent score, candidate score] per interleaved replay pair; an item's evidence is
    the mean of its pairs' differences. Store `to_dict()` with the candidate and pass
    `PairedEvidence.from_dict(...)` to `Gate.decide_paired` in the next session (night).
    """

    candidate_hash: str = ""
    incumbent_hash: str = ""
    pairs: dict[str, list[list[float]]] = field(default_factory=dict)
    sessions: int = 0

    def differences(self, exclude: Collection[str] = ()) -> dict[str, float]:
        return {
            item: sum(c - i for i, c in ps) / len(ps)
            for item, ps in self.pairs.items()
            if ps and item not in exclude
        }

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
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairedEvidence:
        return cls(
            candidate_hash=str(data.get("candidate_hash", "")),
            incumbent_hash=str(data.get("incumbent_hash", "")),
            pairs={
                str(k): [[float(a), float(b)] for a, b in v] for k, v in (data.get("pairs") or {}).items()
            },
            sessions=int(data.get("sessions", 0)),
        )


def _interleave(items: Sequence[str], rounds: int, offset: int = 0) -> list[Request]:
    """Pairs in time order: per item, each round's two runs side by side, which arm first alternating."""
    out: list[Request] = []
    for k, item in enumerate(items):
        for r in range(rounds):
            if (k + r + offset) % 2 == 0:
                out += [(item, "incumbent"), (item, "candidate")]
            else:
                out += [(item, "candidate"), (item, "incumbent")]
    return out


def evidence_figures(evidence: PairedEvidence, cfg: GateConfig) -> dict[str, Any]:
    """The running figures of (possibly pending) evidence, for a status line: n, items better and worse, mean
    difference, p-value, session and replays so far."""
    stats = sequential_decision(evidence, cfg).stats
    keep = ("n", "improved_items", "worsened_items", "mean_difference", "p_value", "session", "replays_total")
    return {k: stats[k] for k in keep}


def _integer_differences(evidence: PairedEvidence, exclude: Collection[str]) -> tuple[list[int], int]:
    """Item differences on an integer grid (for the exact test) and the grid's scale."""
    counts = {len(ps) for item, ps in evidence.pairs.items() if ps and item not in exclude}
    scale = math.lcm(*counts) if counts else 1
    binary = all(x in (0.0, 1.0) for ps in evidence.pairs.values() for pair in ps for x in pair)
    if not binary:
        scale *= 20  # soft scores: a 1/20 grid; rounding is symmetric, so the test stays exact for it
    diffs = evidence.differences(exclude)
    return [int(round(d * scale)) for d in diffs.values()], scale


def sequential_decision(
    evidence: PairedEvidence, cfg: GateConfig, exclude: Collection[str] = (), agent_runs: int = 0
) -> GateDecision:
    """Decide on the evidence of `evidence.sessions` sessions: accepted, rejected, or pending.

    The test: one-sided exact sign-flip test of the items' paired differences, at the false-accept rate spent
    on this session (`session_alpha`). Each session's test is exact under "the edit has no effect" (each
    item's difference is then symmetric about zero, whatever the repeats and however correlated), so the
    chance of any false accept over all sessions is at most their sum, 1 - confidence, however the caller
    decides to stop or continue. The veto is the mirror test ("the candidate is worse") at veto_confidence.
    """
    session = max(evidence.sessions - 1, 0)
    diffs = list(evidence.differences(exclude).values())
    values, scale = _integer_differences(evidence, exclude)
    n = len(diffs)
    cand, inc = evidence.tables(exclude)
    observed = sum(values)
    p_better = sign_flip_tail(values, observed) if n else 1.0
    p_worse = sign_flip_tail(values, -observed) if n else 1.0
    alpha = session_alpha(cfg, session)
    mean_diff = sum(diffs) / n if n else 0.0
    stats: dict[str, Any] = {
        "candidate_mean": round(mean_score(cand), 6),
        "incumbent_mean": round(mean_score(inc), 6),
        "mean_difference": round(mean_diff, 6),
        "n": n,
        "informative_items": sum(1 for v in values if v),
        "improved_items": sum(1 for v in values if v > 0),
        "worsened_items": sum(1 for v in values if v < 0),
        "repeats": max((len(v) for v in cand.values()), default=0),
        "p_value": round(p_better, 6),
        "p_worse": round(p_worse, 6),
        "alpha": round(alpha, 6),
        "confidence": cfg.confidence,
        "session": session + 1,
        "sessions_max": len(cfg.spending),
        "replays_total": evidence.replays,
        "agent_runs": agent_runs,
    }

    def verdict(outcome: Outcome, reason: str) -> GateDecision:
        stats["outcome"] = outcome
        return GateDecision(outcome == "accepted", "sequential", reason, stats, outcome, evidence)

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
        more < 10_000 and sign_flip_tail([*values, *([scale] * more)], observed + scale * more) > nxt + 1e-12
    ):
        more += 1
    stats["more_items_needed"] = more
    return verdict(
        "pending",
        f"pending evidence: improvement {mean_diff:+.3f}, p={p_better:.4f} > {alpha:.4f} ({where}); "
        f"next session needs at least {more} more improved item(s)",
    )


Measure = Callable[[SkillBundle, int], ScoreTable]


class Gate:
    """Runs a gate decision; a gate never knows about environments, only how to ask for scores.

    The sequential gate asks `decide_paired` a `PairedMeasure` for single interleaved runs. The fixed-repeat
    gates ask `decide` a `measure(skill, repeats)` (the trainer's rollout of a whole split): for the strict gate
    `incumbent_scores` is the cached measurement (the published behaviour); the paired gate re-measures.
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
        if self.cfg.kind == "sequential":
            raise ValueError("the sequential gate measures interleaved pairs: call decide_paired")
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

    def decide_paired(
        self,
        measure: PairedMeasure,
        items: Sequence[str],
        evidence: PairedEvidence | None = None,
        *,
        exclude: Collection[str] = (),
    ) -> GateDecision:
        """One session of the sequential gate: measure `items`, then decide on all the evidence.

        Every new item gets `first_pairs` interleaved pairs and, if any of them disagrees, more up to `repeats`
        (extra replays only where they can decide something); items carried from an earlier session get `repeats` more pairs
        if any of their pairs disagreed. Items in `exclude` (a test split) are neither measured nor counted.
        The decision carries the updated evidence; when it is pending, keep it for the next session.
        """
        ev = evidence if evidence is not None else PairedEvidence()
        if ev.sessions >= len(self.cfg.spending):
            return sequential_decision(ev, self.cfg, exclude, 0)
        wanted = [i for i in dict.fromkeys(items) if i not in exclude]
        new = [i for i in wanted if i not in ev.pairs]
        # Items measured before whose pairs disagreed get another full set of pairs; agreeing ones are settled.
        again = [i for i in wanted if i in ev.pairs and any(a != b for a, b in ev.pairs[i])]
        runs = 0

        def run(requests: list[Request]) -> None:
            nonlocal runs
            if not requests:
                return
            scores = measure(requests)
            if len(scores) != len(requests):
                raise ValueError(f"measure returned {len(scores)} scores for {len(requests)} requests")
            runs += len(requests)
            for k in range(0, len(requests), 2):
                item, first_arm = requests[k]
                a, b = float(scores[k]), float(scores[k + 1])
                ev.pairs.setdefault(item, []).append([a, b] if first_arm == "incumbent" else [b, a])

        first = min(self.cfg.first_pairs, self.cfg.repeats)
        run(_interleave(new, first, ev.sessions) + _interleave(again, self.cfg.repeats, ev.sessions))
        discordant = [i for i in new if any(a != b for a, b in ev.pairs[i])]
        if self.cfg.repeats > first:
            run(_interleave(discordant, self.cfg.repeats - first, ev.sessions + 1))
        ev.sessions += 1
        return sequential_decision(ev, self.cfg, exclude, runs)

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

The sequential gate has two tests. `sign-flip` (the library's default, for training runs on a benchmark):
the exact test above, spending its error rate over a fixed number of sessions. `e-value` (the nightly
default, `GateConfig.anytime()`): an anytime-valid betting test for evidence that keeps arriving. Each item
(near-duplicates merged into one: `clusters`) multiplies a bettor's wealth by 1 + lambda * sign(d), d the
item's mean paired difference; the e-value is a fixed mixture of two bets (lambda 1 and 1/2). Under "the edit has no
effect" every item's difference is symmetric about zero, so the wealth is a test martingale and, by Ville's
inequality, reaches 1/a with probability at most a *however many sessions look at it*: the evidence can be
kept and extended night after night, never spent or thrown away for being small. An item counts once: items
already measured (and items of a cluster already measured) are never measured again. The error rate is
shared by every candidate tested against the same incumbent (`candidate_share`, from a `GateLedger`), so a
second candidate, a re-run or a best-of-K carry-over buys no fresh budget. An optional lower tier
(`likely_confidence`) reports a candidate the user may review before it is proven, labelled as such.

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

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from skillopt_lib.skill import SkillBundle

GateKind = Literal["strict", "paired", "sequential"]
GateTest = Literal["sign-flip", "e-value"]
# What an item stakes in the e-value test (`stake`).
Bet = Literal["size", "sign"]
Tier = Literal["proven", "likely"]
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
    test: GateTest = Field(
        default="sign-flip",
        description="sequential: `sign-flip` (exact test, error spent over `spending` sessions) or `e-value` "
        "(anytime-valid betting test: evidence accumulates over any number of sessions)",
    )
    bet: Bet = Field(
        default="size",
        description="e-value: what each item stakes, `size` (its mean paired difference, half of it its sign: "
        "a loss in every pair outweighs a gain in one) or `sign` (only which way it moved); evidence keeps the "
        "bet it began with",
    )
    likely_confidence: float | None = Field(
        default=None,
        gt=0.5,
        lt=1.0,
        description="e-value: a lower tier; a candidate whose evidence reaches this level but not `confidence` "
        "is accepted as `likely` (for a person to review, never to install unreviewed)",
    )
    first_share: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="e-value: share of the error rate the first candidate tested against an incumbent gets; "
        "later candidates share the rest, each half the one before",
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

    @model_validator(mode="after")
    def _tiers(self) -> GateConfig:
        if self.likely_confidence is not None:
            if self.test != "e-value":
                raise ValueError("likely_confidence needs test = 'e-value'")
            if not self.likely_confidence < self.confidence:
                raise ValueError("likely_confidence must be below confidence")
        return self

    @classmethod
    def anytime(cls, **overrides: Any) -> GateConfig:
        """The gate for evidence gathered over an open-ended number of sessions (the nightly cycle's): the
        sequential gate with the anytime-valid e-value test, false accepts at most 5% (`proven`) and a
        lower tier at 10% (`likely`), one pair per item.

        One pair, because a replay is what a night pays for: the test's unit of evidence is the item (repeats
        of one item are strongly correlated with a near-deterministic agent), so a second and third pair of
        the same item buy little evidence at the price of a new item. `docs/performance.md` measures the
        trade with `benchmarks/gate.py`."""
        return cls(
            **{
                "kind": "sequential",
                "test": "e-value",
                "likely_confidence": 0.9,
                "first_pairs": 1,
                "repeats": 1,
                **overrides,
            }
        )

    def candidate_share(self, index: int) -> float:
        """The share of the error rate of the `index`-th (0-based) candidate tested against one incumbent.
        The shares add up to 1, so all candidates ever tested against it together keep the promised rate."""
        if index <= 0:
            return self.first_share
        return (1 - self.first_share) * 0.5**index


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
    min_items_proven: int = 0  # with a lower tier: improved items the proven tier needs

    @property
    def missing(self) -> int:
        """Independent items still to come before a decision is possible (0 when it is possible now)."""
        return max(0, self.min_items - self.n_items)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "decidable": self.decidable,
            "min_items": self.min_items,
            "min_items_proven": self.min_items_proven or self.min_items,
            "replays_min": self.replays_min,
            "replays_max": self.replays_max,
            "reason": self.reason,
        }


def plan_gate(n_items: int, cfg: GateConfig, share: float | None = None) -> GatePlan:
    """Can a validation split of `n_items` reach a decision tonight, and roughly what does one cost?

    A paired test's unit of evidence is an item (repeats of one item are not independent when the agent is
    near-deterministic), and k changed items can at best reach p = 2^-k (e-value: wealth about 2^k): a split
    with fewer items than `min_items` cannot accept tonight, whatever the edit does. With the e-value test
    its evidence is kept, and later sessions' new items add to it. `share` is the candidate's share of the
    error rate (default: the first candidate's).
    """
    cap = cfg.repeats
    proven = 0
    if cfg.kind == "strict":
        return GatePlan(
            n_items, n_items > 0, 1, n_items * cap, 2 * n_items * cap, "the strict gate has no test"
        )
    if cfg.kind == "paired":
        k = max(1, math.ceil(math.log2(1 / (1 - cfg.confidence)) - 1e-12))
        replays_min = 2 * cap * n_items
    else:
        if cfg.test == "e-value":
            share = cfg.first_share if share is None else share
            proven = evalue_items_needed([], (1 - cfg.confidence) * share)
            likely = cfg.likely_confidence
            k = evalue_items_needed([], (1 - likely) * share) if likely is not None else proven
        else:
            k = min_informative_items(cfg)
        first = min(cfg.first_pairs, cap)
        replays_min = 2 * first * n_items + 2 * (cap - first) * k
    decidable = n_items >= k
    replays_max = 2 * cap * n_items
    tiers = f" (proven: {proven})" if proven and proven != k else ""
    if decidable:
        reason = f"{n_items} validation items; a decision needs at least {k} of them to change{tiers}"
    elif cfg.test == "e-value" and cfg.kind == "sequential":
        reason = (
            f"{n_items} validation item(s): a decision needs at least {k} that improve{tiers}; the evidence is "
            f"kept and {k - n_items} more session(s) of this work can complete it"
        )
    else:
        reason = (
            f"{n_items} validation item(s) can never pass the gate: it needs at least {k} items that change "
            f"(confidence {cfg.confidence:g}); add validation items or carry the evidence to later runs"
        )
    return GatePlan(n_items, decidable, k, replays_min if decidable else 0, replays_max, reason, proven)


# ------------------------------------------------------------------------------ the e-value test
# A fixed mixture of two bets on "the candidate is better": all-in (lambda 1: k items that improve in every
# pair give a wealth of 2^k, as strong as the exact test when every item moves) and a cautious half bet that
# survives an item that got worse. Fixed before any evidence, so the mixture is itself a test martingale.
BETS: tuple[tuple[float, float], ...] = ((1.0, 0.75), (0.5, 0.25))


# What an item's mean paired difference d in [-1, 1] stakes, g(d): odd (g(-d) = -g(d)) and |g| <= 1, so every
# factor 1 + lambda * g(d) has mean 1 under "no effect" whatever g is. `size` (the night's) stakes
# (d + sign(d)) / 2: an item lost in every pair costs a full stake and one better in half its pairs wins
# three quarters of one, so an edit that breaks a few items while nudging many others loses its wealth; a
# noisy agent's small gains still count for most of their sign. `sign` (1 if d > 0, -1 if d < 0) counted a
# loss in every pair no more than a gain in one pair of three: an edit that broke a fifth of the tasks while
# nudging the rest could win on the count of signs alone. It is kept for evidence begun under it.
def stake(d: float, bet: Bet = "size") -> float:
    """g(d): what an item with mean paired difference `d` stakes under `bet` (0 for a tie)."""
    if d == 0:
        return 0.0
    sign = 1.0 if d > 0 else -1.0
    if bet == "sign":
        return sign
    return (max(-1.0, min(1.0, d)) + sign) / 2


def e_value(diffs: Sequence[float], bet: Bet = "size") -> float:
    """The bettor's wealth after items with these paired differences (items that tie do not bet).

    Under "the edit has no effect" the arms are exchangeable within an item, so given its size each item's
    difference is as likely negative as positive: every factor 1 + lambda * g(d) (g odd, |g| <= 1: `stake`)
    has mean 1 and the wealth is a nonnegative martingale over items, P(it ever reaches 1/a) <= a (Ville's
    inequality), whenever and however often it is looked at. 1 / e_value is therefore an anytime-valid p-value.
    """
    stakes = [stake(d, bet) for d in diffs if d != 0]
    return sum(w * math.prod(1.0 + lam * g for g in stakes) for lam, w in BETS)


def evalue_items_needed(diffs: Sequence[float], alpha: float, limit: int = 10_000, bet: Bet = "size") -> int:
    """How many more items that all improve would bring the e-value of `diffs` to 1/alpha."""
    more = 0
    while more < limit and e_value([*diffs, *([1.0] * more)], bet) * alpha < 1 - 1e-9:
        more += 1
    return more


class GateLedger(Protocol):
    """Which candidates were tested against which incumbent, kept across runs: no fresh error budgets.

    Every candidate ever tested against one incumbent shares that incumbent's false-accept rate
    (`GateConfig.candidate_share`), so re-running a night, trying another candidate on the same items or
    carrying the best of several cannot buy a new one.
    """

    def share(self, incumbent_hash: str, candidate_hash: str, cfg: GateConfig) -> float | None:
        """The candidate's share of the incumbent's error rate, recording it as tested.

        Contract: a candidate still undecided against this incumbent gets the share it got when first
        tested; a new one the next share in order; a candidate already decided against this incumbent
        gets None and must not be tested again (the same question, asked twice).
        """
        ...

    def decided(self, incumbent_hash: str, candidate_hash: str, outcome: str) -> None:
        """Record how the candidate's test against the incumbent ended (accepted, rejected, ...)."""
        ...


class MemoryLedger:
    """A `GateLedger` for one run (the nightly cycle keeps its ledger in its store)."""

    def __init__(self) -> None:
        self.tested: dict[str, list[list[str]]] = {}

    def share(self, incumbent_hash: str, candidate_hash: str, cfg: GateConfig) -> float | None:
        rows = self.tested.setdefault(incumbent_hash, [])
        for index, (cand, outcome) in enumerate(rows):
            if cand == candidate_hash:
                return cfg.candidate_share(index) if outcome == "pending" else None
        rows.append([candidate_hash, "pending"])
        return cfg.candidate_share(len(rows) - 1)

    def decided(self, incumbent_hash: str, candidate_hash: str, outcome: str) -> None:
        for row in self.tested.get(incumbent_hash, []):
            if row[0] == candidate_hash:
                row[1] = outcome


class GateStats(BaseModel):
    """A gate decision's figures, as history records and a proposal's evidence keep them.

    Typed so that code reading a figure no gate writes fails type checking (every gate writes a subset).
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
    extra = ("e_value", "more_items_needed", "tier")
    return {k: stats[k] for k in keep} | {k: stats[k] for k in extra if k in stats}


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
) -> dict[str, Any]:
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


def evalue_decision(
    evidence: PairedEvidence, cfg: GateConfig, exclude: Collection[str] = (), agent_runs: int = 0
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
    stats = _shared_stats(evidence, cfg, values, mean_diff, (p_better, p_worse, alpha), agent_runs, exclude)
    stats.update(
        test="e-value",
        items=len(diffs),
        e_value=round(e_plus, 6),
        likely_alpha=round(likely_alpha, 6) if likely_alpha is not None else None,
        share=evidence.share,
        bet=bet,
        likely_confidence=cfg.likely_confidence,
        session=max(evidence.sessions, 1),
    )

    def verdict(outcome: Outcome, reason: str, tier: Tier | None = None) -> GateDecision:
        stats["outcome"] = outcome
        stats["tier"] = tier
        return GateDecision(outcome == "accepted", "sequential", reason, stats, outcome, evidence, tier)

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


def sequential_decision(
    evidence: PairedEvidence, cfg: GateConfig, exclude: Collection[str] = (), agent_runs: int = 0
) -> GateDecision:
    """Decide on the evidence of `evidence.sessions` sessions: accepted, rejected, or pending.

    The test: one-sided exact sign-flip test of the items' paired differences, at the false-accept rate spent
    on this session (`session_alpha`). Each session's test is exact under "the edit has no effect" (each
    item's difference is then symmetric about zero, whatever the repeats and however correlated), so the
    chance of any false accept over all sessions is at most their sum, 1 - confidence, however the caller
    decides to stop or continue. The veto is the mirror test ("the candidate is worse") at veto_confidence.
    With `cfg.test == "e-value"` the decision is `evalue_decision`'s.
    """
    if cfg.test == "e-value":
        return evalue_decision(evidence, cfg, exclude, agent_runs)
    session = max(evidence.sessions - 1, 0)
    diffs = list(evidence.differences(exclude).values())
    values, scale = _integer_differences(evidence, exclude)
    n = len(diffs)
    observed = sum(values)
    p_better = sign_flip_tail(values, observed) if n else 1.0
    p_worse = sign_flip_tail(values, -observed) if n else 1.0
    alpha = session_alpha(cfg, session)
    mean_diff = sum(diffs) / n if n else 0.0
    stats = _shared_stats(evidence, cfg, values, mean_diff, (p_better, p_worse, alpha), agent_runs, exclude)
    stats.update(session=session + 1, sessions_max=len(cfg.spending))

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


def futility(decision: GateDecision) -> str | None:
    """Why a pending e-value decision is hopeless, or None while it may still be decided.

    A candidate stays pending while its mean difference is positive but its evidence is short of the lower
    tier. One that would need more *new* items, every one of them improved, than it has been measured on so
    far (and more than three) has had its evidence point elsewhere: an item that got worse costs the
    cautious bet half its wealth, and every tie bets nothing. Kept, it would block new candidates for its
    skill (a carried candidate holds the training) for as many nights as it needs items. Ending it is always
    safe for the error rate (rejecting never accepts anything) and frees the skill to learn something else.
    """
    stats = decision.stats
    if not decision.pending or stats.get("test") != "e-value":
        return None
    n = int(stats.get("n") or 0)
    more = int(stats.get("more_items_needed") or 0)
    if more <= max(n, 3):
        return None
    return (
        f"hopeless: it would need about {more} more improved item(s), more than the {n} it was measured on "
        f"({stats.get('improved_items', 0)} better, {stats.get('worsened_items', 0)} worse); ended so that "
        "its skill can learn something else"
    )


def no_loss(decision: GateDecision) -> tuple[bool, str]:
    """Does the candidate lose nothing against the incumbent? The gate's question turned around, for an edit
    that only takes something out (a rule's removal): it need not prove it is better, only not be worse.

    Asked in the gate's own terms, on the same paired evidence: the candidate does not lose when the gate
    measured at least one item and the paired mean difference is not below zero, so neither its regression
    veto ("the paired evidence says the candidate is worse") nor its "worse on average" refusal applies. A
    tie passes (the line made no difference on the replays); so does an accepted or pending improvement.
    Returns (passes, why in a reviewer's terms)."""
    stats = decision.stats
    n = int(stats.get("n") or 0)
    if n == 0:
        return False, "no held-out item was scored for both skills"
    diff = float(stats.get("mean_difference") or 0.0)
    better, worse = int(stats.get("improved_items") or 0), int(stats.get("worsened_items") or 0)
    where = f"{n} held-out item(s): {better} better, {worse} worse, mean difference {diff:+.3f}"
    if diff < 0:
        return False, f"it loses on the replays ({where})"
    return True, f"it does not lose on the replays ({where})"


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
        clusters: Mapping[str, str] | None = None,
        chunk_pairs: int = 0,
    ) -> GateDecision:
        """One session of the sequential gate: measure `items`, then decide on all the evidence.

        Every new item gets `first_pairs` interleaved pairs and more up to `repeats` only where they can
        decide something: with the sign-flip test, items whose pairs disagree (their size is what it tests);
        with the e-value test, items whose pairs all tie (a stake is only made by a difference). With the sign-flip test, items carried from an
        earlier session get `repeats` more pairs if any of their pairs disagreed; with the e-value test an item
        counts once, so items already measured (or of a cluster already measured: `clusters` maps an item to its
        group of near-duplicates) are not measured again. Items in `exclude` (a test split) are neither
        measured nor counted. The decision carries the updated evidence; when it is pending, keep it for the
        next session.

        `chunk_pairs` > 0 asks `measure` for that many pairs at a time and adds each chunk to `evidence` as
        it returns: when `measure` raises (a night's cap reached mid-way), every pair measured before it is
        already in the caller's `evidence` object, so nothing paid for is lost. With the e-value test that
        partial evidence is as valid as any (the test holds at any stopping time).

        With the e-value test, a candidate left pending that could only be decided by more new improved items
        than it has items so far is ended as hopeless (`futility`): it would hold its skill's training for
        many nights on evidence that has not pointed its way.
        """
        ev = evidence if evidence is not None else PairedEvidence()
        anytime = self.cfg.test == "e-value"
        if not anytime and ev.sessions >= len(self.cfg.spending):
            return sequential_decision(ev, self.cfg, exclude, 0)
        wanted = [i for i in dict.fromkeys(items) if i not in exclude]
        for i in wanted:
            if clusters and i in clusters and i not in ev.pairs:
                ev.clusters[i] = str(clusters[i])
        if anytime:
            settled = {ev.cluster_of(i) for i in ev.pairs}
            new = [i for i in wanted if i not in ev.pairs and ev.cluster_of(i) not in settled]
            again: list[str] = []
        else:
            new = [i for i in wanted if i not in ev.pairs]
            # Items measured before whose pairs disagreed get another full set of pairs; agreeing ones are settled.
            again = [i for i in wanted if i in ev.pairs and any(a != b for a, b in ev.pairs[i])]
        runs = 0

        def run(requests: list[Request]) -> None:
            nonlocal runs
            step = 2 * chunk_pairs if chunk_pairs > 0 else max(len(requests), 1)
            for start in range(0, len(requests), step):
                chunk = requests[start : start + step]
                scores = measure(chunk)
                if len(scores) != len(chunk):
                    raise ValueError(f"measure returned {len(scores)} scores for {len(chunk)} requests")
                runs += len(chunk)
                for k in range(0, len(chunk), 2):
                    item, first_arm = chunk[k]
                    a, b = float(scores[k]), float(scores[k + 1])
                    ev.pairs.setdefault(item, []).append([a, b] if first_arm == "incumbent" else [b, a])

        first = min(self.cfg.first_pairs, self.cfg.repeats)
        started = ev.sessions
        # Counted before measuring, so evidence cut short by an exception still says this session added to it.
        if new or again or not anytime:
            ev.sessions += 1
        run(_interleave(new, first, started) + _interleave(again, self.cfg.repeats, started))
        if anytime:
            # The e-value test bets on each item's difference: a further pair of an item whose pairs disagree
            # can only shrink its stake, while one of an item whose pairs all tie may show a difference. So
            # extra pairs go to ties, a round at a time while they stay tied (chosen by |d| alone, so the
            # test stays exact under "no effect").
            for r in range(self.cfg.repeats - first):
                tied = [i for i in new if i in ev.pairs and all(a == b for a, b in ev.pairs[i])]
                run(_interleave(tied, 1, started + 1 + r))
        elif self.cfg.repeats > first:
            discordant = [i for i in new if any(a != b for a, b in ev.pairs[i])]
            run(_interleave(discordant, self.cfg.repeats - first, started + 1))
        decision = sequential_decision(ev, self.cfg, exclude, runs)
        hopeless = futility(decision) if anytime else None
        if hopeless is not None:
            decision.stats["outcome"] = "rejected"
            decision.stats["futile"] = True
            return GateDecision(False, "sequential", hopeless, decision.stats, "rejected", ev, None)
        return decision

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

Each decision rule is one class in its own module with its figures typed (`skillopt_lib/gating/`:
`StrictRule`, `PairedRule`, `SignFlipRule`, `EValueRule`); this module runs them (`Gate`), plans a split
(`plan_gate`), keeps the ledger's protocol, and is where callers import the gate's parts from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from skillopt_lib.gating.config import (
    Arm,
    Bet,
    GateConfig,
    GateKind,
    GateTest,
    Metric,
    Outcome,
    Request,
    ScoreTable,
    Tier,
    item_score,
)
from skillopt_lib.gating.decision import FixedRepeatRule, GateDecision, GateStats, SequentialRule
from skillopt_lib.gating.evalue import EValueRule
from skillopt_lib.gating.evidence import PairedEvidence
from skillopt_lib.gating.paired import PairedRule
from skillopt_lib.gating.scores import (
    BETS,
    e_value,
    evalue_items_needed,
    mean_score,
    min_informative_items,
    session_alpha,
    sign_flip_p,
    sign_flip_tail,
    stake,
    t_quantile,
)
from skillopt_lib.gating.signflip import SignFlipRule
from skillopt_lib.gating.strict import StrictRule
from skillopt_lib.skill import SkillBundle

# The gate's vocabulary and parts, importable from here as before they had modules of their own.
__all__ = [
    "BETS", "Arm", "Bet", "EValueRule", "FixedRepeatRule", "Gate", "GateConfig", "GateDecision", "GateKind",
    "GateLedger", "GatePlan", "GateStats", "GateTest", "Measure", "MemoryLedger", "Metric", "Outcome", "PairedEvidence",
    "PairedMeasure", "PairedRule", "Request", "ScoreTable", "SequentialRule", "SignFlipRule", "StrictRule",
    "Tier", "e_value", "evalue_decision", "evalue_items_needed", "evidence_figures", "futility",
    "item_score", "mean_score", "min_informative_items", "no_loss", "paired_decision", "plan_gate", "rule_for",
    "sequential_decision", "session_alpha", "sign_flip_p", "sign_flip_tail", "stake", "strict_decision",
    "t_quantile",
]  # fmt: skip


def rule_for(cfg: GateConfig) -> SequentialRule:
    """The sequential test `cfg` names: the e-value test, or the exact sign-flip test."""
    return EValueRule(cfg) if cfg.test == "e-value" else SignFlipRule(cfg)


def strict_decision(candidate: ScoreTable, incumbent_score: float) -> GateDecision:
    """The strict rule's decision (`StrictRule`)."""
    return StrictRule().against(candidate, incumbent_score)


def paired_decision(
    candidate: ScoreTable,
    incumbent: ScoreTable,
    *,
    confidence: float = 0.95,
    no_regression: bool = True,
    min_delta: float = 0.0,
    pass_threshold: float = 1.0,
) -> GateDecision:
    """The paired rule's decision (`PairedRule`)."""
    rule = PairedRule(
        confidence=confidence, no_regression=no_regression, min_delta=min_delta, pass_threshold=pass_threshold
    )
    return rule.decide(candidate, incumbent)


def evalue_decision(
    evidence: PairedEvidence, cfg: GateConfig, exclude: Collection[str] = (), agent_runs: int = 0
) -> GateDecision:
    """The e-value test's decision (`EValueRule`), whatever test `cfg` names."""
    return EValueRule(cfg).decide(evidence, exclude, agent_runs)


def sequential_decision(
    evidence: PairedEvidence, cfg: GateConfig, exclude: Collection[str] = (), agent_runs: int = 0
) -> GateDecision:
    """The decision of the sequential test `cfg` names on `evidence` (`rule_for`)."""
    return rule_for(cfg).decide(evidence, exclude, agent_runs)


class PairedMeasure(Protocol):
    """Runs agent replays for the sequential gate.

    Contract: run each `(item id, arm)` request exactly once and return its score in [0, 1], one per request
    and in request order. Requests come interleaved (an item's incumbent and candidate runs side by side, the
    order alternating); an implementation may run them concurrently but should start them in the given order,
    so both runs of a pair see the same conditions. The gate only asks about the item ids it was given.
    """

    def __call__(self, requests: Sequence[Request], /) -> list[float]: ...


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
            decision = StrictRule().against(cand, mean_score(inc))
            decision.stats["agent_runs"] = sum(len(v) for v in cand.values()) + (
                0 if incumbent_scores is not None else sum(len(v) for v in inc.values())
            )
            return decision, cand, inc
        inc = measure(incumbent, self.cfg.repeats)
        cand = measure(candidate, self.cfg.repeats)
        rule = PairedRule(
            confidence=self.cfg.confidence, no_regression=self.cfg.no_regression, min_delta=self.cfg.min_delta
        )
        decision = rule.decide(cand, inc)
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

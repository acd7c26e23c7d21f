"""The anytime-valid gate the nightly cycle runs (`GateConfig.anytime()`): evidence that accumulates over
any number of sessions without buying fresh error budgets, near-duplicates counted once, a lower tier, and
evidence that cannot be forged into a win."""

from __future__ import annotations

import itertools
import random

import pytest

from skillopt_lib.gate import (
    Gate,
    GateConfig,
    MemoryLedger,
    PairedEvidence,
    e_value,
    evalue_decision,
    plan_gate,
    sequential_decision,
    stake,
)
from tests.lib.optimizer.test_budget_gate import SimArms

ANYTIME = GateConfig.anytime()


def _looks(gate: Gate, arms: SimArms, sizes: list[int], clusters: dict[str, str] | None = None) -> str:
    """Sessions in turn, each adding `size` new items (0: a session with nothing new); the final outcome
    and tier."""
    evidence: PairedEvidence | None = PairedEvidence(share=ANYTIME.candidate_share(0))
    items: list[str] = []
    for size in sizes:
        items += [str(len(items) + k) for k in range(size)]
        decision = gate.decide_paired(arms, items, evidence, clusters=clusters)
        if not decision.pending:
            return f"{decision.outcome}:{decision.tier}"
        evidence = decision.evidence
    return "pending:None"


@pytest.mark.parametrize("noise", ["independent", "correlated", "reshuffle"])
def test_edits_without_effect_are_proposed_within_the_rate_however_many_nights_look(noise: str) -> None:
    """Seeded simulation: a useless edit looked at over eight sessions of a few new items each. Proven at
    most 5% (times the first candidate's share), likely at most 10% (times the share)."""
    rng = random.Random(f"anytime-null:{noise}")
    gate = Gate(ANYTIME)
    trials = 600
    outcomes = []
    for _ in range(trials):
        ps = [rng.betavariate(0.5, 0.5) for _ in range(40)]
        qs = list(ps)
        if noise == "reshuffle":
            rng.shuffle(qs)
        arms = SimArms(ps, qs, rng, keep=0.9 if noise == "correlated" else 0.0)
        outcomes.append(_looks(gate, arms, [4, 1, 1, 2, 0, 1, 3, 2]))
    proven = outcomes.count("accepted:proven") / trials
    any_tier = (outcomes.count("accepted:proven") + outcomes.count("accepted:likely")) / trials
    assert proven <= 0.05 * 0.8
    assert any_tier <= 0.10 * 0.8


def test_a_learned_rule_is_proven_on_five_items_and_likely_on_four() -> None:
    gate = Gate(ANYTIME)
    better = SimArms([0.0] * 12, [1.0] * 12, random.Random(0))
    assert _looks(gate, better, [5]) == "accepted:proven"
    assert _looks(gate, better, [4]) == "accepted:likely"
    # three items tonight cannot decide; two more sessions of the work tomorrow make it proven
    assert _looks(gate, better, [3]) == "pending:None"
    assert _looks(gate, better, [3, 2]) == "accepted:proven"
    plan = plan_gate(3, ANYTIME)
    assert not plan.decidable and plan.missing == 1 and plan.min_items_proven == 5


def test_a_night_with_no_new_items_adds_no_evidence_and_replays_nothing() -> None:
    gate = Gate(ANYTIME)
    arms = SimArms([0.0] * 6, [1.0] * 6, random.Random(2))
    first = gate.decide_paired(arms, ["0", "1", "2"], PairedEvidence(share=0.8))
    assert first.pending
    again = gate.decide_paired(arms, ["0", "1", "2"], first.evidence)
    assert again.pending and again.stats["agent_runs"] == 0
    assert again.stats["e_value"] == first.stats["e_value"]
    assert again.evidence is not None and again.evidence.sessions == first.evidence.sessions  # type: ignore[union-attr]


def test_near_duplicates_count_once_and_a_late_copy_is_not_measured() -> None:
    """Four items, but items 1-3 are near-copies of one request: one independent item, not four."""
    gate = Gate(ANYTIME)
    arms = SimArms([0.0] * 8, [1.0] * 8, random.Random(3))
    clusters = {"0": "a", "1": "b", "2": "b", "3": "b"}
    d = gate.decide_paired(arms, ["0", "1", "2", "3"], PairedEvidence(share=0.8), clusters=clusters)
    assert d.stats["n"] == 2 and d.stats["items"] == 4 and d.pending
    more = gate.decide_paired(arms, ["0", "1", "2", "3", "4"], d.evidence, clusters={**clusters, "4": "b"})
    assert more.stats["agent_runs"] == 0, "a copy of a request already measured adds nothing"


def test_identical_answers_to_near_copies_do_not_inflate_false_accepts() -> None:
    """Replays that answer near-copies alike (the same coin for the whole cluster): counted per cluster the
    rate holds; counted per item it would not."""
    rng = random.Random("clusters")
    gate = Gate(ANYTIME)
    trials, accepted = 800, 0
    clusters = {str(i): str(i // 3) for i in range(12)}
    for _ in range(trials):
        coins = [rng.random() < 0.5 for _ in range(4)]

        def arms(requests: list[tuple[str, str]], coins: list[bool] = coins) -> list[float]:
            # the cluster's coin decides which arm passes, for every copy and every repeat alike
            return [float((arm == "candidate") == coins[int(item) // 3]) for item, arm in requests]

        d = gate.decide_paired(
            arms, [str(i) for i in range(12)], PairedEvidence(share=0.8), clusters=clusters
        )
        accepted += d.accepted
    assert accepted / trials <= 0.10 * 0.8 + 0.02


@pytest.mark.parametrize("bet", ["size", "sign"])
def test_e_value_is_a_fair_bet_under_no_effect(bet: str) -> None:
    """Whatever the items' sizes, flipping each item's sign with probability 1/2 leaves the expected wealth at
    exactly 1: the test martingale Ville's inequality needs."""
    sizes = [0.2, 1.0, 0.5, 0.33, 0.0, 0.9]
    patterns = list(itertools.product((-1, 1), repeat=len(sizes)))
    mean = sum(e_value([s * d for s, d in zip(p, sizes, strict=True)], bet) for p in patterns) / len(patterns)  # type: ignore[arg-type]
    assert mean == pytest.approx(1.0, abs=1e-12)


def test_an_item_lost_in_every_pair_outweighs_one_won_in_a_single_pair() -> None:
    """The night's bet stakes an item's size as well as its sign: one pair in three better stakes 2/3, an item
    worse in every pair a full 1; a second pair that half disagrees (d = 1/2) stakes 3/4."""
    assert stake(-1.0) == -1.0 and stake(1 / 3) == pytest.approx(2 / 3) and stake(0.5) == 0.75
    # eight items a little better, two broken: the count of signs says "better", the sizes do not
    diffs = [1 / 3] * 8 + [-1.0] * 2
    assert e_value(diffs, "sign") > 1.5
    assert e_value(diffs) < 0.7
    # a noisy agent's small gains still count for most of their sign
    assert e_value([1 / 3] * 5) > 0.4 * e_value([1.0] * 5)


def _evidence(diffs: dict[str, list[list[float]]], share: float = 1.0) -> PairedEvidence:
    return PairedEvidence("cand", "inc", diffs, 1, share)


def test_an_edit_worse_on_average_is_never_accepted_whatever_its_wins() -> None:
    """36 items better in one pair of three and 13 broken: more wins than losses, a mean below zero. The count
    of signs reaches the proven level; the gate still refuses, because the edit loses on average."""
    won = [[0.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    lost = [[1.0, 0.0]] * 3
    pairs = {f"w{i}": won for i in range(36)} | {f"l{i}": lost for i in range(13)}
    on_signs = _evidence(dict(pairs))
    on_signs.bet = "sign"
    assert e_value(list(on_signs.cluster_differences().values()), "sign") >= 1 / (0.05 * 0.8)
    decision = evalue_decision(on_signs, ANYTIME.model_copy(update={"bet": "sign"}))
    assert decision.stats["mean_difference"] < 0
    assert decision.outcome == "rejected" and not decision.accepted
    assert not evalue_decision(_evidence(dict(pairs)), ANYTIME).accepted


def test_evidence_keeps_the_bet_it_began_with() -> None:
    """A running test never changes its bet: evidence written before bets were recorded was measured on
    signs and stays on signs; new evidence takes the configuration's bet at its first decision."""
    legacy = PairedEvidence.from_dict({"pairs": {"a": [[0.0, 1.0]]}, "share": 0.8})
    assert legacy.bet == "sign"
    fresh = _evidence({"a": [[0.0, 1.0], [1.0, 1.0]]}, 0.8)
    evalue_decision(fresh, ANYTIME)
    assert fresh.bet == "size"
    again = PairedEvidence.from_dict(fresh.to_dict())
    assert evalue_decision(again, ANYTIME.model_copy(update={"bet": "sign"})).stats["bet"] == "size"
    with pytest.raises(ValueError, match="bet"):
        PairedEvidence.from_dict({**fresh.to_dict(), "bet": "all-in"})


def test_candidates_share_one_budget_and_a_decided_one_is_never_tested_again() -> None:
    ledger = MemoryLedger()
    assert ledger.share("inc", "c1", ANYTIME) == pytest.approx(0.8)
    assert ledger.share("inc", "c1", ANYTIME) == pytest.approx(0.8), "still pending: the same share"
    ledger.decided("inc", "c1", "rejected")
    assert ledger.share("inc", "c1", ANYTIME) is None
    assert ledger.share("inc", "c2", ANYTIME) == pytest.approx(0.1)
    assert ledger.share("inc", "c3", ANYTIME) == pytest.approx(0.05)
    assert sum(ANYTIME.candidate_share(i) for i in range(60)) == pytest.approx(1.0)
    assert ledger.share("other", "c1", ANYTIME) == pytest.approx(0.8), "a new incumbent is a new question"


def test_a_later_candidate_needs_more_evidence() -> None:
    evidence = PairedEvidence(pairs={str(i): [[0.0, 1.0]] for i in range(5)}, sessions=1, share=0.1)
    d = sequential_decision(evidence, ANYTIME)
    assert d.pending, "five better items prove the first candidate, not the second"


def test_evidence_that_is_not_evidence_is_refused() -> None:
    good = PairedEvidence(pairs={"a": [[0.0, 1.0]]}, share=0.8).to_dict()
    assert PairedEvidence.from_dict(good).share == 0.8
    for bad in (
        [],
        {**good, "pairs": {"a": [[0.0, float("inf")]]}},
        {**good, "pairs": {"a": [[0.0, 2.0]]}},
        {**good, "pairs": {"a": [[1.0]]}},
        {**good, "pairs": {"a": "x"}},
        {**good, "share": 5},
        {**good, "sessions": -1},
    ):
        with pytest.raises((ValueError, TypeError)):
            PairedEvidence.from_dict(bad)  # type: ignore[arg-type]

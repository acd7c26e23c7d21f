"""Learning-rate schedules and the acceptance gates' decisions."""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

from skillopt_lib.budget import (
    LearningRate,
    StepBudget,
    budget_at,
    fit_budget,
    fit_skill_size,
    size_problem,
    skill_tokens,
)
from skillopt_lib.config import TrainConfig
from skillopt_lib.edits import Edit
from skillopt_lib.gate import (
    Gate,
    GateConfig,
    GateDecision,
    PairedEvidence,
    min_informative_items,
    paired_decision,
    plan_gate,
    sign_flip_p,
    sign_flip_tail,
    strict_decision,
    t_quantile,
)
from skillopt_lib.skill import SkillBundle


def test_schedules_decay_from_max_to_floor() -> None:
    lr = LearningRate(schedule="cosine", max_edits=4, min_edits=2, max_tokens=400, min_tokens=100)
    first, mid, last = budget_at(lr, 0, 9), budget_at(lr, 4, 9), budget_at(lr, 8, 9)
    assert first == StepBudget(4, 400)
    assert mid == StepBudget(3, 250)
    assert last == StepBudget(2, 100)
    linear = LearningRate(schedule="linear", max_edits=5, min_edits=1, max_tokens=500, min_tokens=100)
    assert [budget_at(linear, s, 5).edits for s in range(5)] == [5, 4, 3, 2, 1]
    const = LearningRate(schedule="constant")
    assert budget_at(const, 7, 9) == budget_at(const, 0, 9)
    step = LearningRate(schedule="step", max_edits=8, min_edits=2, step_every=2, step_factor=0.5)
    assert [budget_at(step, s, 10).edits for s in range(8)] == [8, 8, 5, 5, 4, 4, 3, 3]
    with pytest.raises(ValidationError):
        LearningRate(max_edits=1, min_edits=3)


def test_fit_budget_respects_edit_and_token_limits() -> None:
    edits = [
        Edit(op="append", content="one two three"),
        Edit(op="append", content=" ".join(["w"] * 50)),
        Edit(op="append", content="four five"),
        Edit(op="append", content="six"),
    ]
    kept, dropped = fit_budget(edits, StepBudget(edits=2, tokens=10))
    assert [e.content for e in kept] == ["one two three", "four five"]
    reasons = [why for _, why in dropped]
    assert "token budget" in reasons[0] and "edit budget" in reasons[1]


def test_t_quantile_matches_tables() -> None:
    assert t_quantile(0.95, 10) == pytest.approx(1.812, abs=2e-3)
    assert t_quantile(0.95, 49) == pytest.approx(1.677, abs=2e-3)
    assert t_quantile(0.975, 5) == pytest.approx(2.571, abs=1e-2)


def test_sign_flip_is_exact_for_few_differences() -> None:
    assert sign_flip_p([1.0, 1.0, 1.0] + [0.0] * 20, scale=1) == pytest.approx(1 / 8)
    assert sign_flip_p([1.0] * 6, scale=1) == pytest.approx(1 / 64)


def table(values: list[list[float]]) -> dict[str, list[float]]:
    return {f"i{k}": v for k, v in enumerate(values)}


def test_strict_gate_accepts_any_strict_improvement_and_rejects_ties() -> None:
    assert strict_decision(table([[1.0], [0.0]]), 0.0).accepted
    tie = strict_decision(table([[1.0], [0.0]]), 0.5)
    assert not tie.accepted and "ties" in tie.reason


def test_paired_gate_accepts_a_clear_improvement_with_statistics() -> None:
    inc = table([[0.0, 0.0]] * 6 + [[1.0, 1.0]] * 6)
    cand = table([[1.0, 1.0]] * 6 + [[1.0, 1.0]] * 6)
    d = paired_decision(cand, inc, confidence=0.95)
    assert d.accepted, d.reason
    s = d.stats
    assert s["n"] == 12 and s["repeats"] == 2 and s["mean_difference"] == 0.5
    assert s["lower_bound"] > 0 and s["improved_items"] == 6 and s["worsened_items"] == 0


def test_paired_gate_rejects_ties_noise_and_regressions() -> None:
    same = table([[1.0, 0.0]] * 10)
    assert "ties" in paired_decision(same, same).reason
    # Two items better by luck is not enough evidence.
    inc = table([[0.0]] * 20)
    cand = table([[1.0]] * 2 + [[0.0]] * 18)
    noisy = paired_decision(cand, inc)
    assert not noisy.accepted and noisy.stats["mean_difference"] > 0
    # A gain elsewhere does not excuse breaking an item the incumbent always passed.
    inc = table([[1.0, 1.0]] + [[0.0, 0.0]] * 11)
    cand = table([[0.0, 0.0]] + [[1.0, 1.0]] * 11)
    veto = paired_decision(cand, inc)
    assert not veto.accepted and veto.stats["regressions"] == ["i0"]
    assert paired_decision(cand, inc, no_regression=False).accepted


def test_paired_gate_rarely_accepts_edits_without_effect() -> None:
    rng = random.Random(3)
    accepted = 0
    for _ in range(300):
        ps = [rng.betavariate(0.5, 0.5) for _ in range(30)]

        def run(ps: list[float] = ps) -> dict[str, list[float]]:
            return {str(i): [float(rng.random() < p) for _ in range(3)] for i, p in enumerate(ps)}

        accepted += paired_decision(run(), run()).accepted
    assert accepted / 300 <= 0.08


def test_gate_remeasures_the_incumbent_for_paired_and_trusts_cache_for_strict() -> None:
    calls: list[tuple[str, int]] = []
    inc_skill = SkillBundle.from_text("---\nname: a\ndescription: d\n---\nold\n")
    cand_skill = SkillBundle.from_text("---\nname: a\ndescription: d\n---\nnew\n")

    def measure(skill: SkillBundle, repeats: int) -> dict[str, list[float]]:
        who = "cand" if skill is cand_skill else "inc"
        calls.append((who, repeats))
        good = who == "cand"
        return {f"i{k}": [1.0 if good or k < 2 else 0.0] * repeats for k in range(10)}

    cached = {f"i{k}": [1.0] for k in range(10)}
    strict = Gate(GateConfig(kind="strict", repeats=1)).decide(measure, cand_skill, inc_skill, cached)
    assert calls == [("cand", 1)] and not strict[0].accepted  # the cache (a lucky 1.0) wins
    calls.clear()
    paired = Gate(GateConfig(kind="paired", repeats=3)).decide(measure, cand_skill, inc_skill, cached)
    assert calls == [("inc", 3), ("cand", 3)]
    assert paired[0].accepted and paired[0].stats["agent_runs"] == 60


# ------------------------------------------------------------------------------ the sequential gate
def test_sign_flip_tail_is_the_exact_permutation_distribution() -> None:
    import itertools

    values = [3, 1, 2, 2, 0, 6, 1]
    for observed in range(-16, 17):
        exact = sum(
            1 for signs in itertools.product((-1, 1), repeat=len(values))
            if sum(s * v for s, v in zip(signs, values, strict=True)) >= observed
        ) / 2 ** len(values)  # fmt: skip
        assert sign_flip_tail(values, observed) == pytest.approx(exact, abs=1e-12)
    assert sign_flip_tail([1] * 300, 300) == pytest.approx(2.0**-300)


class SimArms:
    """Per-item pass rates for both arms; `keep` > 0 repeats an item's first outcome per arm (correlation)."""

    def __init__(self, ps: list[float], qs: list[float], rng: random.Random, keep: float = 0.0) -> None:
        self.rates = {"incumbent": dict(enumerate(ps)), "candidate": dict(enumerate(qs))}
        self.rng, self.keep = rng, keep
        self.first: dict[tuple[str, str], float] = {}
        self.log: list[list[tuple[str, str]]] = []

    def __call__(self, requests: list[tuple[str, str]]) -> list[float]:
        self.log.append(list(requests))
        out = []
        for item, arm in requests:
            key = (item, arm)
            if key in self.first and self.rng.random() < self.keep:
                out.append(self.first[key])
                continue
            score = float(self.rng.random() < self.rates[arm][int(item)])
            self.first.setdefault(key, score)
            out.append(score)
        return out


def run_sessions(gate: Gate, arms: SimArms, sizes: list[int]) -> GateDecision:
    evidence = None
    items: list[str] = []
    decision = None
    for size in sizes:
        items += [str(len(items) + k) for k in range(size)]
        decision = gate.decide_paired(arms, items, evidence)
        if not decision.pending:
            return decision
        evidence = decision.evidence
    assert decision is not None
    return decision


@pytest.mark.parametrize("noise", ["independent", "correlated", "reshuffle"])
def test_sequential_gate_false_accepts_stay_within_the_level_over_two_sessions(noise: str) -> None:
    """Seeded simulation of edits without effect, carried over two sessions: at most 5% accepted."""
    rng = random.Random(f"null:{noise}")
    gate = Gate(GateConfig())
    trials, accepted = 400, 0
    for _ in range(trials):
        ps = [rng.betavariate(0.5, 0.5) for _ in range(40)]
        qs = list(ps)
        if noise == "reshuffle":
            rng.shuffle(qs)
        arms = SimArms(ps, qs, rng, keep=0.9 if noise == "correlated" else 0.0)
        accepted += run_sessions(gate, arms, [20, 20]).accepted
    assert accepted / trials <= 0.05


def test_sequential_gate_accepts_a_learned_rule_within_two_sessions_of_six_items() -> None:
    rng = random.Random("rule")
    gate = Gate(GateConfig())
    trials, accepted = 200, 0
    for _ in range(trials):
        ps = [min(p, 1 - p) for p in (rng.betavariate(0.5, 0.5) for _ in range(12))]
        qs = [p + 0.75 * (1 - p) for p in ps]
        accepted += run_sessions(gate, SimArms(ps, qs, rng), [6, 6]).accepted
    assert accepted / trials >= 0.8


def test_pairs_are_interleaved_and_only_disagreeing_items_are_replayed() -> None:
    gate = Gate(GateConfig(repeats=3, first_pairs=1))
    # items 0-2 always pass for both, 3-5 fail for the incumbent and pass for the candidate
    arms = SimArms([1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], random.Random(0))
    decision = gate.decide_paired(arms, [str(i) for i in range(6)])
    first, extra = arms.log
    assert first[:4] == [("0", "incumbent"), ("0", "candidate"), ("1", "candidate"), ("1", "incumbent")]
    assert {item for item, _ in extra} == {"3", "4", "5"} and len(extra) == 3 * 2 * 2
    assert decision.stats["agent_runs"] == 12 + 12 and decision.pending
    assert decision.stats["improved_items"] == 3 and decision.stats["p_value"] == pytest.approx(1 / 8)
    assert "pending evidence" in decision.reason and decision.stats["more_items_needed"] == 3


def test_pending_evidence_round_trips_and_new_items_decide_it() -> None:
    gate = Gate(GateConfig(repeats=2))
    arms = SimArms([0.0] * 10, [1.0] * 10, random.Random(1))
    first = gate.decide_paired(arms, ["0", "1", "2", "3"])
    assert first.pending and first.evidence is not None
    stored = json.loads(json.dumps(first.evidence.to_dict()))
    again = gate.decide_paired(arms, [str(i) for i in range(8)], PairedEvidence.from_dict(stored))
    assert again.accepted and again.stats["session"] == 2 and again.stats["n"] == 8
    # The carried items disagreed, so they got more pairs this session.
    assert again.evidence is not None and len(again.evidence.pairs["0"]) == 4
    # Test-split items never count, even when the evidence holds them.
    held_out = gate.decide_paired(arms, ["8"], PairedEvidence.from_dict(stored), exclude={"0", "1", "2", "3"})
    assert held_out.stats["n"] == 1


def test_undecided_after_the_last_session_is_rejected() -> None:
    gate = Gate(GateConfig(spending=[1.0]))
    arms = SimArms([0.0] * 3, [1.0] * 3, random.Random(2))
    decision = gate.decide_paired(arms, ["0", "1", "2"])
    assert not decision.accepted and not decision.pending and "undecided after 1 session" in decision.reason


def test_veto_rests_on_evidence_not_on_one_flipped_item() -> None:
    gate = Gate(GateConfig())
    # One item the incumbent always passed now always fails, eight others improve: accepted.
    arms = SimArms([1.0] + [0.0] * 8, [0.0] + [1.0] * 8, random.Random(3))
    assert gate.decide_paired(arms, [str(i) for i in range(9)]).accepted
    # Many items worse: refuted on evidence, not left pending.
    arms = SimArms([1.0] * 7 + [0.0], [0.0] * 7 + [1.0], random.Random(4))
    worse = gate.decide_paired(arms, [str(i) for i in range(8)])
    assert worse.outcome == "rejected" and "says the candidate is worse" in worse.reason


def test_plan_says_which_splits_can_ever_decide() -> None:
    cfg = GateConfig()
    assert [plan_gate(n, cfg).decidable for n in (3, 4, 5, 6)] == [False, False, True, True]
    assert "can never pass the gate" in plan_gate(3, cfg).reason
    assert plan_gate(6, cfg).replays_min == 2 * 2 * 6 + 2 * 1 * 5
    assert min_informative_items(cfg, 1) == 6  # the second session spends less
    with pytest.raises(ValueError):
        Gate(cfg).decide(lambda s, r: {}, SkillBundle.from_text("---\nname: a\ndescription: d\n---\nx\n"),
                         SkillBundle.from_text("---\nname: a\ndescription: d\n---\ny\n"), None)  # fmt: skip


# ------------------------------------------------------------------------------ size limits
SEED = SkillBundle.from_text(
    "---\nname: a\ndescription: d\n---\n" + " ".join(f"w{i}" for i in range(40)) + "\n"
)


def test_skill_size_limit_drops_edits_that_would_grow_the_skill_past_it() -> None:
    limit = skill_tokens(SEED) + 12
    small = Edit(op="append", content="short rule here")
    big = Edit(op="append", content=" ".join(["more"] * 20))
    kept, dropped = fit_skill_size(SEED, [big, small], limit, allow_large_deletions=False)
    assert kept == [small] and "max_skill_tokens" in dropped[0][1]
    assert TrainConfig().max_skill_tokens == 2000


def test_losing_more_than_half_of_the_skill_needs_permission() -> None:
    gutted = SkillBundle.from_text("---\nname: a\ndescription: d\n---\nw0 w1\n")
    problem = size_problem(SEED, gutted, 2000, allow_large_deletions=False)
    assert problem is not None and "more than half" in problem and "allow_large_deletions" in problem
    assert size_problem(SEED, gutted, 2000, allow_large_deletions=True) is None
    trimmed = SkillBundle.from_text(
        "---\nname: a\ndescription: d\n---\n" + " ".join(f"w{i}" for i in range(30)) + "\n"
    )
    assert size_problem(SEED, trimmed, 2000, allow_large_deletions=False) is None

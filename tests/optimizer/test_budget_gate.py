"""Learning-rate schedules and the acceptance gates' decisions."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from skillopt_lib.budget import LearningRate, StepBudget, budget_at, fit_budget
from skillopt_lib.edits import Edit
from skillopt_lib.gate import (
    Gate,
    GateConfig,
    paired_decision,
    sign_flip_p,
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

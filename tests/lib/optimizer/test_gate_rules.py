"""One class per decision rule, each with its figures typed: every figure any rule writes is one a reader
can ask `GateStats` for, and the rule a configuration names is the one that decides."""

from __future__ import annotations

import pytest

from skillopt_lib.gate import Gate, GateConfig, GateStats, PairedEvidence, rule_for, sequential_decision
from skillopt_lib.gating.evalue import EValueRule, EValueStats
from skillopt_lib.gating.paired import PairedStats
from skillopt_lib.gating.signflip import SignFlipRule, SignFlipStats
from skillopt_lib.gating.strict import StrictStats


@pytest.mark.parametrize("typed", [StrictStats, PairedStats, SignFlipStats, EValueStats])
def test_every_figure_a_rule_writes_is_declared_for_readers(typed: type) -> None:
    assert sorted(set(typed.__annotations__) - set(GateStats.model_fields)) == []


def _evidence(better: int, worse: int) -> PairedEvidence:
    ev = PairedEvidence("c", "i", sessions=1)
    for k in range(better):
        ev.pairs[f"b{k}"] = [[0.0, 1.0]]
    for k in range(worse):
        ev.pairs[f"w{k}"] = [[1.0, 0.0]]
    return ev


def test_the_configured_test_decides_and_writes_only_declared_figures() -> None:
    anytime, exact = GateConfig.anytime(), GateConfig(kind="sequential")
    assert isinstance(rule_for(anytime), EValueRule) and isinstance(rule_for(exact), SignFlipRule)
    for cfg in (anytime, exact):
        for better, worse in ((8, 0), (2, 2), (0, 5), (3, 0)):
            decision = sequential_decision(_evidence(better, worse), cfg)
            assert set(decision.stats) <= set(GateStats.model_fields), decision.stats
            assert decision.stats["improved_items"] == better and decision.stats["worsened_items"] == worse
    assert sequential_decision(_evidence(8, 0), anytime).tier == "proven"
    assert sequential_decision(_evidence(0, 5), exact).outcome == "rejected"


def test_the_fixed_repeat_rules_write_only_declared_figures() -> None:
    cand = {"a": [1.0, 1.0], "b": [1.0, 0.0]}
    inc = {"a": [0.0, 0.0], "b": [1.0, 1.0]}
    for kind in ("strict", "paired"):
        decision, _c, _i = Gate(GateConfig(kind=kind, repeats=2)).decide(  # type: ignore[arg-type]
            lambda skill, _r: cand if skill.name == "c" else inc, _skill("c"), _skill("i"), None
        )
        assert decision.gate == kind and set(decision.stats) <= set(GateStats.model_fields)


def _skill(name: str):  # type: ignore[no-untyped-def]
    from skillopt_lib.skill import SkillBundle, SkillDoc

    return SkillBundle.from_doc(SkillDoc.new(name, f"The {name} skill. Use for tests.", "# Body\n"))

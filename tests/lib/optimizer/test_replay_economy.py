"""What a decision costs in replays: the night's gate measures one pair per item, keeps every pair it paid
for when a cap cuts it short, ends hopeless candidates, and the trainer replays neither a baseline nor a
train task whose failure is on record."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from optimizer_support import overrides

import skillopt_lib
from skillopt_lib.gate import Gate, GateConfig, PairedEvidence, Request, sequential_decision
from skillopt_lib.testing.scripted_server import ScriptedServer
from tests.lib.optimizer.test_budget_gate import SimArms

ANYTIME = GateConfig.anytime()


class Cap(Exception):
    """A budget's cap, raised by the measure the way the night's budgeted agent raises it."""


def test_the_nightly_gate_measures_one_pair_per_item() -> None:
    arms = SimArms([0.0] * 6, [1.0] * 6, random.Random(1))
    decision = Gate(ANYTIME).decide_paired(arms, [str(i) for i in range(6)], PairedEvidence(share=0.8))
    assert decision.accepted and decision.tier == "proven"
    assert decision.stats["agent_runs"] == 12  # six items, one incumbent and one candidate run each


def test_a_gate_session_cut_short_keeps_every_pair_it_measured() -> None:
    """Three pairs at a time; the third call raises. The six pairs measured before it are in the caller's
    evidence, and a later session adds the rest without measuring them again."""
    calls: list[list[Request]] = []
    arms = SimArms([0.0] * 8, [1.0] * 8, random.Random(2))

    def measure(requests: list[Request]) -> list[float]:
        calls.append(list(requests))
        if len(calls) == 3:
            raise Cap("the night's replay cap was reached")
        return arms(requests)

    evidence = PairedEvidence(share=0.8)
    items = [str(i) for i in range(8)]
    with pytest.raises(Cap):
        Gate(ANYTIME).decide_paired(measure, items, evidence, chunk_pairs=3)
    assert sorted(evidence.pairs) == ["0", "1", "2", "3", "4", "5"]
    assert evidence.sessions == 1
    later = Gate(ANYTIME).decide_paired(arms, items, evidence)
    assert later.accepted and later.stats["agent_runs"] == 4  # items 6 and 7 only


def _pending(pairs: dict[str, list[list[float]]]) -> PairedEvidence:
    return PairedEvidence(pairs=pairs, share=0.8, sessions=1)


def test_a_hopeless_candidate_is_ended_and_a_promising_one_waits() -> None:
    hopeless = {"0": [[0.0, 1.0]], "1": [[0.0, 1.0]], "2": [[1.0, 0.0]]}
    measured_nothing_new = Gate(ANYTIME).decide_paired(
        SimArms([], [], random.Random(0)), [], _pending(hopeless)
    )
    # Two better and one worse: the mean is positive, but the cautious bet lost half its wealth on the
    # worse item and it would need about ten more improved items: ended, not carried for ten nights.
    assert sequential_decision(_pending(hopeless), ANYTIME).pending
    assert measured_nothing_new.outcome == "rejected" and "hopeless" in measured_nothing_new.reason
    promising = {"0": [[0.0, 1.0]], "1": [[0.0, 1.0]], "2": [[0.0, 0.0]]}
    kept = Gate(ANYTIME).decide_paired(SimArms([], [], random.Random(0)), [], _pending(promising))
    assert kept.pending


def test_no_baseline_and_no_replay_of_a_failure_on_record(server: ScriptedServer, tmp_path: Path) -> None:
    """With `baseline=false` and `use_recorded=true` (the night's settings) the steps read the train
    items' recorded failures while the incumbent is the initial skill, and the only validation runs are the gate's pairs; the initial figure is the
    incumbent's arm of those pairs."""
    seen: list[str] = []

    def agent(task: str, skill_text: str) -> bool:
        seen.append(task)
        return "DD.MM.YYYY" in skill_text

    result = skillopt_lib.train(
        "optimizer_support:RecordedExecEnv",
        None,
        run_dir=tmp_path / "recorded",
        overrides=[
            *[o for o in overrides(server) if not o.startswith(("agent.", "gate.", "epochs", "batch_size"))],
            "epochs=3",
            "batch_size=6",
            "gate.kind=sequential",
            "gate.test=e-value",
            "gate.first_pairs=1",
            "gate.repeats=1",
            "baseline=false",
            "use_recorded=true",
        ],
        agent=agent,
    )
    # The scripted optimizer proposes a harmful, a useless, then the useful edit: three candidates, each
    # measured on six validation items with one pair; the incumbent never changed until the last, so the
    # train items were read from the record every time.
    assert not [t for t in seen if t.startswith("train")]
    assert len(seen) == 3 * 12
    # The third candidate's share of the error rate is small (two were tested before it): six improved
    # items leave it pending, with the useful rule, for a later run to finish.
    assert result.summary["initial_val"] == 0.0
    assert result.pending is not None and "DD.MM.YYYY" in result.pending.skill.doc.body


def test_a_further_pair_goes_to_a_tie_never_to_an_item_already_decided_by_its_first() -> None:
    """With `repeats=2` the e-value gate pairs a task again only when its first pair tied: a task whose
    pair already disagrees has staked all it can, a tied one has staked nothing yet."""
    calls: list[list[Request]] = []
    outcomes = {
        "0": (0.0, 1.0),
        "1": (1.0, 1.0),
        "2": (0.0, 0.0),
    }  # better, tied (both pass), tied (both fail)

    def measure(requests: list[Request]) -> list[float]:
        calls.append(list(requests))
        return [outcomes[item][0 if arm == "incumbent" else 1] for item, arm in requests]

    Gate(GateConfig.anytime(repeats=2)).decide_paired(measure, ["0", "1", "2"], PairedEvidence(share=0.8))
    again = sorted({item for item, _ in calls[1]})
    assert again == ["1", "2"] and len(calls) == 2

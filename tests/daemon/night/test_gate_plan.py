"""Plan before spending: a small family is still replayed (its evidence is kept and later sessions complete
it), a family with nothing to learn from or judge on says what it needs, and a target is started only when
the night's budget left can finish its plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning.context import NightContext, budget_wait, env_gate
from skillopt_daemon.night.learning.planning import affordable_replays, fit_tonight, planned_replays
from skillopt_daemon.night.learning.training import TaskLoader, _replay_tasks
from skillopt_daemon.night.mining.attempts import Attempt
from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.gate import plan_gate


def _context(tmp_path: Path, said: list[str], max_replays: int = 1000) -> NightContext:
    return NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=max_replays),
        dry_run=False,
        say=said.append,
    )


def _family(n: int) -> Family:
    attempts = [
        Attempt(key=f"a{i}", tool="claude-code", session_id=f"s{i}", prompt="fix lint") for i in range(n)
    ]
    return Family(id="fam-1", name="fix lint", attempts=attempts, skill_name="lint-fixes")


def _rows(train: int, val: int) -> list[NightTask]:
    rows = [NightTask(id=f"t{i}", prompt="fix lint", split="train") for i in range(train)]
    return rows + [NightTask(id=f"v{i}", prompt="fix lint", split="val") for i in range(val)]


def _tasks(train: int, val: int) -> TaskLoader:
    rows = _rows(train, val)
    return lambda _db, _name, _tool: rows


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))


def test_a_family_too_small_to_decide_tonight_is_still_replayed(tmp_path: Path) -> None:
    """Three validation tasks cannot decide tonight, but their evidence is kept: replaying them now is what
    lets the next sessions of this work complete a decision."""
    out = _replay_tasks(_context(tmp_path, []), "lint-fixes", [_family(4)], _tasks(train=1, val=3))
    assert not isinstance(out, SkillOutcome)
    plan = plan_gate(3, env_gate(Settings()))
    assert not plan.decidable and plan.missing == 1
    assert "the evidence is kept and 1 more session(s) of this work can complete it" in plan.reason


def test_a_family_with_nothing_to_judge_on_says_what_it_needs(tmp_path: Path) -> None:
    out = _replay_tasks(_context(tmp_path, []), "lint-fixes", [_family(4)], _tasks(train=4, val=0))
    assert isinstance(out, SkillOutcome) and out.status == "too-few-tasks"
    assert out.needs == "1 more session(s) of this work"
    few = _replay_tasks(_context(tmp_path, []), "lint-fixes", [_family(2)], _tasks(train=1, val=1))
    assert isinstance(few, SkillOutcome) and few.needs == "2 more session(s) of this work"


def test_the_nightly_gate_is_the_anytime_gate_at_the_shipped_defaults() -> None:
    gate = env_gate(Settings())
    assert gate.kind == "sequential" and gate.test == "e-value"
    assert (gate.confidence, gate.likely_confidence, gate.repeats, gate.first_pairs) == (0.95, 0.9, 1, 1)
    plan = plan_gate(5, gate)
    assert plan.decidable and (plan.min_items, plan.min_items_proven) == (4, 5)


def test_a_target_waits_when_the_budget_left_cannot_finish_its_plan(tmp_path: Path) -> None:
    gate = env_gate(Settings())
    planned = planned_replays(_rows(train=2, val=5), gate, new_items=5, holding=False)
    assert planned == 2 + 2 * 5  # train rollouts, and one pair per validation group: no baseline
    ctx = _context(tmp_path, [], max_replays=10)
    why = budget_wait(ctx, planned)
    assert why is not None and "needs up to 12 replays and the night has 10 left" in why
    assert budget_wait(_context(tmp_path, [], max_replays=12), planned) is None


def test_a_corrected_train_task_is_read_from_its_session_not_planned_as_a_replay() -> None:
    """The session of a corrected train task already shows the failure the optimizer learns from."""
    gate = env_gate(Settings())
    corrected = NightTask(id="c", prompt="fix lint", split="train", corrections=["no noqa, fix the code"])
    plain = NightTask(id="p", prompt="fix lint", split="train")
    val = [NightTask(id=f"v{i}", prompt="fix lint", split="val", group=f"g{i}") for i in range(4)]
    assert planned_replays([corrected, *val], gate, new_items=4, holding=False) == 8
    assert planned_replays([corrected, plain, *val], gate, new_items=4, holding=False) == 9
    # A test split is replayed for the initial and the best skill when a candidate wins: planned for.
    test = [NightTask(id="x", prompt="fix lint", split="test")]
    assert planned_replays([corrected, *val, *test], gate, new_items=4, holding=False) == 10


def _groups(train: int, val: int) -> list[NightTask]:
    rows = [NightTask(id=f"t{i}", prompt="fix lint", split="train", group=f"gt{i}") for i in range(train)]
    return rows + [NightTask(id=f"v{i}", prompt="fix lint", split="val", group=f"gv{i}") for i in range(val)]


def test_a_family_larger_than_any_night_is_replayed_in_parts() -> None:
    """A family with ten validation groups plans 22 replays: under a night of 16 it would wait every
    night. Tonight takes its training tasks and the groups that fit, in order; the rest wait for later
    nights, whose evidence adds to tonight's."""
    gate = env_gate(Settings())
    tasks = _groups(train=2, val=10)
    assert planned_replays(tasks, gate, new_items=10, holding=False) == 22
    part = fit_tonight(tasks, gate, None, affordable=16)
    assert part is not None
    assert [t.id for t in part] == ["t0", "t1"] + [f"v{i}" for i in range(7)]  # 2 + 2*7 = 16
    assert planned_replays(part, gate, new_items=7, holding=False) <= 16


def test_a_part_too_small_to_decide_waits_for_a_whole_night() -> None:
    gate = env_gate(Settings())
    tasks = _groups(train=2, val=10)
    assert fit_tonight(tasks, gate, None, affordable=9) is None  # 3 groups: the gate needs 4
    assert fit_tonight(tasks, gate, None, affordable=10) is not None


def test_affordable_replays_count_every_cap() -> None:
    budget = NightBudget(max_tokens=4_000_000, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=60)
    assert affordable_replays(budget) == 60
    budget.replays, budget.tokens = 10, 1_000_000  # 100k tokens a replay so far
    assert affordable_replays(budget) == 30  # 3M tokens left
    assert affordable_replays(budget, whole_night=True) == 40

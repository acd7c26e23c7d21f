"""The night's hook for a teammate's rule, in `night/learning/target.py`: the queued rule is what the trainer is
given to carry, the run's decision about it is recorded as its verdict, and a proposal built on it says
where it came from. The trainer is replaced by one that reports a decision (the real trainer's handling of
a carried rule is `test_shared_rule_gate.py`), so no agent runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning import shared_rules, target
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.shared_rules import SharedRule
from skillopt_daemon.night.report import CycleReport
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle, SkillDoc
from skillopt_lib.trainer import TrainResult

SKILL = SkillBundle.from_doc(
    SkillDoc.new("lint-fixes", "How to fix lint. Use when lint fails.", "# Lint\n\n- Fix it.\n")
)
RULE = SkillBundle.from_doc(
    SkillDoc.new(
        "lint-fixes", "How to fix lint. Use when lint fails.", "# Lint\n\n- Fix it.\n- Never add noqa.\n"
    )
)


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NightContext:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    context = NightContext(
        db=open_db(),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=1000),
        dry_run=False,
        say=lambda _m: None,
    )
    folder = SKILL.materialize(tmp_path / "skills" / "lint-fixes")
    context.registry.import_folder(folder)
    return context


def _queue(db: sqlite_utils.Database) -> SharedRule:
    rule = SharedRule("skillopt/ada/lint-fixes-1:lint-fixes", "lint-fixes", "Ada", RULE, "c0ffee")
    shared_rules.receive(db, rule)
    return rule


def _decided_by(monkeypatch: pytest.MonkeyPatch, accepted: bool, better: int, worse: int) -> list[Any]:
    """Replace the trainer with one that decides on the carried candidate as told; what it was given."""
    given: list[Any] = []

    class Decided:
        def __init__(self, run_dir: Path, carried: Any, incumbent: SkillBundle) -> None:
            self.run_dir, self.carried, self.incumbent = run_dir, carried, incumbent
            self.shown: list[Any] = []  # what the optimizer was shown: nothing, no step ran

        def train(self) -> TrainResult:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            skill = self.carried.pending.skill
            gate = {"outcome": "accepted" if accepted else "rejected", "tier": "proven",
                    "stats": {"n": 6, "items": 6, "improved_items": better, "worsened_items": worse, "e_value": 40.0}}  # fmt: skip
            record = {
                "kind": "pending",
                "step": 0,
                "skill_hash": skill.content_hash,
                "accepted": accepted,
                "gate": gate,
            }
            # Nothing is written to the run folder: the night learns what the run did from its result.
            steps: tuple[Any, ...] = (record,)
            summary = {
                "accepted_steps": int(accepted),
                "initial_val": 0.5,
                "best_val": 0.9 if accepted else 0.5,
            }
            return TrainResult(self.run_dir, skill if accepted else self.incumbent, summary, None, steps)

    def fake(
        ctx: Any, env: Any, agent: Any, incumbent: SkillBundle, tasks: Any, run_dir: Path, *rest: Any
    ) -> Any:
        carried = rest[2]
        given.append(carried)
        return Decided(run_dir, carried, incumbent)

    monkeypatch.setattr(target, "_trainer", fake)
    return given


def _tasks() -> list[NightTask]:
    rows = [NightTask(id=f"t{i}", prompt="fix lint", split="train") for i in range(3)]
    return rows + [NightTask(id=f"v{i}", prompt="fix lint", split="val") for i in range(6)]


def _night(ctx: NightContext) -> Any:
    current = ctx.registry.current_version("lint-fixes")
    assert current is not None
    return target.train_and_propose(
        ctx, "lint-fixes", "lint-fixes", AgentTool.CLAUDE_CODE, _tasks(), SKILL, current.id, None
    )


def test_a_queued_rule_is_carried_proven_and_proposed_as_the_teams(
    ctx: NightContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = _queue(ctx.db)
    given = _decided_by(monkeypatch, accepted=True, better=4, worse=0)
    outcome = _night(ctx)
    assert given[0] is not None and given[0].pending.skill.content_hash == rule.content_hash
    assert given[0].pending.evidence.pairs == {}
    assert outcome.status == "proposed", outcome.reason
    assert outcome.reason.startswith("from the team (published by Ada), proven on 4 of your tasks; ")
    proposal = ctx.registry.get_version(outcome.proposal_id)
    assert proposal.evidence["team"]["note"] == "from the team (published by Ada), proven on 4 of your tasks"
    got = shared_rules.get(ctx.db, rule.key)
    assert got is not None and (got.verdict, got.better, got.worse) == ("helped", 4, 0)


def test_a_rule_that_does_not_help_is_not_proposed(
    ctx: NightContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = _queue(ctx.db)
    _decided_by(monkeypatch, accepted=False, better=0, worse=3)
    outcome = _night(ctx)
    assert outcome.status != "proposed" and outcome.proposal_id is None
    got = shared_rules.get(ctx.db, rule.key)
    assert got is not None and (got.state, got.verdict) == ("decided", "hurt")


def test_without_a_queued_rule_nothing_is_carried(ctx: NightContext, monkeypatch: pytest.MonkeyPatch) -> None:
    given = _decided_by(monkeypatch, accepted=False, better=0, worse=0)
    with pytest.raises(AttributeError):  # the stand-in trainer needs a carried candidate; none was given
        _night(ctx)
    assert given == [None]

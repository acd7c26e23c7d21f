"""Say it before spending it: a skill whose validation tasks can never reach a decision is not replayed, and
the night says why and what would help; a decidable one says what a decision will cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.attempts import Attempt
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.mining import Family
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.training import NightContext, _replay_tasks


def _context(tmp_path: Path, said: list[str]) -> NightContext:
    settings = Settings()
    settings.night.gate_confidence = 0.9
    return NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=settings,
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=1000),
        dry_run=False,
        say=said.append,
    )


def _family(n: int) -> Family:
    attempts = [
        Attempt(key=f"a{i}", tool="claude-code", session_id=f"s{i}", prompt="fix lint") for i in range(n)
    ]
    return Family(id="fam-1", name="fix lint", attempts=attempts, skill_name="lint-fixes")


def _tasks(train: int, val: int) -> Any:
    rows = [{"id": f"t{i}", "split": "train"} for i in range(train)]
    rows += [{"id": f"v{i}", "split": "val"} for i in range(val)]
    return lambda _db, _name, _tool: rows


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))


def test_too_few_validation_tasks_are_not_replayed_and_the_night_says_why(tmp_path: Path) -> None:
    said: list[str] = []
    out = _replay_tasks(_context(tmp_path, said), "lint-fixes", [_family(6)], _tasks(train=3, val=2))
    assert isinstance(out, SkillOutcome)
    assert out.status == "undecidable"
    assert "can never pass the gate" in out.reason and "more sessions of this work" in out.reason
    assert out.gate_plan is not None and out.gate_plan["decidable"] is False
    assert out.gate_plan["min_items"] > 2


def test_a_decidable_split_says_what_a_decision_needs_before_replaying(tmp_path: Path) -> None:
    said: list[str] = []
    out = _replay_tasks(_context(tmp_path, said), "lint-fixes", [_family(10)], _tasks(train=4, val=6))
    assert not isinstance(out, SkillOutcome)
    tool, tasks = out
    assert tool.value == "claude-code" and len(tasks) == 10
    assert any("6 validation tasks; a decision needs" in line and "replays" in line for line in said), said

"""A family's sessions can come from several tools: each task replays with the tool it was done with, and a
tool that cannot replay on this machine only leaves its own tasks out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.config import Settings, ToolSettings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.training import _replay_tasks
from skillopt_daemon.night.mining.attempts import Attempt
from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.agents import AgentTool
from testkit import agent_clis as ac
from testkit.fixtures import require

# Five Claude Code sessions and three Codex sessions of one kind of work, as in the recorded corpus.
TOOLS = ["claude-code", "codex", "claude-code", "codex", "claude-code", "claude-code", "codex", "claude-code"]
SPLITS = ["train", "train", "val", "val", "val", "val", "test", "test"]


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))


def _context(tmp_path: Path, codex_cli: str) -> NightContext:
    settings = Settings()
    settings.night.gate_confidence = 0.8
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    settings.tools[AgentTool.CLAUDE_CODE] = ToolSettings(cli=str(clis.claude))
    settings.tools[AgentTool.CODEX] = ToolSettings(cli=codex_cli)
    return NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=settings,
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=1000),
        dry_run=False,
        say=lambda _line: None,
    )


def _family() -> Family:
    attempts = [
        Attempt(key=f"a{i}", tool=t, session_id=f"s{i}", prompt="fix lint") for i, t in enumerate(TOOLS)
    ]
    return Family(id="fam-1", name="fix lint", attempts=attempts, skill_name="lint-fixes")


def _load(_db: Any, _name: str, tool: str) -> list[NightTask]:
    return [
        NightTask(id=f"t{i}", prompt="fix lint", tool=t, split=s, started_at=f"2026-11-0{i + 1}")
        for i, (t, s) in enumerate(zip(TOOLS, SPLITS, strict=True))
        if t == tool
    ]


def test_every_tools_tasks_replay_when_each_tool_can_run_here(tmp_path: Path) -> None:
    clis = ac.locate_agent_clis()
    require(clis.codex is not None, clis.why_missing("codex"))
    out = _replay_tasks(_context(tmp_path, str(clis.codex)), "lint-fixes", [_family()], _load)
    assert not isinstance(out, SkillOutcome), out
    tool, tasks = out
    assert tool is AgentTool.CLAUDE_CODE  # the most used tool leads
    assert [t.tool for t in tasks] == TOOLS  # every session's task, in the order it was done
    assert sum(t.split == "val" for t in tasks) == 4


def test_a_tool_that_cannot_replay_here_only_leaves_its_own_tasks_out(tmp_path: Path) -> None:
    out = _replay_tasks(_context(tmp_path, str(tmp_path / "no-such-codex")), "lint-fixes", [_family()], _load)
    assert not isinstance(out, SkillOutcome), out
    tool, tasks = out
    assert tool is AgentTool.CLAUDE_CODE
    assert {t.tool for t in tasks} == {"claude-code"} and len(tasks) == 5

"""The night's report says when a new rule contradicts one installed in another scope, and which wins where;
the proposal's evidence keeps it for review."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.target import _propose
from skillopt_daemon.night.report import CycleReport, SkillOutcome
from skillopt_daemon.registry.evidence import NightEvidence
from skillopt_daemon.registry.installers.base import InstallTarget
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle

END = "Append changelog entries to the end of CHANGELOG.md."
TOP = "Changelog entries go at the top of CHANGELOG.md, newest first."


def skill(name: str, rule: str) -> SkillBundle:
    return SkillBundle.from_text(
        f"---\nname: {name}\ndescription: Changelog entries. Use when editing CHANGELOG.md.\n---\n\n- {rule}\n"
    )


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))


def test_the_report_says_the_project_rule_wins_in_its_repository(tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    ctx = NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=10),
        dry_run=False,
        say=lambda _m: None,
    )
    user = ctx.registry.propose("changelog-end", skill("changelog-end", END), {"new_skill": True})
    ctx.registry.approve(user.id, [InstallTarget(AgentTool.CLAUDE_CODE, "user")])
    found = NightEvidence.model_validate(
        {
            "new_skill": True,
            "scope": {
                "scope": "project",
                "evidence_repositories": [str(app.resolve())],
                "tools": ["claude-code"],
            },
        }
    )
    outcome = SkillOutcome(skill="changelog-top", status="trained", baseline=0.2, candidate=0.8, new=True)
    out = _propose(ctx, outcome, skill("changelog-top", TOP), found, None)
    assert out.status == "proposed"
    said = (
        f"contradicts changelog-end installed in user scope: '{END}' vs '{TOP}' (this proposal's rule wins in "
        f"{app.resolve()}; the installed one elsewhere)"
    )
    assert said in out.reason
    stored = ctx.registry.get_version(str(out.proposal_id)).evidence["conflicts"]
    assert [c["text"] for c in stored] == [said]

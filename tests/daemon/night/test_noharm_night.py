"""The night's no-harm step before user scope, on a small recorded store: it samples only other families'
held-out work from repositories outside the rule's evidence, and when it cannot measure (nothing there, or
no budget left) the rule is proposed in its own repositories with the reason, not in user scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.budgets import NightBudget
from skillopt_daemon.night.learning import noharm
from skillopt_daemon.night.learning.context import NightContext
from skillopt_daemon.night.learning.target import _no_harm
from skillopt_daemon.night.mining import scope
from skillopt_daemon.night.mining.attempts import Attempt
from skillopt_daemon.night.mining.mine import Family, build_families, save_families
from skillopt_daemon.night.report import CycleReport
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle
from testkit.repos import git_repo

RULE = "---\nname: fix-lint\ndescription: Fix lint. Use when lint fails.\n---\n\n- Fix the code, no noqa.\n"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))


def _attempts(prefix: str, prompt: str, repo: Path, n: int) -> list[Attempt]:
    return [
        Attempt(
            key=f"claude-code:{prefix}{i}:u{i}",
            tool="claude-code",
            session_id=f"{prefix}{i}",
            prompt=f"{prompt} in module{i}.py",
            started_at=f"2026-11-{i + 1:02d}T00:00:00.000Z",
            project_path=str(repo),
            corrections=["no, keep the public names as they are"] if i == 0 else [],
        )
        for i in range(n)
    ]


def _context(tmp_path: Path, replays: int) -> NightContext:
    return NightContext(
        db=open_db(tmp_path / "store.db"),
        settings=Settings(),
        report=CycleReport(run_id="r", trigger="manual", status="running", dry_run=False, started_at="now"),
        budget=NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=3600.0, max_replays=replays),
        dry_run=False,
        say=lambda _m: None,
    )


def _stored(ctx: NightContext, app: Path, other: Path | None) -> Family:
    """The rule's family in `app`, and another kind of work in `other` (with a rubric to score it by)."""
    attempts = _attempts("l", "fix the lint errors", app, 4)
    if other is not None:
        attempts += _attempts("d", "write the release notes for the changelog", other, 5)
    families = build_families(attempts, seed=1)
    save_families(ctx.db, families, seed=1)
    return next(f for f in families if f.projects == [str(app)])


def _placed(app: Path) -> dict[str, object]:
    return {
        "scope": "user",
        "why": "its evidence spans 2 repositories",
        "repositories": [{"repo": str(app), "tools": ["claude-code"]}],
        "evidence_repositories": [str(app)],
        "tools": ["claude-code"],
        "targets": ["claude-code:user"],
    }


def test_nothing_elsewhere_to_measure_keeps_the_rule_in_its_repository(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    ctx = _context(tmp_path, replays=100)
    fam = _stored(ctx, app, None)
    verdict = _no_harm(ctx, fam, _placed(app), SkillBundle.from_text(RULE), AgentTool.CLAUDE_CODE)
    assert not verdict.ok and verdict.why == "no other repository's held-out work to measure it on"
    assert ctx.budget.replays == 0
    placed = noharm.user_scope(_placed(app), verdict)
    assert placed["scope"] == scope.PROJECT and placed["targets"] == [f"claude-code:project:{app}"]


def test_other_repositories_work_the_night_cannot_afford_is_not_measured(tmp_path: Path) -> None:
    app, other = git_repo(tmp_path / "app"), git_repo(tmp_path / "other")
    ctx = _context(tmp_path, replays=0)
    fam = _stored(ctx, app, other)
    verdict = _no_harm(ctx, fam, _placed(app), SkillBundle.from_text(RULE), AgentTool.CLAUDE_CODE)
    assert not verdict.ok
    assert verdict.why.startswith("not measured tonight: needs up to")
    assert ctx.budget.replays == 0


def test_a_family_over_several_repositories_plans_its_no_harm_replays_with_its_gate(tmp_path: Path) -> None:
    """A night that starts a rule whose evidence may span repositories keeps the replays its no-harm check
    needs, so the check is not left unmeasured for want of budget; nothing is kept otherwise."""
    from skillopt_daemon.night.learning.context import noharm_reserve

    app, other = git_repo(tmp_path / "app"), git_repo(tmp_path / "other")
    both = build_families(
        _attempts("l", "fix the lint errors", app, 3) + _attempts("m", "fix the lint errors", other, 3),
        seed=1,
    )
    (spanning,) = [f for f in both if len(f.projects) == 2]
    (alone,) = build_families(_attempts("l", "fix the lint errors", app, 4), seed=1)
    settings = Settings()
    assert (
        noharm_reserve(settings, spanning) == 2 * noharm.SAMPLE_GROUPS
    )  # one pair per group at the defaults
    assert noharm_reserve(settings, alone) == 0
    assert noharm_reserve(settings, None) == 0
    settings.night.new_skill_scope = "project"  # no user scope to earn: nothing to keep
    assert noharm_reserve(settings, spanning) == 0

"""Where a new rule installs follows its evidence: one repository's corrections and wins install there."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from skillopt_daemon.night.mining import scope
from skillopt_daemon.night.mining.attempts import Attempt
from skillopt_daemon.night.mining.mine import Family
from skillopt_daemon.night.tasks import NightTask
from testkit.repos import git_repo


def attempt(i: int, repo: Path, tool: str = "claude-code", corrections: int = 0) -> Attempt:
    return Attempt(
        key=f"{tool}:s{i}:u{i}",
        tool=tool,
        session_id=f"s{i}",
        prompt=f"fix the lint errors in module{i}.py",
        project_path=str(repo),
        corrections=["no, fix the code instead of silencing it"] * corrections,
    )


def world(
    attempts: list[Attempt], won: dict[int, bool]
) -> tuple[Family, list[NightTask], list[dict[str, Any]]]:
    """A family, its tasks and the per-task runs: task i won when `won[i]`, lost otherwise."""
    fam = Family(id="fam-1", name="fix lint", attempts=attempts)
    tasks = [
        NightTask(id=f"t{i}", prompt=a.prompt, split="val", repo=a.project_path, tool=a.tool)
        for i, a in enumerate(attempts)
    ]
    runs = [
        {"task_id": f"t{i}", "baseline": [{"soft": 0.0}], "candidate": [{"soft": 1.0 if w else 0.0}]}
        for i, w in won.items()
    ]
    return fam, tasks, runs


def test_evidence_from_one_repository_installs_there_for_each_tool(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    other = git_repo(tmp_path / "other")
    attempts = [attempt(0, app, corrections=2), attempt(1, app, "codex"), attempt(2, app), attempt(3, other)]
    fam, tasks, runs = world(attempts, {1: True, 2: True, 3: False})
    placed = scope.decide("auto", fam, tasks, runs)
    assert placed["scope"] == "project"
    assert placed["targets"] == [f"claude-code:project:{app}", f"codex:project:{app}"]
    assert placed["evidence_repositories"] == [str(app)]
    assert str(app) in placed["why"] and "user scope was not measured" in placed["why"]
    first = placed["repositories"][0]
    assert (first["repo"], first["corrections"], first["won"], first["measured"]) == (str(app), 2, 2, 2)
    assert first["tools"] == ["claude-code", "codex"]
    # Forced: user scope, and the reason names the setting.
    forced = scope.decide("user", fam, tasks, runs)
    assert forced["targets"] == ["claude-code:user", "codex:user"]
    assert "forces user scope" in forced["why"]


def test_evidence_spanning_repositories_installs_in_user_scope_unless_project_is_forced(
    tmp_path: Path,
) -> None:
    app, web = git_repo(tmp_path / "app"), git_repo(tmp_path / "web")
    attempts = [
        attempt(0, app, corrections=1),
        attempt(1, web, corrections=1),
        attempt(2, app),
        attempt(3, web),
    ]
    fam, tasks, runs = world(attempts, {2: True, 3: True})
    placed = scope.decide("auto", fam, tasks, runs)
    assert placed["scope"] == "user"
    assert placed["targets"] == ["claude-code:user"]
    assert "spans 2 repositories" in placed["why"]
    # Forcing project scope installs in each repository of the evidence, never in user scope.
    forced = scope.decide("project", fam, tasks, runs)
    assert forced["scope"] == "project"
    assert sorted(forced["targets"]) == [f"claude-code:project:{app}", f"claude-code:project:{web}"]


def test_worktrees_of_one_repository_are_one_place(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    tree = tmp_path / "app-feature"
    subprocess.run(["git", "-C", str(app), "worktree", "add", "-q", str(tree)], check=True)
    attempts = [attempt(0, app, corrections=1), attempt(1, tree, corrections=1), attempt(2, tree)]
    fam, tasks, runs = world(attempts, {2: True})
    placed = scope.decide("auto", fam, tasks, runs)
    assert placed["scope"] == "project"
    assert placed["targets"] == [f"claude-code:project:{app}"]


def test_sessions_without_a_repository_install_in_user_scope() -> None:
    a = Attempt(key="k", tool="codex", session_id="s", prompt="p", corrections=["no"])
    placed = scope.decide("auto", Family(id="f", name="n", attempts=[a]), [], [])
    assert placed["scope"] == "user"
    assert placed["targets"] == ["codex:user"]


def test_a_folder_without_git_is_its_own_project_and_the_reason_says_so(tmp_path: Path) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    fam, tasks, runs = world([attempt(0, plain, corrections=1), attempt(1, plain)], {1: True})
    placed = scope.decide("auto", fam, tasks, runs)
    assert placed["targets"] == [f"claude-code:project:{plain.resolve()}"]
    assert "is not in a git repository: the rule installs in that folder" in placed["why"]
    assert placed["repositories"][0]["kind"] == "no-git"

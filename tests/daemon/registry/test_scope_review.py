"""A new skill's scope is shown where it is reviewed and can be changed at approval: `--scope` says first
what the evidence supports there, and a repository that moved, a worktree, a folder without git or a
read-only checkout each get a clear answer with nothing lost."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testkit.repos import git_repo

NEW = (
    "---\n"
    "name: fix-lint\n"
    "description: Fix lint errors without silencing them. Use when the linter fails.\n"
    "---\n"
    "\n"
    "# Fix lint\n"
    "\n"
    "- Never silence a warning with # noqa; fix the code.\n"
)


def evidence(app: Path, other: Path | None = None) -> dict[str, Any]:
    """A night's new skill learned in `app` (corrections and wins there), seen in `other` too."""
    repos = [
        {
            "repo": str(app),
            "kind": "git",
            "tools": ["claude-code", "codex"],
            "tasks": 5,
            "corrections": 2,
            "measured": 3,
            "won": 2,
        }
    ]
    if other is not None:
        repos.append(
            {
                "repo": str(other),
                "kind": "git",
                "tools": ["claude-code"],
                "tasks": 1,
                "corrections": 0,
                "measured": 0,
                "won": 0,
            }
        )
    return {
        "new_skill": True,
        "family": {"id": "fam-1", "name": "fix the lint", "size": 6},
        "delta": 0.5,
        "install_to": [f"claude-code:project:{app}", f"codex:project:{app}"],
        "scope": {
            "scope": "project",
            "setting": "auto",
            "why": f"its corrections and winning replays all come from {app}",
            "repositories": repos,
            "evidence_repositories": [str(app)],
            "tools": ["claude-code", "codex"],
            "targets": [f"claude-code:project:{app}", f"codex:project:{app}"],
        },
    }  # fmt: skip


def propose(env: Any, ev: dict[str, Any]) -> str:
    cand = env.candidate(NEW, name="fix-lint")
    return str(env.cli_json("propose", "fix-lint", str(cand), "--evidence", json.dumps(ev))["id"])


def test_status_and_diff_show_where_it_installs_and_approval_installs_there(env: Any) -> None:
    app = git_repo(env.root / "app")
    pid = propose(env, evidence(app))
    (item,) = env.cli_json("status")["pending"]["items"]
    assert item["scope"] == {
        "scope": "project",
        "repositories": [str(app)],
        "tools": ["claude-code", "codex"],
        "why": f"its corrections and winning replays all come from {app}",
    }
    assert f"installs in project scope in {app} (claude-code, codex)" in env.cli("status").stdout
    assert f"installs in project scope in {app}" in env.cli("diff", pid).stderr
    env.cli("approve", pid, check=True)
    assert (app / ".claude" / "skills" / "fix-lint" / "SKILL.md").read_text() == NEW
    assert (app / ".codex" / "skills" / "fix-lint" / "SKILL.md").read_text() == NEW
    assert not (env.user_skills / "fix-lint").exists()
    # History says where it is installed.
    hist = env.cli_json("history", "fix-lint")
    assert sorted(hist["installed_at"]) == [f"claude-code:project:{app}", f"codex:project:{app}"]
    assert f"installed at: claude-code:project:{app}" in env.cli("history", "fix-lint").stdout


def test_approving_in_user_scope_says_first_that_it_was_measured_in_one_repository(env: Any) -> None:
    app = git_repo(env.root / "app")
    pid = propose(env, evidence(app))
    out = env.cli("approve", pid, "--scope", "user", check=True)
    assert f"measured only in {app}: user scope was not measured for no harm" in out.stderr
    assert (env.user_skills / "fix-lint" / "SKILL.md").read_text() == NEW
    assert (env.home / ".codex" / "skills" / "fix-lint" / "SKILL.md").read_text() == NEW
    assert not (app / ".claude").exists()


def test_another_repository_or_a_worktree_of_the_same_one(env: Any) -> None:
    app, other = git_repo(env.root / "app"), git_repo(env.root / "other")
    tree = env.root / "app-feature"
    subprocess.run(["git", "-C", str(app), "worktree", "add", "-q", str(tree)], check=True)
    pid = propose(env, evidence(app, other))
    dry = env.cli("approve", pid, "--scope", "project", "--repo", str(other), "--dry-run", check=True)
    assert f"its work was seen in {other}, but none of its corrections or winning replays" in dry.stderr
    # A worktree is its main repository: one install, in the main worktree.
    out = env.cli("approve", pid, "--scope", "project", "--repo", str(tree), check=True)
    assert f"measured in {app} (2 correction(s), 2 of 3 measured task(s) won)" in out.stderr
    assert (app / ".claude" / "skills" / "fix-lint" / "SKILL.md").exists()
    assert not (tree / ".claude").exists()


def test_a_moved_repository_is_refused_with_the_ways_out_and_nothing_is_lost(env: Any) -> None:
    app = git_repo(env.root / "app")
    pid = propose(env, evidence(app))
    app.rename(env.root / "moved")
    out = env.cli("approve", pid)
    assert out.returncode != 0
    assert f"{app}, no longer exists (moved or deleted since)" in out.stderr
    assert "--scope user" in out.stderr and "--repo PATH" in out.stderr
    assert not app.exists()  # nothing was created where the repository used to be
    assert env.cli_json("status")["pending"]["items"][0]["id"] == pid  # still pending
    gone = env.cli("approve", pid, "--scope", "project", "--repo", str(env.root / "nowhere"))
    assert gone.returncode != 0 and "does not exist" in gone.stderr
    # Its new path: installed there, said to be unmeasured.
    out = env.cli("approve", pid, "--scope", "project", "--repo", str(env.root / "moved"), check=True)
    assert f"not measured in {env.root / 'moved'}" in out.stderr
    assert (env.root / "moved" / ".claude" / "skills" / "fix-lint" / "SKILL.md").exists()


def test_a_folder_without_git_is_the_project_and_says_so(env: Any) -> None:
    app = git_repo(env.root / "app")
    plain = env.root / "notes"
    plain.mkdir()
    pid = propose(env, evidence(app))
    out = env.cli("approve", pid, "--scope", "project", "--repo", str(plain), check=True)
    assert "is not in a git repository: installed in that folder" in out.stderr
    assert (plain / ".claude" / "skills" / "fix-lint" / "SKILL.md").exists()


def test_a_read_only_checkout_is_a_clear_error_and_the_proposal_stays_pending(env: Any) -> None:
    app = git_repo(env.root / "app")
    pid = propose(env, evidence(app))
    mode = app.stat().st_mode
    os.chmod(app, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        out = env.cli("approve", pid)
    finally:
        os.chmod(app, mode)
    assert out.returncode != 0
    assert "read-only" in out.stderr
    assert env.cli_json("status")["pending"]["items"][0]["id"] == pid
    assert not (app / ".claude").exists()


@pytest.mark.parametrize("args", [["--scope", "user", "--target", "claude-code:user"], ["--scope", "team"]])
def test_bad_scope_options_are_refused(env: Any, args: list[str]) -> None:
    app = git_repo(env.root / "app")
    pid = propose(env, evidence(app))
    out = env.cli("approve", pid, *args)
    assert out.returncode != 0
    assert env.cli_json("status")["pending"]["items"][0]["id"] == pid

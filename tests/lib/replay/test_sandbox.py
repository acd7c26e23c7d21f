"""Workspaces, isolation and checks, driven by the fake Copilot CLI (fast; real CLIs are tested elsewhere)."""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import git, repo_state, skill

from skillopt_lib import sandbox
from skillopt_lib.backends.copilot import CopilotBackend
from skillopt_lib.execution import ExecLimits, ExecStatus
from skillopt_lib.sandbox import MARKER, ReplayTask, SandboxConfig, SandboxError, replay, replay_many

MakeRepo = Callable[..., tuple[Path, list[str]]]


def _backend(fake_copilot: str, **kw: object) -> CopilotBackend:
    return CopilotBackend(cli=fake_copilot, user_home="/nonexistent", limits=ExecLimits(timeout_s=30), **kw)  # type: ignore[arg-type]


def test_worktree_at_pinned_commit_with_dirty_diff(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, fake_copilot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, (first, _second) = make_repo()
    dirty = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n     return a + b\n+# dirty\n"
    monkeypatch.setenv("SECRET_NOT_ALLOWED", "hunter2")
    monkeypatch.setenv("GH_TOKEN", "gh-token-for-copilot")
    task = ReplayTask(
        prompt="ARGV WRITE out.txt hello",
        repo=repo,
        commit=first,
        dirty_diff=dirty,
        checks=[
            "! grep -q 'def sub' calc.py",  # the first commit, not HEAD
            "grep -q '# dirty' calc.py",  # the recorded uncommitted change is back
            f"test -f {MARKER}",
            "test ! -e notes.txt",  # untracked files of the live checkout are not there
            "grep -qx hello out.txt",
        ],
    )
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.status is ExecStatus.OK, result.error
    assert [c.passed for c in result.checks] == [True] * 5, [c.to_dict() for c in result.checks]
    assert result.checks_passed is True
    seen = json.loads(result.final_message)
    env = seen["env"]
    assert env["SKILLOPT_REPLAY"] == "1"
    assert env["SECRET_NOT_ALLOWED"] is None, "a variable outside the allowlist reached the agent"
    assert env["GH_TOKEN"] == "gh-token-for-copilot", "the tool's own credential must be passed"
    assert env["HOME"].startswith(str(sandbox_config.root))
    assert result.files_changed == ["A out.txt"]
    assert "+hello" in result.diff and MARKER not in result.diff
    assert list(sandbox_config.root.iterdir()) == [], "the workspace was not removed"


def test_the_agent_and_the_checks_run_the_users_python_not_skillopts(
    tmp_path: Path, sandbox_config: SandboxConfig, fake_copilot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started from skillopt's activated virtual environment, a replay's `python3` is still the user's."""
    assert sys.prefix != sys.base_prefix, "run the tests from the project's virtual environment (make setup)"
    own_bin = Path(sys.executable).parent
    user_bin = tmp_path / "user-toolchain"
    user_bin.mkdir()
    users_python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    (user_bin / "python3").symlink_to(users_python)
    monkeypatch.setenv("PATH", os.pathsep.join([str(own_bin), str(user_bin), os.environ.get("PATH", "")]))
    task = ReplayTask(prompt="ARGV", checks=["python3 -c 'import sys; print(sys.prefix)'"])
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.status is ExecStatus.OK, result.error
    agent_path = json.loads(result.final_message)["env"]["PATH"].split(os.pathsep)
    assert str(own_bin) not in agent_path and str(user_bin) in agent_path
    (check,) = result.checks
    assert check.output.strip() == os.path.realpath(sys.base_prefix), check.output


def test_user_repository_is_untouched(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, fake_copilot: str
) -> None:
    repo, (first, _second) = make_repo()
    before = repo_state(repo)
    task = ReplayTask(prompt="WRITE calc.py broken BRANCH", repo=repo, commit=first, checks=["true"])
    result = replay(task, _backend(fake_copilot), sandbox_config, skill=skill())
    assert result.files_changed == ["M calc.py"]
    assert any("agent-made-branch" in w for w in result.warnings)
    assert repo_state(repo) == before


def test_non_git_project_is_copied(tmp_path: Path, sandbox_config: SandboxConfig, fake_copilot: str) -> None:
    proj = tmp_path / "plain"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "a.txt").write_text("original\n")
    task = ReplayTask(prompt="WRITE src/a.txt changed", repo=proj, checks=["grep -qx changed src/a.txt"])
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.checks_passed
    assert result.files_changed == ["M src/a.txt"]
    assert any("not a git repository" in w for w in result.warnings)
    assert (proj / "src" / "a.txt").read_text() == "original\n"
    assert sorted(p.name for p in proj.rglob("*")) == ["a.txt", "src"]


def test_no_project_means_an_empty_folder(sandbox_config: SandboxConfig, fake_copilot: str) -> None:
    task = ReplayTask(prompt="WRITE new.txt x", checks=["test $(ls -A | wc -l) -eq 2"])  # marker + new.txt
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.checks_passed, result.checks[0].output
    assert any("empty folder" in w for w in result.warnings)


def test_missing_pinned_commit_falls_back_to_head_and_says_so(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, fake_copilot: str
) -> None:
    repo, (_first, second) = make_repo()
    task = ReplayTask(
        prompt="nothing",
        repo=repo,
        commit="0123456789abcdef0123456789abcdef01234567",
        checks=["grep -q 'def sub' calc.py"],
    )
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.checks_passed
    note = next(w for w in result.warnings if "no longer exists" in w)
    assert "0123456789ab" in note and second[:12] in note


def test_keep_keeps_the_workspace(make_repo: MakeRepo, tmp_path: Path, fake_copilot: str) -> None:
    repo, (first, _) = make_repo()
    config = SandboxConfig(root=tmp_path / "ws", keep=True)
    result = replay(
        ReplayTask(prompt="WRITE kept.txt yes", repo=repo, commit=first), _backend(fake_copilot), config
    )
    assert result.workspace is not None
    ws = Path(result.workspace)
    assert (ws / "kept.txt").read_text() == "yes\n"
    assert (ws / MARKER).is_file()
    sandbox.remove_workspace(
        sandbox.Workspace(
            run_dir=ws.parent,
            path=ws,
            cwd=ws,
            home=ws.parent / "home",
            kind="worktree",
            git_top=repo.resolve(),
        )
    )
    assert "kept" not in git(repo, "worktree", "list")


def test_disk_full_while_copying_fails_cleanly(
    tmp_path: Path, sandbox_config: SandboxConfig, fake_copilot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = tmp_path / "big"
    proj.mkdir()
    for i in range(20):
        (proj / f"f{i}.txt").write_text("data\n")
    copied: list[str] = []

    def fill_up(src: str, dst: str) -> object:
        if len(copied) >= 5:
            raise OSError(errno.ENOSPC, "No space left on device", dst)
        copied.append(src)
        return sandbox.shutil.copy2(src, dst)

    monkeypatch.setattr(sandbox, "_copy_file", fill_up)
    with pytest.raises(SandboxError) as err:
        replay(ReplayTask(prompt="x", repo=proj), _backend(fake_copilot), sandbox_config)
    assert "disk filled up" in err.value.message and err.value.hint
    assert list(sandbox_config.root.iterdir()) == []


def test_disk_full_while_recording_a_worktree_fails_cleanly(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, fake_copilot: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, (first, _) = make_repo()
    before = repo_state(repo)

    def full(self: object, ws: object, excluded: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sandbox.Snapshot, "__init__", full)
    with pytest.raises(SandboxError):
        replay(
            ReplayTask(prompt="x", repo=repo, commit=first),
            _backend(fake_copilot),
            sandbox_config,
            skill=skill(),
        )
    assert list(sandbox_config.root.iterdir()) == []
    assert repo_state(repo) == before


def test_a_hanging_check_is_stopped(sandbox_config: SandboxConfig, fake_copilot: str) -> None:
    task = ReplayTask(prompt="x", checks=["sleep 60", "echo fine"], check_timeout_s=1)
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.checks[0].timed_out and not result.checks[0].passed
    assert result.checks[1].passed and result.checks[1].output == "fine"
    assert result.checks_passed is False


def test_skill_is_installed_and_same_named_project_copies_removed(
    tmp_path: Path, sandbox_config: SandboxConfig, fake_copilot: str
) -> None:
    proj = tmp_path / "p"
    for d in (".github/skills/demo", ".claude/skills/demo", ".agents/skills/other"):
        (proj / d).mkdir(parents=True)
        (proj / d / "SKILL.md").write_text("---\nname: x\ndescription: OLD COPY\n---\nold\n")
    result = replay(
        ReplayTask(prompt="SKILL", repo=proj),
        _backend(fake_copilot),
        sandbox_config,
        skill=skill(body="CANDIDATE BODY"),
    )
    found = json.loads(result.final_message)
    assert set(found) == {".github/skills/demo", ".agents/skills/other"}
    assert "CANDIDATE BODY" in found[".github/skills/demo"]
    assert ".github/skills/demo/SKILL.md" not in " ".join(result.files_changed)


def test_replay_many_runs_in_parallel_with_separate_workspaces(
    make_repo: MakeRepo, tmp_path: Path, fake_copilot: str
) -> None:
    repo, (first, _) = make_repo()
    config = SandboxConfig(root=tmp_path / "ws", max_parallel=2)
    tasks = [
        ReplayTask(
            prompt=f"WRITE out{i}.txt v{i}", repo=repo, commit=first, checks=[f"grep -qx v{i} out{i}.txt"]
        )
        for i in range(4)
    ]
    results = replay_many(tasks, _backend(fake_copilot), config)
    assert all(not isinstance(r, SandboxError) and r.checks_passed for r in results)
    assert [r.files_changed for r in results if not isinstance(r, SandboxError)] == [
        [f"A out{i}.txt"] for i in range(4)
    ]
    assert "out" not in git(repo, "worktree", "list")
    assert os.listdir(config.root) == []


def test_a_subfolder_of_a_repository_starts_the_agent_there(
    make_repo: MakeRepo, sandbox_config: SandboxConfig, fake_copilot: str
) -> None:
    repo, (first, _) = make_repo(files=5)
    task = ReplayTask(
        prompt="WRITE here.txt x", repo=repo / "pkg" / "m0", commit=first, checks=["test -f f0.py"]
    )
    result = replay(task, _backend(fake_copilot), sandbox_config)
    assert result.checks_passed
    assert result.files_changed == ["A pkg/m0/here.txt"]


def test_git_failure_is_a_sandbox_error(
    tmp_path: Path, sandbox_config: SandboxConfig, fake_copilot: str
) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a").write_text("a")
    git(repo, "add", "a")
    git(repo, "commit", "-qm", "a")
    (repo / ".git" / "worktrees").write_text("not a folder")  # git cannot register a worktree now
    with pytest.raises(SandboxError) as err:
        replay(ReplayTask(prompt="x", repo=repo, commit="HEAD"), _backend(fake_copilot), sandbox_config)
    assert "git worktree" in err.value.message
    assert os.listdir(sandbox_config.root) == []

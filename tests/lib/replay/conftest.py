"""Fixtures for replay tests: an isolated skillopt home, throwaway git projects, fake user tool homes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from replay_helpers import FAKES, git

from skillopt_lib.sandbox import SandboxConfig


@pytest.fixture(autouse=True)
def skillopt_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "skillopt-home"
    monkeypatch.setenv("SKILLOPT_HOME", str(home))
    return home


@pytest.fixture
def sandbox_config(tmp_path: Path) -> SandboxConfig:
    return SandboxConfig(root=tmp_path / "skillopt-home" / "data" / "workspaces")


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., tuple[Path, list[str]]]:
    """A git project with two commits and an uncommitted change; returns (path, [commit1, commit2])."""

    def make(name: str = "project", files: int = 0) -> tuple[Path, list[str]]:
        repo = tmp_path / name
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n")
        for i in range(files):
            sub = repo / "pkg" / f"m{i // 100}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i}.py").write_text(f"X = {i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
        first = git(repo, "rev-parse", "HEAD")
        (repo / "calc.py").write_text(
            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
        )
        git(repo, "commit", "-q", "-am", "second")
        second = git(repo, "rev-parse", "HEAD")
        (repo / "notes.txt").write_text("work in progress\n")  # untracked: the user's own mess
        return repo, [first, second]

    return make


@pytest.fixture
def fake_copilot() -> str:
    return str(FAKES / "copilot")


@pytest.fixture
def fake_cursor() -> str:
    return str(FAKES / "cursor-agent")

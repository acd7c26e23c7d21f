"""A folder's repository: the main worktree for a worktree or a subfolder, the folder itself without git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from skillopt_daemon.core.repos import GIT, MISSING, NO_GIT, repository_of

GIT_ARGS = ["-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "commit.gpgsign=false"]


def git_repo(path: Path) -> Path:
    """A git repository with one commit."""
    path.mkdir(parents=True)
    (path / "README.md").write_text("demo\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", *GIT_ARGS, "-C", str(path), "commit", "-qm", "init"], check=True)
    return path


def test_a_worktree_and_a_subfolder_are_their_main_repository(tmp_path: Path) -> None:
    main = git_repo(tmp_path / "app")
    (main / "web").mkdir()
    tree = tmp_path / "app-feature"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tree)], check=True)
    for folder in (main, main / "web", tree):
        found = repository_of(folder)
        assert (found.root, found.kind) == (str(main.resolve()), GIT), folder
        assert found.describe() == ""


def test_a_folder_without_git_and_a_missing_one_say_so(tmp_path: Path) -> None:
    plain = tmp_path / "notes"
    plain.mkdir()
    found = repository_of(plain)
    assert (found.root, found.kind) == (str(plain.resolve()), NO_GIT)
    assert "not in a git repository" in found.describe()
    gone = repository_of(tmp_path / "gone")
    assert gone.kind == MISSING
    assert "no longer exists" in gone.describe()

"""A small git repository for tests about where a rule belongs: one place for the identity flags and the
first commit, so every such test builds the same kind of repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_ARGS = ["-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "commit.gpgsign=false"]


def git_repo(path: Path) -> Path:
    """A repository at `path` with one commit (a README), as its resolved path."""
    path.mkdir(parents=True)
    (path / "README.md").write_text("demo\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", *GIT_ARGS, "-C", str(path), "commit", "-qm", "init"], check=True)
    return path.resolve()

"""Helpers shared by the replay tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from skillopt_lib.skill import SkillBundle

FAKES = Path(__file__).parent / "fakes"


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    out = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def repo_state(repo: Path) -> dict[str, object]:
    """Everything a replay must leave as it was: files and bytes, status, worktrees, refs, HEAD."""
    files = {}
    for p in sorted(repo.rglob("*")):
        if ".git" in p.relative_to(repo).parts or not p.is_file():
            continue
        files[p.relative_to(repo).as_posix()] = p.read_bytes()
    return {
        "files": files,
        "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "refs": git(repo, "for-each-ref"),
        "head": git(repo, "rev-parse", "HEAD"),
    }


def skill(
    name: str = "demo", description: str = "Use for demo tasks.", body: str = "Say hello."
) -> SkillBundle:
    return SkillBundle.from_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")

"""A project-scope install's folder inside the user's repository, and what git makes of it.

A skill installed in project scope lives in the repository (`.claude/skills/<name>/`, `.codex/skills/
<name>/`): skillopt writes only that folder, but the repository is the user's. Committed, every teammate's
agent reads the rule too; ignored, it stays on this machine. Either is the user's call, so approve's output
and `skillopt doctor` say where the folder is and what git makes of it now, instead of leaving an untracked
folder to be found in `git status`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from skillopt_daemon.registry.installers.base import InstallTarget

COMMITTED = "committed"
IGNORED = "ignored by git"
UNCOMMITTED = "not committed yet"
NO_GIT = "not in a git repository"


def folder(target: InstallTarget, files: Mapping[str, str]) -> Path | None:
    """The folder a project install wrote (the common folder of its files), None for a user install or one
    that wrote nothing inside the project."""
    if target.project is None or not files:
        return None
    common = Path(os.path.commonpath(list(files)))
    if len(files) == 1:
        common = common.parent
    try:
        common.relative_to(target.project)
    except ValueError:
        return None
    return common


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None


def git_state(path: Path, repo: Path) -> str:
    """What git makes of `path` in `repo`: committed, ignored, not committed yet, or no git at all."""
    inside = _git(repo, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != "true":
        return NO_GIT
    ignored = _git(repo, "check-ignore", "-q", str(path))
    if ignored is not None and ignored.returncode == 0:
        return IGNORED
    tracked = _git(repo, "ls-files", "--error-unmatch", str(path))
    if tracked is not None and tracked.returncode == 0:
        return COMMITTED
    return UNCOMMITTED


def note(path: Path, repo: Path) -> str:
    """One line for the user: the folder is theirs to commit or ignore, and where it stands now."""
    state = git_state(path, repo)
    return (
        f"{path} is yours to commit (so teammates' agents read it) or to ignore ({state}); skillopt "
        "writes nothing else in the repository"
    )

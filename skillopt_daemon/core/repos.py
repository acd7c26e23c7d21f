"""Which repository a folder belongs to: the one place a rule learned there is installed in project scope.

Sessions record the folder the agent ran in (`project_path`), which may be a subfolder of a repository or
one of its worktrees. A rule belongs to the repository, not to the folder: two worktrees of one repository
are one place to install (each tool's project skill folder in the main worktree), and sessions in `app/`
and `app/web/` are one repository's evidence. `repository_of` resolves a folder to its main worktree
through `git rev-parse --git-common-dir`; a folder without git (or gone) is its own repository, and the
result says which of these it is so a caller can tell the user.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

GIT_TIMEOUT_S = 10.0

GIT = "git"  # a git repository (its main worktree)
NO_GIT = "no-git"  # a folder that is not inside a git repository (or git is missing)
MISSING = "missing"  # the folder no longer exists (moved or deleted)


@dataclass(frozen=True)
class Repository:
    """A folder's repository: `root` (the main worktree, or the folder itself without git) and `kind`."""

    root: str
    kind: str  # GIT | NO_GIT | MISSING

    def describe(self) -> str:
        """Why it is not a plain git repository, for the user ("" when it is one)."""
        if self.kind == MISSING:
            return f"{self.root} no longer exists (moved or deleted)"
        if self.kind == NO_GIT:
            return f"{self.root} is not in a git repository"
        return ""


def repository_of(folder: str | Path) -> Repository:
    """The repository holding `folder`; never raises (cached per folder for the process's life: a folder
    does not change repository while a night or a command runs)."""
    return _repository_of(os.path.abspath(os.path.expanduser(str(folder))))


@lru_cache(maxsize=1024)
def _repository_of(folder: str) -> Repository:
    if not os.path.isdir(folder):
        return Repository(folder, MISSING)
    common = _git(folder, "--git-common-dir")
    if common is not None:
        path = Path(common)
        if path.name == ".git":
            return Repository(str(path.parent), GIT)
    # A bare repository's worktree, or a repository whose git folder lives elsewhere: its top level.
    top = _git(folder, "--show-toplevel")
    if top is not None:
        return Repository(str(Path(top)), GIT)
    return Repository(str(Path(folder).resolve()), NO_GIT)


def _git(folder: str, flag: str) -> str | None:
    """`git rev-parse --path-format=absolute FLAG` in `folder`, or None when it fails."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", "-C", folder, "rev-parse", "--path-format=absolute", flag],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None

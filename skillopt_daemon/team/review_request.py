"""Asking the team to review a published rule: a pull request when a forge CLI is installed and signed in.

`gh` (GitHub) and `glab` (GitLab) are used only when present and signed in (`gh auth status`, `glab auth
status`); otherwise, or when they fail, the user is told what to do by hand. skillopt never holds a token
of its own for this: the forge CLI's sign-in is the user's.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReviewRequest:
    """What happened: the URL of the opened request, or the steps to open one by hand."""

    url: str | None
    how: str


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            args, cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def open_request(clone: Path, branch: str, base: str, title: str, body: str) -> ReviewRequest:
    """Open a pull (merge) request from `branch` into `base`, or say how to."""
    manual = (
        f"open a pull request from branch {branch} into {base} in the team repository, "
        f"or merge it: git merge origin/{branch}"
    )
    for tool, create in (
        ("gh", ["pr", "create", "--head", branch, "--base", base, "--title", title, "--body", body]),
        ("glab", ["mr", "create", "--source-branch", branch, "--target-branch", base, "--title", title,
                  "--description", body, "--yes"]),
    ):  # fmt: skip
        exe = shutil.which(tool)
        if exe is None:
            continue
        signed_in = _run([exe, "auth", "status"], clone)
        if signed_in is None or signed_in.returncode != 0:
            return ReviewRequest(
                None, f"{tool} is installed but not signed in (`{tool} auth login`); {manual}"
            )
        made = _run([exe, *create], clone)
        if made is not None and made.returncode == 0:
            lines = made.stdout.strip().splitlines()
            return ReviewRequest(lines[-1] if lines else None, f"opened with {tool}")
        said = (made.stderr.strip().splitlines() or ["it failed"])[-1] if made is not None else "it failed"
        return ReviewRequest(None, f"`{tool}` could not open it ({said}); {manual}")
    return ReviewRequest(None, manual)

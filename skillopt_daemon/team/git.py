"""Running git for the team channel: never interactive, always bounded, failures in plain words.

A team repository is reached over the network, which may be down or slow: git is told never to prompt
(`GIT_TERMINAL_PROMPT=0`, no askpass), every call has a timeout, and a failure becomes a `TeamError`
naming the command and git's own last words, so `skillopt team pull` can say "the remote cannot be
reached" and the night goes on.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from skillopt_lib.errors import ExternalToolError

TIMEOUT_S = 120


class TeamError(ExternalToolError):
    """git (or the team repository) refused: what was tried and what git said."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", GCM_INTERACTIVE="never")
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    return env


def git(*args: str, cwd: Path | None = None, check: bool = True, timeout: float = TIMEOUT_S) -> str:
    """`git ARGS` in `cwd`; its stdout. With `check`, a non-zero exit raises `TeamError`."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            errors="replace",  # a file in the team repository that is not UTF-8 must not crash a pull
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise TeamError("git is not installed", hint="install git, then run the command again") from None
    except subprocess.TimeoutExpired:
        raise TeamError(
            f"`git {args[0]}` took longer than {timeout:.0f}s (is the remote reachable?)"
        ) from None
    if check and proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise TeamError(
            f"`git {' '.join(args[:2])}` failed: {said[-1] if said else f'exit {proc.returncode}'}"
        )
    return proc.stdout


def ok(*args: str, cwd: Path | None = None) -> bool:
    """Whether `git ARGS` succeeds (a question such as `merge-base --is-ancestor`)."""
    try:
        git(*args, cwd=cwd)
    except TeamError:
        return False
    return True


def identity(cwd: Path | None = None) -> tuple[str, str]:
    """The user's git (name, email), as their commits carry them; empty strings when unset."""
    name = git("config", "--get", "user.name", cwd=cwd, check=False).strip()
    email = git("config", "--get", "user.email", cwd=cwd, check=False).strip()
    return name, email

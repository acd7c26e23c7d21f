"""Typed errors shared by the library and the CLI.

Every error a user can cause carries a plain-words message and, where there is one, what to do next
(`hint`). The CLI maps `exit_code` to the process exit status, so scripts can tell failures apart.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SkillOptError(Exception):
    """Base of every error skillopt raises on purpose (never for a bug)."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class NotFoundError(SkillOptError):
    """A skill, version, proposal, session or file that was named does not exist."""

    exit_code = 3


class ConflictError(SkillOptError):
    """The request contradicts the current state: already decided, ambiguous prefix, hand edit, lock held."""

    exit_code = 4


class StoreError(SkillOptError):
    """The database cannot be used: corrupt, locked, its disk full, or written by a newer skillopt."""

    exit_code = 5


class DiskFullError(StoreError):
    """The disk holding skillopt's data is full. Nothing is damaged: freeing space is the whole fix, and
    telling this apart from corruption keeps anyone from throwing a healthy database away."""


class ConfigError(SkillOptError):
    """A configuration key or value is wrong, or a needed setting (API key, backend) is missing."""

    exit_code = 6


class DaemonError(SkillOptError):
    """The daemon is already running, or not running when it must be."""

    exit_code = 7


class ExternalToolError(SkillOptError):
    """An agent CLI or another program skillopt needs is missing, too old, or failed."""

    exit_code = 8


class SkillFormatError(SkillOptError):
    """A SKILL.md or skill bundle breaks the Agent Skills rules."""

    exit_code = 9


class BackendError(SkillOptError):
    """A model backend failed after its retries: unreachable endpoint, bad key, exhausted budget."""

    exit_code = 10


class InstallError(SkillOptError):
    """A skill folder cannot be written: not writable, or a symlink leading outside the tool's folders."""

    exit_code = 11


EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "unexpected failure (a bug: please report it with the message)",
    2: "usage error: an unknown option or a missing argument",
    3: "not found: the named skill, version, proposal or session does not exist",
    4: "conflict: already decided, ambiguous id prefix, hand-edited file, or another process holds the lock",
    5: "database problem: corrupt, locked, its disk is full, or written by a newer skillopt",
    6: "configuration problem: unknown key, wrong type, or a missing setting",
    7: "daemon problem: already running, or not running",
    8: "an external program (agent CLI, git) is missing or failed",
    9: "invalid skill document",
    10: "model backend failed after retries",
    11: "a skill folder cannot be written (permissions, or a symlink leading outside the tool's folders)",
    12: "not shared: what would leave the machine holds a secret, a path, the hostname or the home folder",
}


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`did you mean 'x'?` for the choice closest to a mistyped `value`, or "" when none is close."""
    close = difflib.get_close_matches(value.strip().lower(), sorted(set(choices)), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""

"""Sections that skillopt manages inside a file the user also writes (AGENTS.md, copilot-instructions.md).

A section sits between `<!-- skillopt:begin NAME hash=H -->` and `<!-- skillopt:end NAME -->`. The begin
marker carries a short hash of the body skillopt wrote, so a later run can tell, from the file alone, whether
the user edited inside the section: an edited section is never replaced or removed without `force`, the same
rule as for whole files. Everything outside the markers is the user's and is kept byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillopt_daemon.core.fsio import sha256_bytes
from skillopt_lib.errors import ConflictError, SkillOptError

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HASH_CHARS = 12


class ManagedSectionError(SkillOptError):
    """A managed section's markers are broken (a begin without an end, or one twice)."""


@dataclass(frozen=True)
class Section:
    """A managed section found in a text: `start`/`end` are offsets of the whole block (markers included)."""

    name: str
    start: int
    end: int
    body: str
    recorded_hash: str | None

    @property
    def edited(self) -> bool:
        """True when the body is not what skillopt wrote (or the marker lost its hash)."""
        return self.recorded_hash != body_hash(self.body)


def body_hash(body: str) -> str:
    normalized = body.strip("\n").replace("\r\n", "\n")
    return sha256_bytes(normalized.encode("utf-8"))[:HASH_CHARS]


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ValueError(f"invalid managed section name {name!r}")


def _begin_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"^<!-- skillopt:begin {re.escape(name)}(?: hash=([0-9a-f]+))? -->[ \t]*\r?$", re.M)


def _end_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"^<!-- skillopt:end {re.escape(name)} -->[ \t]*(?:\r?\n)?", re.M)


def render(name: str, body: str) -> str:
    """The whole block, markers included, ending with a newline."""
    _check_name(name)
    inner = body.strip("\n")
    return f"<!-- skillopt:begin {name} hash={body_hash(inner)} -->\n{inner}\n<!-- skillopt:end {name} -->\n"


def find(text: str, name: str) -> Section | None:
    """The section called `name`, or None. Broken markers raise ManagedSectionError naming the problem."""
    _check_name(name)
    begins = list(_begin_re(name).finditer(text))
    ends = list(_end_re(name).finditer(text))
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].end():
        raise ManagedSectionError(
            f"the skillopt section {name!r} has broken markers ({len(begins)} begin, {len(ends)} end)",
            hint="fix or delete the '<!-- skillopt:begin/end -->' lines by hand, then run the command again",
        )
    begin, end = begins[0], ends[0]
    body_start = begin.end() + 1 if text[begin.end() : begin.end() + 1] == "\n" else begin.end()
    body = text[body_start : end.start()]
    return Section(
        name=name, start=begin.start(), end=end.end(), body=body.strip("\n"), recorded_hash=begin.group(1)
    )


def upsert(text: str, name: str, body: str, *, force: bool = False, label: str = "the file") -> str:
    """`text` with the section set to `body`: replaced in place, or appended after a blank line.

    A section the user edited raises ConflictError unless `force`.
    """
    block = render(name, body)
    found = find(text, name)
    if found is None:
        if not text:
            return block
        sep = "" if text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return text + sep + block
    if found.edited and not force and found.body != body.strip("\n"):
        raise ConflictError(
            f"the skillopt section {name!r} in {label} was edited by hand",
            hint="keep your edit (nothing was changed), or pass --force to replace it",
        )
    return text[: found.start] + block + text[found.end :]


def remove(text: str, name: str, *, force: bool = False, label: str = "the file") -> str:
    """`text` without the section (and without the blank line `upsert` put before it)."""
    found = find(text, name)
    if found is None:
        return text
    if found.edited and not force:
        raise ConflictError(
            f"the skillopt section {name!r} in {label} was edited by hand; it was left in place",
            hint="delete it yourself, or pass --force to remove it anyway",
        )
    before, after = text[: found.start], text[found.end :]
    if not after and before.endswith("\n\n"):
        before = before[:-1]
    return before + after

"""The one interface every agent tool's log reader implements, and the normalized records it emits.

A source knows three things about its tool: where the logs are (`roots`), which files are transcripts
(`is_transcript`), and how to turn a transcript into normalized records. Line-oriented logs (JSONL, the
common case) are parsed one line at a time by `parse_line`, with a small JSON-serializable `state` per file
that the tailer persists beside the byte offset, so parsing resumes mid-file after a restart. Whole-document
formats (a `.json` transcript rewritten in place) set `line_oriented = False` and implement `parse_file`;
the tailer re-parses them when they change and the store replaces what it had for that file.

Records carry stable `key`s (a record uuid, a call id, or file offset) so that storing them is an upsert:
reading the same bytes twice never duplicates anything. Text in records is already redacted when it leaves
a source (see `redact.py`): what was never stored cannot leak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from skillopt.agents import AgentTool

Role = Literal["user", "assistant", "system", "tool"]


@dataclass
class FileContext:
    """What a parser knows about the file it reads. `state` survives restarts (stored with the offset)."""

    path: Path
    tool: AgentTool
    session_key: str  # the tool's session id as far as the path tells; parsers may refine it via SessionInfo
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class SessionInfo:
    """Fields to merge into the session row; None leaves a field as it was."""

    session_id: str
    project_path: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    model: str | None = None
    entrypoint: str | None = None
    tool_version: str | None = None
    started_at: str | None = None  # UTC ISO
    ended_at: str | None = None  # UTC ISO; the latest timestamp seen
    title: str | None = None
    is_automation: bool | None = None  # e.g. `claude -p` runs (entrypoint sdk-cli)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnRecord:
    session_id: str
    key: str
    role: Role
    text: str
    timestamp: str | None = None
    parent_key: str | None = None  # for tools whose records form a chain/tree (Claude parentUuid, OpenClaw)
    is_meta: bool = False  # injected context (skill bodies, AGENTS.md, environment context): not user text
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class ToolCallRecord:
    session_id: str
    key: str  # the tool's call id
    turn_key: str  # the assistant turn that made the call
    name: str
    input_summary: str
    timestamp: str | None = None


@dataclass
class ToolResultRecord:
    session_id: str
    call_key: str
    exit_code: int | None = None
    is_error: bool | None = None
    output_excerpt: str = ""
    timestamp: str | None = None


@dataclass
class SkipRecord:
    """Something the parser passed over, counted per reason (unknown record type, sidechain, bad line)."""

    reason: str
    detail: str = ""


Record = SessionInfo | TurnRecord | ToolCallRecord | ToolResultRecord | SkipRecord


@runtime_checkable
class Source(Protocol):
    tool: ClassVar[AgentTool]
    line_oriented: ClassVar[bool]
    # Highest tool version this reader was checked against, reported when a newer one is seen.
    known_version: ClassVar[str]

    def roots(self) -> list[Path]:
        """Folders to watch (may not exist yet: the tailer picks them up when they appear)."""
        ...

    def is_transcript(self, path: Path) -> bool: ...

    def context(self, path: Path, state: dict[str, Any] | None = None) -> FileContext: ...

    def parse_line(self, ctx: FileContext, line: bytes) -> list[Record]:
        """One complete line (without its newline). Must not raise: bad input becomes a SkipRecord."""
        ...

    def parse_file(self, ctx: FileContext, data: bytes) -> list[Record]:
        """Whole-document formats only."""
        ...

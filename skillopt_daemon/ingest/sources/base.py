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

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import msgspec

from skillopt_daemon.core import timeutil
from skillopt_daemon.ingest.pinning import read_repo
from skillopt_daemon.ingest.redact import Redactor, default_redactor
from skillopt_lib.agents import AgentTool

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
    # UTC ISO. The store takes every record's timestamp as the session's activity, so these are needed
    # only for times no turn, call or result of the same line carries.
    started_at: str | None = None
    ended_at: str | None = None
    title: str | None = None
    is_automation: bool | None = None  # e.g. `claude -p` runs (entrypoint sdk-cli)
    # Secrets redacted so far in this file (a running total, not an increment: set, don't add). For
    # whole-document formats, the total of the last parse. Sum over a session's files for the session.
    redactions: int | None = None
    # Well-known keys: "skillopt_replay" (True: one of skillopt's own replays, not user work),
    # "git_dirty" (bool), "git_pinned_at" (UTC ISO: when HEAD was read from the repo), "git_diff_hash"
    # (the kept dirty diff, see `pinning`), "originator".
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
    """What the ingest pipeline needs from one agent tool's log reader.

    The pipeline discovers files under `roots()` that pass `is_transcript`, creates a `FileContext` for
    each read (with the `state` it stored beside the file's offset), and hands the reader complete lines
    (`line_oriented`) or the whole document. Everything a reader returns is stored as upserts by the
    records' stable keys, in the same transaction as the offset the bytes end at.

    Thread safety: the pipeline calls one source from one thread at a time; a source must not keep
    per-file data anywhere but in `ctx.state` (several files are read interleaved, and a restarted process
    only has what was stored). `BaseSource` implements the contracts below for the concrete readers.
    """

    tool: ClassVar[AgentTool]
    """Which agent tool wrote the logs; names the sessions' `tool` column."""

    line_oriented: ClassVar[bool]
    """True: `parse_line` is called once per complete line, resuming mid-file from the stored offset.
    False: `parse_file` is called with the whole document each time it changes (the file's rows are then
    replaced), and `parse_line` is never called."""

    known_version: ClassVar[str]
    """Highest tool version this reader was checked against ("" when not known). A newer version seen in
    a `SessionInfo.tool_version` is reported once; reading goes on and unknown records are skipped."""

    def roots(self) -> list[Path]:
        """Folders to watch for transcripts.

        Returns: absolute paths, possibly not existing yet (the tailer picks them up when they appear).
        Never raises; cheap (called when the pipeline is built, not per file).
        """
        ...

    def is_transcript(self, path: Path) -> bool:
        """Whether `path` (a file under one of `roots()`) is a transcript this reader understands.

        Decides by the path alone (name, suffix, folder layout); must not open the file. Never raises.
        """
        ...

    def companions(self, path: Path) -> list[Path]:
        """Files beside the transcript at `path` whose change means the transcript changed, whole-document
        sources only.

        A database in write-ahead-log mode (SQLite's `-wal`) takes new rows into its log, and its own file
        changes only at a checkpoint: a reader naming the log here is read again when the log changes,
        at the next rescan and when the watcher hears of it, not at the next checkpoint. The pipeline
        compares the companions' identity (inode, size, modification time) with what it was at the last
        read; a companion that does not exist is a state like any other. Returns paths that may not exist;
        decides by the path alone; never raises.
        """
        ...

    def unusable(self, path: Path) -> str | None:
        """Why the transcript at `path` cannot be read at all (a damaged database, say), or None.

        For `skillopt doctor`, which asks ahead of ingest; what ingest itself meets is raised as
        `FileUnusable`. Reads no more than it must; never raises.
        """
        ...

    def context(self, path: Path, state: dict[str, Any] | None = None) -> FileContext:
        """A fresh `FileContext` for reading `path`.

        Params: `state` is the JSON-serializable state the previous read left in `ctx.state` (None or {}
        for a file read from its start). Returns a context whose `session_key` is the session id as far as
        the path tells. Never raises; does no I/O.
        """
        ...

    def parse_line(self, ctx: FileContext, line: bytes) -> list[Record]:
        """Records for one complete line (without its newline), line-oriented sources only.

        Params: `ctx` from `context`, updated in place (its `state` is stored with the offset after the
        batch commits); `line` the raw bytes, possibly invalid UTF-8 or not JSON. Returns records whose
        texts are already redacted; may be empty. Must never raise: bad input becomes a `SkipRecord` (the
        pipeline still guards against a reader bug, counting it as "parser-error"). Timestamps must be
        canonical UTC ISO or None (`to_utc_iso` applies the shared future-timestamp rule).
        """
        ...

    def parse_file(self, ctx: FileContext, data: bytes) -> list[Record]:
        """Every record of a whole document, whole-document sources only (`line_oriented` False).

        Params: `ctx` from `context` with empty state; `data` the file's bytes (at most
        `ingest.max_document_bytes`). Returns all records the document holds now, redacted; what a
        previous parse returned for this file is replaced by them. Never raises (as `parse_line`), except
        `FileBusy` (try again later) and `FileUnusable` (the whole file is not what it should be).
        """
        ...


# --------------------------------------------------------------------------------------------------
# Shared machinery for the readers: JSON decoding that cannot raise, timestamps, redaction, replay
# detection and repo pinning. Every concrete source derives from BaseSource.
# --------------------------------------------------------------------------------------------------

# A replay workspace holds this file at its root; replays also carry the marker text in their first prompt
# and run with SKILLOPT_REPLAY=1.
REPLAY_MARKER_FILE = ".skillopt-replay"
REPLAY_MARKER_TEXT = "<!-- skillopt-replay -->"
REPLAY_ENV = "SKILLOPT_REPLAY"

# How a source reports a timestamp `timeutil.plausible_timestamp` rejects.
FUTURE_REASON = "timestamp in the future (ignored)"
EARLY_REASON = "timestamp before any agent tool existed (ignored)"
_TRUNCATED = "…[truncated]"


class FileBusy(Exception):
    """A whole document that cannot be read right now (its tool holds a lock on it): not read, not a
    problem; the pipeline leaves the file's stored reading as it was and tries again at the next rescan."""


class FileUnusable(Exception):
    """A whole document that is not what its reader expects at all (a corrupt database, not a database):
    nothing in it is read, what the store holds from it is kept, and the pipeline records `kind` (a file
    problem, see `problems.FILE_PROBLEMS`) with `message`, which names the file and what to do; `short`
    says only what is wrong (as `Source.unusable` does)."""

    def __init__(self, kind: str, message: str, *, short: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.short = short or message


class SourceError(Exception):
    """Raised inside a reader for input it cannot use; the wrapper turns it into a SkipRecord."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


_decode = msgspec.json.Decoder().decode


def loads_json(data: str | bytes) -> Any:
    """`json.loads` with the same values, faster: msgspec decodes bytes directly, integers of any size too.

    What msgspec refuses but the standard library accepts (NaN, lone surrogates, numbers out of a double's
    range, deep nesting) goes to `json.loads`, so raises ValueError (or RecursionError) exactly where `json.loads` does.
    """
    try:
        return _decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):  # the last: a str with lone surrogates
        return json.loads(data)


def decode_json_line(line: bytes) -> tuple[Any, bool]:
    """Parse one JSON line; returns (value, had_invalid_utf8). Raises SourceError for non-JSON."""
    stripped = line.strip()
    if not stripped:
        raise SourceError("blank line")
    try:
        return _decode(stripped), False  # valid UTF-8 and JSON msgspec reads: nearly every line
    except (msgspec.DecodeError, RecursionError):
        pass  # invalid UTF-8, JSON only the standard library reads, or not JSON: the slow path decides
    bad_utf8 = False
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError:
        text, bad_utf8 = stripped.decode("utf-8", errors="replace"), True
    try:
        return json.loads(text), bad_utf8
    except ValueError as exc:
        raise SourceError("invalid json", str(exc)[:200]) from None
    except RecursionError:
        raise SourceError("invalid json", "nested too deeply") from None


def to_utc_iso(value: Any, notes: list[SkipRecord] | None = None) -> str | None:
    """A timestamp in any form the tools write (ISO with or without zone, epoch s or ms) as UTC ISO.

    Zoneless values are taken as UTC; values `timeutil.plausible_timestamp` rejects (too far in the future,
    or from before any agent tool existed) are dropped (None). Both are reported through `notes` so `skillopt status` can show them.
    """
    if value is None or value == "" or isinstance(value, bool):
        return None
    if isinstance(value, str) and timeutil.CANONICAL_ISO.match(value):
        # What Claude Code and Codex write: already UTC ISO with milliseconds; only the future check remains.
        iso = value
    else:
        try:
            if isinstance(value, (int, float)):
                dt = timeutil.from_epoch(float(value) / 1000.0 if value > 1e11 else float(value))
            elif isinstance(value, str):
                dt, had_zone = timeutil.parse_iso(value)
                if not had_zone and notes is not None:
                    notes.append(SkipRecord("timestamp without zone (taken as UTC)", value[:40]))
            else:
                return None
            iso = timeutil.to_iso(dt)
        except (ValueError, OverflowError, OSError):
            if notes is not None:
                notes.append(SkipRecord("unreadable timestamp", str(value)[:40]))
            return None
    if timeutil.plausible_timestamp(iso):
        return iso
    if notes is not None:
        reason = EARLY_REASON if timeutil.too_early(iso) else FUTURE_REASON
        notes.append(SkipRecord(reason, str(value)[:40]))
    return None


def summarize_input(value: Any) -> str:
    """A tool call's input as one readable string: a shell command as itself, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("command", "cmd"):
            cmd = value.get(key)
            if isinstance(cmd, str) and len(value) <= 3:
                return cmd
            if isinstance(cmd, list) and all(isinstance(c, str) for c in cmd):
                return " ".join(cmd)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def text_of(content: Any, *, block_types: tuple[str, ...] = ("text", "input_text", "output_text")) -> str:
    """Concatenated text of a message content: a string, or a list of typed blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif (
                isinstance(block, dict)
                and block.get("type") in block_types
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
        return "\n".join(parts)
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


_EXIT_RE = re.compile(r"(?:exit(?:ed)?(?: with)? code[: ]\s*|Exit code:? )(-?\d{1,3})\b", re.IGNORECASE)


def exit_code_in(text: str) -> int | None:
    """An exit code stated in a tool's output text ("Exit code 3", "Process exited with code 0")."""
    m = _EXIT_RE.search(text[:2000])
    return int(m.group(1)) if m else None


def is_replay_cwd(cwd: str | None, workspaces: Path | None) -> bool:
    """True when a session ran in one of skillopt's replay workspaces (by location or marker file)."""
    if not cwd:
        return False
    p = Path(cwd)
    if workspaces is not None:
        try:
            p.resolve().relative_to(workspaces.resolve())
            return True
        except (ValueError, OSError):
            pass
    try:
        for folder in [p, *list(p.parents)[:4]]:
            if (folder / REPLAY_MARKER_FILE).exists():
                return True
    except OSError:
        return False
    return False


_INFO_TEXT_FIELDS = ("project_path", "git_branch", "model", "entrypoint", "tool_version", "title")


class BaseSource:
    """Common behaviour of every reader; subclasses implement `line_records` or `file_records`.

    The public `parse_line` / `parse_file` never raise: a reader bug or hostile input becomes a SkipRecord.
    On the way out every record is redacted and its long texts are cut to size (after redaction, so a
    secret cannot be split by the cut), and the file's running redaction count is reported.
    """

    tool: ClassVar[AgentTool]
    line_oriented: ClassVar[bool] = True
    known_version: ClassVar[str] = ""

    def __init__(
        self,
        home: Path,
        *,
        redactor: Redactor | None = None,
        excerpt_chars: int = 2000,
        max_text_chars: int = 100_000,
        workspaces: Path | None = None,
        pin_repo: bool = True,
        extra_roots: list[Path] | None = None,
    ) -> None:
        self.home = Path(home)
        self.redactor = redactor or default_redactor()
        self.excerpt_chars = excerpt_chars
        self.max_text_chars = max_text_chars
        self.workspaces = workspaces
        self.pin_repo = pin_repo
        self.extra_roots = list(extra_roots or [])

    # ---------------------------------------------------------------- to be provided by readers
    def roots(self) -> list[Path]:
        raise NotImplementedError

    def is_transcript(self, path: Path) -> bool:
        raise NotImplementedError

    def session_key_for(self, path: Path) -> str:
        return path.stem

    def line_records(self, ctx: FileContext, obj: Any) -> list[Record]:
        raise NotImplementedError

    def file_records(self, ctx: FileContext, data: bytes) -> list[Record]:
        raise NotImplementedError

    def companions(self, path: Path) -> list[Path]:
        return []  # the transcript's own file says when it changed

    def unusable(self, path: Path) -> str | None:
        return None  # a line-oriented transcript is never unusable as a whole: its bad lines are skipped

    # ---------------------------------------------------------------- the Source protocol
    def context(self, path: Path, state: dict[str, Any] | None = None) -> FileContext:
        return FileContext(
            path=Path(path),
            tool=self.tool,
            session_key=self.session_key_for(Path(path)),
            state=dict(state or {}),
        )

    def parse_line(self, ctx: FileContext, line: bytes) -> list[Record]:
        ctx.state["line"] = int(ctx.state.get("line", 0)) + 1
        records: list[Record]
        try:
            obj, bad_utf8 = decode_json_line(line)
            records = self.line_records(ctx, obj)
            if bad_utf8:
                records.append(SkipRecord("invalid utf-8 (replaced)", f"line {ctx.state['line']}"))
        except SourceError as exc:
            records = [SkipRecord(exc.reason, exc.detail)]
        except Exception as exc:  # a reader bug must not stop the daemon; it is counted and shown
            records = [SkipRecord("reader error", f"{type(exc).__name__}: {exc}"[:300])]
        return self._finish(ctx, records, cumulative=True)

    def parse_file(self, ctx: FileContext, data: bytes) -> list[Record]:
        records: list[Record]
        try:
            records = self.file_records(ctx, data)
        except (FileBusy, FileUnusable):
            raise  # about the whole file, for the pipeline: not a record
        except SourceError as exc:
            records = [SkipRecord(exc.reason, exc.detail)]
        except Exception as exc:
            records = [SkipRecord("reader error", f"{type(exc).__name__}: {exc}"[:300])]
        return self._finish(ctx, records, cumulative=False)

    # ---------------------------------------------------------------- helpers for readers
    def session_id(self, ctx: FileContext) -> str:
        return str(ctx.state.get("sid") or ctx.session_key)

    def ts(self, ctx: FileContext, value: Any, notes: list[Record]) -> str | None:
        """Normalize a timestamp; zone/future notes are reported once per file and reason."""
        found: list[SkipRecord] = []
        out = to_utc_iso(value, found)
        if not found:  # nearly always
            return out
        seen = ctx.state.setdefault("ts_notes", [])
        for note in found:
            if note.reason not in seen:
                seen.append(note.reason)
                notes.append(note)
        return out

    def first_seen(
        self, ctx: FileContext, info: SessionInfo, cwd: str | None, first_text: str | None = None
    ) -> None:
        """Mark replays and pin the project's repo state (HEAD, dirtiness), once per file.

        The result is kept in `ctx.state` and applied again on later calls, so whole-file readers, whose
        every parse replaces the previous one, keep reporting it.
        """
        pinned = ctx.state.get("first")
        if pinned is None:
            pinned = {}
            if is_replay_cwd(cwd, self.workspaces) or (first_text and REPLAY_MARKER_TEXT in first_text):
                pinned["replay"] = True
            if self.pin_repo and cwd and not info.git_commit:
                repo = read_repo(cwd, self.redactor)
                if repo.commit is not None:
                    # Kept in the file's stored state: redacted like the session's own branch column.
                    pinned.update(
                        commit=repo.commit,
                        branch=self.redactor.redact(repo.branch)[0] if repo.branch else None,
                        dirty=repo.dirty,
                        diff_hash=repo.diff_hash,
                        at=timeutil.utcnow_iso(),
                    )
            ctx.state["first"] = pinned
            ctx.state["seen"] = True
        if pinned.get("replay") or ctx.state.get("replay"):
            info.extra["skillopt_replay"] = True
            ctx.state["replay"] = True
        if pinned.get("commit") and not info.git_commit:
            info.git_commit = pinned["commit"]
            info.git_branch = info.git_branch or pinned.get("branch")
            info.extra["git_dirty"] = pinned.get("dirty")
            info.extra["git_pinned_at"] = pinned.get("at")
            if pinned.get("diff_hash"):
                info.extra["git_diff_hash"] = pinned["diff_hash"]

    def check_replay_text(self, ctx: FileContext, sid: str, text: str, out: list[Record]) -> None:
        if not ctx.state.get("replay") and REPLAY_MARKER_TEXT in text:
            ctx.state["replay"] = True
            out.append(SessionInfo(session_id=sid, extra={"skillopt_replay": True}))

    # ---------------------------------------------------------------- redaction and size limits
    def _fit(self, text: str, limit: int, keep_tail: bool) -> tuple[str, int]:
        if len(text) <= limit:
            return self.redactor.redact(text)
        margin = 1024  # longer than any single-line secret; PEM blocks are cut at the end of the region
        if not keep_tail:
            head, n = self.redactor.redact(text[: limit + margin])
            return head[:limit] + _TRUNCATED, n
        half = max(limit // 2, 1)
        head, n1 = self.redactor.redact(text[: half + margin])
        tail, n2 = self.redactor.redact_tail(text, half + margin)
        return head[:half] + "\n" + _TRUNCATED + "\n" + tail[-half:], n1 + n2

    def _redact(self, record: Record) -> int:
        if isinstance(record, TurnRecord):
            record.text, n = self._fit(record.text, self.max_text_chars, keep_tail=False)
            return n
        if isinstance(record, ToolCallRecord):
            record.input_summary, n = self._fit(record.input_summary, self.excerpt_chars, keep_tail=False)
            record.name, m = self.redactor.redact(record.name)
            return n + m
        if isinstance(record, ToolResultRecord):
            record.output_excerpt, n = self._fit(record.output_excerpt, self.excerpt_chars, keep_tail=True)
            return n
        if isinstance(record, SkipRecord):
            # Reasons can quote input (an unknown type's name): redacted too, but not session content.
            record.reason, _ = self._fit(record.reason, 200, keep_tail=False)
            record.detail, _ = self._fit(record.detail, 300, keep_tail=False)
            return 0
        total = 0
        for name in _INFO_TEXT_FIELDS:
            value = getattr(record, name)
            if value:
                new, n = self.redactor.redact(value)
                if n:
                    setattr(record, name, new)
                    total += n
        if record.extra:
            record.extra, n = self.redactor.redact_value(record.extra)
            total += n
        return total

    def _finish(self, ctx: FileContext, records: list[Record], *, cumulative: bool) -> list[Record]:
        count = 0
        for record in records:
            count += self._redact(record)
        if cumulative:
            if count:
                ctx.state["redactions"] = int(ctx.state.get("redactions", 0)) + count
                records.append(
                    SessionInfo(session_id=self.session_id(ctx), redactions=ctx.state["redactions"])
                )
        else:
            ctx.state["redactions"] = count
            sids = [r.session_id for r in records if isinstance(r, SessionInfo)]
            records.append(
                SessionInfo(session_id=sids[0] if sids else self.session_id(ctx), redactions=count)
            )
        return records


def as_dict(value: Any) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty one: readers must tolerate missing fields."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None

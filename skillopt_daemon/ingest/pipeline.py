"""The ingest pipeline: transcript bytes → source records → rows, with the file offset in the same commit.

`Pipeline.ingest_file` reads one transcript from where it stopped, hands complete lines to the tool's
source, and stores the records together with the new offset and the parser's state in ONE transaction.
A crash (even `kill -9`) therefore leaves the store at a batch boundary: on restart the same bytes are read
again from the committed offset, and nothing is lost or stored twice. Rows are upserts by the sources'
stable keys, so re-reading a file after it was truncated or replaced does not duplicate anything either.

Counters that a list or a status line needs (turns, tool calls, first and last time) are kept up to date
incrementally, so that one line appended to a 100 MB transcript costs the same as one appended to a
small one.

Faults (unreadable files, symlink loops, invalid UTF-8, over-long lines, timestamps without a zone or in
the future, a parser that raised) never stop the pipeline: they are recorded in `ingest_errors` (once per
file and kind while the condition lasts) and shown by `skillopt status`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import sqlite3
import subprocess
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.timeutil import parse_iso, to_iso, utcnow, utcnow_iso
from skillopt_daemon.ingest import tail
from skillopt_daemon.ingest.sources.base import (
    Record,
    SessionInfo,
    SkipRecord,
    Source,
    ToolCallRecord,
    ToolResultRecord,
    TurnRecord,
)
from skillopt_lib.agents import AgentTool

log = logging.getLogger("skillopt.ingest")

FUTURE_SLACK = timedelta(hours=1)
_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
PIN_TIMEOUT_S = 10.0
MAX_ERROR_ROWS = 10_000

# Problems that are properties of a file (recorded once while they last, cleared when the file reads fine).
FILE_PROBLEMS = {"permission-denied", "symlink-loop", "unreadable", "too-large", "not-a-file"}


def load_sources(settings: Settings, tools: Iterable[AgentTool] | None = None) -> list[Source]:
    """The enabled sources (optionally only `tools`), configured with the tools' homes from settings."""
    from skillopt_daemon.ingest.sources import all_sources

    candidates = all_sources(settings)
    wanted = set(tools) if tools is not None else None
    found: list[Source] = []
    for source in candidates:
        if wanted is not None and source.tool not in wanted:
            continue
        if not settings.tool(source.tool).enabled:
            continue
        found.append(source)
    return found


class _Overtaken(Exception):
    """The file's stored offset moved under us: someone else committed these bytes."""


@dataclass
class FileOutcome:
    path: str
    tool: str
    change: str = tail.UNCHANGED
    lines: int = 0
    records: int = 0
    bytes_read: int = 0
    error: str | None = None
    done: bool = True  # False when stopped before the end of what was there


@dataclass
class RepoPin:
    commit: str | None = None
    dirty: bool | None = None
    diff_hash: str | None = None
    error: str | None = None


def pin_repo(project: str) -> RepoPin:
    """HEAD and dirtiness of the repository holding `project`, read without taking the repo's index lock."""
    folder = Path(project)
    if not folder.is_dir():
        return RepoPin(error="project folder no longer exists")
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            timeout=PIN_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    try:
        head = git("rev-parse", "--verify", "HEAD")
        if head.returncode != 0:
            return RepoPin(error="not a git repository or no commit yet")
        commit = head.stdout.decode().strip()
        status = git("status", "--porcelain", "--untracked-files=normal")
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        diff_hash = None
        if dirty:
            diff = git("diff", "HEAD", "--binary")
            if diff.returncode == 0:
                diff_hash = hashlib.sha256(diff.stdout + status.stdout).hexdigest()
                keep_dirty_diff(diff_hash, diff.stdout)
        return RepoPin(commit=commit, dirty=dirty, diff_hash=diff_hash)
    except FileNotFoundError:
        return RepoPin(error="git is not installed")
    except subprocess.TimeoutExpired:
        return RepoPin(error="git took too long")
    except OSError as exc:
        return RepoPin(error=f"git failed: {exc}")


def dirty_diff_path(diff_hash: str) -> Path:
    return paths.data_dir() / "diffs" / f"{diff_hash}.patch"


def keep_dirty_diff(diff_hash: str, diff: bytes) -> bool:
    """Keep the uncommitted changes a session started from, so a replay can start from the same tree.

    A patch cannot be redacted and still apply, so one in which the redactor finds any secret is not kept
    at all (the replay then starts from the commit and says so). Kept patches are 0600 files.
    """
    from skillopt_daemon.ingest.redact import Redactor

    target = dirty_diff_path(diff_hash)
    if target.exists() or not diff.strip():
        return target.exists()
    text = diff.decode("utf-8", errors="replace")
    if Redactor().redact(text)[1]:
        return False
    paths.ensure_private_dir(target.parent)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(diff)
    os.replace(tmp, target)
    return True


def load_dirty_diff(diff_hash: str | None) -> str | None:
    if not diff_hash:
        return None
    path = dirty_diff_path(diff_hash)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def record_problem(
    db: sqlite_utils.Database,
    kind: str,
    message: str,
    *,
    path: str | None = None,
    tool: str | None = None,
    level: str = "error",
) -> None:
    """Append to the error log (bounded: the oldest rows go first)."""
    with db.conn:
        db.execute(
            "INSERT INTO ingest_errors (at, tool, path, kind, level, message) VALUES (?, ?, ?, ?, ?, ?)",
            [utcnow_iso(), tool, path, kind, level, message],
        )
        db.execute(
            "DELETE FROM ingest_errors WHERE id <= (SELECT MAX(id) FROM ingest_errors) - ?", [MAX_ERROR_ROWS]
        )


def get_meta(db: sqlite_utils.Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM ingest_meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite_utils.Database, key: str, value: str) -> None:
    db.execute(
        "INSERT INTO ingest_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


@dataclass
class _SessionState:
    pk: int
    dropped: bool


@dataclass
class _Batch:
    """What one transaction changed, for the counters and follow-ups run before it commits."""

    touched: set[int] = field(default_factory=set)
    new_sessions: set[int] = field(default_factory=set)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)
    times: dict[int, tuple[str, str]] = field(default_factory=dict)
    turns_added: Counter[int] = field(default_factory=Counter)
    calls_added: Counter[int] = field(default_factory=Counter)
    user_turn: set[int] = field(default_factory=set)
    redactions: dict[int, int] = field(default_factory=dict)  # session pk -> the file's running total
    last_session: int | None = None


class RecordWriter:
    """Stores source records as upserts by their stable keys. Call inside `with db.conn:`."""

    def __init__(self, db: sqlite_utils.Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._sessions: dict[tuple[str, str], _SessionState] = {}
        self._next_seq: dict[tuple[str, int], int] = {}
        own = [paths.workspaces_dir(), paths.data_dir()]
        self._own_roots = [str(p) for p in own]

    def forget(self) -> None:
        """Drop caches after a rollback: they may name rows that were never committed."""
        self._sessions.clear()
        self._next_seq.clear()

    # --- sessions ---------------------------------------------------------------------------------------

    def _session(self, tool: str, session_id: str, batch: _Batch) -> _SessionState:
        cached = self._sessions.get((tool, session_id))
        if cached is not None:
            return cached
        row = self.db.execute(
            "SELECT id, drop_reason FROM sessions WHERE tool = ? AND session_id = ?", [tool, session_id]
        ).fetchone()
        if row is None:
            now = utcnow_iso()
            cur = self.db.execute(
                "INSERT INTO sessions (tool, session_id, first_seen_at, updated_at) VALUES (?, ?, ?, ?)",
                [tool, session_id, now, now],
            )
            state = _SessionState(int(cur.lastrowid or 0), False)
            batch.new_sessions.add(state.pk)
        else:
            state = _SessionState(int(row[0]), row[1] is not None)
        self._sessions[(tool, session_id)] = state
        return state

    def _is_own_workspace(self, project: str) -> bool:
        norm = os.path.normpath(project)
        return any(norm == root or norm.startswith(root + os.sep) for root in self._own_roots)

    def _apply_session(self, tool: str, info: SessionInfo, batch: _Batch) -> int:
        state = self._session(tool, info.session_id, batch)
        sets: dict[str, Any] = {}
        for name in ("project_path", "git_branch", "model", "entrypoint", "tool_version", "title"):
            value = getattr(info, name)
            if value is not None:
                sets[name] = value
        if info.is_automation is not None:
            sets["is_automation"] = int(info.is_automation)
        pin: dict[str, Any] = {}
        if info.git_commit:
            pin["repo_commit"] = info.git_commit
            pin["repo_pin_source"] = "log"
        if info.extra.get("git_pinned_at"):
            # The source read the repo itself when it first saw the session.
            pin["repo_pin_source"] = "repo"
            pin["pinned_at"] = str(info.extra["git_pinned_at"])
            if info.extra.get("git_dirty") is not None:
                pin["repo_dirty"] = int(bool(info.extra["git_dirty"]))
        if pin:
            # The repo state when the session was FIRST seen: a file read again later does not move it.
            assignments = ", ".join(f"{k} = CASE WHEN pinned_at IS NULL THEN ? ELSE {k} END" for k in pin)
            self.db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*pin.values(), state.pk])
        drop: str | None = None
        if (
            info.extra.get("skillopt_replay")
            or info.extra.get("is_replay")
            or (info.project_path and self._is_own_workspace(info.project_path))
        ):
            sets["is_replay"] = 1
            drop = "replay"
        elif info.is_automation and not self.settings.ingest.keep_automation:
            drop = "automation"
        if sets:
            assignments = ", ".join(f"{k} = ?" for k in sets)
            self.db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*sets.values(), state.pk])
        extra = {k: v for k, v in info.extra.items() if k not in _EXTRA_AS_COLUMNS}
        if extra:
            row = self.db.execute("SELECT extra_json FROM sessions WHERE id = ?", [state.pk]).fetchone()
            merged = {**json.loads(row[0] or "{}"), **extra}
            self.db.execute(
                "UPDATE sessions SET extra_json = ? WHERE id = ?",
                [json.dumps(merged, sort_keys=True), state.pk],
            )
        for ts in (info.started_at, info.ended_at):
            self._note_time(state.pk, ts, batch)
        if drop and not state.dropped:
            self._drop(state, drop)
        return state.pk

    def _drop(self, state: _SessionState, reason: str) -> None:
        """Not user work: keep the row (so it is counted and not re-learned) but none of its content."""
        self.db.execute("DELETE FROM turns WHERE session_pk = ?", [state.pk])
        self.db.execute("DELETE FROM tool_calls WHERE session_pk = ?", [state.pk])
        self.db.execute(
            "UPDATE sessions SET drop_reason = ?, turn_count = 0, tool_call_count = 0, has_user_turn = 0 "
            "WHERE id = ?",
            [reason, state.pk],
        )
        state.dropped = True

    # --- times --------------------------------------------------------------------------------------------

    def _norm_time(self, value: str | None, batch: _Batch) -> str | None:
        if not value:
            return None
        if _CANONICAL.match(value):  # what sources normally hand over: compare as text, no parsing
            if value > self._future_iso:
                batch.problems["future-timestamp"] += 1
            return value
        try:
            dt, had_zone = parse_iso(value)
        except (ValueError, TypeError):
            batch.problems["bad-timestamp"] += 1
            return None
        if not had_zone:
            batch.problems["timestamp-without-zone"] += 1
        if dt > self._now + FUTURE_SLACK:
            batch.problems["future-timestamp"] += 1
        return to_iso(dt)

    def _note_time(self, pk: int, ts: str | None, batch: _Batch) -> None:
        ts = self._norm_time(ts, batch) if ts else None
        if ts is None:
            return
        lo, hi = batch.times.get(pk, (ts, ts))
        batch.times[pk] = (min(lo, ts), max(hi, ts))

    def _seq(self, table: str, pk: int) -> int:
        key = (table, pk)
        nxt = self._next_seq.get(key)
        if nxt is None:
            row = self.db.execute(
                f"SELECT COALESCE(MAX(seq), 0) FROM {table} WHERE session_pk = ?", [pk]
            ).fetchone()
            nxt = int(row[0]) + 1
        self._next_seq[key] = nxt + 1
        return nxt

    # --- records --------------------------------------------------------------------------------------------

    def apply(self, tool: str, records: Sequence[Record], file_id: int | None, batch: _Batch) -> None:
        self._now = utcnow()
        self._future_iso = to_iso(self._now + FUTURE_SLACK)
        db = self.db
        for rec in records:
            if isinstance(rec, SkipRecord):
                batch.skipped[rec.reason] += 1
                problem = _problem_of_skip(rec.reason)
                if problem:
                    batch.problems[problem] += 1
                continue
            if isinstance(rec, SessionInfo):
                pk = self._apply_session(tool, rec, batch)
                batch.touched.add(pk)
                batch.last_session = pk
                self._count_redactions(rec, pk, batch)
                continue
            state = self._session(tool, rec.session_id, batch)
            pk = state.pk
            batch.touched.add(pk)
            batch.last_session = pk
            self._count_redactions(rec, pk, batch)
            if state.dropped:
                continue
            if isinstance(rec, TurnRecord):
                ts = self._norm_time(rec.timestamp, batch)
                self._note_time(pk, ts, batch)
                row = db.execute(
                    "SELECT id FROM turns WHERE session_pk = ? AND key = ?", [pk, rec.key]
                ).fetchone()
                values = [
                    rec.role,
                    rec.text,
                    ts,
                    rec.parent_key,
                    int(rec.is_meta),
                    rec.model,
                    rec.input_tokens,
                    rec.output_tokens,
                    file_id,
                ]
                if row is None:
                    db.execute(
                        "INSERT INTO turns (role, text, timestamp, parent_key, is_meta, model, input_tokens, "
                        "output_tokens, file_id, session_pk, key, seq) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [*values, pk, rec.key, self._seq("turns", pk)],
                    )
                    batch.turns_added[pk] += 1
                else:
                    db.execute(
                        "UPDATE turns SET role = ?, text = ?, timestamp = ?, parent_key = ?, is_meta = ?, "
                        "model = ?, input_tokens = ?, output_tokens = ?, file_id = ? WHERE id = ?",
                        [*values, row[0]],
                    )
                if rec.role == "user" and not rec.is_meta and rec.text.strip():
                    batch.user_turn.add(pk)
            elif isinstance(rec, ToolCallRecord):
                ts = self._norm_time(rec.timestamp, batch)
                self._note_time(pk, ts, batch)
                row = db.execute(
                    "SELECT id FROM tool_calls WHERE session_pk = ? AND key = ?", [pk, rec.key]
                ).fetchone()
                values = [rec.turn_key, rec.name, rec.input_summary, ts, file_id]
                if row is None:
                    db.execute(
                        "INSERT INTO tool_calls (turn_key, name, input_summary, timestamp, file_id, "
                        "session_pk, key, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [*values, pk, rec.key, self._seq("tool_calls", pk)],
                    )
                    batch.calls_added[pk] += 1
                else:
                    db.execute(
                        "UPDATE tool_calls SET turn_key = ?, name = ?, input_summary = ?, timestamp = ?, "
                        "file_id = ? WHERE id = ?",
                        [*values, row[0]],
                    )
            elif isinstance(rec, ToolResultRecord):
                ts = self._norm_time(rec.timestamp, batch)
                self._note_time(pk, ts, batch)
                values = [
                    rec.exit_code,
                    None if rec.is_error is None else int(rec.is_error),
                    rec.output_excerpt,
                    ts,
                ]
                cur = db.execute(
                    "UPDATE tool_calls SET exit_code = ?, is_error = ?, output_excerpt = ?, result_at = ? "
                    "WHERE session_pk = ? AND key = ?",
                    [*values, pk, rec.call_key],
                )
                if cur.rowcount == 0:
                    # The result arrived first (or its call was in a part of the log we never saw).
                    db.execute(
                        "INSERT INTO tool_calls (exit_code, is_error, output_excerpt, result_at, file_id, "
                        "session_pk, key, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [*values, file_id, pk, rec.call_key, self._seq("tool_calls", pk)],
                    )
                    batch.calls_added[pk] += 1

    def _count_redactions(self, rec: Record, pk: int, batch: _Batch) -> None:
        n = getattr(rec, "redactions", None)
        if n is not None:
            batch.redactions[pk] = int(n)  # a running total per file: the latest value is the file's count

    def finish(self, batch: _Batch, file_id: int | None = None) -> None:
        """Fold the batch into the session counters (incrementally: cost independent of session length)."""
        db = self.db
        now = utcnow_iso()
        if file_id is not None:
            for pk in sorted(batch.touched):
                db.execute(
                    "INSERT INTO file_sessions (file_id, session_pk, redactions) VALUES (?, ?, ?) "
                    "ON CONFLICT(file_id, session_pk) DO UPDATE SET redactions = "
                    "MAX(redactions, excluded.redactions)",
                    [file_id, pk, batch.redactions.get(pk, 0)],
                )
        for pk in batch.touched:
            lo, hi = batch.times.get(pk, (None, None))
            db.execute(
                "UPDATE sessions SET "
                "started_at = CASE WHEN ? IS NOT NULL AND (started_at IS NULL OR ? < started_at) "
                "THEN ? ELSE started_at END, "
                "ended_at = CASE WHEN ? IS NOT NULL AND (ended_at IS NULL OR ? > ended_at) "
                "THEN ? ELSE ended_at END, "
                "turn_count = CASE WHEN drop_reason IS NULL THEN turn_count + ? ELSE 0 END, "
                "tool_call_count = CASE WHEN drop_reason IS NULL THEN tool_call_count + ? ELSE 0 END, "
                "has_user_turn = CASE WHEN drop_reason IS NULL AND (has_user_turn = 1 OR ?) "
                "THEN 1 ELSE 0 END, "
                "signals_stale = 1, "
                "redaction_count = (SELECT COALESCE(SUM(redactions), 0) FROM file_sessions f "
                "WHERE f.session_pk = sessions.id), "
                "updated_at = ? WHERE id = ?",
                [
                    lo,
                    lo,
                    lo,
                    hi,
                    hi,
                    hi,
                    batch.turns_added[pk],
                    batch.calls_added[pk],
                    int(pk in batch.user_turn),
                    now,
                    pk,
                ],
            )
        if batch.skipped and batch.last_session is not None:
            row = db.execute(
                "SELECT skipped_json FROM sessions WHERE id = ?", [batch.last_session]
            ).fetchone()
            merged = Counter(json.loads(row[0] or "{}"))
            merged.update(batch.skipped)
            db.execute(
                "UPDATE sessions SET skipped_json = ? WHERE id = ?",
                [json.dumps(dict(sorted(merged.items()))), batch.last_session],
            )


def compute_signals(db: sqlite_utils.Database, session_pks: Sequence[int]) -> None:
    """Recompute derived signals (corrections, failed commands, test results, abrupt end) of sessions.

    Call inside a transaction that also clears the sessions' `signals_stale` flag.
    """
    if not session_pks:
        return
    try:
        from skillopt_daemon.ingest import signals  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return
    update = getattr(signals, "update_sessions", None)
    if update is not None:
        update(db, list(session_pks))


class Pipeline:
    """Reads transcripts of the given sources into the store. One instance per process and database."""

    def __init__(
        self,
        db: sqlite_utils.Database,
        sources: Sequence[Source],
        settings: Settings,
    ) -> None:
        self.db = db
        self.sources = list(sources)
        self.settings = settings
        self.writer = RecordWriter(db, settings)
        self._roots: list[tuple[Path, Source]] = []
        for source in self.sources:
            for root in source.roots():
                self._roots.append((Path(os.path.abspath(root)), source))
        # Fast path for rescans: (device, inode, size, mtime_ns) of each file as last fully read.
        self._seen: dict[str, tuple[int, int, int, int]] = {}
        self._reported: set[tuple[str, str]] = set()
        self._pin_cache: dict[str, tuple[float, RepoPin]] = {}
        self._stale_since: dict[int, float] = {}

    # --- discovery ------------------------------------------------------------------------------------------

    @property
    def roots(self) -> list[Path]:
        return sorted({root for root, _ in self._roots})

    def source_for(self, path: Path) -> Source | None:
        path = Path(os.path.abspath(path))
        for root, source in self._roots:
            if (path == root or root in path.parents) and source.is_transcript(path):
                return source
        return None

    def discover(self) -> list[tuple[Source, Path]]:
        """Every transcript under every root (walk problems are recorded, once per path and kind)."""
        found: list[tuple[Source, Path]] = []
        seen: set[str] = set()
        for root, source in self._roots:
            problems: list[tail.WalkProblem] = []
            if not root.exists():
                continue
            for path in tail.walk_files(root, source.is_transcript, problems):
                key = str(path)
                if key not in seen:
                    seen.add(key)
                    found.append((source, path))
            for p in problems:
                self.report_once(p.kind, p.message, path=p.path, tool=source.tool.value)
        return found

    def needs_read(self, path: Path) -> bool:
        """Cheap check used by rescans: has this file changed since it was last read to the end?"""
        quick = tail.quick_stat(path)
        return quick is None or self._seen.get(str(path)) != quick

    def pending_bytes(self, files: Iterable[tuple[Source, Path]]) -> int:
        offsets = {row[0]: row[1] for row in self.db.execute('SELECT path, "offset" FROM ingest_files')}
        total = 0
        for _, path in files:
            quick = tail.quick_stat(path)
            if quick is not None:
                total += max(0, quick[2] - offsets.get(str(path), 0))
        return total

    def report_once(
        self, kind: str, message: str, *, path: str | None, tool: str | None, level: str = "error"
    ) -> None:
        key = (path or "", kind)
        if key in self._reported:
            return
        self._reported.add(key)
        if path and kind in FILE_PROBLEMS:
            row = self.db.execute("SELECT last_error FROM ingest_files WHERE path = ?", [path]).fetchone()
            if row and row[0] == kind:
                return
        record_problem(self.db, kind, message, path=path, tool=tool, level=level)

    # --- one file ----------------------------------------------------------------------------------------

    def _load(self, path: str) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM ingest_files WHERE path = ?", [path])
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    def _file_error(self, source: Source, path: Path, kind: str, message: str) -> FileOutcome:
        """A file that cannot be read now: remembered on its row (reported once), retried on later scans."""
        key = str(path)
        now = utcnow_iso()
        with self.db.conn:
            row = self._load(key)
            if row is None:
                self.db.execute(
                    "INSERT INTO ingest_files (path, tool, last_error, last_error_at, first_seen_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    [key, source.tool.value, kind, now, now, now],
                )
            elif row["last_error"] != kind:
                self.db.execute(
                    "UPDATE ingest_files SET last_error = ?, last_error_at = ?, updated_at = ? WHERE id = ?",
                    [kind, now, now, row["id"]],
                )
            if row is None or row["last_error"] != kind:
                record_problem(self.db, kind, message, path=key, tool=source.tool.value)
        self._seen.pop(key, None)
        return FileOutcome(key, source.tool.value, error=kind)

    def _open(self, source: Source, path: Path) -> tuple[Any, FileOutcome | None]:
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed by the caller
        except FileNotFoundError:
            self._file_vanished(path)
            return None, FileOutcome(str(path), source.tool.value, change="missing")
        except PermissionError:
            return None, self._file_error(
                source, path, "permission-denied", f"cannot read {path}: permission denied"
            )
        except IsADirectoryError:
            return None, self._file_error(source, path, "not-a-file", f"{path} is a folder, not a transcript")
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None, self._file_error(source, path, "symlink-loop", f"{path} is a symbolic link loop")
            return None, self._file_error(
                source, path, "unreadable", f"cannot read {path}: {exc.strerror or exc}"
            )
        return f, None

    def _file_vanished(self, path: Path) -> None:
        key = str(path)
        self._seen.pop(key, None)
        with self.db.conn:
            self.db.execute("UPDATE ingest_files SET missing = 1 WHERE path = ? AND missing = 0", [key])

    def ingest_file(
        self,
        source: Source,
        path: Path,
        *,
        should_stop: Callable[[], bool] = lambda: False,
        on_bytes: Callable[[int], None] | None = None,
    ) -> FileOutcome:
        """Read what is new in one transcript; each batch commits its records with the offset they end at."""
        f, failed = self._open(source, path)
        if failed is not None:
            return failed
        with f:
            try:
                if source.line_oriented:
                    return self._ingest_lines(source, path, f, should_stop, on_bytes)
                return self._ingest_document(source, path, f, on_bytes)
            except OSError as exc:
                return self._file_error(
                    source, path, "unreadable", f"cannot read {path}: {exc.strerror or exc}"
                )

    def _start(
        self, source: Source, path: Path, f: Any
    ) -> tuple[dict[str, Any] | None, tail.FileIdentity, str]:
        ident = tail.identify(f)
        key = str(path)
        row = self._load(key)
        if row is None:
            moved = self._find_moved(ident)
            if moved is not None:
                # Same inode and bytes under a new name (Codex archiving a rollout): carry the offset over.
                with self.db.conn:
                    self.db.execute(
                        "UPDATE ingest_files SET path = ?, missing = 0 WHERE id = ?", [key, moved["id"]]
                    )
                row = {**moved, "path": key}
        known = None
        if row is not None and row["head_hash"] is not None:
            known = tail.Known(
                row["device"],
                row["inode"],
                row["size"],
                row["mtime_ns"],
                row["head_len"],
                row["head_hash"],
                row["offset"],
            )
        change = tail.compare(f, ident, known)
        if change in (tail.TRUNCATED, tail.REPLACED):
            self.report_once(
                change,
                f"{path} was {change} since it was last read; reading it again from the start",
                path=key,
                tool=source.tool.value,
                level="warning",
            )
            self._reported.discard((key, change))
        return row, ident, change

    def _find_moved(self, ident: tail.FileIdentity) -> dict[str, Any] | None:
        cur = self.db.execute(
            "SELECT * FROM ingest_files WHERE device = ? AND inode = ? AND head_hash IS NOT NULL",
            [ident.device, ident.inode],
        )
        cols = [d[0] for d in cur.description]
        for values in cur.fetchall():
            row = dict(zip(cols, values, strict=True))
            if not os.path.exists(row["path"]) and ident.size >= row["offset"]:
                return row
        return None

    def _create_row(self, source: Source, path: Path) -> int:
        now = utcnow_iso()
        cur = self.db.execute(
            "INSERT INTO ingest_files (path, tool, first_seen_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET tool = excluded.tool RETURNING id",
            [str(path), source.tool.value, now, now],
        )
        return int(cur.fetchone()[0])

    def _check_versions(self, source: Source, path: Path, records: Sequence[Record]) -> None:
        """A newer tool version than the reader was checked against: say so once, keep reading."""
        for rec in records:
            if (
                isinstance(rec, SessionInfo)
                and rec.tool_version
                and _newer(rec.tool_version, source.known_version)
            ):
                key = f"seen_version:{source.tool.value}:{rec.tool_version}"
                if get_meta(self.db, key) is None:
                    set_meta(self.db, key, utcnow_iso())
                    self.db.execute(
                        "INSERT INTO ingest_errors (at, tool, path, kind, level, message) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        [
                            utcnow_iso(),
                            source.tool.value,
                            str(path),
                            "newer-version",
                            "warning",
                            f"{source.tool.value} {rec.tool_version} is newer than the "
                            f"{source.known_version} this reader was checked against; "
                            "unknown records are skipped and counted",
                        ],
                    )

    def _save_file(
        self,
        row_id: int,
        source: Source,
        path: Path,
        ident: tail.FileIdentity,
        offset: int,
        in_long_line: bool,
        state: dict[str, Any],
        lines: int,
        records: int,
        batch: _Batch,
    ) -> None:
        now = utcnow_iso()
        values = {
            "tool": source.tool.value,
            "device": ident.device,
            "inode": ident.inode,
            "size": ident.size,
            "mtime_ns": ident.mtime_ns,
            "head_len": ident.head_len,
            "head_hash": ident.head_hash,
            "offset": offset,
            "in_long_line": int(in_long_line),
            "state_json": json.dumps(state, sort_keys=True, default=str),
            "missing": 0,
            "last_error": None,
            "updated_at": now,
        }
        if batch.last_session is not None:
            values["session_pk"] = batch.last_session
        assignments = ", ".join(f"{_q(k)} = ?" for k in values)
        self.db.execute(
            f"UPDATE ingest_files SET {assignments}, lines = lines + ?, records = records + ? WHERE id = ?",
            [*values.values(), lines, records, row_id],
        )
        if batch.skipped:
            cur_row = self.db.execute(
                "SELECT skipped_json FROM ingest_files WHERE id = ?", [row_id]
            ).fetchone()
            merged = Counter(json.loads(cur_row[0] or "{}"))
            merged.update(batch.skipped)
            self.db.execute(
                "UPDATE ingest_files SET skipped_json = ? WHERE id = ?",
                [json.dumps(dict(sorted(merged.items()))), row_id],
            )
        if batch.problems:
            self.db.execute(
                "DELETE FROM ingest_errors WHERE id <= (SELECT MAX(id) FROM ingest_errors) - ?",
                [MAX_ERROR_ROWS],
            )
        for kind, n in sorted(batch.problems.items()):
            self.db.execute(
                "INSERT INTO ingest_errors (at, tool, path, kind, level, message) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    now,
                    source.tool.value,
                    str(path),
                    kind,
                    "warning" if kind in _WARNINGS else "error",
                    _explain(kind, n),
                ],
            )

    def _ingest_lines(
        self,
        source: Source,
        path: Path,
        f: Any,
        should_stop: Callable[[], bool],
        on_bytes: Callable[[int], None] | None,
    ) -> FileOutcome:
        row, ident, change = self._start(source, path, f)
        outcome = FileOutcome(str(path), source.tool.value, change=change)
        if change == tail.UNCHANGED:
            self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
            return outcome
        row_id = row["id"] if row else None
        if change in (tail.NEW, tail.TRUNCATED, tail.REPLACED):
            offset, in_long, state = 0, False, {}
        else:
            offset, in_long = int(row["offset"]), bool(row["in_long_line"])  # type: ignore[index]
            state = json.loads(row["state_json"] or "{}")  # type: ignore[index]
        committed = int(row["offset"]) if row else 0
        cap = self.settings.ingest.max_line_bytes
        batch_lines = max(1, self.settings.ingest.batch_lines)
        while True:
            lines_batch = tail.read_lines(
                f, offset, in_long_line=in_long, max_lines=batch_lines, max_line_bytes=cap
            )
            ctx = source.context(path, json.loads(json.dumps(state, default=str)))
            batch = _Batch()
            records: list[Record] = []
            for _at, line in lines_batch.lines:
                if not line.strip():
                    continue
                try:
                    records.extend(source.parse_line(ctx, line))
                except Exception as exc:  # a parser bug must not stop the daemon: skip the line, say so
                    records.append(SkipRecord("parser-error", type(exc).__name__))
            for _start_at, skipped in lines_batch.oversized:
                batch.problems["line-too-long"] += 1
                records.append(SkipRecord("line-too-long", f"{skipped} bytes"))
            # Identity as of what we read: a file still growing is compared by its head, not its size.
            ident = tail.FileIdentity(
                ident.device,
                ident.inode,
                max(ident.size, lines_batch.end),
                ident.mtime_ns,
                ident.head_len,
                ident.head_hash,
            )
            if (
                lines_batch.end == offset
                and not records
                and row is not None
                and (row["device"], row["inode"]) == (ident.device, ident.inode)
                and change != tail.NEW
            ):
                break  # only a partial last line is new: it waits until it is complete
            try:
                with self.db.conn:
                    if row_id is None:
                        row_id = self._create_row(source, path)
                    stored = self.db.execute(
                        'SELECT "offset" FROM ingest_files WHERE id = ?', [row_id]
                    ).fetchone()
                    if int(stored[0]) != committed:
                        raise _Overtaken  # another process (`skillopt ingest` beside the daemon) was first
                    self.writer.apply(source.tool.value, records, row_id, batch)
                    self._check_versions(source, path, records)
                    self._save_file(
                        row_id,
                        source,
                        path,
                        ident,
                        lines_batch.end,
                        lines_batch.in_long_line,
                        ctx.state,
                        len(lines_batch.lines),
                        len(records),
                        batch,
                    )
                    self.writer.finish(batch, row_id)
            except _Overtaken:
                self.writer.forget()
                self._seen.pop(str(path), None)
                outcome.done = False
                return outcome
            except BaseException:
                self.writer.forget()
                raise
            committed = lines_batch.end
            row = row or {"device": ident.device, "inode": ident.inode}
            self._after_commit(batch)
            if on_bytes:
                on_bytes(lines_batch.end - offset)
            outcome.lines += len(lines_batch.lines)
            outcome.records += len(records)
            outcome.bytes_read += lines_batch.end - offset
            offset, in_long, state = lines_batch.end, lines_batch.in_long_line, ctx.state
            change = tail.GREW
            if lines_batch.eof:
                final = tail.identify(f)
                self._seen[str(path)] = (final.device, final.inode, final.size, final.mtime_ns)
                if final.size > offset and not lines_batch.in_long_line:
                    self._seen.pop(str(path), None)  # a partial last line: look again on the next event
                break
            if should_stop():
                outcome.done = False
                break
        return outcome

    def _ingest_document(
        self, source: Source, path: Path, f: Any, on_bytes: Callable[[int], None] | None
    ) -> FileOutcome:
        row, ident, change = self._start(source, path, f)
        outcome = FileOutcome(str(path), source.tool.value, change=change)
        if (
            row is not None
            and change in (tail.UNCHANGED,)
            or (
                row is not None
                and row["size"] == ident.size
                and row["mtime_ns"] == ident.mtime_ns
                and row["offset"] == ident.size
            )
        ):
            self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
            outcome.change = tail.UNCHANGED
            return outcome
        if ident.size > self.settings.ingest.max_document_bytes:
            return self._file_error(
                source,
                path,
                "too-large",
                f"{path} is {ident.size} bytes, over ingest.max_document_bytes; skipped",
            )
        f.seek(0)
        data = f.read()
        ctx = source.context(path, {})
        batch = _Batch()
        try:
            records = list(source.parse_file(ctx, data))
        except Exception as exc:
            records = [SkipRecord("parser-error", type(exc).__name__)]
        row_id = row["id"] if row else None
        try:
            with self.db.conn:
                if row_id is not None:
                    # The document was rewritten: what it said before is replaced by what it says now.
                    for pk in [
                        r[0]
                        for r in self.db.execute(
                            "SELECT DISTINCT session_pk FROM turns WHERE file_id = ?", [row_id]
                        )
                    ]:
                        batch.touched.add(pk)
                    self.db.execute("DELETE FROM turns WHERE file_id = ?", [row_id])
                    self.db.execute("DELETE FROM tool_calls WHERE file_id = ?", [row_id])
                    self.db.execute(
                        "UPDATE sessions SET "
                        "turn_count = (SELECT COUNT(*) FROM turns t WHERE t.session_pk = sessions.id), "
                        "tool_call_count = "
                        "(SELECT COUNT(*) FROM tool_calls c WHERE c.session_pk = sessions.id) "
                        "WHERE id IN (SELECT value FROM json_each(?))",
                        [json.dumps(sorted(batch.touched))],
                    )
                    self.db.execute(
                        "UPDATE ingest_files SET skipped_json = '{}', lines = 0, records = 0 WHERE id = ?",
                        [row_id],
                    )
                    self.writer.forget()
                if row_id is None:
                    row_id = self._create_row(source, path)
                self.writer.apply(source.tool.value, records, row_id, batch)
                self._save_file(
                    row_id, source, path, ident, ident.size, False, ctx.state, 1, len(records), batch
                )
                self.writer.finish(batch, row_id)
        except BaseException:
            self.writer.forget()
            raise
        self._after_commit(batch)
        if on_bytes:
            on_bytes(ident.size)
        self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
        outcome.records = len(records)
        outcome.bytes_read = ident.size
        return outcome

    # --- after a commit ----------------------------------------------------------------------------------

    def _after_commit(self, batch: _Batch) -> None:
        if batch.new_sessions:
            self.pin_sessions(sorted(batch.new_sessions))

    def pin_sessions(self, pks: Sequence[int] | None = None) -> int:
        """Record the repo state of sessions not pinned yet (all of them when `pks` is None).

        Runs outside the ingest transaction (git can be slow); a crash before it runs is caught up on the
        next start by calling this with None.
        """
        if pks is None:
            rows = self.db.execute(
                "SELECT id, project_path, repo_commit FROM sessions WHERE pinned_at IS NULL "
                "AND drop_reason IS NULL AND project_path IS NOT NULL"
            ).fetchall()
        else:
            rows = self.db.execute(
                "SELECT id, project_path, repo_commit FROM sessions WHERE pinned_at IS NULL "
                "AND drop_reason IS NULL AND project_path IS NOT NULL "
                "AND id IN (SELECT value FROM json_each(?))",
                [json.dumps(list(pks))],
            ).fetchall()
        for pk, project, logged_commit in rows:
            pin = self._pin(project)
            now = utcnow_iso()
            with self.db.conn:
                if logged_commit:
                    # The log says where the session started; the tree's dirtiness only means something if
                    # the repo is still at that commit.
                    same = pin.commit == logged_commit
                    self.db.execute(
                        "UPDATE sessions SET repo_dirty = ?, repo_diff_hash = ?, pinned_at = ?, "
                        "pin_error = ? WHERE id = ?",
                        [
                            int(pin.dirty) if same and pin.dirty is not None else None,
                            pin.diff_hash if same else None,
                            now,
                            pin.error,
                            pk,
                        ],
                    )
                else:
                    self.db.execute(
                        "UPDATE sessions SET repo_commit = ?, repo_dirty = ?, repo_diff_hash = ?, "
                        "repo_pin_source = ?, pinned_at = ?, pin_error = ? WHERE id = ?",
                        [
                            pin.commit,
                            None if pin.dirty is None else int(pin.dirty),
                            pin.diff_hash,
                            "repo" if pin.commit else None,
                            now,
                            pin.error,
                            pk,
                        ],
                    )
        return len(rows)

    def _pin(self, project: str) -> RepoPin:
        import time

        cached = self._pin_cache.get(project)
        if cached and time.monotonic() - cached[0] < 5.0:
            return cached[1]
        pin = pin_repo(project)
        self._pin_cache[project] = (time.monotonic(), pin)
        return pin

    # --- derived signals ----------------------------------------------------------------------------------

    @property
    def stale_pending(self) -> bool:
        """Sessions whose signals wait for them to go quiet (as far as this process has seen)."""
        return bool(self._stale_since)

    def refresh_signals(self, *, quiet_s: float = 0.0, max_delay_s: float = 30.0) -> int:
        """Recompute the signals of sessions changed since their last computation.

        Signals look at a whole session, so computing them after every batch would make one appended line
        cost as much as the session is long. Batches only mark a session stale (in their own transaction,
        so a crash never forgets one); this recomputes a stale session once it has been quiet for
        `quiet_s`, or after `max_delay_s` at the latest while it keeps growing.
        """
        import time

        rows = self.db.execute("SELECT id, updated_at FROM sessions WHERE signals_stale = 1").fetchall()
        if not rows:
            self._stale_since.clear()
            return 0
        now = time.monotonic()
        quiet_before = to_iso(utcnow() - timedelta(seconds=quiet_s))
        due = []
        for pk, updated_at in rows:
            first = self._stale_since.setdefault(pk, now)
            if quiet_s <= 0 or (updated_at or "") <= quiet_before or now - first >= max_delay_s:
                due.append(pk)
        for pk in due:
            with self.db.conn:
                compute_signals(self.db, [pk])
                self.db.execute("UPDATE sessions SET signals_stale = 0 WHERE id = ?", [pk])
            self._stale_since.pop(pk, None)
        return len(due)

    # --- many files -------------------------------------------------------------------------------------

    def ingest_paths(
        self,
        files: Sequence[tuple[Source, Path]],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        on_bytes: Callable[[int], None] | None = None,
        signals: bool = True,
        between: Callable[[], None] | None = None,
    ) -> list[FileOutcome]:
        """Ingest files in order; with `signals`, bring every touched session's signals up to date too.

        `between` runs before each file (the daemon reads hook notes there during a long backfill).
        """
        out: list[FileOutcome] = []
        for source, path in files:
            if should_stop():
                break
            if between is not None:
                between()
            try:
                out.append(self.ingest_file(source, path, should_stop=should_stop, on_bytes=on_bytes))
            except sqlite3.OperationalError:
                raise  # the store itself is unusable right now (locked, disk full): the caller backs off
            except Exception as exc:  # a bug on one file must not stop the others: report it, go on
                # An exception's text may quote what it choked on: redacted like any transcript text.
                from skillopt_daemon.ingest.redact import redact

                trace, _ = redact("".join(traceback.format_exception(exc)))
                log.error("ingesting %s failed:\n%s", path, trace)
                self.writer.forget()
                self._seen.pop(str(path), None)
                with contextlib.suppress(Exception):
                    record_problem(
                        self.db,
                        "internal-error",
                        redact(f"ingesting {path} failed: {type(exc).__name__}: {exc}")[0][:500],
                        path=str(path),
                        tool=source.tool.value,
                    )
                out.append(FileOutcome(str(path), source.tool.value, error="internal-error"))
        if out:
            with self.db.conn:
                set_meta(self.db, "last_ingest_at", utcnow_iso())
        if signals and not should_stop():
            self.refresh_signals()
        return out


_EXTRA_AS_COLUMNS = {"is_replay", "skillopt_replay", "git_dirty", "git_pinned_at", "redactions"}


def _problem_of_skip(reason: str) -> str | None:
    """Skips that point at bad input (shown in `skillopt status`), as opposed to records not needed."""
    low = reason.lower()
    if "utf-8" in low or "utf8" in low:
        return "invalid-utf8"
    if "without zone" in low:
        return "timestamp-without-zone"
    if "future" in low:
        return "future-timestamp"
    if "unreadable timestamp" in low:
        return "bad-timestamp"
    if "reader error" in low or "parser-error" in low:
        return "parser-error"
    if "invalid json" in low:
        return "invalid-json"
    return None


_WARNINGS = {"timestamp-without-zone", "future-timestamp", "truncated", "replaced", "newer-version"}


def _explain(kind: str, n: int) -> str:
    what = {
        "invalid-utf8": "lines with invalid UTF-8 (undecodable bytes replaced)",
        "parser-error": "lines the reader failed on (skipped)",
        "line-too-long": "lines longer than ingest.max_line_bytes (skipped without being loaded)",
        "timestamp-without-zone": "timestamps without a time zone (taken as UTC)",
        "future-timestamp": "timestamps in the future (kept as written)",
        "bad-timestamp": "timestamps that could not be read (ignored)",
        "invalid-json": "lines that are not JSON (skipped)",
    }.get(kind, kind)
    return f"{n} {what}"


def _newer(seen: str, known: str) -> bool:
    def parts(v: str) -> tuple[int, ...]:
        out = []
        for piece in v.split("."):
            digits = "".join(ch for ch in piece if ch.isdigit())
            out.append(int(digits) if digits else 0)
        return tuple(out)

    try:
        return bool(known) and parts(seen) > parts(known)
    except ValueError:
        return False


def _q(name: str) -> str:
    return f'"{name}"'


def summarize(outcomes: Sequence[FileOutcome]) -> dict[str, int]:
    return {
        "files": len(outcomes),
        "read": sum(1 for o in outcomes if o.bytes_read),
        "lines": sum(o.lines for o in outcomes),
        "records": sum(o.records for o in outcomes),
        "bytes": sum(o.bytes_read for o in outcomes),
        "errors": sum(1 for o in outcomes if o.error),
    }


# --- status -------------------------------------------------------------------------------------------------


def status_section(db: sqlite_utils.Database) -> dict[str, Any]:
    """The sessions / ingest part of `skillopt status`: sessions per tool, last ingest, current problems."""
    from skillopt_daemon.core.timeutil import humanize_age

    if "sessions" not in db.table_names():
        return {"sessions": {}, "lines": ["no sessions ingested yet"]}
    per_tool = dict(
        db.execute(
            "SELECT tool, COUNT(*) FROM sessions WHERE drop_reason IS NULL AND has_user_turn = 1 "
            "GROUP BY tool ORDER BY tool"
        ).fetchall()
    )
    dropped = dict(
        db.execute(
            "SELECT drop_reason, COUNT(*) FROM sessions WHERE drop_reason IS NOT NULL GROUP BY 1"
        ).fetchall()
    )
    no_user = db.execute(
        "SELECT COUNT(*) FROM sessions WHERE drop_reason IS NULL AND has_user_turn = 0"
    ).fetchone()[0]
    automation = db.execute(
        "SELECT COUNT(*) FROM sessions WHERE drop_reason IS NULL AND has_user_turn = 1 AND is_automation = 1"
    ).fetchone()[0]
    redacted = db.execute("SELECT COALESCE(SUM(redaction_count), 0) FROM sessions").fetchone()[0]
    files = db.execute('SELECT COUNT(*), COALESCE(SUM("offset"), 0) FROM ingest_files').fetchone()
    failing = [
        {"path": p, "problem": k, "since": at}
        for p, k, at in db.execute(
            "SELECT path, last_error, last_error_at FROM ingest_files "
            "WHERE last_error IS NOT NULL ORDER BY path"
        ).fetchall()
    ]
    since = to_iso(utcnow() - timedelta(days=1))
    recent = dict(
        db.execute(
            "SELECT kind, COUNT(*) FROM ingest_errors WHERE at >= ? GROUP BY kind ORDER BY kind", [since]
        ).fetchall()
    )
    latest = db.execute(
        "SELECT at, kind, level, path, message FROM ingest_errors ORDER BY id DESC LIMIT 1"
    ).fetchone()
    last_ingest = get_meta(db, "last_ingest_at")
    total = sum(per_tool.values())
    lines = [
        f"{total} session{'' if total == 1 else 's'}"
        + (" (" + ", ".join(f"{n} {tool}" for tool, n in per_tool.items()) + ")" if per_tool else "")
        + (f", {automation} flagged as automation" if automation else "")
        + f"; last ingest {humanize_age(last_ingest)}"
    ]
    not_counted = [f"{n} {_DROP_WORDS.get(k, k)}" for k, n in sorted(dropped.items())]
    if no_user:
        not_counted.append(f"{no_user} without a user turn")
    if not_counted:
        lines.append("not user work (not listed): " + ", ".join(not_counted))
    lines.append(
        f"{files[0]} transcripts followed ({files[1] / 1e6:.1f} MB read), {redacted} secrets redacted"
    )
    if failing:
        lines.append(
            f"{len(failing)} transcripts cannot be read now: "
            + ", ".join(f"{f['path']} ({f['problem']})" for f in failing[:3])
            + (" …" if len(failing) > 3 else "")
        )
    if recent:
        lines.append("problems in the last 24h: " + ", ".join(f"{n} {k}" for k, n in recent.items()))
        if latest:
            lines.append(f"latest: {latest[4]}")
    return {
        "sessions": per_tool,
        "dropped": {**dropped, "no_user_turn": no_user},
        "automation_flagged": automation,
        "redactions": redacted,
        "files": files[0],
        "bytes_read": files[1],
        "failing_files": failing,
        "errors_24h": recent,
        "latest_error": dict(zip(("at", "kind", "level", "path", "message"), latest, strict=True))
        if latest
        else None,
        "last_ingest_at": last_ingest,
        "backfill_done_at": get_meta(db, "backfill_done_at"),
        "lines": lines,
    }


_DROP_WORDS = {"replay": "skillopt replays", "automation": "automation runs"}

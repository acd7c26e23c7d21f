"""The ingest pipeline: transcript bytes → source records → rows, with the file offset in the same commit.

`Pipeline.ingest_file` reads one transcript from where it stopped, hands complete lines to the tool's
source, and stores the records (through `writer.RecordWriter`) together with the new offset and the
parser's state in ONE transaction. A crash (even `kill -9`) therefore leaves the store at a batch boundary:
on restart the same bytes are read again from the committed offset, and nothing is lost or stored twice.
Rows are upserts by the sources' stable keys, so re-reading a file after it was truncated or replaced does
not duplicate anything either.

Faults (unreadable files, symlink loops, invalid UTF-8, over-long lines, timestamps without a zone or in
the future, a parser that raised) never stop the pipeline: they are recorded in `ingest_errors` (once per
file and kind while the condition lasts, see `problems`) and shown by `skillopt status`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import sqlite3
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

import sqlite_utils

from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store.db import corrupt
from skillopt_daemon.core.timeutil import to_iso, utcnow, utcnow_iso
from skillopt_daemon.ingest import fts, pinning, signals, tail
from skillopt_daemon.ingest.meta import get_meta, set_meta
from skillopt_daemon.ingest.problems import FILE_PROBLEMS, record_counts, record_problem
from skillopt_daemon.ingest.redact import redact
from skillopt_daemon.ingest.sources import all_sources, redactor_for
from skillopt_daemon.ingest.sources.base import (
    FileBusy,
    FileUnusable,
    Record,
    SessionInfo,
    SkipRecord,
    Source,
)
from skillopt_daemon.ingest.transactions import GROUP_MIN_FILES, BatchTransactions
from skillopt_daemon.ingest.writer import Batch, RecordWriter, get_row, merge_counts, update_row
from skillopt_lib.agents import AgentTool

log = logging.getLogger("skillopt.ingest")


def load_sources(settings: Settings, tools: Iterable[AgentTool] | None = None) -> list[Source]:
    """The enabled sources (optionally only `tools`), configured with the tools' homes from settings."""
    wanted = set(tools) if tools is not None else None
    return [
        source
        for source in all_sources(settings)
        if (wanted is None or source.tool in wanted) and settings.tool(source.tool).enabled
    ]


# A file's outcome when its tool held it locked: left for the next rescan.
LOCKED = "locked"
# In a document's stored state: its companions' identity at its last read (`Source.companions`), so a
# restarted process sees a log that changed while it was down.
COMPANIONS_KEY = "_companions"


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
class FileRow:
    """One `ingest_files` row: where a transcript was read to, and what it was then."""

    id: int
    path: str
    tool: str
    device: int | None
    inode: int | None
    size: int
    mtime_ns: int
    head_len: int
    head_hash: str | None
    offset: int
    in_long_line: int
    state_json: str
    session_pk: int | None
    lines: int
    records: int
    skipped_json: str
    missing: int
    last_error: str | None
    last_error_at: str | None
    first_seen_at: str
    updated_at: str

    @classmethod
    def of(cls, row: dict[str, Any]) -> FileRow:
        return cls(**{f.name: row[f.name] for f in dataclasses.fields(cls)})

    def known(self) -> tail.Known | None:
        if self.head_hash is None:
            return None
        return tail.Known(
            self.device, self.inode, self.size, self.mtime_ns, self.head_len, self.head_hash, self.offset
        )


def summarize(outcomes: Sequence[FileOutcome]) -> dict[str, int]:
    return {
        "files": len(outcomes),
        "read": sum(1 for o in outcomes if o.bytes_read),
        "lines": sum(o.lines for o in outcomes),
        "records": sum(o.records for o in outcomes),
        "bytes": sum(o.bytes_read for o in outcomes),
        "errors": sum(1 for o in outcomes if o.error),
        "locked": sum(1 for o in outcomes if o.change == LOCKED),
    }


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


class Pipeline:
    """Reads transcripts of the given sources into the store. One instance per process and database."""

    def __init__(self, db: sqlite_utils.Database, sources: Sequence[Source], settings: Settings) -> None:
        self.db = db
        self.sources = list(sources)
        self.settings = settings
        self.writer = RecordWriter(db, settings)
        self.redactor = redactor_for(settings)  # for dirty diffs, with the user's own patterns
        self._roots: list[tuple[Path, Source]] = []
        for source in self.sources:
            for root in source.roots():
                self._roots.append((Path(os.path.abspath(root)), source))
        # Fast path for rescans: (device, inode, size, mtime_ns) of each file as last fully read.
        self._seen: dict[str, tuple[int, int, int, int]] = {}
        # A document's companions (`Source.companions`) as they were at its last read, and which document
        # each companion belongs to (for the watcher, which hears of the companion's change).
        self._seen_companions: dict[str, list[list[int]]] = {}
        self._companion_of: dict[str, tuple[Source, Path]] = {}
        self._reported: set[tuple[str, str]] = set()
        self._stale_since: dict[int, float] = {}
        self._bulk_indexing = False  # this process suspended the search index's triggers for a backfill
        # New sessions whose repo state is read once the batch that made them is committed.
        self._pins_due: set[int] = set()
        self.transactions = BatchTransactions(
            db.conn, self._pin_due_sessions, group_seconds=settings.ingest.group_commit_s
        )

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

    def document_for(self, path: Path) -> tuple[Source, Path] | None:
        """The document a companion file belongs to (one `discover` or a read has met), or None."""
        return self._companion_of.get(os.path.abspath(path))

    def _companion_stamp(self, source: Source, path: Path) -> list[list[int]]:
        """Identity (inode, size, mtime_ns) of each of the document's companions; [] for one that is absent."""
        if source.line_oriented:
            return []
        stamp: list[list[int]] = []
        for companion in source.companions(path):
            self._companion_of[os.path.abspath(companion)] = (source, path)
            quick = tail.quick_stat(companion)
            stamp.append([] if quick is None else [quick[1], quick[2], quick[3]])
        return stamp

    def discover(self) -> list[tuple[Source, Path]]:
        """Every transcript under every root (walk problems are recorded, once per path and kind)."""
        found: list[tuple[Source, Path]] = []
        seen: set[str] = set()
        for root, source in self._roots:
            problems: list[tail.WalkProblem] = []
            if not root.exists():
                continue
            for path in tail.walk_files(root, source.is_transcript, problems):
                quick = tail.quick_stat(path)
                ident = f"{quick[0]}:{quick[1]}" if quick else str(path)  # one file, however reached
                if str(path) not in seen and ident not in seen:
                    seen.update((str(path), ident))
                    found.append((source, path))
                    if not source.line_oriented:
                        self._companion_stamp(source, path)  # so the watcher knows whose they are
            for p in problems:
                self.report_once(p.kind, p.message, path=p.path, tool=source.tool.value)
        return found

    def needs_read(self, path: Path) -> bool:
        """Cheap check used by rescans: has this file, or a companion of it, changed since it was last read
        to the end?"""
        quick = tail.quick_stat(path)
        if quick is None or self._seen.get(str(path)) != quick:
            return True
        source = self.source_for(path)
        if source is None or source.line_oriented:
            return False
        return self._seen_companions.get(str(path), []) != self._companion_stamp(source, path)

    def pending_bytes(self, files: Iterable[tuple[Source, Path]]) -> int:
        offsets = {
            r["path"]: r["offset"] for r in self.db.table("ingest_files").rows_where(select='path, "offset"')
        }
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
            row = self._load(path)
            if row is not None and row.last_error == kind:
                return
        record_problem(self.db, kind, message, path=path, tool=tool, level=level)

    # --- file rows -------------------------------------------------------------------------------------------

    def _load(self, path: str) -> FileRow | None:
        rows = list(self.db.table("ingest_files").rows_where("path = ?", [path]))
        return FileRow.of(rows[0]) if rows else None

    def _create_row(self, source: Source, path: Path) -> int:
        now = utcnow_iso()
        cur = self.db.execute(
            "INSERT INTO ingest_files (path, tool, first_seen_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET tool = excluded.tool RETURNING id",
            [str(path), source.tool.value, now, now],
        )
        return int(cur.fetchone()[0])

    def _file_error(self, source: Source, path: Path, kind: str, message: str) -> FileOutcome:
        """A file that cannot be read now: remembered on its row (reported once), retried on later scans."""
        key = str(path)
        now = utcnow_iso()
        with self.db.conn:
            row = self._load(key)
            changed = {"last_error": kind, "last_error_at": now, "updated_at": now}
            if row is None:
                self.db.table("ingest_files").insert(
                    {"path": key, "tool": source.tool.value, "first_seen_at": now, **changed}
                )
            elif row.last_error != kind:
                self.db.table("ingest_files").update(row.id, changed)
            if row is None or row.last_error != kind:
                record_problem(self.db, kind, message, path=key, tool=source.tool.value)
        self._seen.pop(key, None)
        return FileOutcome(key, source.tool.value, error=kind)

    def _file_vanished(self, path: Path) -> None:
        self._seen.pop(str(path), None)
        with self.db.conn:
            self.db.execute("UPDATE ingest_files SET missing = 1 WHERE path = ? AND missing = 0", [str(path)])

    def _find_alias(self, path: Path, ident: tail.FileIdentity) -> FileRow | None:
        """The row of this very file under another path that still leads to it, if there is one."""
        for values in self.db.table("ingest_files").rows_where(
            "device = ? AND inode = ? AND path != ? AND missing = 0", [ident.device, ident.inode, str(path)]
        ):
            quick = tail.quick_stat(Path(values["path"]))
            if quick is not None and quick[:2] == (ident.device, ident.inode):
                return FileRow.of(values)
        return None

    def _find_moved(self, ident: tail.FileIdentity) -> FileRow | None:
        for values in self.db.table("ingest_files").rows_where(
            "device = ? AND inode = ? AND head_hash IS NOT NULL", [ident.device, ident.inode]
        ):
            row = FileRow.of(values)
            if not os.path.exists(row.path) and ident.size >= row.offset:
                return row
        return None

    def _save_file(
        self,
        row_id: int,
        source: Source,
        path: Path,
        ident: tail.FileIdentity,
        read: tail.LineBatch | None,
        state: dict[str, Any],
        records: int,
        batch: Batch,
    ) -> None:
        """Store where the file was read to (`read.end`, or its whole size for a document) and its state."""
        values: dict[str, Any] = {
            "tool": source.tool.value,
            "device": ident.device,
            "inode": ident.inode,
            "size": ident.size,
            "mtime_ns": ident.mtime_ns,
            "head_len": ident.head_len,
            "head_hash": ident.head_hash,
            "offset": ident.size if read is None else read.end,
            "in_long_line": int(read is not None and read.in_long_line),
            "state_json": json.dumps(state, sort_keys=True, default=str),
            "missing": 0,
            "last_error": None,
            "updated_at": utcnow_iso(),
        }
        if batch.last_session is not None:
            values["session_pk"] = batch.last_session
        old = get_row(self.db, "ingest_files", row_id)
        if read is not None and read.start == 0 and (old["lines"] or old["records"]):
            # Read again from its start (truncated or replaced): the counts start over, and what the file's
            # earlier reading added to its session's skip counts is taken back before this batch adds its own.
            self._take_back_skips(old["session_pk"], old["skipped_json"])
            old = {**old, "lines": 0, "records": 0, "skipped_json": "{}"}
            values["skipped_json"] = "{}"
        values["lines"] = old["lines"] + (1 if read is None else len(read.lines))
        values["records"] = old["records"] + records
        if batch.skipped:
            values["skipped_json"] = merge_counts(old["skipped_json"], batch.skipped)
        update_row(self.db, "ingest_files", row_id, values)
        record_counts(self.db, batch.problems, path=str(path), tool=source.tool.value)

    def _take_back_skips(self, session_pk: int | None, skipped_json: str | None) -> None:
        gone = Counter(json.loads(skipped_json or "{}"))
        if session_pk is None or not gone:
            return
        row = self.db.execute("SELECT skipped_json FROM sessions WHERE id = ?", [session_pk]).fetchone()
        if row is None:
            return
        left = Counter(json.loads(row[0] or "{}"))
        left.subtract(gone)
        kept = {k: n for k, n in sorted(left.items()) if n > 0}
        self.db.execute("UPDATE sessions SET skipped_json = ? WHERE id = ?", [json.dumps(kept), session_pk])

    def _check_versions(self, source: Source, path: Path, records: Sequence[Record]) -> None:
        """A newer tool version than the reader was checked against: say so once, keep reading."""
        for rec in records:
            if not (isinstance(rec, SessionInfo) and rec.tool_version):
                continue
            if not _newer(rec.tool_version, source.known_version):
                continue
            key = f"seen_version:{source.tool.value}:{rec.tool_version}"
            if get_meta(self.db, key) is None:
                set_meta(self.db, key, utcnow_iso())
                record_problem(
                    self.db,
                    "newer-version",
                    f"{source.tool.value} {rec.tool_version} is newer than the {source.known_version} this "
                    "reader was checked against; unknown records are skipped and counted",
                    path=str(path),
                    tool=source.tool.value,
                    level="warning",
                )

    # --- one file ----------------------------------------------------------------------------------------

    def _open(self, source: Source, path: Path) -> tuple[BinaryIO | None, FileOutcome | None]:
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
        if f is None:
            assert failed is not None
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
        self, source: Source, path: Path, f: BinaryIO
    ) -> tuple[FileRow | None, tail.FileIdentity, str]:
        ident = tail.identify(f)
        key = str(path)
        row = self._load(key)
        if row is None and self._find_alias(path, ident) is not None:
            return None, ident, tail.ALIAS
        if row is None:
            moved = self._find_moved(ident)
            if moved is not None:
                # Same inode and bytes under a new name (Codex archiving a rollout): carry the offset over.
                with self.db.conn:
                    self.db.table("ingest_files").update(moved.id, {"path": key, "missing": 0})
                row = dataclasses.replace(moved, path=key, missing=0)
        known = row.known() if row is not None else None
        change = tail.compare(f, ident, known, in_place=not source.line_oriented)
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

    def _parse_batch(
        self, source: Source, path: Path, read: tail.LineBatch, state: dict[str, Any]
    ) -> tuple[list[Record], dict[str, Any], Batch]:
        """Records of one batch of lines; a parser bug skips its line (counted), it never stops the file."""
        ctx = source.context(path, json.loads(json.dumps(state, default=str)))
        batch = Batch()
        records: list[Record] = []
        for _at, line in read.lines:
            if not line.strip():
                continue
            try:
                records.extend(source.parse_line(ctx, line))
            except Exception as exc:  # a parser bug must not stop the daemon: skip the line, say so
                records.append(SkipRecord("parser-error", type(exc).__name__))
        for _start_at, skipped in read.oversized:
            batch.problems["line-too-long"] += 1
            records.append(SkipRecord("line-too-long", f"{skipped} bytes"))
        return records, ctx.state, batch

    def _commit_lines(
        self,
        source: Source,
        path: Path,
        row_id: int | None,
        committed: int,
        ident: tail.FileIdentity,
        read: tail.LineBatch,
        parsed: tuple[list[Record], dict[str, Any], Batch],
    ) -> int:
        """Store one batch's records and the offset it ends at in one transaction; returns the file's row id.

        Raises `_Overtaken` when another process committed past `committed` meanwhile (nothing is stored).
        """
        records, state, batch = parsed
        try:
            with self.transactions.batch():
                if row_id is None:
                    row_id = self._create_row(source, path)
                stored = self.db.execute(
                    'SELECT "offset" FROM ingest_files WHERE id = ?', [row_id]
                ).fetchone()
                if int(stored[0]) != committed:
                    raise _Overtaken  # another process (`skillopt ingest` beside the daemon) was first
                self.writer.apply(source.tool.value, records, row_id, batch)
                self._check_versions(source, path, records)
                self._save_file(row_id, source, path, ident, read, state, len(records), batch)
                self.writer.finish(batch, row_id)
                self._pins_due.update(batch.new_sessions)
        except BaseException:
            self.writer.forget()
            raise
        return row_id

    def _ingest_lines(
        self,
        source: Source,
        path: Path,
        f: BinaryIO,
        should_stop: Callable[[], bool],
        on_bytes: Callable[[int], None] | None,
    ) -> FileOutcome:
        row, ident, change = self._start(source, path, f)
        outcome = FileOutcome(str(path), source.tool.value, change=change)
        if change in (tail.UNCHANGED, tail.ALIAS):
            self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
            return outcome
        row_id = row.id if row else None
        committed = row.offset if row else 0
        # Whether the stored row already describes this very file (a partial line alone then waits).
        same_file = row is not None and (row.device, row.inode) == (ident.device, ident.inode)
        if row is None or change in (tail.NEW, tail.TRUNCATED, tail.REPLACED):
            offset, in_long, state = 0, False, {}
        else:
            offset, in_long, state = row.offset, bool(row.in_long_line), json.loads(row.state_json or "{}")
        cap, batch_lines = self.settings.ingest.max_line_bytes, max(1, self.settings.ingest.batch_lines)
        while True:
            read = tail.read_lines(f, offset, in_long_line=in_long, max_lines=batch_lines, max_line_bytes=cap)
            parsed = self._parse_batch(source, path, read, state)
            # Identity as of what we read: a file still growing is compared by its head, not its size.
            ident = dataclasses.replace(ident, size=max(ident.size, read.end))
            if read.end == offset and not parsed[0] and same_file and change != tail.NEW:
                break  # only a partial last line is new: it waits until it is complete
            try:
                row_id = self._commit_lines(source, path, row_id, committed, ident, read, parsed)
            except _Overtaken:
                self._seen.pop(str(path), None)
                outcome.done = False
                return outcome
            committed, same_file, change = read.end, True, tail.GREW
            if on_bytes:
                on_bytes(read.end - offset)
            outcome.lines += len(read.lines)
            outcome.records += len(parsed[0])
            outcome.bytes_read += read.end - offset
            offset, in_long, state = read.end, read.in_long_line, parsed[1]
            if read.eof:
                final = tail.identify(f)
                self._seen[str(path)] = (final.device, final.inode, final.size, final.mtime_ns)
                if final.size > offset and not read.in_long_line:
                    self._seen.pop(str(path), None)  # a partial last line: look again on the next event
                break
            if should_stop():
                outcome.done = False
                break
        return outcome

    def _ingest_document(
        self, source: Source, path: Path, f: BinaryIO, on_bytes: Callable[[int], None] | None
    ) -> FileOutcome:
        # Taken before the read: a companion changing while the document is read is read again next time.
        stamp = self._companion_stamp(source, path)
        row, ident, change = self._start(source, path, f)
        outcome = FileOutcome(str(path), source.tool.value, change=change)
        if change == tail.ALIAS:
            return outcome
        if (
            row is not None
            and (
                change == tail.UNCHANGED
                or (row.size == ident.size and row.mtime_ns == ident.mtime_ns and row.offset == ident.size)
            )
            and json.loads(row.state_json or "{}").get(COMPANIONS_KEY, []) == stamp
        ):
            self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
            self._seen_companions[str(path)] = stamp
            outcome.change = tail.UNCHANGED
            return outcome
        if change == tail.UNCHANGED:
            outcome.change = tail.GREW  # its file is as it was, a companion (its write-ahead log) is not
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
        try:
            records = list(source.parse_file(ctx, data))
        except FileBusy:
            # Locked by its tool: not read, and not recorded as read, so the next rescan tries again even
            # if the file has not changed by then.
            self._seen.pop(str(path), None)
            outcome.change, outcome.done = LOCKED, False
            return outcome
        except FileUnusable as exc:
            return self._file_error(source, path, exc.kind, exc.message)
        except Exception as exc:
            records = [SkipRecord("parser-error", type(exc).__name__)]
        batch = Batch()
        try:
            with self.transactions.batch():
                if row is not None:
                    self._forget_document(row.id, batch)
                row_id = row.id if row is not None else self._create_row(source, path)
                self.writer.apply(source.tool.value, records, row_id, batch)
                state = {**ctx.state, COMPANIONS_KEY: stamp}
                self._save_file(row_id, source, path, ident, None, state, len(records), batch)
                self.writer.finish(batch, row_id)
                self._pins_due.update(batch.new_sessions)
        except BaseException:
            self.writer.forget()
            raise
        if on_bytes:
            on_bytes(ident.size)
        self._seen[str(path)] = (ident.device, ident.inode, ident.size, ident.mtime_ns)
        self._seen_companions[str(path)] = stamp
        outcome.records = len(records)
        outcome.bytes_read = ident.size
        return outcome

    def _forget_document(self, file_id: int, batch: Batch) -> None:
        """The document was rewritten: what it said before is replaced by what it says now."""
        for (pk,) in self.db.execute("SELECT DISTINCT session_pk FROM turns WHERE file_id = ?", [file_id]):
            batch.touched.add(pk)
        self.db.execute("DELETE FROM turns WHERE file_id = ?", [file_id])
        self.db.execute("DELETE FROM tool_calls WHERE file_id = ?", [file_id])
        self.db.execute(
            "UPDATE sessions SET "
            "turn_count = (SELECT COUNT(*) FROM turns t WHERE t.session_pk = sessions.id), "
            "tool_call_count = (SELECT COUNT(*) FROM tool_calls c WHERE c.session_pk = sessions.id) "
            "WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(sorted(batch.touched))],
        )
        self.db.table("ingest_files").update(file_id, {"skipped_json": "{}", "lines": 0, "records": 0})
        self.writer.forget()

    # --- after commits -----------------------------------------------------------------------------------

    def _pin_due_sessions(self) -> None:
        """Pin the sessions that committed batches created (after the commit: git can be slow)."""
        if self._pins_due:
            due, self._pins_due = sorted(self._pins_due), set()
            pinning.pin_sessions(self.db, due, self.redactor)

    def pin_sessions(self, pks: Sequence[int] | None = None) -> int:
        """Record the repo state of sessions not pinned yet (all of them when `pks` is None)."""
        return pinning.pin_sessions(self.db, pks, self.redactor)

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
        rows = list(self.db.table("sessions").rows_where("signals_stale = 1", select="id, updated_at"))
        if not rows:
            self._stale_since.clear()
            return 0
        now = time.monotonic()
        quiet_before = to_iso(utcnow() - timedelta(seconds=quiet_s))
        due = []
        for row in rows:
            first = self._stale_since.setdefault(row["id"], now)
            if quiet_s <= 0 or (row["updated_at"] or "") <= quiet_before or now - first >= max_delay_s:
                due.append(row["id"])
        with self.transactions.grouped():  # many sessions after a backfill: not one commit each
            for pk in due:
                with self.transactions.batch():
                    signals.update_sessions(self.db, [pk])
                    update_row(self.db, "sessions", pk, {"signals_stale": 0})
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

        `between` runs before each file (the daemon reads hook notes there during a long backfill). A large
        backfill indexes its turns for search in one go at the end (see `fts`).
        """
        out: list[FileOutcome] = []
        bulk = not self._bulk_indexing and self._worth_bulk(files)
        if bulk:
            fts.suspend(self.db, utcnow_iso())
            self._bulk_indexing = True
        # Many files (a backfill, a rescan) share transactions (see `transactions`); tailing commits each batch.
        many = len(files) >= GROUP_MIN_FILES
        grouped = self.transactions.grouped() if many else contextlib.nullcontext()
        try:
            with grouped:
                self._ingest_each(files, out, should_stop, on_bytes, between)
        except BaseException:
            self.writer.forget()  # a failed group commit rolled back rows the writer may have cached
            # ... and files read to their end inside it (a full disk failing the commit) must be read
            # again: the next rescan compares every file with its stored row instead of trusting `_seen`.
            self._seen.clear()
            raise
        finally:
            if bulk:
                self._bulk_indexing = False
            if not self._bulk_indexing:  # also after a crashed or concurrent backfill: rows become searchable
                fts.resume_quietly(self.db)
        if out:
            with self.db.conn:
                set_meta(self.db, "last_ingest_at", utcnow_iso())
        if signals and not should_stop():
            self.refresh_signals()
        return out

    def _ingest_each(
        self,
        files: Sequence[tuple[Source, Path]],
        out: list[FileOutcome],
        should_stop: Callable[[], bool],
        on_bytes: Callable[[int], None] | None,
        between: Callable[[], None] | None,
    ) -> None:
        for source, path in files:
            if should_stop():
                break
            if between is not None:
                between()
            try:
                out.append(self.ingest_file(source, path, should_stop=should_stop, on_bytes=on_bytes))
            except sqlite3.OperationalError:
                raise  # the store itself is unusable now (locked, disk full): the caller backs off
            except Exception as exc:  # a bug on one file must not stop the others: report it, go on
                if corrupt(exc):
                    raise  # a damaged store fails every file the same way: one error, not one per file
                out.append(self._internal_error(source, path, exc))

    def _worth_bulk(self, files: Sequence[tuple[Source, Path]]) -> bool:
        return len(files) >= fts.BULK_MIN_FILES and fts.worth_bulk(
            self.db, len(files), self.pending_bytes(files)
        )

    def _internal_error(self, source: Source, path: Path, exc: Exception) -> FileOutcome:
        # An exception's text may quote what it choked on: redacted like any transcript text.
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
        return FileOutcome(str(path), source.tool.value, error="internal-error")

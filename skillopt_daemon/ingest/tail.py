"""Following log files: identity, complete lines from a byte offset, root walks, and filesystem watches.

Nothing here touches the database. The ingest pipeline (`pipeline.py`) asks this module which files exist,
whether a file is still the one it read before, and for the next batch of complete lines after an offset;
it then stores the records and the new offset in one transaction.

A file is identified by device, inode, and a hash of its first bytes; device and inode also tell that two
paths (through a symlink, a symlink loop or a hard link) lead to one file, which is then followed once. The size alone cannot tell a file
that was truncated and rewritten from one that grew, and the inode alone cannot tell a file replaced by a
copy of itself (editors, `cp`, log rotation) from a new file: together they can.

Memory stays bounded whatever the input: lines are read in chunks, and a line longer than the cap is
skipped while it is being scanned (never held whole), remembering across batches that the rest of that line
is still to be skipped.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat as stat_mod
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger("skillopt.tail")

HEAD_BYTES = 4096
CHUNK_BYTES = 1 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20


@dataclass
class FileIdentity:
    device: int
    inode: int
    size: int
    mtime_ns: int
    head_len: int
    head_hash: str


def head_digest(f: BinaryIO, length: int) -> str:
    f.seek(0)
    return hashlib.sha256(f.read(length)).hexdigest()


def identify(f: BinaryIO) -> FileIdentity:
    """Identity of an open file, taken from the descriptor so it describes exactly the bytes we read."""
    st = os.fstat(f.fileno())
    head_len = min(st.st_size, HEAD_BYTES)
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, head_len, head_digest(f, head_len))


@dataclass
class Known:
    """What was stored about a file the last time it was read."""

    device: int | None
    inode: int | None
    size: int
    mtime_ns: int
    head_len: int
    head_hash: str | None
    offset: int


# How a file compares with what was stored about it.
NEW = "new"
UNCHANGED = "unchanged"
GREW = "grew"
MOVED = "moved"  # a new inode holding the same bytes (rewritten by copy): keep the offset
TRUNCATED = "truncated"
REPLACED = "replaced"
ALIAS = "alias"  # a file already followed under another path (a symlink, a loop, a hard link): not read


def compare(f: BinaryIO, ident: FileIdentity, known: Known | None, *, in_place: bool = False) -> str:
    """How the open file compares with what was stored about it.

    `in_place`: a whole document its tool rewrites where it lies (a SQLite database, a JSON file). Its head
    is no sign of a new file there: SQLite's first page holds a change counter and the page count, which an
    append alone changes. The same file (device and inode) that did not shrink has then GROWN, however its
    head changed; only another file under the path is REPLACED."""
    if known is None or known.head_hash is None:
        return NEW
    if in_place and (ident.device, ident.inode) == (known.device, known.inode) and ident.size >= known.size:
        if ident.size == known.size and ident.mtime_ns == known.mtime_ns and known.offset >= ident.size:
            return UNCHANGED
        return GREW
    same_head = (
        ident.size >= known.head_len
        and known.head_len > 0
        and head_digest(f, known.head_len) == known.head_hash
    ) or known.head_len == 0
    if (ident.device, ident.inode) != (known.device, known.inode):
        return MOVED if same_head and ident.size >= known.offset else REPLACED
    if ident.size < known.offset:
        return TRUNCATED
    if not same_head:
        return REPLACED
    if ident.size == known.size and ident.mtime_ns == known.mtime_ns and known.offset >= ident.size:
        return UNCHANGED
    return GREW


@dataclass
class LineBatch:
    """Complete lines read from `start`; `end` is where the next batch starts (never inside a short line)."""

    start: int
    end: int
    lines: list[tuple[int, bytes]] = field(default_factory=list)  # (offset of the line, bytes without \n)
    in_long_line: bool = False  # `end` lies inside an over-long line whose rest must be skipped
    oversized: list[tuple[int, int]] = field(
        default_factory=list
    )  # (offset, bytes skipped) of over-long lines
    eof: bool = False  # nothing more to read now (a partial last line, if any, waits)
    bytes_scanned: int = 0


def read_lines(
    f: BinaryIO,
    offset: int,
    *,
    in_long_line: bool = False,
    max_lines: int = 2000,
    max_bytes: int = 8 << 20,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
) -> LineBatch:
    """The next complete lines after `offset`, within a line and a byte budget.

    Memory is bounded by `max_bytes + max_line_bytes + chunk_bytes` whatever the file holds.
    """
    f.seek(offset)
    batch = LineBatch(start=offset, end=offset, in_long_line=in_long_line)
    pos = offset  # file position of buf[0]
    buf = bytearray()
    taken = 0
    while True:
        chunk = f.read(chunk_bytes)
        if not chunk:
            batch.eof = True
            break
        batch.bytes_scanned += len(chunk)
        if batch.in_long_line:
            nl = chunk.find(b"\n")
            if nl < 0:
                pos += len(chunk)
                batch.end = pos
                if batch.bytes_scanned >= max_bytes + max_line_bytes:
                    break
                continue
            pos += nl + 1
            batch.in_long_line = False
            batch.end = pos
            chunk = chunk[nl + 1 :]
        buf += chunk
        start = 0
        full = False
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            batch.lines.append((pos + start, bytes(buf[start:nl])))
            taken += nl + 1 - start
            start = nl + 1
            if len(batch.lines) >= max_lines or taken >= max_bytes:
                full = True
                break
        pos += start
        del buf[:start]
        batch.end = pos
        if full:
            break
        if len(buf) > max_line_bytes:
            # Too long to keep: skip it from here, remembering that its rest is to be skipped too.
            batch.oversized.append((pos, len(buf)))
            pos += len(buf)
            buf.clear()
            batch.in_long_line = True
            batch.end = pos
    return batch


@dataclass
class WalkProblem:
    path: str
    kind: str  # permission-denied | symlink-loop | unreadable
    message: str


def walk_files(
    root: Path, accept: Callable[[Path], bool], problems: list[WalkProblem] | None = None
) -> Iterator[Path]:
    """Every accepted file under `root`, following folder symlinks once (a loop is reported, not followed)."""
    problems = problems if problems is not None else []
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError as exc:
            if folder != root:
                problems.append(_problem(folder, exc))
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in seen:
            problems.append(
                WalkProblem(str(folder), "symlink-loop", f"{folder} leads back to a folder already read")
            )
            continue
        seen.add(ident)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            problems.append(_problem(folder, exc))
            continue
        for entry in sorted(entries, key=lambda e: e.name, reverse=True):
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
                is_file = not is_dir and entry.is_file(follow_symlinks=True)
            except OSError as exc:
                problems.append(_problem(path, exc))
                continue
            if is_dir:
                stack.append(path)
            elif is_file:
                if accept(path):
                    yield path
            elif entry.is_symlink():
                # A dangling or looping link: say which, if it would have been a transcript.
                try:
                    os.stat(path)
                except OSError as exc:
                    if exc.errno == errno.ELOOP or accept(path):
                        problems.append(_problem(path, exc))


def _problem(path: Path, exc: OSError) -> WalkProblem:
    if exc.errno == errno.ELOOP:
        return WalkProblem(str(path), "symlink-loop", f"{path} is a symbolic link loop")
    if isinstance(exc, PermissionError):
        return WalkProblem(str(path), "permission-denied", f"cannot read {path}: permission denied")
    if isinstance(exc, FileNotFoundError):
        return WalkProblem(str(path), "missing", f"{path} vanished or points nowhere")
    return WalkProblem(str(path), "unreadable", f"cannot read {path}: {exc.strerror or exc}")


def quick_stat(path: Path) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime_ns), or None when the path is not a readable regular file now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class Watcher:
    """watchdog observers on every root that exists, reporting changed paths to a callback.

    Roots that do not exist yet are retried on each `refresh()` (the daemon's periodic rescan calls it), and
    a root that disappears is unwatched. Events can be missed or coalesced, which is why the rescan exists;
    the watcher only makes the common case fast.
    """

    def __init__(self, on_path: Callable[[Path], None]) -> None:
        from watchdog.observers import Observer

        self._on_path = on_path
        self._observer = Observer()
        self._observer.daemon = True
        self._watches: dict[Path, object] = {}
        self._wanted: dict[Path, bool] = {}
        self._lock = threading.Lock()
        self._started = False
        self.failed: dict[Path, str] = {}  # roots that exist but could not be watched, and why

    def start(self) -> None:
        self._observer.start()
        self._started = True

    def stop(self) -> None:
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._started = False

    def want(self, roots: Iterable[Path], *, recursive: bool = True) -> None:
        for root in roots:
            self._wanted[Path(root)] = recursive
        self.refresh()

    @property
    def watched(self) -> list[Path]:
        return sorted(self._watches)

    def refresh(self) -> list[Path]:
        """Watch roots that appeared, unwatch roots that vanished; returns the roots newly watched."""
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        on_path = self._on_path

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                for raw in (event.src_path, getattr(event, "dest_path", "")):
                    if raw:
                        on_path(Path(os.fsdecode(raw)))

        added: list[Path] = []
        with self._lock:
            for root, recursive in self._wanted.items():
                exists = root.is_dir()
                if exists and root not in self._watches:
                    try:
                        self._watches[root] = self._observer.schedule(
                            Handler(), str(root), recursive=recursive
                        )
                        added.append(root)
                    except OSError as exc:
                        # Unreadable, vanished meanwhile, or out of inotify watches: the periodic rescan
                        # still covers this root; the next refresh tries again.
                        if root not in self.failed:
                            log.warning("cannot watch %s (%s); relying on the periodic rescan", root, exc)
                        self.failed[root] = str(exc)
                        continue
                    self.failed.pop(root, None)
                elif not exists and root in self._watches:
                    try:
                        self._observer.unschedule(self._watches.pop(root))  # type: ignore[arg-type]
                    except (KeyError, OSError):
                        pass
        return added

"""Opening the database: WAL mode, a busy timeout, migrations applied in order, newer schemas refused.

Migrations are numbered modules in `store/migrations/`, applied once each and recorded in `_migrations`
(in the style of simonw/llm). A database whose recorded migrations include one this skillopt does not know
was written by a newer version: it is refused before anything is written to it.

A full disk is not a damaged database. SQLite says so plainly when a write runs out of room (SQLITE_FULL,
"database or disk is full"), but opening a database in WAL mode on a full disk fails earlier, as a
"disk I/O error" while sizing the shared-memory file; `disk_full` tells both apart from corruption by
asking the file system how much room is left, so the advice is to free space, never to move the
database aside.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Literal

from skillopt_daemon.core import paths
from skillopt_daemon.core.store.migrations import MIGRATIONS
from skillopt_daemon.core.store.sqlite_lib import sqlite_utils
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_lib.errors import DiskFullError, StoreError

SCHEMA_VERSION = len(MIGRATIONS)
BUSY_TIMEOUT_MS = 10_000

# SQLite's primary result codes (the low byte of an extended code).
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26
# Less room than this on the database's file system: an I/O error there is the disk being full.
LOW_SPACE_BYTES = 1 << 20


def free_bytes(path: Path) -> int | None:
    """Room left for this user on the file system holding `path` (or its nearest existing folder)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except (OSError, AttributeError):  # no statvfs on this platform
        return None
    return st.f_bavail * st.f_frsize


def disk_full(exc: BaseException, path: Path | None = None) -> bool:
    """Whether `exc` means the disk (holding `path`, the database by default) is full, not that the
    database is damaged."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary == _SQLITE_FULL or "database or disk is full" in text:
        return True
    io_error = primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN) or "disk i/o error" in text
    if not io_error and "unable to open database file" not in text:
        return False
    free = free_bytes(path or paths.db_path())
    return free is not None and free < LOW_SPACE_BYTES


def corrupt(exc: BaseException) -> bool:
    """Whether `exc` is SQLite finding the database damaged ("database disk image is malformed") or not a
    database at all. A damaged file often still opens: only the queries that reach a broken page fail."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int) and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


REPAIR_HINT = (
    "run `skillopt doctor --repair`: it keeps a copy of the damaged file, recovers what SQLite can still "
    "read and reads your session logs again (or move it aside to start a fresh one, or restore a backup)"
)


def corrupt_error(path: Path | None = None, detail: object = None, *, opened: bool = True) -> StoreError:
    """The error every command gives on a damaged database: what happened and how to repair it."""
    path = path or paths.db_path()
    what = "is damaged" if opened else "cannot be read"
    return StoreError(
        f"the database {path} {what}: {detail or 'database disk image is malformed'}", hint=REPAIR_HINT
    )


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB" if n >= 1000 else f"{n} bytes"


def disk_full_error(
    path: Path | None = None,
    detail: object = None,
    *,
    database: bool = True,
    then: str = "run the command again",
) -> DiskFullError:
    """The error every command gives when a disk is full (the database's, or the one holding the file
    `path` names): what happened, and that freeing space (and `then`) is all it takes."""
    path = path or paths.db_path()
    free = free_bytes(path)
    room = f" ({_size(free)} free)" if free is not None else ""
    what = f"the database {path} cannot be used now" if database else f"{path} cannot be written"
    why = f": {detail}" if detail else ""
    return DiskFullError(
        f"the disk holding {path.parent} is full{room}, so {what}{why}",
        hint=f"free some space on that disk (`df -h {path.parent}` shows it) and {then}; "
        "the database is not damaged and nothing stored is lost",
    )


class NestingConnection(sqlite3.Connection):
    """`with db.conn:` opens one IMMEDIATE transaction; nested `with` blocks join it instead of committing.

    sqlite-utils wraps its own writes in `with conn:`. With this connection those writes compose: a caller can
    put event rows and the file offset that covers them in one transaction, so a crash never splits them.
    """

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._owners: list[bool] = []

    def __enter__(self) -> NestingConnection:
        owner = not self.in_transaction
        if owner:
            self.execute("BEGIN IMMEDIATE")
        self._owners.append(owner)
        return self

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:  # type: ignore[no-untyped-def]
        owner = self._owners.pop()
        if owner and self.in_transaction:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        return False


def open_db(path: Path | None = None, *, migrate: bool = True) -> sqlite_utils.Database:
    """Open (creating if needed) the database, with clear errors for the ways it can be unusable."""
    path = path or paths.db_path()
    try:
        paths.ensure_private_dir(path.parent)
    except OSError as exc:
        if disk_full(exc):
            raise disk_full_error(path, exc.strerror) from None
        raise
    existed = path.exists()
    try:
        conn = sqlite3.connect(
            str(path),
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
            factory=NestingConnection,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # No sqlite-utils plugins: the store is skillopt's own, so a plugin installed for something else must
        # not change its connection, and looking for them reads every installed package's metadata.
        db = sqlite_utils.Database(conn, execute_plugins=False)
        # A cheap read that fails on a file that is not a database.
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        if disk_full(exc, path):
            raise disk_full_error(path, exc) from None
        raise corrupt_error(path, exc, opened=False) from None
    if not existed:
        os.chmod(path, 0o600)
    try:
        _check_not_newer(db, path)
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        if migrate:
            apply_migrations(db)
    except sqlite3.OperationalError as exc:
        if disk_full(exc, path):
            raise disk_full_error(path, exc) from None
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreError(
                f"the database {path} is locked by another process",
                hint="another skillopt command may be running a long write; try again in a moment",
            ) from None
        raise StoreError(f"the database {path} cannot be used: {exc}") from None
    except sqlite3.DatabaseError as exc:
        if disk_full(exc, path):
            raise disk_full_error(path, exc) from None
        raise corrupt_error(path, exc) from None
    return db


def _check_not_newer(db: sqlite_utils.Database, path: Path) -> None:
    if "_migrations" not in db.table_names():
        return
    known = {name for name, _ in MIGRATIONS}
    applied = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY id")]
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise StoreError(
            f"the database {path} was written by a newer skillopt (it has migrations {', '.join(unknown)} "
            "that this version does not know); it was not modified",
            hint="upgrade skillopt (pip install -U skillopt), or point SKILLOPT_HOME elsewhere",
        )


def apply_migrations(db: sqlite_utils.Database) -> list[str]:
    """Apply each pending migration in its own transaction; returns the names applied."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
        "applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    applied: list[str] = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db.conn:
            # Re-check under the write lock: another process may have migrated meanwhile.
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", [name]).fetchone():
                continue
            fn(db)
            db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", [name, utcnow_iso()])
        applied.append(name)
    return applied

"""Opening the database: WAL mode, a busy timeout, migrations applied in order, newer schemas refused.

Migrations are numbered modules in `store/migrations/`, applied once each and recorded in `_migrations`
(in the style of simonw/llm). A database whose recorded migrations include one this skillopt does not know
was written by a newer version: it is refused before anything is written to it.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Literal

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.store.migrations import MIGRATIONS
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_lib.errors import StoreError

SCHEMA_VERSION = len(MIGRATIONS)
BUSY_TIMEOUT_MS = 10_000


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
    paths.ensure_private_dir(path.parent)
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
        db = sqlite_utils.Database(conn)
        # A cheap read that fails on a file that is not a database.
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"the database {path} cannot be read: {exc}",
            hint="it may be corrupt; move it aside (your skills' files are kept in the skill store) "
            "and run the command again to start a fresh one, or restore a backup",
        ) from None
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
        if "locked" in str(exc) or "busy" in str(exc):
            raise StoreError(
                f"the database {path} is locked by another process",
                hint="another skillopt command may be running a long write; try again in a moment",
            ) from None
        raise StoreError(f"the database {path} cannot be used: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"the database {path} is corrupt: {exc}",
            hint="move it aside and run the command again to start a fresh one, or restore a backup",
        ) from None
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

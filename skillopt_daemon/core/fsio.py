"""The daemon's file primitives: atomic and private writes, content hashes, locks, and "is it alive".

Writes and hashes are the library's (`skillopt_lib.fsio`), so the optimizer's run folder and the daemon's
store share one implementation. Locks come from `filelock`: an OS lock on an open file (`flock` on POSIX), so
a killed holder releases it at once and no stale lock file ever needs cleaning. Whether the daemon is alive is
answered here only, by probing its lock, because a pid file can outlive its process (or name a zombie).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_lib.fsio import (
    PRIVATE_DIR,
    PRIVATE_FILE,
    atomic_write,
    current_mode,
    fsync_dir,
    pid_alive,
    sha256_bytes,
    sha256_file,
    write_private,
)

if TYPE_CHECKING:  # imported where a lock is taken: commands that only read (diff) never take one
    import filelock

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "Busy",
    "atomic_write",
    "current_mode",
    "daemon_lock_file",
    "daemon_running",
    "file_lock",
    "fsync_dir",
    "holder_file",
    "lock_is_held",
    "pid_alive",
    "read_holder",
    "read_pid",
    "sha256_bytes",
    "sha256_file",
    "write_private",
]


class Busy(Exception):
    """The lock is held by someone else; `holder` is their pid when they recorded it."""

    def __init__(self, path: Path, holder: int | None) -> None:
        super().__init__(f"{path.name} is held" + (f" by pid {holder}" if holder else ""))
        self.path = path
        self.holder = holder


def _lock(path: Path) -> filelock.FileLock:
    # thread_local=False: a lock taken by one thread (the scheduler's) may be released by another; and
    # is_singleton=False: each object opens its own descriptor, so a second object in this process
    # conflicts exactly like another process would.
    import filelock

    paths.ensure_private_dir(path.parent)
    return filelock.FileLock(str(path), mode=PRIVATE_FILE, thread_local=False, is_singleton=False)


def holder_file(path: Path) -> Path:
    """Where the holder of the lock `path` records its pid (the lock file itself is truncated on open)."""
    return path.with_name(path.name + ".pid")


def read_holder(path: Path) -> int | None:
    """The pid recorded by the last holder of lock `path`, if any."""
    try:
        return int(holder_file(path).read_text().strip())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float = -1, holder: Path | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block, recording this pid in `holder` (default: `.pid`).

    `timeout` < 0 waits forever, 0 tries once, > 0 waits that many seconds. When the lock cannot be had it
    raises `Busy` with the holder's pid, so each caller can say what is running in its own words. The lock
    is released when the block ends, however it ends; the OS releases it if the process dies.
    """
    import filelock

    record = holder or holder_file(path)
    lk = _lock(path)
    try:
        lk.acquire(timeout=timeout, poll_interval=0.05)
    except filelock.Timeout:
        try:
            pid: int | None = int(record.read_text().strip())
        except (OSError, ValueError):
            pid = None
        raise Busy(path, pid) from None
    try:
        write_private(record, f"{os.getpid()}\n")
        yield
    finally:
        try:
            if record.read_text().strip() == str(os.getpid()):
                record.unlink()
        except OSError:
            pass
        lk.release()


def lock_is_held(path: Path) -> bool:
    """True while some process holds the lock on `path`; probing never blocks and never keeps it."""
    if not path.exists():
        return False
    # Imported past the check: no lock file (no daemon ever ran here) needs no lock library.
    import filelock

    lk = _lock(path)
    try:
        lk.acquire(timeout=0)
    except filelock.Timeout:
        return True
    except OSError:
        return False
    lk.release()
    return False


def daemon_lock_file() -> Path:
    return paths.data_dir() / "daemon.lock"


def daemon_running() -> bool:
    """Whether a daemon serves this SKILLOPT_HOME: its lock is held (dies with the process, zombie or not)."""
    return lock_is_held(daemon_lock_file())


def read_pid() -> int | None:
    """The daemon's pid as its pid file says (only meaningful while `daemon_running()`)."""
    try:
        return int(paths.pid_file().read_text().strip())
    except (OSError, ValueError):
        return None

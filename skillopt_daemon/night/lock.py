"""One night at a time: manual runs, the MCP tool and the scheduled job share this lock.

The lock is a file lock in the data folder, so it holds across processes and the kernel releases it when
the holder dies, however it dies; a killed night never blocks the next one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from skillopt_daemon.core import fsio, paths
from skillopt_lib.errors import ConflictError


def lock_path() -> Path:
    return paths.data_dir() / "night.lock"


@contextlib.contextmanager
def night_lock() -> Iterator[None]:
    """One nightly cycle per SKILLOPT_HOME, whether started by hand or by the schedule.

    Raises ConflictError (with the holder's pid when known) at once, without waiting, when another night runs.
    """
    try:
        with fsio.file_lock(lock_path(), timeout=0):
            yield
    except fsio.Busy as busy:
        raise ConflictError(
            f"a nightly cycle is already running (pid {busy.holder or 'unknown'})",
            hint="wait for it to finish; `skillopt status` shows its progress",
        ) from None

"""A real, small file system to fill up: a tmpfs mounted on a test's folder.

Disk-full handling is tested against the kernel's own ENOSPC, not a simulation: SQLite meets a full disk
in several places (growing the database, the write-ahead log, sizing the shared-memory file when it opens),
and only a real file system reaches all of them. Mounting needs root or passwordless `sudo`; without
either the test is skipped locally and fails in CI (`fixtures.require`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .fixtures import require

_CHUNK = 1 << 16


def _privileged(args: list[str]) -> list[str] | None:
    if os.geteuid() == 0:
        return args
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n", *args]
    return None


def _run(args: list[str]) -> bool:
    cmd = _privileged(args)
    return cmd is not None and subprocess.run(cmd, capture_output=True).returncode == 0


@dataclass
class SmallDisk:
    """The mounted folder, and filler files that take its room."""

    root: Path

    @property
    def filler(self) -> Path:
        return self.root / ".filler"

    def free_bytes(self) -> int:
        st = os.statvfs(self.root)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int = 0) -> None:
        """Take all the room but `leave` bytes (to the page), so the next larger write meets ENOSPC."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (_CHUNK, 4096):
                block = b"\0" * size
                while True:
                    try:
                        if os.write(fd, block) < size:
                            break
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break
            os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
        finally:
            os.close(fd)

    def free_up(self) -> None:
        self.filler.unlink(missing_ok=True)


@contextlib.contextmanager
def small_disk(where: Path, size_kb: int = 4096) -> Iterator[SmallDisk]:
    """A tmpfs of `size_kb` mounted on `where` (created, and left empty) for the duration."""
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size_kb}k,mode=0700,uid={os.getuid()},gid={os.getgid()}"
    require(
        _run(["mount", "-t", "tmpfs", "-o", opts, "skillopt-test", str(where)]),
        "mounting a small tmpfs needs root or passwordless sudo",
    )
    try:
        yield SmallDisk(where)
    finally:
        _run(["umount", "-l", str(where)])

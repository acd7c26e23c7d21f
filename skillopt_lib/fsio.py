"""Writing files so that a crash, a kill or a full disk never leaves half of one.

Every file skillopt writes that someone else reads later (skills, run records, settings, notes, transcripts'
derived data) goes through `atomic_write`: a temporary file in the same folder, flushed and fsynced, then
renamed over the target. Readers see the old bytes or the new, never a mix. Private files (anything that may
hold a transcript, a key or a token) are created 0600 from the first byte, never chmod-ed afterwards, so no
other user can open them in between. Standard library only: the agent hooks import this on their fast path.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of `data`: the one content hash used for skills, installs and diffs."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str | None:
    """The hex sha256 of a file's bytes, or None when it is missing or not a regular file."""
    try:
        return sha256_bytes(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable; a folder that cannot be opened is left to the OS."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def current_mode(path: Path, default: int = 0o644) -> int:
    """The permission bits of an existing file (so a rewrite keeps a user's 0600), else `default`."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return default


def atomic_write(path: Path, data: bytes | str, mode: int = 0o644, *, private_parent: bool = False) -> None:
    """Replace `path` with `data` atomically, created with permission bits `mode`.

    The temporary name is unique per process and call, so two writers never share one; on any error it is
    removed and the error raised, leaving the old file as it was. `private_parent` creates missing folders
    0700 (for the user folder's data), else with the default umask.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if private_parent:
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{time.monotonic_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def write_private(path: Path, data: bytes | str) -> None:
    """`atomic_write` for files only the user may read (0600, in folders created 0700)."""
    atomic_write(path, data, PRIVATE_FILE, private_parent=True)


def pid_alive(pid: int) -> bool:
    """True while the process exists and has not exited (a zombie awaiting its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")

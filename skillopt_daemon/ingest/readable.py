"""Which transcripts and transcript folders cannot be read: what `skillopt doctor` reports about ingest.

Besides permissions, a whole-document transcript can be unusable as a file (a damaged or non-SQLite
OpenClaw database): its reader says so (`Source.unusable`).

Ingest itself records a file it fails to open when it meets it; doctor asks ahead of that, for every file
and folder under every tool's roots. A process running as root reads anything, so a file or folder whose
owner lacks read access (mode 000, say) is reported too: the agent tools and a daemon under the user's own
account cannot read it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from skillopt_daemon.core.config import Settings
from skillopt_daemon.ingest import tail
from skillopt_daemon.ingest.sources import all_sources
from skillopt_daemon.ingest.sources.base import Source


def _readable(path: Path, *, folder: bool) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
        return False
    need = stat.S_IRUSR | (stat.S_IXUSR if folder else 0)
    return st.st_uid != os.geteuid() or st.st_mode & need == need


def _denied(path: Path, what: str) -> tail.WalkProblem:
    return tail.WalkProblem(str(path), "permission-denied", f"cannot read {what}{path} (permission denied)")


def _check_root(root: Path, source: Source, problems: list[tail.WalkProblem]) -> int:
    """Walk one root, adding what cannot be read to `problems`; returns how many transcripts it holds."""
    count = 0
    folders: set[Path] = {root}
    for path in tail.walk_files(root, source.is_transcript, problems):
        count += 1
        folders.update(p for p in path.parents if root in p.parents)
        if not _readable(path, folder=False):
            problems.append(_denied(path, ""))
        elif (why := source.unusable(path)) is not None:  # a damaged database, say
            problems.append(tail.WalkProblem(str(path), "unusable", why))
    problems.extend(_denied(f, "the folder ") for f in sorted(folders) if not _readable(f, folder=True))
    return count


def unreadable_transcripts(settings: Settings) -> tuple[int, list[tail.WalkProblem]]:
    """How many transcripts the enabled tools' roots hold, and each file or folder there that cannot be read.

    Never raises: a root that is missing or vanishes meanwhile is skipped. Reads only the file system.
    """
    problems: list[tail.WalkProblem] = []
    count = 0
    for source in all_sources(settings):
        for root in source.roots():
            if Path(root).is_dir():
                count += _check_root(Path(root), source, problems)
    unique: dict[tuple[str, str], tail.WalkProblem] = {}
    for p in problems:
        unique.setdefault((p.path, p.kind), p)
    return count, list(unique.values())

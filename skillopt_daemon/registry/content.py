"""The content-addressed skill store: each file of every version, once, under its sha256.

File contents are not kept in the database. Each file lives once at `objects/<sha[:2]>/<sha>` under the skill
store folder and `version_files` maps a version's relative paths to those hashes, so a corrupt database never
takes the skills' text with it and two versions sharing a file share its bytes. Objects are written before
the rows that name them: a crash leaves at most an unreferenced object, never a row without its bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_daemon.core.fsio import PRIVATE_FILE, atomic_write, sha256_bytes
from skillopt_lib.errors import StoreError
from skillopt_lib.skill import SkillBundle

if TYPE_CHECKING:
    import sqlite_utils

_RESTORE_HINT = "restore the skill store folder from a backup"


def object_path(sha: str) -> Path:
    """Where the file with content hash `sha` is kept."""
    return paths.skill_store_dir() / "objects" / sha[:2] / sha


def store_bundle(bundle: SkillBundle) -> None:
    """Write each file of `bundle` once under its hash (files already stored are not rewritten)."""
    paths.ensure_private_dir(paths.skill_store_dir())
    for data in bundle.files.values():
        obj = object_path(sha256_bytes(data))
        if not obj.exists():
            paths.ensure_private_dir(obj.parent)
            atomic_write(obj, data, PRIVATE_FILE)


def load_bundle(db: sqlite_utils.Database, version_id: str) -> SkillBundle:
    """The files of a version, each checked against its hash; StoreError names a missing or damaged one."""
    files: dict[str, bytes] = {}
    for row in db.query(
        "SELECT path, sha256 FROM version_files WHERE version_id = ? ORDER BY path", [version_id]
    ):
        path, sha = row["path"], row["sha256"]
        obj = object_path(sha)
        try:
            data = obj.read_bytes()
        except OSError:
            raise StoreError(
                f"the skill store is missing {path} of version {version_id[:8]} ({obj})", hint=_RESTORE_HINT
            ) from None
        if sha256_bytes(data) != sha:
            raise StoreError(
                f"the skill store copy of {path} (version {version_id[:8]}) is damaged: {obj}",
                hint=_RESTORE_HINT,
            )
        files[path] = data
    return SkillBundle(files=files)

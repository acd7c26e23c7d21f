"""Repo pinning: which commit a session started from, whether the tree was dirty, and the dirty diff.

There is one git reader (`read_repo`), used both by the sources (which pin a session the first time they
see it, while the tree is closest to where the session started) and by the pipeline (which pins, after a
commit, sessions no source could pin). Its rules:

- Untracked files do not make a tree dirty. The kept diff is `git diff HEAD`, which can only restore
  tracked changes, so "dirty" means exactly "the diff is needed to rebuild the tree". Untracked files are
  mostly build output and caches, and often the session's own new files (a session is first seen after it
  has begun writing): counting them would mark nearly every session dirty with nothing to restore.
- git runs with `GIT_OPTIONAL_LOCKS=0`, so reading never takes (or waits for) the repo's index lock that
  the user's own git or the agent may hold, and with a timeout, so a huge or hung repo cannot stall ingest.
- Results are cached per folder for `CACHE_S` seconds: a backfill meets many sessions of one project in a
  row, while a longer cache would report a tree from before a commit made meanwhile. The cache is shared
  by every caller in the process and guarded by a lock (the daemon reads from more than one thread).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest.redact import Redactor, default_redactor
from skillopt_lib.fsio import sha256_bytes, write_private

PIN_TIMEOUT_S = 10.0
CACHE_S = 5.0

# Files that hold secrets by their very name: their changes are never part of a kept diff, whatever the
# redactor finds in them (a key file's body need not look like any known kind of secret).
SECRET_FILE_GLOBS = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.*",
    "*credentials.json",
    ".netrc",
    ".pgpass",
    ".htpasswd",
)
_EXCLUDE_SECRET_FILES = tuple(f":(exclude,glob)**/{g}" for g in SECRET_FILE_GLOBS)


@dataclass(frozen=True)
class RepoPin:
    """The state of the repository holding a project folder, or why it could not be read."""

    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None  # None: `git status` failed, dirtiness unknown
    diff_hash: str | None = None  # names the kept patch (see `dirty_diff_path`) when the tree was dirty
    error: str | None = None


_cache: dict[str, tuple[float, RepoPin]] = {}
_cache_lock = threading.Lock()


def read_repo(project: str | Path, redactor: Redactor | None = None) -> RepoPin:
    """HEAD, branch, dirtiness and dirty diff of the repo holding `project`; never raises.

    `redactor` (the built-in patterns when None) decides whether the dirty diff may be kept: pass the one
    built from the user's settings so their own patterns count too. Failures (no folder, not a repo, no
    commit yet, no git, timeout) come back as `RepoPin.error`.
    """
    key = os.path.abspath(project)
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and now - hit[0] < CACHE_S:
        return hit[1]
    pin = _read_repo(Path(key), redactor or default_redactor())
    with _cache_lock:
        _cache[key] = (now, pin)
    return pin


def _read_repo(folder: Path, redactor: Redactor) -> RepoPin:
    if not folder.is_dir():
        return RepoPin(error="project folder no longer exists")
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            timeout=PIN_TIMEOUT_S,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    try:
        head = git("rev-parse", "--verify", "HEAD")
        if head.returncode != 0 or not head.stdout.strip():
            return RepoPin(error="not a git repository or no commit yet")
        branch = git("symbolic-ref", "--short", "-q", "HEAD").stdout.decode(errors="replace").strip()
        status = git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        diff_hash = None
        if dirty:
            diff = git("diff", "HEAD", "--binary", "--", ".", *_EXCLUDE_SECRET_FILES)
            if diff.returncode == 0:
                diff_hash = sha256_bytes(diff.stdout + status.stdout)
                keep_dirty_diff(diff_hash, diff.stdout, redactor)
        return RepoPin(
            commit=head.stdout.decode().strip(), branch=branch or None, dirty=dirty, diff_hash=diff_hash
        )
    except FileNotFoundError:
        return RepoPin(error="git is not installed")
    except subprocess.TimeoutExpired:
        return RepoPin(error="git took too long")
    except OSError as exc:
        return RepoPin(error=f"git failed: {exc}")


def dirty_diff_path(diff_hash: str) -> Path:
    return paths.data_dir() / "diffs" / f"{diff_hash}.patch"


def keep_dirty_diff(diff_hash: str, diff: bytes, redactor: Redactor | None = None) -> bool:
    """Keep the uncommitted changes a session started from, so a replay can start from the same tree.

    The patch goes through the same redactor as every transcript text (the user's patterns included).
    A patch cannot be redacted and still apply, so one in which the redactor finds any secret is not kept
    at all (the replay then starts from the commit and says so); files secret by name never reach it (see
    `SECRET_FILE_GLOBS`). Kept patches are private (0600) files, written atomically so a replay never
    applies half of one.
    """
    target = dirty_diff_path(diff_hash)
    if target.exists() or not diff.strip():
        return target.exists()
    if (redactor or default_redactor()).redact(diff.decode("utf-8", errors="replace"))[1]:
        return False
    paths.ensure_private_dir(target.parent)
    write_private(target, diff)
    return True


def load_dirty_diff(diff_hash: str | None) -> str | None:
    """The kept patch named `diff_hash`, or None when there is none (clean tree, secret, or deleted)."""
    if not diff_hash:
        return None
    try:
        return dirty_diff_path(diff_hash).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def pin_sessions(
    db: sqlite_utils.Database, pks: Sequence[int] | None = None, redactor: Redactor | None = None
) -> int:
    """Record the repo state of sessions not pinned yet (all of them when `pks` is None); returns how many.

    Reads the repos outside any transaction (git can be slow), then stores what it read in one short
    transaction; a crash before that is caught up on the next start by calling it with None.
    """
    where = "pinned_at IS NULL AND drop_reason IS NULL AND project_path IS NOT NULL"
    args: list[object] = []
    if pks is not None:
        where += " AND id IN (SELECT value FROM json_each(?))"
        args.append(json.dumps(list(pks)))
    rows = list(db.table("sessions").rows_where(where, args, select="id, project_path, repo_commit"))
    pins: list[tuple[int, dict[str, object]]] = []
    for row in rows:
        pin = read_repo(row["project_path"], redactor)
        values: dict[str, object] = {"pinned_at": utcnow_iso(), "pin_error": pin.error}
        if row["repo_commit"]:
            # The log says where the session started; the tree's dirtiness only means something if the
            # repo is still at that commit.
            same = pin.commit == row["repo_commit"]
            values["repo_dirty"] = int(pin.dirty) if same and pin.dirty is not None else None
            values["repo_diff_hash"] = pin.diff_hash if same else None
        else:
            values["repo_commit"] = pin.commit
            values["repo_dirty"] = None if pin.dirty is None else int(pin.dirty)
            values["repo_diff_hash"] = pin.diff_hash
            values["repo_pin_source"] = "repo" if pin.commit else None
        pins.append((row["id"], values))
    if pins:
        with db.conn:
            for pk, values in pins:
                db.table("sessions").update(pk, values)
    return len(rows)

"""The record of each night: its `night_runs` row, its run folder, and what an interrupted night left.

A row is written as `running` when a night starts (with its pid) and updated once when it ends, with the
status that says what happened: `completed`, `nothing-to-do`, `budget`, `dry-run`, or `failed` with its
reason. A row still `running` whose process is gone was killed mid-cycle; whatever looks at the nights next
(the next night, the daemon's start, `skillopt status`) marks it `interrupted` and removes the replay
workspaces it left, with their `git worktree` registrations in the user's repositories. The next night
resumes its training from the checkpoints in its folder when there are any.

While a night runs, its progress (what it is on, replays done of planned) is kept in `progress.json` in its
run folder (0600), written by `night.progress` at most about once a second, so `skillopt status` in
another process can show it; the file goes when the night ends or is settled as interrupted.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night.lock import lock_path
from skillopt_daemon.night.report import CycleReport, trained_nothing

TABLE = "night_runs"
# A night with one of these statuses looked at everything ingested before it started (unless it was a dry
# run or every skill it took up errored: see `consumed`).
FINISHED = ("completed", "nothing-to-do", "budget")
# Rows that are no night's result: a scheduled night that did not run, one that is still running.
NOT_A_RESULT = ("skipped", "running")
PROGRESS_FILE = "progress.json"
INTERRUPTED = "the process ended before the night finished"


def night_dir(run_id: str) -> Path:
    """The folder holding one training run per skill of the night `run_id`."""
    return paths.runs_dir() / f"night-{run_id}"


def progress_path(run_id: str) -> Path:
    return night_dir(run_id) / PROGRESS_FILE


def read_progress(run_id: str) -> dict[str, Any] | None:
    """What the running night `run_id` last recorded about its progress, or None."""
    try:
        data = json.loads(progress_path(run_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def clear_progress(run_id: str) -> None:
    try:
        progress_path(run_id).unlink()
    except OSError:
        pass


def _insert(db: sqlite_utils.Database, row: dict[str, Any]) -> None:
    now = utcnow_iso()
    full = {
        "dry_run": False,
        "started_at": now,
        "finished_at": None,
        "heartbeat_at": now,
        "pid": os.getpid(),
        "summary_json": "{}",
        "error": None,
        **row,
    }
    with db.conn:
        db.table(TABLE).insert(full)


def record_start(db: sqlite_utils.Database, run_id: str, trigger: str, dry_run: bool) -> None:
    _insert(db, {"id": run_id, "trigger": trigger, "status": "running", "dry_run": dry_run})


def record_end(db: sqlite_utils.Database, report: CycleReport) -> None:
    clear_progress(report.run_id)
    with db.conn:
        db.table(TABLE).update(
            report.run_id,
            {
                "status": report.status,
                "finished_at": report.finished_at,
                "summary_json": json.dumps(report.to_dict(), default=str),
                "error": report.error,
            },
        )


def record_skipped(db: sqlite_utils.Database, reason: str) -> None:
    """A scheduled night that did not run, so the history says why nothing happened that night."""
    now = utcnow_iso()
    _insert(
        db,
        {
            "id": f"skip-{uuid.uuid4().hex[:8]}",
            "trigger": "schedule",
            "status": "skipped",
            "finished_at": now,
            "summary_json": json.dumps({"reason": reason}),
        },
    )


def interrupted_runs(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Runs still marked running whose process is gone: they were killed mid-cycle. Called by a night that
    holds the night lock, so a row of its own process is stale too."""
    if TABLE not in db.table_names():
        return []
    out = []
    for row in db.query(f"SELECT * FROM {TABLE} WHERE status = 'running' ORDER BY started_at"):
        if row["pid"] == os.getpid() or not row["pid"] or not fsio.pid_alive(row["pid"]):
            out.append(row)
    return out


def stale_runs(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Runs still marked running that no process is running, seen from outside the night lock: their
    process is gone, or (its pid taken by another process since) no night holds the lock at all."""
    if TABLE not in db.table_names():
        return []
    rows = list(db.query(f"SELECT * FROM {TABLE} WHERE status = 'running' ORDER BY started_at"))
    dead = [r for r in rows if not r["pid"] or not fsio.pid_alive(r["pid"])]
    if len(dead) < len(rows) and not fsio.lock_is_held(lock_path()):
        return rows
    return dead


def _settle(db: sqlite_utils.Database, rows: list[dict[str, Any]]) -> list[str]:
    """Mark `rows` interrupted and remove the replay workspaces their processes left, with the worktree
    registrations in the user's repositories; returns what was removed."""
    if not rows:
        return []
    from skillopt_lib.sandbox import remove_leftovers  # git and process work: imported only when needed

    pids = {int(r["pid"]) for r in rows if r["pid"]}
    removed = remove_leftovers(paths.workspaces_dir(), pids)
    with db.conn:
        for row in rows:
            error = INTERRUPTED
            if removed:
                error += f"; removed {len(removed)} replay workspace(s) it left"
            db.table(TABLE).update(
                row["id"], {"status": "interrupted", "finished_at": utcnow_iso(), "error": error}
            )
    for row in rows:
        clear_progress(row["id"])
    return removed


def sweep_workspaces() -> list[str]:
    """Before a night replays: remove every replay workspace whose owner has ended, whichever process it
    was (a night, `skillopt replay`), and what a replay that outlived its owner left without a marker."""
    from skillopt_lib.sandbox import remove_leftovers

    return remove_leftovers(paths.workspaces_dir())


def settle_stale(db: sqlite_utils.Database) -> list[str]:
    """Settle nights that were killed, from anywhere (the daemon's start, `skillopt status`): marked
    interrupted, their leftover workspaces removed. Returns one note per night settled and per workspace."""
    rows = stale_runs(db)
    removed = _settle(db, rows)
    return [f"the night {r['id']} was interrupted ({INTERRUPTED})" for r in rows] + removed


def _last_result(db: sqlite_utils.Database) -> dict[str, Any] | None:
    marks = ", ".join("?" for _ in NOT_A_RESULT)
    rows = list(
        db.query(
            f"SELECT * FROM {TABLE} WHERE status NOT IN ({marks}) ORDER BY started_at DESC LIMIT 1",
            list(NOT_A_RESULT),
        )
    )
    return rows[0] if rows else None


def settle_interrupted(db: sqlite_utils.Database) -> tuple[str | None, str]:
    """Mark killed nights `interrupted`; returns (the night to resume from or None, a note saying which).

    The note is empty unless the last night was interrupted (settled now, or earlier by `skillopt status`
    or the daemon's start). That night is resumed only when its folder holds checkpoints; otherwise the new
    night starts clean and the note says so.
    """
    _settle(db, interrupted_runs(db))
    sweep_workspaces()
    prev_row = _last_result(db) if TABLE in db.table_names() else None
    if prev_row is None or prev_row["status"] != "interrupted":
        return None, ""
    prev = prev_row["id"]
    folder = night_dir(prev)
    if folder.is_dir() and any(folder.glob("*/state.json")):
        return prev, f"resuming the interrupted night {prev} from its checkpoints"
    return None, f"the night {prev} was interrupted before training; starting clean"


def running_run(db: sqlite_utils.Database) -> dict[str, Any] | None:
    """The night running now, if any (after `settle_stale`, a `running` row is a live one)."""
    if TABLE not in db.table_names():
        return None
    rows = list(db.query(f"SELECT * FROM {TABLE} WHERE status = 'running' ORDER BY started_at DESC LIMIT 1"))
    return rows[0] if rows else None


def last_finished(db: sqlite_utils.Database) -> dict[str, Any] | None:
    """The latest night that is not running (skipped ones included: they say why nothing ran)."""
    if TABLE not in db.table_names():
        return None
    rows = list(db.query(f"SELECT * FROM {TABLE} WHERE status != 'running' ORDER BY started_at DESC LIMIT 1"))
    return rows[0] if rows else None


def real_runs(db: sqlite_utils.Database, limit: int) -> list[dict[str, Any]]:
    """The latest `limit` nights that ran for real (what nights cost), newest first."""
    if TABLE not in db.table_names():
        return []
    marks = ", ".join("?" for _ in NOT_A_RESULT)
    return list(
        db.query(
            f"SELECT * FROM {TABLE} WHERE status NOT IN ({marks}) AND status != 'dry-run' AND NOT dry_run "
            "ORDER BY started_at DESC LIMIT ?",
            [*NOT_A_RESULT, limit],
        )
    )


def last_run(db: sqlite_utils.Database) -> dict[str, Any] | None:
    if TABLE not in db.table_names():
        return None
    rows = list(db.query(f"SELECT * FROM {TABLE} ORDER BY started_at DESC LIMIT 1"))
    return rows[0] if rows else None


def has_spent(db: sqlite_utils.Database) -> bool:
    """Whether any real night has spent money yet (by its estimate)."""
    if TABLE not in db.table_names():
        return False
    row = db.execute(
        f"SELECT 1 FROM {TABLE} WHERE NOT dry_run AND status != 'dry-run' "
        "AND CAST(json_extract(summary_json, '$.spend.cost_usd') AS REAL) > 0 LIMIT 1"
    ).fetchone()
    return row is not None


def consumed(row: dict[str, Any]) -> bool:
    """Whether the night of `row` used up the sessions ingested before it: it finished, was not a dry run,
    and did not error on every skill it took up. A night that trained nothing leaves them for the next."""
    if row["status"] not in FINISHED or row["dry_run"]:
        return False
    return not trained_nothing(json.loads(row["summary_json"] or "{}").get("skills", []))


def _last_consumed_start(db: sqlite_utils.Database) -> str | None:
    if TABLE not in db.table_names():
        return None
    marks = ", ".join("?" for _ in FINISHED)
    rows = db.query(
        f"SELECT status, dry_run, summary_json, started_at FROM {TABLE} WHERE status IN ({marks}) "
        "ORDER BY started_at DESC",
        list(FINISHED),
    )
    return next((row["started_at"] for row in rows if consumed(row)), None)


def new_since_last(db: sqlite_utils.Database) -> bool:
    """Whether anything was ingested since the last night that consumed the sessions started."""
    last = _last_consumed_start(db)
    if last is None:
        return True
    if "sessions" not in db.table_names():
        return False
    row = db.execute("SELECT max(updated_at) FROM sessions").fetchone()
    return bool(row and row[0] and row[0] > last)

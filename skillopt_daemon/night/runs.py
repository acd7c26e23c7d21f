"""The record of each night: its `night_runs` row, its run folder, and what an interrupted night left.

A row is written as `running` when a night starts (with its pid) and updated once when it ends, so a row
still `running` whose process is gone was killed mid-cycle; the next night marks it `interrupted` and
resumes its training from the checkpoints in its folder when there are any.
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
from skillopt_daemon.night.report import CycleReport, trained_nothing

TABLE = "night_runs"
# A night with one of these statuses looked at everything ingested before it started (unless it was a dry
# run or every skill it took up errored: see `consumed`).
FINISHED = ("completed", "nothing-to-do", "budget")


def night_dir(run_id: str) -> Path:
    """The folder holding one training run per skill of the night `run_id`."""
    return paths.runs_dir() / f"night-{run_id}"


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
    """Runs still marked running whose process is gone: they were killed mid-cycle."""
    out = []
    for row in db.query(f"SELECT * FROM {TABLE} WHERE status = 'running' ORDER BY started_at"):
        if row["pid"] == os.getpid() or not row["pid"] or not fsio.pid_alive(row["pid"]):
            out.append(row)
    return out


def settle_interrupted(db: sqlite_utils.Database) -> tuple[str | None, str]:
    """Mark killed nights `interrupted`; returns (the night to resume from or None, a note saying which).

    The note is empty when no night was interrupted. The last interrupted night is resumed only when its
    folder holds checkpoints; otherwise the new night starts clean and the note says so.
    """
    interrupted = interrupted_runs(db)
    if not interrupted:
        return None, ""
    with db.conn:
        for row in interrupted:
            db.table(TABLE).update(
                row["id"],
                {
                    "status": "interrupted",
                    "finished_at": utcnow_iso(),
                    "error": "the process ended before the night finished",
                },
            )
    prev = interrupted[-1]["id"]
    folder = night_dir(prev)
    if folder.is_dir() and any(folder.glob("*/state.json")):
        return prev, f"resuming the interrupted night {prev} from its checkpoints"
    return None, f"the night {prev} was interrupted before training; starting clean"


def last_run(db: sqlite_utils.Database) -> dict[str, Any] | None:
    if TABLE not in db.table_names():
        return None
    rows = list(db.query(f"SELECT * FROM {TABLE} ORDER BY started_at DESC LIMIT 1"))
    return rows[0] if rows else None


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

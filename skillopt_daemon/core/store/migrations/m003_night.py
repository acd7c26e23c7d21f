"""Mined task families and tasks, and the record of each nightly cycle.

Families and tasks are recomputed from the stored sessions on every mining pass (replaced in one
transaction); night runs accumulate, one row per cycle, with a status that says how it ended.
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    db.table("task_families").create(
        {
            "id": str,
            "name": str,
            "skill_name": str,
            "size": int,
            "tools_json": str,
            "projects_json": str,
            "checks_json": str,
            "rubric_json": str,
            "seed": int,
            "mined_at": str,
        },
        pk="id",
    )
    db.table("tasks").create(
        {
            "id": str,
            "family_id": str,
            "attempt_key": str,
            "session_pk": int,
            "tool": str,
            "session_id": str,
            "turn_key": str,
            "prompt": str,
            "project_path": str,
            "repo_commit": str,
            "repo_dirty": bool,
            "repo_diff_hash": str,
            "started_at": str,
            "split": str,
            "outcome": str,
            "accepted": bool,
            "abrupt_end": bool,
            "commands_json": str,
            "corrections_json": str,
            "skills_used_json": str,
        },
        pk="id",
    )
    db.table("tasks").create_index(["family_id"])
    db.table("tasks").create_index(["split"])
    db.table("night_runs").create(
        {
            "id": str,
            "trigger": str,
            "status": str,
            "dry_run": bool,
            "started_at": str,
            "finished_at": str,
            "heartbeat_at": str,
            "pid": int,
            "summary_json": str,
            "error": str,
        },
        pk="id",
    )
    db.table("night_runs").create_index(["started_at"])

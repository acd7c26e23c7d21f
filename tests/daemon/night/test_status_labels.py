"""`skillopt status` tells a night running now apart from the last finished one: the running night's
progress is "Tonight (running)", the finished night's result and notes "Last night (its date)"."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.night import runs, status
from skillopt_daemon.night.lock import night_lock


def test_a_running_night_and_last_nights_notes_are_labelled_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "so"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    db = open_db()
    summary = {"skills": [{"skill": "release-notes", "status": "skipped", "reason": "installed nowhere"}]}
    with db.conn:
        db.table("night_runs").insert(
            {
                "id": "n-last",
                "trigger": "schedule",
                "status": "completed",
                "dry_run": False,
                "started_at": "2026-11-30T03:17:00.000Z",
                "finished_at": "2026-11-30T03:40:00.000Z",
                "heartbeat_at": "2026-11-30T03:40:00.000Z",
                "pid": 1,
                "summary_json": json.dumps(summary),
                "error": None,
            }
        )
    with night_lock():
        runs.record_start(db, "n-now", "manual", False)
        with db.conn:
            db.execute("UPDATE night_runs SET pid = ? WHERE id = 'n-now'", [os.getpid()])
        lines = status.status_section(db)["lines"]
    assert lines[0].startswith("Tonight (running): started "), lines
    assert re.fullmatch(r"Last night \(2026-11-(29|30)\): completed \(.+\)", lines[1]), lines
    assert lines[2] == "release-notes: installed nowhere"
    assert not any("running now" in x or x.startswith("last night:") for x in lines), lines
    assert runs.running_run(db) is not None

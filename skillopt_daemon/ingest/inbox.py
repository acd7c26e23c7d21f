"""Serving the notes agent hooks leave (`skillopt notify`, see `notes`): read them, ingest the transcripts
they name at once, remove them.

A hook only drops a note and returns, so that it stays fast; whoever holds the store (the daemon, between
files of a long backfill too, or `skillopt ingest`) serves the notes, so a session that just ended is
searchable in moments rather than at the next rescan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_daemon.ingest.notes import SESSION_START
from skillopt_daemon.ingest.problems import record_problem
from skillopt_lib.agents import AgentTool

if TYPE_CHECKING:
    from skillopt_daemon.ingest.pipeline import Pipeline


@dataclass
class Note:
    """One note as read from the inbox folder."""

    path: Path
    event: str
    tool: AgentTool
    transcript_path: str | None
    session_id: str | None


def read_notes() -> list[Note]:
    """Notes dropped by `skillopt notify`, oldest first; unreadable ones are removed."""
    folder = paths.inbox_dir()
    if not folder.is_dir():
        return []
    notes: list[Note] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            tool = AgentTool.parse(str(data.get("tool") or "claude-code"))
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        notes.append(
            Note(path, str(data.get("event", "")), tool, data.get("transcript_path"), data.get("session_id"))
        )
    return notes


def handle_notes(pipeline: Pipeline) -> int:
    """Ingest the transcripts named by hook notes at once, then remove the notes.

    A start note usually arrives before its transcript exists (Claude Code runs the SessionStart hook
    before it writes the file): that is normal and not reported; the watcher and the end note find the
    file later. Only a note of another kind naming a missing file is a problem worth showing.
    """
    done = 0
    for note in read_notes():
        if note.transcript_path:
            path = Path(note.transcript_path)
            source = pipeline.source_for(path) or next(
                (s for s in pipeline.sources if s.tool == note.tool), None
            )
            if source is not None and path.is_file():
                pipeline.ingest_paths([(source, path)], signals=False)
                done += 1
            elif source is not None and note.event != SESSION_START:
                record_problem(
                    pipeline.db,
                    "note-missing-transcript",
                    f"a {note.event or 'hook'} note named {path}, which does not exist",
                    path=str(path),
                    tool=note.tool.value,
                    level="warning",
                )
        note.path.unlink(missing_ok=True)
    return done

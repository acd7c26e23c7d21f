"""Serving the notes agent hooks leave (`skillopt notify`, see `notes`): read them, ingest the transcripts
they name at once (only inside the tool's own log folders), remove them.

A hook only drops a note and returns, so that it stays fast; whoever holds the store (the daemon, between
files of a long backfill too, or `skillopt ingest`) serves the notes, so a session that just ended is
searchable in moments rather than at the next rescan.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import tool_home
from skillopt_daemon.ingest.meta import NO_TRANSCRIPT_KEY, get_meta, set_meta
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


def log_folders(pipeline: Pipeline, tool: AgentTool) -> list[Path]:
    """Where `tool` keeps its logs, with symbolic links resolved: its home (`core.config.tool_home`) and
    the roots its readers follow (including configured `extra_dirs`)."""
    folders = [tool_home(tool, pipeline.settings)]
    folders += [root for source in pipeline.sources if source.tool == tool for root in source.roots()]
    return sorted({Path(os.path.realpath(f)) for f in folders})


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def handle_notes(pipeline: Pipeline) -> int:
    """Ingest the transcripts named by hook notes at once, then remove the notes.

    A note only says where a transcript is; whoever wrote it (any process of the user's, not only the
    agent's hook) could name any file. So a transcript is read only when its path, symbolic links
    resolved, lies inside the tool's own log folders (`log_folders`); any other path is refused unread and
    recorded as a `note-refused` warning.

    A note for a transcript that does not exist is normal: a start note usually arrives before its
    transcript (Claude Code runs the SessionStart hook before it writes the file), and `claude plugin
    install` or a session closed before its first prompt end without ever writing one. None of them is a
    problem; the end notes of the last two are only counted (`NO_TRANSCRIPT_KEY`, shown by `skillopt
    status --json`), and a transcript that appears later is found by the watcher and rescans.
    """
    done = 0
    for note in read_notes():
        if note.transcript_path:
            done += _serve(pipeline, note, Path(os.path.abspath(note.transcript_path)))
        note.path.unlink(missing_ok=True)
    return done


def _serve(pipeline: Pipeline, note: Note, path: Path) -> int:
    source = next((s for s in pipeline.sources if s.tool == note.tool), None)
    if source is None:
        return 0  # the tool is not read by this pipeline (disabled, or not asked for)
    real = Path(os.path.realpath(path))
    folders = log_folders(pipeline, note.tool)
    if not _inside(real, folders):
        shown = str(path) if real == path else f"{path} (which leads to {real})"
        record_problem(
            pipeline.db,
            "note-refused",
            f"a {note.event or 'hook'} note named {shown}, outside {note.tool.value}'s log folders "
            f"({', '.join(str(f) for f in folders)}); it was not read",
            path=str(path),
            tool=note.tool.value,
            level="warning",
        )
        return 0
    if real.is_file():
        reader = pipeline.source_for(real) or source
        if reader.is_transcript(real):
            pipeline.ingest_paths([(reader, real)], signals=False)
            return 1
        return 0
    if note.event != SESSION_START and not real.exists():
        with pipeline.db.conn:
            count = int(get_meta(pipeline.db, NO_TRANSCRIPT_KEY) or 0)
            set_meta(pipeline.db, NO_TRANSCRIPT_KEY, str(count + 1))
    return 0

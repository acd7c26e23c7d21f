"""The ingest layer: agent tools' transcripts → sessions in the store, and the queries every face uses.

    sources/<tool>  one reader per agent tool, behind the `Source` protocol (sources/base.py)
    tail            following files: identity, complete lines from an offset, walks, watches
    redact          secrets out of everything stored
    pinning         the repo state a session started from (one git reader) and its dirty diff
    writer          records → rows (sessions, turns, tool calls), upserts by stable keys
    pipeline        discovery, batches, and the transaction that commits rows with the file offset
    problems, meta  the ingest error log, and small facts kept in `ingest_meta`
    status          the ingest section of `skillopt status`
    kinds           what each user message is: the one correction classifier (mining uses it too)
    signals         what a session shows (corrections, failed commands, test results)
    notes           hook notes (`skillopt notify`), standard library only
    queries         session queries for the CLI, the web app and the MCP server

The names below are the layer's public API for the layers above. They load lazily, so that importing a
submodule that must stay fast (`notes`, on an agent hook's path) does not load the pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillopt_daemon.ingest.meta import PAUSE_KEY, get_meta, set_meta
    from skillopt_daemon.ingest.pinning import RepoPin, dirty_diff_path, load_dirty_diff, pin_sessions
    from skillopt_daemon.ingest.pinning import read_repo as pin_repo
    from skillopt_daemon.ingest.pipeline import FileOutcome, Pipeline, load_sources, summarize
    from skillopt_daemon.ingest.problems import record_problem
    from skillopt_daemon.ingest.status import status_section
    from skillopt_daemon.ingest.writer import RecordWriter

# public name -> (module, attribute)
_EXPORTS = {
    "FileOutcome": ("pipeline", "FileOutcome"),
    "Pipeline": ("pipeline", "Pipeline"),
    "load_sources": ("pipeline", "load_sources"),
    "summarize": ("pipeline", "summarize"),
    "RecordWriter": ("writer", "RecordWriter"),
    "RepoPin": ("pinning", "RepoPin"),
    "pin_repo": ("pinning", "read_repo"),
    "pin_sessions": ("pinning", "pin_sessions"),
    "dirty_diff_path": ("pinning", "dirty_diff_path"),
    "load_dirty_diff": ("pinning", "load_dirty_diff"),
    "record_problem": ("problems", "record_problem"),
    "get_meta": ("meta", "get_meta"),
    "PAUSE_KEY": ("meta", "PAUSE_KEY"),
    "set_meta": ("meta", "set_meta"),
    "status_section": ("status", "status_section"),
}

__all__ = [
    "PAUSE_KEY",
    "FileOutcome",
    "Pipeline",
    "RecordWriter",
    "RepoPin",
    "dirty_diff_path",
    "get_meta",
    "load_dirty_diff",
    "load_sources",
    "pin_repo",
    "pin_sessions",
    "record_problem",
    "set_meta",
    "status_section",
    "summarize",
]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'skillopt_daemon.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(f"skillopt_daemon.ingest.{target[0]}"), target[1])

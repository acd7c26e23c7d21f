"""Notes from agent hooks (`skillopt notify session-end|session-start`) for the daemon.

The agent may exit before a slow hook finishes (and Ctrl+C skips SessionEnd), so this only drops a note
in the inbox folder for the daemon and returns: no database, no heavy imports (the standard library,
`core.paths` and `skillopt_lib.fsio` only), well under 100 ms. The note is a private file written atomically
(`fsio.write_private`: a hidden temporary name, then a rename), so the daemon never reads half of one. A malformed hook
input is reported on stderr but never fails the hook: an agent session must not break because of us.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from skillopt_daemon.core import paths
from skillopt_lib.fsio import write_private

# The hook fields the daemon needs; anything else in the hook's input is not kept.
NOTE_FIELDS = ("session_id", "transcript_path", "cwd", "reason", "source", "hook_event_name")
MAX_STDIN_BYTES = 1 << 20


def write_note(event: str, payload: dict[str, Any], tool: str = "claude-code") -> Path:
    """Atomically write one note for the daemon; returns its path."""
    folder = paths.inbox_dir()
    if not folder.is_dir():
        paths.ensure_private_dir(folder)
    note: dict[str, Any] = {"event": event, "tool": tool, "at": time.time()}
    for key in NOTE_FIELDS:
        value = payload.get(key)
        if isinstance(value, str) and value:
            note[key] = value
    final = folder / f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    write_private(final, json.dumps(note))
    return final


def _read_hook_input() -> dict[str, Any]:
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        sys.stderr.write("skillopt notify: the hook input is not JSON; noted without a transcript\n")
        return {}
    return data if isinstance(data, dict) else {}


def notify_event(event: str, tool: str) -> None:
    payload = _read_hook_input()
    try:
        write_note(event, payload, tool)
    except OSError as exc:
        sys.stderr.write(f"skillopt notify: cannot write the note: {exc}\n")


SESSION_START = "session-start"  # sent before the agent writes its transcript: it may not exist yet
EVENTS = ("session-end", SESSION_START)


def fast_main(argv: list[str]) -> int | None:
    """`notify session-end|session-start [--tool T]` with the standard library only; None for anything else.

    typer alone takes longer to import and parse than a hook should take in total, so the command's
    entry point can call this before it loads typer; help and unexpected arguments fall through to typer.
    """
    if not argv or argv[0] not in EVENTS:
        return None
    tool = "claude-code"
    rest = argv[1:]
    while rest:
        arg = rest.pop(0)
        if arg == "--tool" and rest:
            tool = rest.pop(0)
        elif arg.startswith("--tool="):
            tool = arg.split("=", 1)[1]
        else:
            return None
    notify_event(argv[0], tool)
    return 0

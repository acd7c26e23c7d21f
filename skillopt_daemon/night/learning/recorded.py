"""What a corrected session already shows: the agent's recorded work on a train task, up to the user's first
correction, read from the store instead of paid for with a replay.

A train task's replay under the installed skill exists to show the optimizer what goes wrong. When the user
corrected the agent in that very session, the record shows it already: the work the agent did and the
words the user answered it with. Replaying it would spend a run (tens of thousands of tokens) to learn what
is on record, so the night's first training step reads the record (`ReplayEnvironment.recorded`); every
candidate is still judged on replays of the validation tasks, never on a record.

Only stored text is read, and stored text was redacted at ingest. User turns are left out: the user's words
reach the optimizer as the task's corrections (`preferences.for_optimizer`), marked as theirs.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlite_utils

from skillopt_daemon.night.tasks import NightTask

# What the optimizer reads of a recorded attempt: enough for the work that was corrected, not a session.
MAX_ENTRIES = 40
MAX_CHARS = 6000


def corrected_train(task: NightTask) -> bool:
    """A train task whose session shows the user correcting the work: its failure is on record."""
    return task.split == "train" and bool(task.corrections)


def recorded_work(db: sqlite_utils.Database, tasks: Iterable[NightTask]) -> dict[str, str]:
    """For each corrected train task: the agent's messages and tool calls from its request up to the
    user's first correction, as a trajectory. A task whose record holds no agent step still gets an entry
    saying so: the user's correction is what the optimizer learns from, and the night's plan counts no
    replay for it (`planning.planned_replays`)."""
    out: dict[str, str] = {}
    for task in tasks:
        if corrected_train(task):
            out[task.id] = (
                _attempt_text(db, task) or "(the recorded session holds no step of the agent's work)"
            )
    return out


def _attempt_text(db: sqlite_utils.Database, task: NightTask) -> str:
    rows = list(db.query("SELECT session_pk, turn_key FROM tasks WHERE id = ?", [task.id]))
    if not rows or rows[0]["session_pk"] is None:
        return ""
    session_pk, turn_key = rows[0]["session_pk"], rows[0]["turn_key"]
    start = list(db.query("SELECT seq FROM turns WHERE session_pk = ? AND key = ?", [session_pk, turn_key]))
    if not start:
        return ""
    turns = list(
        db.query(
            "SELECT key, role, text, is_meta FROM turns WHERE session_pk = ? AND seq > ? ORDER BY seq",
            [session_pk, start[0]["seq"]],
        )
    )
    calls: dict[str, list[dict[str, object]]] = {}
    for c in db.query(
        "SELECT turn_key, name, input_summary, exit_code, is_error, output_excerpt FROM tool_calls "
        "WHERE session_pk = ? ORDER BY seq",
        [session_pk],
    ):
        calls.setdefault(str(c["turn_key"] or ""), []).append(c)
    corrections = {c.strip() for c in task.corrections}
    lines: list[str] = []
    for turn in turns:
        if turn["is_meta"]:
            continue
        if turn["role"] == "user":
            if (turn["text"] or "").strip() in corrections:
                break
            continue
        said = (turn["text"] or "").strip()
        if said:
            lines.append(f"assistant: {said[:800]}")
        for c in calls.get(str(turn["key"]), []):
            result = (
                "error" if c["is_error"] else f"exit {c['exit_code']}" if c["exit_code"] is not None else ""
            )
            head = f"tool {c['name']}: {str(c['input_summary'] or '')[:300]}"
            lines.append(f"{head} → {result}" if result else head)
            excerpt = str(c["output_excerpt"] or "").strip()
            if excerpt:
                lines.append("  " + excerpt[-400:].replace("\n", "\n  "))
        if len(lines) >= MAX_ENTRIES:
            break
    text = "\n".join(lines[:MAX_ENTRIES])
    return text[-MAX_CHARS:]

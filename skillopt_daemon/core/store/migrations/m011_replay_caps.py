"""What the agent spent on each mined task in the user's own session, which caps a replay of it.

- `tasks.recorded_tool_calls`: the tool calls the agent made for the attempt (follow-ups included).
- `tasks.recorded_work_s`: the seconds it worked on it, the user's pauses between messages left out; NULL
  when the transcript had no timestamps.

Rows mined before this migration have neither until the next mining pass; their replays get the default
caps (`night/learning/replay_caps.py`).
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    tasks = db.table("tasks")
    cols = {c.name for c in tasks.columns}
    if "recorded_tool_calls" not in cols:
        tasks.add_column("recorded_tool_calls", int)
    if "recorded_work_s" not in cols:
        tasks.add_column("recorded_work_s", float)

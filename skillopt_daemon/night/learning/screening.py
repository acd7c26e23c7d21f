"""What the candidate screen knows about a skill's tasks: whose words they were, what tool output the agent
saw, and which hosts their repositories already use (`skillopt_lib.screen`).

The user's words are the tasks' requests and corrections and every message the user typed in their sessions.
Tool output is what the agent read in those sessions (stored tool results and their excerpts) and what it
said; a line a candidate adds that copies long runs of that text, and none of the user's, is flagged as
copied. The hosts come from what each task's repository runs (`skillopt_lib/project_hosts.py`: its git
remotes, package manifests, lock files and registry settings, CI files and scripts, never its prose or
comments), so a rule that names the project's own registry or API is not taken for exfiltration, while a host
only a README or an issue names stays unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import sqlite_utils

from skillopt_lib.screen import CandidateScreen, repo_hosts

if TYPE_CHECKING:
    from skillopt_daemon.night.tasks import NightTask

# Per kind of text, what the screen reads at most (tool output can be large; the runs it looks for are short).
_MAX_TEXTS = 20_000


def candidate_screen(db: sqlite_utils.Database, tasks: Sequence[NightTask]) -> CandidateScreen:
    """The screen for candidates trained on `tasks` (as `replay.tasks_for_families` loads them)."""
    user: list[str] = []
    tool: list[str] = []
    for t in tasks:
        user.append(t.prompt)
        user.extend(str(c) for c in t.corrections)
    sessions = sorted({(t.tool, t.session) for t in tasks if t.session})
    for tool_name, session_id in sessions:
        rows = list(
            db.query("SELECT id FROM sessions WHERE tool = ? AND session_id = ?", [tool_name, session_id])
        )
        for row in rows:
            pk = row["id"]
            for turn in db.query(
                "SELECT role, text, is_meta FROM turns WHERE session_pk = ? ORDER BY seq LIMIT ?",
                [pk, _MAX_TEXTS],
            ):
                if turn["role"] == "user" and not turn["is_meta"]:
                    user.append(turn["text"] or "")
                else:
                    tool.append(turn["text"] or "")
            for call in db.query(
                "SELECT output_excerpt FROM tool_calls WHERE session_pk = ? ORDER BY seq LIMIT ?",
                [pk, _MAX_TEXTS],
            ):
                if call["output_excerpt"]:
                    tool.append(call["output_excerpt"])
    hosts: set[str] = set()
    for repo in sorted({t.repo for t in tasks if t.repo}):
        hosts |= repo_hosts(repo)
    return CandidateScreen(
        user_words=[u for u in user if u.strip()],
        tool_outputs=[x for x in tool if x.strip()],
        repo_hosts=hosts,
    )

"""The night's task: one mined task worth replaying, as the replay environment, the gate, the screen, the
optimizer's preferences and a proposal's evidence all read it.

A typed record rather than a dict, so a reader cannot ask for a key no loader writes (it is a type error,
not a silent `None`). The library's exec environment still takes plain task dicts (it also reads task
files), so `to_dict` is the one place the record becomes one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from skillopt_daemon.ingest.pinning import load_dirty_diff
from skillopt_daemon.night.checks import RUBRIC


@dataclass(frozen=True)
class NightTask:
    """One replayable task of a mined family, with the split, group and tool the gate and replays need."""

    id: str
    prompt: str
    split: str
    """train, val or test: mining assigned it, so a task and its near-duplicates never straddle the gate."""
    family: str = ""
    tool: str = ""
    """The agent tool it was done with: it is replayed with that tool's agent."""
    repo: str | None = None
    commit: str | None = None
    dirty_diff: str | None = None
    """The uncommitted changes the session started from, when they were kept (never when they held a
    secret: see ingest.pinning.keep_dirty_diff)."""
    checks: list[str] = field(default_factory=list)
    """Only the checks that tell right from wrong at this commit; none when the rubric scores it."""
    rubric: list[str] = field(default_factory=list)
    scoring: str = ""
    guards: list[str] = field(default_factory=list)
    """Checks that passed before the work at this commit: they cannot tell right from wrong, but a replay
    that breaks one fails."""
    group: str = ""
    """Near-duplicates (and attempts of one session) share a group: the gate counts a group once. Empty
    means the task is a group of its own (`group_key`)."""
    role: str = ""
    session: str = ""
    started_at: str = ""
    corrections: list[str] = field(default_factory=list)
    """This task's own corrections; the optimizer reads them only for train tasks (`preferences`)."""
    recorded_tool_calls: int | None = None
    """The tool calls the agent made for it in the user's session; None when mined before they were kept."""
    recorded_work_s: float | None = None
    """The seconds the agent worked on it in the user's session; None when unknown. With the tool calls,
    what a replay of it is capped by (`night/learning/replay_caps.py`)."""

    @property
    def group_key(self) -> str:
        """The group the gate counts this task in: its own id when mining gave it none."""
        return self.group or self.id

    @classmethod
    def from_row(cls, t: dict[str, Any], rubric: list[str]) -> NightTask:
        """The task from its `tasks` row (already settled by `checks.settle`) and its family's rubric."""
        return cls(
            id=t["id"],
            prompt=t["prompt"],
            split=t["split"],
            family=t["family_id"],
            tool=t["tool"],
            repo=t["project_path"],
            commit=t["repo_commit"],
            dirty_diff=load_dirty_diff(t.get("repo_diff_hash")) if t.get("repo_dirty") else None,
            checks=[] if t["scoring"] == RUBRIC else json.loads(t["scored_checks_json"] or "[]"),
            rubric=list(rubric),
            scoring=t["scoring"] or "",
            guards=json.loads(t.get("guard_checks_json") or "[]"),
            group=t.get("split_group") or t["id"],
            role=t.get("role") or "",
            session=t["session_id"] or "",
            started_at=t["started_at"] or "",
            corrections=json.loads(t.get("corrections_json") or "[]"),
            recorded_tool_calls=t.get("recorded_tool_calls"),
            recorded_work_s=t.get("recorded_work_s"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The task dict `skillopt_lib.envs.exec_tasks.ExecTasksEnvironment` reads (its items' data and meta)."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "repo": self.repo,
            "commit": self.commit,
            "dirty_diff": self.dirty_diff,
            "checks": list(self.checks),
            "rubric": list(self.rubric),
            "scoring": self.scoring,
            "guards": list(self.guards),
            "split": self.split,
            "group": self.group_key,
            "role": self.role,
            "family": self.family,
            "tool": self.tool,
            "session": self.session,
            "started_at": self.started_at,
            "corrections": list(self.corrections),
            "recorded_tool_calls": self.recorded_tool_calls,
            "recorded_work_s": self.recorded_work_s,
        }

"""The replay Environment: a user's own mined tasks, run by their own agent CLI in a sandbox.

Items are the tasks of the families related to one skill, with the splits mining assigned, that are worth
replaying: a task scores by its checks only when they can tell right from wrong at its commit, else by its
family's rubric, else it is left out (`night/checks.py`). Each run replays the task from its pinned
repository state with the candidate skill installed, then scores it: checks first (commands that proved
success in the original sessions), then the family's rubric items judged on the work (diff, files, command
results) by a chat backend. A replay that games its checks (adds a suppression, edits what the checks read:
`skillopt_lib.gaming`) fails, and its feedback and evidence say why.

What the optimizer reads of a replay depends on its split. A train task's feedback carries the user's own
corrections in that task, verbatim, as their stated preferences (`preferences.for_optimizer`), and each
failed check with its output: that is what the user taught, and what a skill should learn. Validation and
test tasks grade candidates, so their corrections only ever reach the judge, and their feedback only counts.

A family's sessions can come from several tools (Claude Code and Codex); each task is replayed with the
agent of the tool it was done with, so every task of a family counts whichever tool the user used.

Every result is also recorded by skill hash and item, so the nightly cycle can show per-task baseline and
candidate outcomes as a proposal's evidence without replaying anything twice.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.night.agents import replayable_tools
from skillopt_daemon.night.checks import EXCLUDED, settle
from skillopt_daemon.night.learning import replay_caps
from skillopt_daemon.night.learning.recorded import corrected_train as corrected_recorded
from skillopt_daemon.night.mining import preferences
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib import gaming
from skillopt_lib.backends.base import ChatBackend
from skillopt_lib.envs.base import AgentBackend, Item, ItemResult
from skillopt_lib.envs.exec_tasks import ExecTasksEnvironment, score
from skillopt_lib.errors import ConfigError
from skillopt_lib.execution import ExecBackend, ExecLimits, ExecResult
from skillopt_lib.judge import judge_rubric, work_record
from skillopt_lib.sandbox import ReplayTask, replay
from skillopt_lib.skill import SkillBundle


def tasks_for_skill(
    db: sqlite_utils.Database, skill: str, tool: str | None = None, *, probe_root: Path | None = None
) -> list[NightTask]:
    """The mined tasks of every family related to `skill` that are worth replaying."""
    rows = db.query("SELECT id FROM task_families WHERE skill_name = ? ORDER BY id", [skill])
    return tasks_for_families(db, [r["id"] for r in rows], tool, probe_root=probe_root)


def tasks_for_families(
    db: sqlite_utils.Database,
    family_ids: Sequence[str],
    tool: str | None = None,
    *,
    probe_root: Path | None = None,
) -> list[NightTask]:
    """The tasks of the given families (only those done with `tool` when given) that are worth replaying,
    for the replay environment. Checks are first run before the work where that was never
    done (in workspaces under `probe_root`, default skillopt's workspaces folder); see `night/checks.py`."""
    if not family_ids:
        return []
    marks = ", ".join("?" for _ in family_ids)
    fams = {
        f["id"]: f
        for f in db.query(f"SELECT * FROM task_families WHERE id IN ({marks}) ORDER BY id", list(family_ids))
    }
    out: list[NightTask] = []
    for fid, fam in fams.items():
        checks = json.loads(fam["checks_json"] or "[]")
        rubric = json.loads(fam["rubric_json"] or "[]")
        params: list[Any] = [fid]
        sql = "SELECT * FROM tasks WHERE family_id = ?"
        if tool:
            sql += " AND tool = ?"
            params.append(tool)
        rows = list(db.query(sql + " ORDER BY started_at, id", params))
        settle(db, rows, checks, rubric, probe_root or paths.workspaces_dir())
        out.extend(NightTask.from_row(t, rubric) for t in rows if t["scoring"] != EXCLUDED)
    return out


# The tail of a failed check's output the optimizer reads: enough for the failing lines, not a whole log.
FAILED_OUTPUT_CHARS = 1500


class ReplayEnvironment(ExecTasksEnvironment):
    name = "replay"

    def __init__(
        self,
        tasks: Sequence[NightTask],
        *,
        seed_skill: SkillBundle,
        workspaces_root: Path,
        judge: ChatBackend | None = None,
        limits: ExecLimits | None = None,
        env_allowlist: Sequence[str] | None = None,
        keep: bool = False,
        agents: Mapping[str, ExecBackend] | None = None,
        recorded: Mapping[str, str] | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {}
        if env_allowlist is not None:
            kwargs["env_allowlist"] = tuple(env_allowlist)
        # The night reads its own typed tasks by item id; the library's environment reads their dicts.
        self.night_tasks = {t.id: t for t in tasks}
        super().__init__(
            [t.to_dict() for t in tasks],
            seed_skill=seed_skill,
            workspaces_root=workspaces_root,
            limits=limits,
            keep=keep,
            guard_gaming=True,
            **kwargs,
        )
        self.judge = judge
        # The recorded work of corrected train tasks (`night/learning/recorded.py`), by task id: read, not replayed.
        self.recorded_work = dict(recorded or {})
        self.seed_hash = seed_skill.content_hash
        # One exec backend per tool: each task replays with the tool it was done with (its `tool`).
        self.agents = dict(agents or {})
        self._lock = threading.Lock()
        self.observed: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        self.replays = 0

    def _item(self, t: Mapping[str, Any]) -> Item:
        item = super()._item(t)
        item.gold["rubric"] = list(self.night_tasks[item.id].rubric)
        return item

    def run(self, item: Item, skill: SkillBundle, agent: AgentBackend) -> ItemResult:
        """Replay `item` with the agent of the tool its task was done with (`agent` when there is none)."""
        night_task = self.night_tasks[item.id]
        agent = self.agents.get(night_task.tool, agent)
        if not isinstance(agent, ExecBackend):
            raise ConfigError(
                "replays need an exec backend ("
                + ", ".join(t.value for t in replayable_tools())
                + ") as the agent"
            )
        checks = list(item.gold.get("checks") or [])
        guards = [g for g in night_task.guards if g not in checks]
        task = ReplayTask(
            prompt=str(item.data["prompt"]),
            repo=item.data.get("repo"),
            commit=item.data.get("commit"),
            dirty_diff=item.data.get("dirty_diff"),
            checks=checks + guards,
            id=item.id,
            check_timeout_s=float(item.gold.get("check_timeout_s") or 300.0),
        )
        # Capped relative to the session it replays (`night/learning/replay_caps.py`); stopped by its cap, the replay
        # is scored by what it produced, and its record says so.
        cap = replay_caps.cap_for(night_task, self.limits or agent.limits)
        # An empty bundle is "no skill at all" (a new rule's no-harm check replays without any, `noharm.py`).
        installed = skill if skill.files else None
        result = replay(
            task, agent, self.config, skill=installed, limits=cap.limits(self.limits or agent.limits)
        )
        stopped = replay_caps.stopped_by(result)
        gamed = gaming.assess(result.diff, task.checks, task.prompt)
        broken = [c for c in result.checks if c.command in guards and not c.passed]
        scored = score(
            item.id,
            replace(result, checks=[c for c in result.checks if c.command not in guards]),
            gamed,
            stopped_counts=True,
        )
        scored.details["cap"] = cap.to_dict()
        scored.details["hit_cap"] = stopped
        # What the replay tried to reach and was refused (host and port): a candidate whose replays try a host
        # the installed skill's replays never did is not proposed (`night/learning/target.py`).
        scored.details["network_blocked"] = list(result.network_blocked)
        if broken:
            # A check that passed before the work and fails after it: the work did damage.
            scored.hard = scored.soft = 0.0
            scored.details["guards_broken"] = [c.command for c in broken]
            scored.feedback += "\nThe work broke a check that passed before it: " + ", ".join(
                f"`{c.command}`" for c in broken
            )
        rubric = list(item.gold.get("rubric") or [])
        produced = result.finished or stopped is not None
        if rubric and self.judge is not None and produced and not gamed and not broken:
            verdict = judge_rubric(self.judge, task.prompt, work_record(result), rubric)
            unmet = sum(1 for ok in verdict.satisfied if not ok)
            has_checks = bool(checks)
            scored.soft = (scored.soft + verdict.score) / 2 if has_checks else verdict.score
            # Without a check the judge scores the work (a run that was refused a tool still did work).
            passed = scored.hard >= 1.0 if has_checks else produced
            scored.hard = 1.0 if passed and unmet == 0 else 0.0
            scored.usage.add(verdict.usage)
            scored.details["rubric_unmet"] = unmet
            scored.details["rubric_total"] = len(rubric)
            if unmet:
                scored.feedback += f"\n{unmet} of {len(rubric)} of the user's stated rules were not followed."
            if verdict.error:
                scored.details["judge_error"] = verdict.error
        self._teach(night_task, result, scored)
        with self._lock:
            self.replays += 1
            self.observed[(skill.content_hash, item.id)].append(
                {
                    "hard": scored.hard,
                    "soft": scored.soft,
                    "status": scored.details.get("status"),
                    "checks_passed": scored.details.get("checks_passed"),
                    "checks_total": scored.details.get("checks_total"),
                    "rubric_unmet": scored.details.get("rubric_unmet"),
                    "gaming": scored.details.get("gaming") or [],
                    "guards_broken": scored.details.get("guards_broken") or [],
                    "refused": scored.details.get("refused"),
                    "network_blocked": list(result.network_blocked),
                    "duration_s": round(scored.duration_s, 2),
                    "hit_cap": stopped,
                }
            )
        return scored

    def recorded(self, item: Item) -> ItemResult | None:
        """A corrected train task's outcome as its session recorded it (the trainer reads it instead of a
        replay, `TrainConfig.use_recorded`): failed, the agent's recorded work as the trajectory, and the
        user's corrections as their stated preferences, like a replay's. None for any other task."""
        night_task = self.night_tasks.get(item.id)
        work = self.recorded_work.get(item.id)
        if night_task is None or work is None or not corrected_recorded(night_task):
            return None
        scored = ItemResult(
            item.id,
            0.0,
            0.0,
            feedback="Not replayed: the recorded session shows this work, and the user corrected it "
            "(their words are below).",
            trajectory=work,
            details={"status": "recorded"},
        )
        self._teach(night_task, None, scored)
        with self._lock:
            self.observed[(self.seed_hash, item.id)].append(
                {"hard": 0.0, "soft": 0.0, "status": "recorded", "gaming": [], "guards_broken": []}
            )
        return scored

    def runs_of(self, skill_hash: str) -> list[list[dict[str, Any]]]:
        """Every recorded replay of `skill_hash`, per item (any split)."""
        with self._lock:
            return [list(runs) for (h, _iid), runs in self.observed.items() if h == skill_hash]

    def gaming(self) -> list[str]:
        """What the night's replays did to game their checks, each finding once, most frequent first."""
        with self._lock:
            found = Counter(why for runs in self.observed.values() for run in runs for why in run["gaming"])
        return [why for why, _ in found.most_common()]

    def _teach(self, task: NightTask, result: ExecResult | None, scored: ItemResult) -> None:
        """What the optimizer may learn from this replay (or record, `result` None): a train task's
        corrections, failed checks' output."""
        prefs = preferences.for_optimizer(task)
        if prefs:
            scored.details["user_preferences"] = [p.to_dict() for p in prefs]
        if task.split == preferences.TRAIN and result is not None:
            failed = [c for c in result.checks if not c.passed]
            if failed:
                scored.details["failed_checks"] = [
                    {
                        "command": c.command,
                        "exit_code": c.exit_code,
                        "output": c.output[-FAILED_OUTPUT_CHARS:],
                    }
                    for c in failed
                ]

    def outcomes(self, skill_hash: str, split: str = "val") -> dict[str, list[dict[str, Any]]]:
        ids = {i.id for i in self.splits().get(split)}  # type: ignore[arg-type]
        with self._lock:
            return {
                iid: list(runs) for (h, iid), runs in self.observed.items() if h == skill_hash and iid in ids
            }

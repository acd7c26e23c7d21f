"""An exec environment over coding tasks with check commands: the shared part of replays and coding suites.

Each item is a task a real agent CLI works on in a sandbox (`skillopt_lib.sandbox.replay`) with the candidate
skill installed. The score comes from the task's checks, run in the workspace after the agent finished:
hard = the agent finished (`ok`) and every check passed, soft = the fraction of checks that passed. A replay
whose diff games its checks (adds a suppression, edits what the checks read: `skillopt_lib.gaming`) fails
whatever the checks say, when the environment guards against gaming. The optimizer's feedback says what went wrong in the agent's terms (status, failing commands, how many checks
failed) but never quotes the check commands or their output, so a skill cannot learn the grader.

Task dicts: `{"id", "prompt", "repo"?, "commit"?, "dirty_diff"?, "checks": [...], "split"?}`; items without
a split are assigned one deterministically from a hash of their id.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml

from skillopt_lib import gaming, userdir
from skillopt_lib.envs.base import AgentBackend, Item, ItemResult, Splits
from skillopt_lib.errors import ConfigError
from skillopt_lib.execution import ExecBackend, ExecLimits, ExecResult, ExecStatus
from skillopt_lib.sandbox import DEFAULT_ENV_ALLOWLIST, ReplayTask, SandboxConfig, replay
from skillopt_lib.skill import SkillBundle, SkillDoc

_DEFAULT_SEED = SkillDoc.new(
    "project-workflow",
    "How to work on tasks in this project: where things are, how to test, what to check before finishing.",
    "# Project workflow\n\nRun the project's tests before you say you are done.\n",
)


def load_tasks(source: str | Path | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tasks from a list, or a `.json` / `.jsonl` / `.yaml` file."""
    if not isinstance(source, (str, Path)):
        return [dict(t) for t in source]
    path = Path(source)
    if not path.is_file():
        raise ConfigError(
            f"task file {path} does not exist", hint="give a .json, .jsonl or .yaml list of tasks"
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        data: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        data = yaml.safe_load(text)
    if isinstance(data, dict):
        data = data.get("tasks", [])
    if not isinstance(data, list):
        raise ConfigError(f"{path} must hold a list of tasks")
    return [dict(t) for t in data]


def _split_of(task_id: str, seed: int, val: float, test: float) -> str:
    h = int(hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if h < test:
        return "test"
    if h < test + val:
        return "val"
    return "train"


class ExecTasksEnvironment:
    name = "exec-tasks"
    agent_kind: Literal["chat", "exec"] = "exec"

    def __init__(
        self,
        tasks: str | Path | Sequence[Mapping[str, Any]],
        *,
        seed_skill: str | Path | SkillBundle | None = None,
        workspaces_root: str | Path | None = None,
        limits: ExecLimits | None = None,
        env_allowlist: Sequence[str] = DEFAULT_ENV_ALLOWLIST,
        keep: bool = False,
        max_parallel: int = 2,
        seed: int = 42,
        val_fraction: float = 0.25,
        test_fraction: float = 0.25,
        guard_gaming: bool = False,
    ) -> None:
        self.tasks = load_tasks(tasks)
        for i, t in enumerate(self.tasks):
            if not t.get("prompt"):
                raise ConfigError(f"task {t.get('id', i)!r} has no prompt")
            t.setdefault("id", f"task-{i}")
        self._seed_skill = seed_skill
        self.limits = limits
        self.config = SandboxConfig(
            root=Path(workspaces_root) if workspaces_root else userdir.workspaces_dir(),
            env_allowlist=tuple(env_allowlist),
            keep=keep,
            max_parallel=max_parallel,
        )
        self.seed = seed
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.guard_gaming = guard_gaming

    def splits(self) -> Splits:
        out: dict[str, list[Item]] = {"train": [], "val": [], "test": []}
        for t in self.tasks:
            split = t.get("split") or _split_of(
                str(t["id"]), self.seed, self.val_fraction, self.test_fraction
            )
            if split not in out:
                raise ConfigError(
                    f"task {t['id']!r} has unknown split {split!r}", hint="use train, val or test"
                )
            out[split].append(self._item(t))
        return Splits(train=out["train"], val=out["val"], test=out["test"])

    def _item(self, t: Mapping[str, Any]) -> Item:
        return Item(
            id=str(t["id"]),
            data={k: t.get(k) for k in ("prompt", "repo", "commit", "dirty_diff")},
            gold={
                "checks": list(t.get("checks") or []),
                "check_timeout_s": t.get("check_timeout_s") or 300.0,
            },
            meta={
                k: v for k, v in t.items() if k not in ("prompt", "repo", "commit", "dirty_diff", "checks")
            },
        )

    def seed_skill(self) -> SkillBundle:
        if isinstance(self._seed_skill, SkillBundle):
            return self._seed_skill
        if self._seed_skill is not None:
            return SkillBundle.from_path(self._seed_skill)
        return SkillBundle.from_doc(_DEFAULT_SEED)

    def run(self, item: Item, skill: SkillBundle, agent: AgentBackend) -> ItemResult:
        if not isinstance(agent, ExecBackend):
            raise ConfigError(
                "the exec-tasks environment needs an exec backend as the agent",
                hint="set agent.backend to claude-code, codex, copilot or cursor",
            )
        task = ReplayTask(
            prompt=str(item.data["prompt"]),
            repo=item.data.get("repo"),
            commit=item.data.get("commit"),
            dirty_diff=item.data.get("dirty_diff"),
            checks=list(item.gold.get("checks") or []),
            id=item.id,
            check_timeout_s=float(item.gold.get("check_timeout_s") or 300.0),
        )
        result = replay(task, agent, self.config, skill=skill, limits=self.limits)
        found = gaming.assess(result.diff, task.checks, task.prompt) if self.guard_gaming else []
        return score(item.id, result, found)


STOPPED = (ExecStatus.MAX_TURNS, ExecStatus.TIMEOUT)


def score(
    item_id: str,
    result: ExecResult,
    gamed: Sequence[gaming.Finding] = (),
    *,
    stopped_counts: bool = False,
) -> ItemResult:
    """Hard: finished and every check passed. Soft: fraction of checks passed (the status when none).
    Work that games the checks (`gamed`, from `skillopt_lib.gaming.assess`) scores 0 and says why.
    A run whose only trouble was a refused tool call finished: when it has checks its work is scored by them
    and the refusal recorded; with no check, finishing is all there is to score, and a refusal is not that.
    With `stopped_counts`, a run stopped at its turn or time limit is scored by what it produced, like a
    finished one: for callers whose limits are sized to the task (the night's caps), where running out is
    what the work cost, not a crash."""
    n_checks = len(result.checks)
    produced = result.finished or (stopped_counts and result.status in STOPPED)
    ok = produced if n_checks else result.ok
    n = len(result.checks)
    passed = sum(1 for c in result.checks if c.passed)
    if n:
        soft = passed / n
        hard = 1.0 if ok and passed == n else 0.0
    else:
        soft = hard = 1.0 if ok else 0.0
    text = feedback(result)
    if gamed:
        hard = soft = 0.0
        text += "\n" + gaming.explain(gamed)
    return ItemResult(
        item_id=item_id,
        hard=hard,
        soft=soft,
        feedback=text,
        trajectory=trajectory(result),
        answer=result.final_message,
        usage=result.usage,
        error=None if ok else (result.error or result.status.value),
        duration_s=result.duration_s,
        details={
            "status": result.status.value,
            "files_changed": result.files_changed,
            "checks_passed": passed,
            "checks_total": n,
            "warnings": result.warnings,
            "gaming": [f.why for f in gamed],
            "refused": result.error if result.status is ExecStatus.PERMISSION_DENIED else None,
        },
    )


def feedback(result: ExecResult) -> str:
    """What went wrong, in the agent's own terms; the checks are counted, never quoted."""
    lines = [f"The agent's run ended with status '{result.status.value}'."]
    if result.error:
        lines.append(f"Reason: {result.error}")
    failed = result.failed_tool_calls
    if failed:
        lines.append(f"{len(failed)} of {len(result.tool_calls)} tool calls failed:")
        for c in failed[:5]:
            what = c.input.get("command") if isinstance(c.input, dict) and c.input.get("command") else c.name
            kind = (
                "denied" if c.denied else (f"exit code {c.exit_code}" if c.exit_code is not None else "error")
            )
            lines.append(f"- {what} ({kind}): {c.output[-300:].strip()}")
    if result.files_changed:
        lines.append(f"Files changed: {', '.join(result.files_changed[:20])}")
    else:
        lines.append("The agent changed no files.")
    if result.checks:
        bad = sum(1 for c in result.checks if not c.passed)
        if bad:
            lines.append(f"{bad} of {len(result.checks)} hidden checks failed after the agent finished.")
        else:
            lines.append("All hidden checks passed.")
    return "\n".join(lines)


def trajectory(result: ExecResult) -> str:
    parts = []
    for c in result.tool_calls:
        arg = c.input.get("command") if isinstance(c.input, dict) and "command" in c.input else c.input
        status = "denied" if c.denied else (f"exit {c.exit_code}" if c.exit_code is not None else "")
        parts.append(f"[{c.name}] {json.dumps(arg, default=str)[:300]} {status}".rstrip())
    if result.final_message:
        parts.append(f"[final] {result.final_message[:2000]}")
    return "\n".join(parts)

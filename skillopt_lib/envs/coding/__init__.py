"""Coding: small repositories with a task and failing tests, solved by a real agent CLI in a sandbox.

Each task is a repository (shipped with skillopt, made by the project) plus hidden tests the agent never
sees: the workspace holds only the repository with its visible tests; after the agent finished, every hidden
test function runs as its own check, from outside the workspace, through a standard-library runner. Hard
score: the agent finished and every hidden test passes. Soft score: the fraction of hidden tests passing.

The agent is an exec backend (Claude Code, Codex, ...); the sandbox and scoring are the generic exec
environment's (`skillopt_lib.envs.exec_tasks`), so a coding item is run exactly like a replay of a user's task.
"""

from __future__ import annotations

import ast
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from skillopt_lib import userdir
from skillopt_lib.envs.base import Item, ItemResult
from skillopt_lib.envs.bench import BenchmarkEnv
from skillopt_lib.envs.exec_tasks import ExecTasksEnvironment
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

RUNNER = Path(__file__).resolve().parent / "hidden_runner.py"


def hidden_test_names(folder: Path) -> list[tuple[Path, str]]:
    """(file, function) for every top-level `test_*` function in the `test_*.py` files of `folder`."""
    found: list[tuple[Path, str]] = []
    for path in sorted(folder.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.append((path, node.name))
    return found


def load_coding(root: Path) -> list[Item]:
    """Read `tasks.json`: `{"tasks": [{"id", "prompt", "repo", "hidden_tests", "split"?}]}` with `repo` and
    `hidden_tests` folders relative to the data folder."""
    manifest = root / "tasks.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    items: list[Item] = []
    for n, task in enumerate(data.get("tasks", data) if isinstance(data, dict) else data):
        task_id = str(task.get("id") or f"task-{n}")
        repo = (root / task["repo"]).resolve()
        hidden = (root / task["hidden_tests"]).resolve()
        if not repo.is_dir() or not hidden.is_dir():
            raise ConfigError(f"{manifest}: task {task_id!r} names a missing repo or hidden_tests folder")
        tests = hidden_test_names(hidden)
        if not tests:
            raise ConfigError(f"{manifest}: task {task_id!r} has no hidden test functions in {hidden}")
        meta: dict[str, Any] = {}
        if task.get("split"):
            meta["split"] = task["split"]
        items.append(
            Item(
                id=task_id,
                data={"prompt": str(task["prompt"]), "repo": str(repo), "commit": None, "dirty_diff": None},
                gold={
                    "hidden_tests": [[str(p), name] for p, name in tests],
                    "check_timeout_s": float(task.get("check_timeout_s", 60.0)),
                },
                meta=meta,
            )
        )
    return items


def hidden_checks(item: Item) -> list[str]:
    """The check commands for an item, built where it runs (the Python and paths of this machine)."""
    python = shlex.quote(sys.executable)
    runner = shlex.quote(str(RUNNER))
    return [f"{python} {runner} {shlex.quote(p)} {name}" for p, name in item.gold["hidden_tests"]]


class CodingEnv(BenchmarkEnv):
    """Options: `limits` (an `ExecLimits`), `keep` (keep workspaces), `workspaces_root`."""

    name = "coding"
    agent_kind: Literal["chat", "exec"] = "exec"
    download_url = "the skillopt package (the coding suite ships with it)"
    layout_hint = "tasks.json with repos/<name>/ and hidden/<name>/ folders"
    marker_globs = ("tasks.json",)

    def __init__(
        self, sample: bool = False, data_dir: str | Path | None = None, seed: int = 42, **options: Any
    ):
        # The suite is made by the project and ships whole: without a data folder, the shipped one is used.
        super().__init__(sample=sample or data_dir is None, data_dir=data_dir, seed=seed, **options)
        if not self.options.get("workspaces_root"):
            # Decided here, where the run starts: a Ray worker may not see this process's SKILLOPT_HOME.
            self.options["workspaces_root"] = str(userdir.workspaces_dir())
        self._exec: Any = None

    def load_items(self) -> list[Item]:
        return load_coding(self.root)

    def _exec_env(self) -> Any:
        if self._exec is None:
            self._exec = ExecTasksEnvironment(
                [],
                seed_skill=self.seed_skill(),
                workspaces_root=self.options.get("workspaces_root"),
                limits=self.options.get("limits"),
                keep=bool(self.options.get("keep", False)),
                seed=self.seed,
            )
        return self._exec

    def run(self, item: Item, skill: SkillBundle, agent: Any) -> ItemResult:
        runnable = Item(
            id=item.id,
            data=item.data,
            gold={"checks": hidden_checks(item), "check_timeout_s": item.gold.get("check_timeout_s", 60.0)},
            meta=item.meta,
        )
        result: ItemResult = self._exec_env().run(runnable, skill, agent)
        return result

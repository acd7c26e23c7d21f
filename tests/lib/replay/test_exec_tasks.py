"""The generic exec environment: splits, scores from checks, feedback that never quotes the checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import skill

from skillopt_lib.backends.copilot import CopilotBackend
from skillopt_lib.envs import load_env
from skillopt_lib.envs.exec_tasks import ExecTasksEnvironment
from skillopt_lib.errors import ConfigError
from skillopt_lib.execution import ExecLimits


def _env(tmp_path: Path, tasks: list[dict[str, object]]) -> ExecTasksEnvironment:
    env = load_env("exec-tasks", tasks=tasks, workspaces_root=tmp_path / "ws")
    assert isinstance(env, ExecTasksEnvironment)
    return env


def _agent(fake_copilot: str) -> CopilotBackend:
    return CopilotBackend(cli=fake_copilot, user_home="/nonexistent", limits=ExecLimits(timeout_s=30))


def test_splits_are_deterministic_and_respect_given_splits(tmp_path: Path) -> None:
    tasks: list[dict[str, object]] = [{"id": f"t{i}", "prompt": "x"} for i in range(40)]
    tasks.append({"id": "pinned", "prompt": "x", "split": "test"})
    a, b = _env(tmp_path, tasks).splits(), _env(tmp_path, tasks).splits()
    assert [i.id for i in a.train] == [i.id for i in b.train]
    ids = [i.id for s in (a.train, a.val, a.test) for i in s]
    assert sorted(ids) == sorted(str(t["id"]) for t in tasks)
    assert "pinned" in [i.id for i in a.test]
    assert a.train and a.val and a.test
    assert "checks" not in a.train[0].data, "the checks are for the scorer only"


def test_task_file_formats(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": "p", "checks": "true"}) + "\n")
    env = ExecTasksEnvironment(path, workspaces_root=tmp_path / "ws")
    assert env.tasks[0]["id"] == "a"
    with pytest.raises(ConfigError):
        ExecTasksEnvironment(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError):
        ExecTasksEnvironment([{"id": "no-prompt"}])


def test_run_scores_from_checks(tmp_path: Path, fake_copilot: str) -> None:
    env = _env(
        tmp_path,
        [
            {
                "id": "good",
                "prompt": "WRITE out.txt yes",
                "checks": ["grep -qx yes out.txt", "test -f out.txt"],
            },
            {
                "id": "half",
                "prompt": "WRITE out.txt no",
                "checks": ["grep -qx SECRET-CHECK-yes out.txt", "test -f out.txt"],
            },
            {"id": "denied", "prompt": "DENY", "checks": []},
        ],
    )
    items = {i.id: i for s in (env.splits().train, env.splits().val, env.splits().test) for i in s}
    agent = _agent(fake_copilot)
    good = env.run(items["good"], skill(), agent)
    assert (good.hard, good.soft, good.error) == (1.0, 1.0, None)
    half = env.run(items["half"], skill(), agent)
    assert (half.hard, half.soft) == (0.0, 0.5)
    assert "1 of 2 hidden checks failed" in half.feedback
    assert "SECRET-CHECK" not in half.feedback + half.trajectory, "feedback leaked the check command"
    denied = env.run(items["denied"], skill(), agent)
    assert denied.hard == 0.0 and denied.error and "denied" in denied.feedback
    assert denied.details["status"] == "permission_denied"


def test_run_needs_an_exec_backend(tmp_path: Path) -> None:
    env = _env(tmp_path, [{"id": "a", "prompt": "x"}])
    item = env.splits().get("train")[0] if env.splits().train else (env.splits().val + env.splits().test)[0]
    with pytest.raises(ConfigError):
        env.run(item, skill(), object())


def test_exec_backends_come_from_the_backend_registry(fake_copilot: str) -> None:
    from skillopt_lib.backends import create_backend
    from skillopt_lib.backends.claude_code import ClaudeCodeBackend
    from skillopt_lib.config import BackendConfig
    from skillopt_lib.execution import ExecBackend

    cfg = BackendConfig(
        backend="claude-code",
        model="claude-sonnet-4-5",
        options={"cli": "/opt/claude", "max_turns": 7, "timeout_s": 90, "allowed_tools": ["Read", "Bash"]},
    )
    backend = create_backend(cfg, role="agent")
    assert isinstance(backend, ClaudeCodeBackend) and isinstance(backend, ExecBackend)
    assert backend.cli == "/opt/claude"
    assert (backend.limits.max_turns, backend.limits.timeout_s, backend.limits.model) == (
        7,
        90.0,
        "claude-sonnet-4-5",
    )
    assert backend.limits.allowed_tools == ("Read", "Bash")
    copilot = create_backend(BackendConfig(backend="copilot", options={"cli": fake_copilot}))
    assert copilot.tool.value == "copilot"


def test_a_refused_tool_call_does_not_zero_work_that_passes_its_checks() -> None:
    """Claude Code offers its bundled skills; the replay does not allow them, and the run ends
    `permission_denied`. The work was done and passes its checks: it scores, and the refusal is kept."""
    from skillopt_lib.envs.exec_tasks import score
    from skillopt_lib.execution import CheckResult, ExecResult, ExecStatus

    refused = ExecResult(
        status=ExecStatus.PERMISSION_DENIED,
        error="1 tool call(s) were denied permission (Skill)",
        checks=[CheckResult("make lint", 0)],
    )
    scored = score("t1", refused)
    assert (scored.hard, scored.soft, scored.error) == (1.0, 1.0, None)
    assert scored.details["refused"] == "1 tool call(s) were denied permission (Skill)"
    failing = ExecResult(status=ExecStatus.PERMISSION_DENIED, checks=[CheckResult("make lint", 1)])
    assert score("t2", failing).hard == 0.0

"""Claude Code and Codex stream parsing when the CLI misbehaves: cut-off, garbled, old or new versions."""

from __future__ import annotations

import json
from pathlib import Path

from skillopt_lib.backends.claude_code import ClaudeCodeBackend
from skillopt_lib.backends.codex import CodexBackend
from skillopt_lib.execution import ExecLimits, ExecStatus
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay

INIT = {"type": "system", "subtype": "init", "session_id": "s1", "skills": []}
TOOL = {
    "type": "assistant",
    "session_id": "s1",
    "message": {
        "id": "m1",
        "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
    },
}


def _fake(tmp_path: Path, name: str, version: str, lines: list[str], exit_code: int = 0) -> str:
    """A shell script that prints `lines` (verbatim) and exits; `--version` prints `version`."""
    body = "\n".join(f"printf '%s\\n' {json.dumps(line)}" for line in lines)
    path = tmp_path / name
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi\n{body}\nexit {exit_code}\n'
    )
    path.chmod(0o755)
    return str(path)


def test_claude_truncated_stream_is_an_error(tmp_path: Path, sandbox_config: SandboxConfig) -> None:
    lines = [json.dumps(INIT), json.dumps(TOOL), '{"type": "user", "message": {"content": [{"type": "tool_re']
    cli = _fake(tmp_path, "claude", "2.1.197 (Claude Code)", lines)
    result = replay(ReplayTask(prompt="x"), ClaudeCodeBackend(cli=cli, user_home=tmp_path), sandbox_config)
    assert result.status is ExecStatus.ERROR
    assert "ended before its final result" in (result.error or "")
    assert result.malformed_lines == 1
    assert [c.name for c in result.tool_calls] == ["Bash"]
    assert not any("tested with" in w for w in result.warnings)


def test_claude_garbage_and_nonzero_exit_is_a_crash(tmp_path: Path, sandbox_config: SandboxConfig) -> None:
    cli = _fake(
        tmp_path, "claude", "2.1.197 (Claude Code)", ["Segmentation fault", "\x00\x01garbage"], exit_code=3
    )
    result = replay(ReplayTask(prompt="x"), ClaudeCodeBackend(cli=cli, user_home=tmp_path), sandbox_config)
    assert result.status is ExecStatus.CRASHED
    assert "exited with code 3" in (result.error or "")
    assert result.malformed_lines == 2


def test_claude_untested_version_warns_but_runs(tmp_path: Path, sandbox_config: SandboxConfig) -> None:
    final = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "hi",
        "num_turns": 1,
        "total_cost_usd": 0.01,
        "usage": {"input_tokens": 3, "output_tokens": 1},
        "permission_denials": [],
    }
    cli = _fake(tmp_path, "claude", "3.0.0 (Claude Code)", [json.dumps(INIT), json.dumps(final)])
    backend = ClaudeCodeBackend(cli=cli, user_home=tmp_path, limits=ExecLimits(timeout_s=30))
    result = replay(ReplayTask(prompt="x"), backend, sandbox_config)
    assert result.status is ExecStatus.OK and result.final_message == "hi"
    warning = next(w for w in result.warnings if "tested with" in w)
    assert "3.0.0 is newer" in warning and "2.1.0 to 2.1.197" in warning


def test_codex_turn_failed(tmp_path: Path, sandbox_config: SandboxConfig) -> None:
    lines = [
        json.dumps({"type": "thread.started", "thread_id": "th1"}),
        json.dumps({"type": "turn.started"}),
        json.dumps({"type": "turn.failed", "error": {"message": "stream disconnected before completion"}}),
    ]
    cli = _fake(tmp_path, "codex", "codex-cli 0.171.0", lines, exit_code=1)
    result = replay(ReplayTask(prompt="x"), CodexBackend(cli=cli, user_home=tmp_path), sandbox_config)
    assert result.status is ExecStatus.ERROR
    assert "stream disconnected" in (result.error or "")
    assert result.session_id == "th1"

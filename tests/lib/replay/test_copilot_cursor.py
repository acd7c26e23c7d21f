"""Copilot and Cursor backends against small fake executables that print the documented output shapes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from replay_helpers import skill

from skillopt_lib.backends.copilot import CopilotBackend
from skillopt_lib.backends.cursor import CursorBackend
from skillopt_lib.errors import ExternalToolError
from skillopt_lib.execution import ExecLimits, ExecStatus
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay


def _copilot(cli: str, **limits: object) -> CopilotBackend:
    return CopilotBackend(cli=cli, user_home="/nonexistent", limits=ExecLimits(**{"timeout_s": 30, **limits}))  # type: ignore[arg-type]


def test_copilot_tools_are_scoped_never_allow_all(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="ARGV"), _copilot(fake_copilot, model="gpt-5.5"), sandbox_config)
    assert result.status is ExecStatus.OK
    argv = json.loads(result.final_message)["argv"]
    assert not any(a.startswith("--allow-all") or a == "--yolo" for a in argv)
    allowed = [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-tool"]
    denied = [argv[i + 1] for i, a in enumerate(argv) if a == "--deny-tool"]
    assert allowed == ["write", "shell"]
    assert "shell(git push)" in denied
    assert argv[argv.index("--model") + 1] == "gpt-5.5"
    assert argv[argv.index("--output-format") + 1] == "json"
    with pytest.raises(ValueError):
        CopilotBackend(cli=fake_copilot, allowed_tools=("all",))


def test_copilot_write_usage_and_tool_exit_codes(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    task = ReplayTask(prompt="WRITE out.txt hi", checks=["grep -qx hi out.txt"])
    result = replay(task, _copilot(fake_copilot), sandbox_config, skill=skill())
    assert result.status is ExecStatus.OK and result.checks_passed
    assert [(c.name, c.exit_code) for c in result.tool_calls] == [("shell", 0)]
    assert result.usage.input_tokens == 120 and result.usage.output_tokens == 12
    assert result.session_id and result.final_message == "Done."


def test_copilot_denied_tool_is_a_failure(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="DENY"), _copilot(fake_copilot), sandbox_config)
    assert result.status is ExecStatus.PERMISSION_DENIED
    assert result.tool_calls[0].denied
    assert result.exit_code == 0


def test_copilot_malformed_truncated_stream(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="GARBAGE"), _copilot(fake_copilot), sandbox_config)
    assert result.status is ExecStatus.ERROR
    assert result.malformed_lines == 2
    assert "ended before" in (result.error or "")
    assert any("not valid JSON" in w for w in result.warnings)


def test_copilot_huge_output_is_bounded(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(
        ReplayTask(prompt="HUGE"), _copilot(fake_copilot, max_output_bytes=200_000), sandbox_config
    )
    assert result.output_truncated
    assert result.status is ExecStatus.OK, "the final result line must survive truncation"
    assert len(json.dumps(result.events)) < 400_000


def test_copilot_hang_is_killed_with_its_children(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    start = time.monotonic()
    result = replay(ReplayTask(prompt="HANG"), _copilot(fake_copilot, timeout_s=2), sandbox_config)
    assert result.status is ExecStatus.TIMEOUT
    assert time.monotonic() - start < 20
    child = next(e["data"]["childPid"] for e in result.events if e.get("type") == "tool.execution_start")
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_copilot_crash(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="CRASH"), _copilot(fake_copilot), sandbox_config)
    assert result.status is ExecStatus.CRASHED
    assert "signal 9" in (result.error or "")


def test_copilot_max_turns(fake_copilot: str, sandbox_config: SandboxConfig) -> None:
    result = replay(
        ReplayTask(prompt="WRITE a.txt x DENY"), _copilot(fake_copilot, max_turns=1), sandbox_config
    )
    assert result.status is ExecStatus.MAX_TURNS


def test_copilot_missing_cli(tmp_path: Path, sandbox_config: SandboxConfig) -> None:
    backend = CopilotBackend(cli=str(tmp_path / "no-such-copilot"))
    with pytest.raises(ExternalToolError) as err:
        replay(ReplayTask(prompt="x"), backend, sandbox_config)
    assert "@github/copilot" in (err.value.hint or "")
    assert not sandbox_config.root.exists(), "a missing CLI must fail before any workspace is made"


def _cursor(cli: str, **limits: object) -> CursorBackend:
    return CursorBackend(cli=cli, user_home="/nonexistent", limits=ExecLimits(**{"timeout_s": 30, **limits}))  # type: ignore[arg-type]


def test_cursor_json_result(fake_cursor: str, sandbox_config: SandboxConfig) -> None:
    task = ReplayTask(prompt="WRITE done.txt ok", checks=["grep -qx ok done.txt"])
    result = replay(task, _cursor(fake_cursor), sandbox_config, skill=skill())
    assert result.status is ExecStatus.OK and result.checks_passed
    assert result.final_message == "Finished the task."
    assert result.files_changed == ["A done.txt"]


def test_cursor_argv_and_permissions(fake_cursor: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="ARGV"), _cursor(fake_cursor, model="sonnet-4"), sandbox_config)
    seen = json.loads(result.final_message)
    assert seen["argv"][1:4] == ["-p", "--output-format", "json"]
    assert seen["argv"][seen["argv"].index("--model") + 1] == "sonnet-4"
    assert seen["config"].endswith("/home/.cursor")


def test_cursor_error_result(fake_cursor: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="FAIL"), _cursor(fake_cursor), sandbox_config)
    assert result.status is ExecStatus.ERROR
    assert "could not finish" in (result.error or "")


def test_cursor_stream_events_give_tool_calls(fake_cursor: str, sandbox_config: SandboxConfig) -> None:
    result = replay(ReplayTask(prompt="STREAM"), _cursor(fake_cursor), sandbox_config)
    assert result.status is ExecStatus.OK
    assert [(c.name, c.exit_code, c.output) for c in result.tool_calls] == [("shellToolCall", 0, "a.txt\n")]

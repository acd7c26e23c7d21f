"""The shared runner: process-group kill, bounded output, stream parsing, CLI lookup and version checks."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from skillopt_lib.agents import AgentTool
from skillopt_lib.backends.exec_base import cli_version, find_cli, version_warning
from skillopt_lib.errors import ExternalToolError
from skillopt_lib.execution import ExecLimits
from skillopt_lib.process import parse_json_lines, run_process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers signal 0; it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = "sleep 300 & echo $!; sleep 300"
    start = time.monotonic()
    out = run_process(["/bin/sh", "-c", script], cwd=tmp_path, env=dict(os.environ), timeout_s=1.0)
    assert out.timed_out
    assert time.monotonic() - start < 10
    grandchild = int(out.lines[0])
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the background sleep started by the agent survived the time-out"


def test_output_is_bounded_and_keeps_the_last_line(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(200000): print('x' * 100)\nprint('{\"type\": \"result\"}')\n"
    out = run_process(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=60,
        max_output_bytes=100_000,
    )
    assert out.truncated
    assert sum(len(line) for line in out.lines) <= 110_000
    assert out.lines[-1] == '{"type": "result"}'
    assert out.returncode == 0


def test_an_overlong_single_line_is_cut(tmp_path: Path) -> None:
    code = "import sys\nsys.stdout.write('y' * 3_000_000 + '\\n')\nprint('end')\n"
    out = run_process([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ), timeout_s=60)
    assert out.truncated
    assert out.lines[-1] == "end"
    assert max(len(line) for line in out.lines) <= 1_000_000


def test_stop_when_ends_the_program_early(tmp_path: Path) -> None:
    code = "import time\nfor i in range(100):\n    print(i, flush=True)\n    time.sleep(0.05)\n"
    out = run_process(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=30,
        stop_when=lambda line: "enough" if line == "3" else None,
    )
    assert out.stopped == "enough"
    assert not out.timed_out
    assert len(out.lines) < 20


def test_parse_json_lines_counts_garbage() -> None:
    events, bad = parse_json_lines(['{"a": 1}', "", "not json", '{"cut": "off', "[1, 2]", '{"b": 2}'])
    assert events == [{"a": 1}, {"b": 2}]
    assert bad == 3


def test_missing_cli_names_the_npm_package(tmp_path: Path) -> None:
    with pytest.raises(ExternalToolError) as err:
        find_cli(AgentTool.CLAUDE_CODE, ("claude",), path=str(tmp_path))
    assert "@anthropic-ai/claude-code" in (err.value.hint or "")
    with pytest.raises(ExternalToolError) as err:
        find_cli(AgentTool.CODEX, ("codex",), configured=str(tmp_path / "nope" / "codex"))
    assert "@openai/codex" in (err.value.hint or "")
    assert "not found" in err.value.message


def test_unsupported_version_warns_with_the_tested_range(tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '9.0.1 (Claude Code)'\n")
    fake.chmod(0o755)
    version = cli_version(str(fake))
    assert version == "9.0.1"
    warning = version_warning(AgentTool.CLAUDE_CODE, version, ("2.1.0", "2.1.197"))
    assert warning is not None and "newer" in warning and "2.1.0 to 2.1.197" in warning
    assert version_warning(AgentTool.CLAUDE_CODE, "2.1.197", ("2.1.0", "2.1.197")) is None
    assert "older" in (version_warning(AgentTool.CODEX, "0.100.0", ("0.171.0", "0.171.0")) or "")


def test_codex_usage_keeps_the_cached_prompt_tokens_apart() -> None:
    from skillopt_lib.backends.codex import CodexBackend
    from skillopt_lib.process import ProcessOutcome

    lines = [
        json.dumps({"type": "thread.started", "thread_id": "t1"}),
        json.dumps({"type": "item.completed", "item": {"id": "m", "type": "agent_message", "text": "done"}}),
        json.dumps(
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": 12000,
                    "cached_input_tokens": 9000,
                    "cache_write_input_tokens": 500,
                    "output_tokens": 300,
                },
            }
        ),
    ]
    result = CodexBackend(cli="codex").interpret(ProcessOutcome(0, lines, "", 1.0), ExecLimits())
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (12000, 9000)
    assert result.usage.cache_write_tokens == 500  # reported by Codex for providers that bill writes
    assert result.usage.output_tokens == 300

"""What a person (or an agent reading its output) meets first: the version, unwrapped hints and commands,
and where the Claude Code plugin of this installation lives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from skillopt_lib import __version__


def test_version_is_printed_and_exits_zero(env: Any) -> None:
    res = env.run("--version")
    assert res.returncode == 0
    assert res.stdout.strip() == f"skillopt {__version__}"


def test_output_to_a_pipe_is_not_wrapped_at_eighty_columns(tmp_path: Path) -> None:
    """An agent running `skillopt` from a slash command reads a pipe: a long command must stay one line."""
    code = (
        "from skillopt_daemon.cli.output import console, err_console\n"
        "console.print('skillopt config set optimizer.backend claude-code-chat ' + 'x' * 120)\n"
        "err_console.print('→ run: skillopt install claude-code --scope project --project ' + 'y' * 90)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 1 and res.stdout.rstrip().endswith("x" * 120)
    assert len(res.stderr.splitlines()) == 1 and res.stderr.rstrip().endswith("y" * 90)


def test_print_plugin_dir_names_the_shipped_plugin_and_marketplace(env: Any) -> None:
    res = env.run("install", "claude-code", "--print-plugin-dir")
    assert res.returncode == 0, res.stderr
    folder = Path(res.stdout.strip())
    assert (folder / ".claude-plugin" / "plugin.json").is_file()
    assert (folder / ".claude-plugin" / "marketplace.json").is_file()
    assert not (env.claude_home / "settings.json").exists(), "printing the folder installs nothing"
    other = env.run("install", "codex", "--print-plugin-dir")
    assert other.returncode == 1 and "no plugin folder for codex" in other.stderr

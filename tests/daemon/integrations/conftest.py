"""Fixtures for the integration tests: an isolated home, skillopt home and project, and a CLI runner.

Every test gets its own HOME (so `~/.claude`, `~/.codex`, ... are temporary folders), its own
SKILLOPT_HOME, and none of the tools' own home variables, so nothing reads or writes the real user's files.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from integ_helpers import CliResult, Env

TOOL_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "CURSOR_CONFIG_DIR", "OPENCLAW_STATE_DIR")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    home = tmp_path / "home"
    home.mkdir()
    so_home = tmp_path / "skillopt-home"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SKILLOPT_HOME", str(so_home))
    for var in TOOL_VARS:
        monkeypatch.delenv(var, raising=False)
    return Env(home=home, skillopt_home=so_home, project=project)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., CliResult]]:
    """Run `skillopt ARGS...` in this process (as the console script does) and return code and output."""
    from skillopt_daemon.cli import main, output

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        # rich consoles follow sys.stdout/stderr unless given a file: restore that (`_file` None), not the
        # stream that happened to be current, or later tests' output would go to a stale stream.
        saved = (sys.argv, sys.stdout, sys.stderr, output.console._file, output.err_console._file)
        sys.argv, sys.stdout, sys.stderr = ["skillopt", *args], out, err
        output.console.file, output.err_console.file = out, err
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            sys.argv, sys.stdout, sys.stderr, output.console._file, output.err_console._file = saved
        return CliResult(code, out.getvalue(), err.getvalue())

    yield run

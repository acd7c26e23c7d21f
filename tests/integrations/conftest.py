"""Fixtures for the integration tests: an isolated home, skillopt home and project, and a CLI runner.

Every test gets its own HOME (so `~/.claude`, `~/.codex`, ... are temporary folders), its own
SKILLOPT_HOME, and none of the tools' own home variables, so nothing reads or writes the real user's files.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOL_VARS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "CURSOR_CONFIG_DIR", "OPENCLAW_STATE_DIR")


@dataclass
class Env:
    home: Path
    skillopt_home: Path
    project: Path


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


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., CliResult]]:
    """Run `skillopt ARGS...` in this process (as the console script does) and return code and output."""
    from skillopt_daemon.cli import main, output

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        saved = (sys.argv, sys.stdout, sys.stderr, output.console.file, output.err_console.file)
        sys.argv, sys.stdout, sys.stderr = ["skillopt", *args], out, err
        output.console.file, output.err_console.file = out, err
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            sys.argv, sys.stdout, sys.stderr, output.console.file, output.err_console.file = saved
        return CliResult(code, out.getvalue(), err.getvalue())

    yield run


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under `root`: compare two to see that nothing changed."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = Path(p).read_bytes()
    return out


def approve_skill(name: str, description: str, body: str, target: str) -> str:
    """Register and approve a skill version installed at `target` (as the nightly cycle + a user would)."""
    from skillopt.skill import SkillBundle, SkillDoc
    from skillopt_daemon.registry import open_registry

    reg, _ = open_registry()
    try:
        bundle = SkillBundle.from_doc(SkillDoc.new(name, description, body))
        version = reg.propose(name, bundle)
        reg.approve(version.id, targets=[target])
        return version.id
    finally:
        reg.db.conn.close()


def propose_skill(name: str, description: str, body: str) -> str:
    from skillopt.skill import SkillBundle, SkillDoc
    from skillopt_daemon.registry import open_registry

    reg, _ = open_registry()
    try:
        return reg.propose(name, SkillBundle.from_doc(SkillDoc.new(name, description, body))).id
    finally:
        reg.db.conn.close()

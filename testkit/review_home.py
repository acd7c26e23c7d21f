"""Fixtures for the registry, installers and review CLI: an isolated skillopt home and user home per test,
a hand-written Claude Code skill in it, and a runner for the real `skillopt` executable."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.installers import InstallTarget
from skillopt_lib.agents import AgentTool
from testkit import cli

ORIGINAL = (
    "---\n"
    "name: tidy-commits\n"
    "description: Write small, well-described git commits. Use when committing changes.\n"
    "---\n"
    "\n"
    "# Tidy commits\n"
    "\n"
    "- One logical change per commit.\n"
)
EDITED = ORIGINAL + "- Run the tests before committing.\n"


def _skill_folder(folder: Path, text: str, extra: dict[str, str] | None) -> Path:
    """A skill folder with `text` as its SKILL.md and `extra` files beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_bytes(text.encode())
    for rel, data in (extra or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(data)
    return folder


@dataclass
class Env:
    ORIGINAL = ORIGINAL
    EDITED = EDITED
    USER = InstallTarget(AgentTool.CLAUDE_CODE, "user")

    root: Path
    home: Path  # the user's home (HOME)
    skillopt_home: Path
    claude_home: Path
    env: dict[str, str]

    @property
    def user_skills(self) -> Path:
        return self.claude_home / "skills"

    def skill_file(self, name: str = "tidy-commits") -> Path:
        return self.user_skills / name / "SKILL.md"

    def write_skill(
        self, name: str = "tidy-commits", text: str = ORIGINAL, extra: dict[str, str] | None = None
    ) -> Path:
        return _skill_folder(self.user_skills / name, text, extra)

    def candidate(
        self, text: str = EDITED, name: str = "tidy-commits", extra: dict[str, str] | None = None
    ) -> Path:
        return _skill_folder(self.root / "candidates" / name, text, extra)

    def run(
        self, *args: str, check: bool = False, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run the real `skillopt` executable in this environment (from the user's home)."""
        kw.setdefault("cwd", self.home)
        kw.setdefault("timeout", 120)
        return cli.run(*args, env={**self.env, **(env or {})}, check=check, **kw)

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json", check=True).stdout)

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """The `skillopt` entry point in this process (`testkit.cli.here`); the fixture has put this
        environment's variables into the process's."""
        return cli.here(*args, check=check)

    def cli_json(self, *args: str) -> Any:
        return cli.here_json(*args)

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return cli.popen(*args, env={**self.env, **(env or {})}, cwd=self.home)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    home = tmp_path / "home"
    home.mkdir()
    sk = tmp_path / "skillopt"
    claude = home / ".claude"
    for var in list(os.environ):
        if var.startswith("SKILLOPT_") or var in (
            "CODEX_HOME",
            "COPILOT_HOME",
            "CURSOR_CONFIG_DIR",
            "OPENCLAW_STATE_DIR",
        ):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SKILLOPT_HOME", str(sk))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    return Env(tmp_path, home, sk, claude, dict(os.environ))


@pytest.fixture
def reg(env: Env) -> Iterator[Registry]:
    db = open_db()
    yield Registry(db, actor="test")
    db.conn.close()

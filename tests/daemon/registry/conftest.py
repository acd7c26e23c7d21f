"""Fixtures for the registry, installers and review CLI: an isolated skillopt home and user home per test,
a hand-written Claude Code skill in it, and a runner for the real `skillopt` executable."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.registry import Registry
from skillopt_daemon.registry.installers import InstallTarget
from skillopt_lib.agents import AgentTool

SKILLOPT = str(Path(sys.executable).with_name("skillopt"))

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
        folder = self.user_skills / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_bytes(text.encode())
        for rel, data in (extra or {}).items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(data)
        return folder

    def candidate(
        self, text: str = EDITED, name: str = "tidy-commits", extra: dict[str, str] | None = None
    ) -> Path:
        folder = self.root / "candidates" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_bytes(text.encode())
        for rel, data in (extra or {}).items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(data)
        return folder

    def run(
        self, *args: str, check: bool = False, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run the real `skillopt` executable in this environment."""
        proc = subprocess.run(
            [SKILLOPT, *args],
            env={**self.env, **(env or {})},
            cwd=kw.pop("cwd", self.home),
            capture_output=True,
            text=True,
            timeout=kw.pop("timeout", 120),
            **kw,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"skillopt {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json", check=True).stdout)

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run the `skillopt` entry point in this process: the same code path as the executable (argument
        parsing, error messages, exit codes) without paying for a new interpreter each time."""
        from skillopt_daemon.cli import main

        out, err = io.StringIO(), io.StringIO()
        old_argv = sys.argv
        sys.argv = ["skillopt", *args]
        code = 0
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = old_argv
        proc = subprocess.CompletedProcess(["skillopt", *args], code, out.getvalue(), err.getvalue())
        if check and code != 0:
            raise AssertionError(f"skillopt {' '.join(args)} exited {code}\n{proc.stdout}\n{proc.stderr}")
        return proc

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json", check=True).stdout)

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [SKILLOPT, *args],
            env={**self.env, **(env or {})},
            cwd=self.home,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


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

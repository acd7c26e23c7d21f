"""Teammates for the team-channel tests (`tests/daemon/team/`): a bare git remote and members, each with their own HOME,
SKILLOPT_HOME, Claude Code folder and git identity, driving the real `skillopt` in processes of their own."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testkit import cli

SKILL = (
    "---\n"
    "name: tidy-commits\n"
    "description: Write small, well-described git commits. Use when committing changes.\n"
    "---\n"
    "\n"
    "# Tidy commits\n"
    "\n"
    "- One logical change per commit.\n"
)
LEARNED = SKILL + "- Run the tests before committing.\n"


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@dataclass
class Member:
    name: str
    email: str
    root: Path
    env: dict[str, str]

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    @property
    def skills(self) -> Path:
        return self.home / ".claude" / "skills"

    def run(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return cli.run(*args, env=self.env, cwd=self.home, check=check, timeout=120)

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json", check=True).stdout)

    def git(self, *args: str, cwd: Path | None = None) -> str:
        return git(*args, cwd=cwd, env=self.env)

    def write_skill(self, text: str = SKILL, name: str = "tidy-commits") -> Path:
        folder = self.skills / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(text)
        return folder

    def db(self) -> Path:
        return Path(self.env["SKILLOPT_HOME"]) / "data" / "skillopt.db"


@dataclass
class Team:
    remote: Path
    root: Path

    def member(self, name: str) -> Member:
        root = self.root / name.lower()
        home = root / "home"
        home.mkdir(parents=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SKILLOPT_", "GIT_")) and k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")
        }
        env.update(
            HOME=str(home),
            SKILLOPT_HOME=str(root / "skillopt"),
            CLAUDE_CONFIG_DIR=str(home / ".claude"),
            NO_COLOR="1",
            COLUMNS="200",
            PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p),
        )
        m = Member(name, f"{name.lower()}@example.com", root, env)
        m.git("config", "--global", "user.name", name)
        m.git("config", "--global", "user.email", m.email)
        m.git("config", "--global", "init.defaultBranch", "main")
        return m

    def log(self) -> str:
        """Everything the remote holds, every branch, every commit, with its patch."""
        return git("log", "-p", "--all", "--format=%H %an <%ae>%n%B", cwd=self.remote)

    def branches(self) -> list[str]:
        out = git("for-each-ref", "--format=%(refname:short)", "refs/heads/", cwd=self.remote)
        return out.split()


@pytest.fixture
def team(tmp_path: Path) -> Team:
    remote = tmp_path / "team.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    return Team(remote, tmp_path)

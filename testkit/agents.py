"""Helpers that tie the pinned agent CLIs to a :class:`ScriptedServer` for one test.

The facts (isolated homes, config files, command lines) live in :mod:`testkit.agent_clis`;
this module only binds them to a server and a pytest temporary folder so tests stay short.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.tmux import InteractiveRun, run_claude_interactive, run_codex_interactive

SCRIPTED_API_KEY = ac.DEFAULT_API_KEY


def claude_env(home: Path, server: ScriptedServer, *, trusted_dirs: Sequence[Path] = ()) -> dict[str, str]:
    """Isolated HOME + environment in which ``claude`` talks only to ``server``."""
    return ac.claude_env(home, server.url, api_key=SCRIPTED_API_KEY, trusted_dirs=trusted_dirs)


def codex_env(home: Path, server: ScriptedServer, *, trusted_dirs: Sequence[Path] = ()) -> dict[str, str]:
    """Isolated HOME + environment in which ``codex`` talks only to ``server``."""
    return ac.codex_env(home, server.base_url_openai, api_key=SCRIPTED_API_KEY, trusted_dirs=trusted_dirs)


def run_claude(claude: Path, prompt: str, *, cwd: Path, env: dict[str, str], **kwargs: Any) -> ac.CliRun:
    """``claude -p`` headless; the result has ``returncode``, ``events``, ``stderr``, ``transcript``."""
    return ac.run_claude(claude, prompt, cwd=cwd, env=env, **kwargs)


def run_codex(codex: Path, prompt: str, *, cwd: Path, env: dict[str, str], **kwargs: Any) -> ac.CliRun:
    """``codex exec --json``; the result has ``returncode``, ``events``, ``stderr``, ``transcript``."""
    return ac.run_codex(codex, prompt, cwd=cwd, env=env, **kwargs)


@dataclass
class AgentSandbox:
    """One agent CLI wired to the test's model server, with its own HOME and an empty project folder.

    ``home`` is the isolated home directory (skills go in ``home/.claude/skills`` or
    ``home/.agents/skills``), ``project`` the working directory the agent runs in.
    """

    kind: str
    cli: Path
    server: ScriptedServer
    home: Path
    project: Path
    env: dict[str, str]
    runs: list[ac.CliRun] = field(default_factory=list)
    interactive_runs: int = 0

    def run(self, prompt: str, **kwargs: Any) -> ac.CliRun:
        """Run one headless turn; extra keyword arguments go to ``run_claude`` / ``run_codex``."""
        runner = ac.run_claude if self.kind == "claude" else ac.run_codex
        result = runner(self.cli, prompt, cwd=self.project, env=self.env, **kwargs)
        self.runs.append(result)
        return result

    def interactive(self, prompts: Sequence[str], **kwargs: Any) -> InteractiveRun:
        """Type ``prompts`` into the CLI's TUI in tmux, one turn after another, then exit it."""
        runner = run_claude_interactive if self.kind == "claude" else run_codex_interactive
        self.interactive_runs += 1
        work_dir = self.home.parent / f"{self.kind}-tmux-{self.interactive_runs}"
        return runner(self.cli, prompts, cwd=self.project, env=self.env, work_dir=work_dir, **kwargs)

    def write_skill(self, name: str, description: str, body: str) -> Path:
        """Install a personal skill where this CLI looks for one; returns its SKILL.md."""
        roots = (
            [self.home / ".claude" / "skills"]
            if self.kind == "claude"
            else [
                self.home / ".agents" / "skills",
                self.home / ".codex" / "skills",
            ]
        )
        text = f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"
        paths = []
        for root in roots:
            path = root / name / "SKILL.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            paths.append(path)
        return paths[0]

"""The integrations with the real, pinned agent CLIs, talking to the scripted model server.

What a user would see: Claude Code loads the plugin's commands and skill, its hooks tell the running
daemon about the session, and a skill approved in skillopt reaches the model of Claude Code and of Codex.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillopt_daemon import integrations
from skillopt_lib.agents import AgentTool
from testkit import agent_clis as ac
from testkit.fixtures import require
from testkit.install_helpers import approve_skill

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

VENV_BIN = Path(sys.executable).parent
SKILLOPT = VENV_BIN / "skillopt"
PLUGIN_COMMANDS = [
    "skillopt-approve",
    "skillopt-diff",
    "skillopt-rollback",
    "skillopt-sleep",
    "skillopt-status",
]


def _wire_skillopt(sandbox, so_home: Path) -> None:  # type: ignore[no-untyped-def]
    """Let the agent's hooks find this skillopt, with its data in `so_home`."""
    require(
        SKILLOPT.is_file(),
        "the skillopt console script is not installed next to this Python (pip install -e .)",
    )
    sandbox.env.update(
        SKILLOPT_HOME=str(so_home),
        SKILLOPT_BIN=str(SKILLOPT),
        PATH=f"{VENV_BIN}{os.pathsep}{sandbox.env['PATH']}",
    )
    if os.environ.get("PYTHONPATH"):  # the skillopt the agent runs is the code under test
        sandbox.env["PYTHONPATH"] = os.environ["PYTHONPATH"]


def _init_event(run: ac.CliRun) -> dict:  # type: ignore[type-arg]
    inits = [e for e in run.events if e.get("type") == "system" and e.get("subtype") == "init"]
    assert inits, run.describe()
    return inits[0]


class _Daemon:
    """The real daemon in its own process, ingesting the sandbox's sessions with short intervals."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = {**env, "SKILLOPT_INGEST__RESCAN_INTERVAL_S": "0.5", "SKILLOPT_NIGHT__ENABLED": "false"}
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _Daemon:
        code = "import sys\nfrom skillopt_daemon.service.daemon import Daemon\nsys.exit(Daemon().run())"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], env=self.env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT
        )
        db = Path(self.env["SKILLOPT_HOME"]) / "data" / "skillopt.db"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _has_meta(db, "daemon_started_at"):
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.1)
        assert _has_meta(db, "daemon_started_at"), self.log.read_text()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _query(db: Path, sql: str, args: tuple[str, ...] = ()) -> list[tuple]:  # type: ignore[type-arg]
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _has_meta(db: Path, key: str) -> bool:
    tables = {r[0] for r in _query(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    meta = next((t for t in ("meta", "ingest_meta", "daemon_meta") if t in tables), None)
    if meta is None:
        return False
    return bool(_query(db, f"SELECT 1 FROM {meta} WHERE key = ?", (key,)))


def test_plugin_dir_loads_commands_and_skill_and_the_daemon_records_the_session(
    claude_sandbox, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    so_home = tmp_path / "skillopt-home"
    _wire_skillopt(claude_sandbox, so_home)
    with _Daemon(claude_sandbox.env, tmp_path / "daemon.log"):
        run = claude_sandbox.run(
            "hello", extra_args=["--plugin-dir", str(integrations.plugin_dir(AgentTool.CLAUDE_CODE))]
        )
        assert run.returncode == 0, run.describe()
        init = _init_event(run)
        for name in PLUGIN_COMMANDS:
            assert f"skillopt:{name}" in init["slash_commands"], init["slash_commands"]
        assert "skillopt:skillopt" in init["skills"]
        assert [p["name"] for p in init["plugins"]] == ["skillopt"]
        # The skill's description is what the model is offered.
        assert claude_sandbox.server.requests_matching(api="anthropic", text="proposals, diffs, approvals")
        db = so_home / "data" / "skillopt.db"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if _query(db, "SELECT 1 FROM sessions WHERE session_id = ?", (run.session_id,)):
                break
            time.sleep(0.2)
        assert _query(db, "SELECT tool FROM sessions WHERE session_id = ?", (run.session_id,)) == [
            ("claude-code",)
        ], (tmp_path / "daemon.log").read_text()
        inbox = so_home / "data" / "inbox"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and list(inbox.glob("*.json")):
            time.sleep(0.1)
        assert list(inbox.glob("*.json")) == [], "the daemon consumes the hooks' notes"


def _documented_plugin_commands() -> list[str]:
    """The slash commands docs/integrations.md tells a plugin user to type."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "integrations.md").read_text()
    section = text[text.index("- `commands/`") :]
    return re.findall(r"`(/skillopt:[a-z-]+)`", section[: section.index("\n- ")])


def test_the_documented_plugin_commands_run_headless(claude_sandbox, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`claude -p "/skillopt:skillopt-status"` with the plugin: the command's prompt reaches the model."""
    _wire_skillopt(claude_sandbox, tmp_path / "skillopt-home")
    documented = _documented_plugin_commands()
    assert sorted(c.removeprefix("/skillopt:") for c in documented) == PLUGIN_COMMANDS
    run = claude_sandbox.run(
        "/skillopt:skillopt-status",
        extra_args=["--plugin-dir", str(integrations.plugin_dir(AgentTool.CLAUDE_CODE))],
    )
    assert run.returncode == 0, run.describe()
    assert "Unknown command" not in run.stdout
    assert claude_sandbox.server.requests_matching(api="anthropic", text="which proposals wait for review")


def _add_marketplace_and_install(sandbox, repo: Path) -> None:  # type: ignore[no-untyped-def]
    cli = str(sandbox.cli)
    for argv in (
        [cli, "plugin", "marketplace", "add", str(repo)],
        [cli, "plugin", "install", "skillopt@skillopt"],
    ):
        proc = subprocess.run(
            argv,
            env=sandbox.env,
            cwd=sandbox.project,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def _published_copy(tmp_path: Path) -> Path:
    """Only the marketplace file and the plugin folder: proves the plugin needs nothing else of the repo."""
    repo = tmp_path / "published"
    source = Path(__file__).resolve().parents[3]
    shutil.copytree(source / ".claude-plugin", repo / ".claude-plugin")
    shutil.copytree(integrations.plugin_dir(AgentTool.CLAUDE_CODE), repo / "integrations" / "claude-code")
    return repo


def test_plugin_installed_from_the_repository_marketplace_fires_its_hooks(
    claude_sandbox, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """`/plugin marketplace add <repo>` then `/plugin install skillopt@skillopt`, then a headless run."""
    so_home = tmp_path / "skillopt-home"
    _wire_skillopt(claude_sandbox, so_home)
    _add_marketplace_and_install(claude_sandbox, _published_copy(tmp_path))
    run = claude_sandbox.run("hello")
    assert run.returncode == 0, run.describe()
    init = _init_event(run)
    assert "skillopt:skillopt-status" in init["slash_commands"]
    assert [p["source"] for p in init["plugins"]] == ["skillopt@skillopt"]
    monkeypatch.setenv("HOME", str(claude_sandbox.home))
    plugin_status = integrations.status(AgentTool.CLAUDE_CODE, with_version=False)
    assert plugin_status.plugin == "0.1.0" and plugin_status.hooks_active is True
    events: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(events) < 2:
        time.sleep(0.1)
        events = [n.read_text() for n in sorted((so_home / "data" / "inbox").glob("*.json"))]
    assert any('"session-start"' in e and run.session_id in e for e in events), events
    assert any('"session-end"' in e and run.session_id in e for e in events), events


def test_new_user_installs_the_plugin_uses_claude_code_and_the_daemon_picks_up_the_session(
    claude_sandbox, tmux_bin: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The whole story, interactively: marketplace, install, a typed session in the TUI, /exit, daemon."""
    so_home = tmp_path / "skillopt-home"
    _wire_skillopt(claude_sandbox, so_home)
    _add_marketplace_and_install(claude_sandbox, _published_copy(tmp_path))
    with _Daemon(claude_sandbox.env, tmp_path / "daemon.log"):
        run = claude_sandbox.interactive(["say hello"])
        assert run.session_id and run.transcript is not None, run.screens[-1:] if run.screens else run
        db = so_home / "data" / "skillopt.db"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if _query(db, "SELECT 1 FROM sessions WHERE session_id = ?", (run.session_id,)):
                break
            time.sleep(0.2)
        assert _query(db, "SELECT tool FROM sessions WHERE session_id = ?", (run.session_id,)) == [
            ("claude-code",)
        ], (tmp_path / "daemon.log").read_text()
        inbox = so_home / "data" / "inbox"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and list(inbox.glob("*.json")):
            time.sleep(0.1)
        assert list(inbox.glob("*.json")) == [], "the daemon consumed the plugin hooks' notes"


def test_skill_approved_and_installed_reaches_claude_code(
    claude_sandbox, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    so_home = tmp_path / "skillopt-home"
    _wire_skillopt(claude_sandbox, so_home)
    monkeypatch.setenv("HOME", str(claude_sandbox.home))
    monkeypatch.setenv("SKILLOPT_HOME", str(so_home))
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    approve_skill(
        "release-notes",
        "Use when writing release notes: group changes by user impact, newest first.",
        "# Release notes\nGroup by impact.\n",
        f"codex:project:{elsewhere}",
    )
    proc = subprocess.run(
        [str(SKILLOPT), "install", "claude-code"],
        env=claude_sandbox.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = claude_sandbox.run("hello")
    assert run.returncode == 0, run.describe()
    assert "release-notes" in _init_event(run)["skills"]
    assert claude_sandbox.server.requests_matching(api="anthropic", text="group changes by user impact")


def test_skill_installed_for_codex_reaches_the_model(codex_sandbox, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    so_home = tmp_path / "skillopt-home"
    _wire_skillopt(codex_sandbox, so_home)
    monkeypatch.setenv("HOME", str(codex_sandbox.home))
    monkeypatch.setenv("SKILLOPT_HOME", str(so_home))
    monkeypatch.setenv("CODEX_HOME", codex_sandbox.env["CODEX_HOME"])
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    approve_skill(
        "release-notes",
        "Use when writing release notes: group changes by user impact, newest first.",
        "# Release notes\nGroup by impact.\n",
        f"claude-code:project:{elsewhere}",
    )
    proc = subprocess.run(
        [str(SKILLOPT), "install", "codex"], env=codex_sandbox.env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (codex_sandbox.home / ".codex" / "skills" / "release-notes" / "SKILL.md").is_file()
    agents = codex_sandbox.home / ".agents"
    assert not agents.exists(), sorted(str(p) for p in agents.rglob("*"))
    run = codex_sandbox.run("hello")
    assert run.returncode == 0, run.describe()
    sent = codex_sandbox.server.requests_matching(api="responses", text="group changes by user impact")
    assert sent, codex_sandbox.server.all_text()[-3000:]
    assert codex_sandbox.server.requests_matching(api="responses", text=r"skillopt")

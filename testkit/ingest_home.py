"""An isolated installation per test: SKILLOPT_HOME, HOME and every agent tool's home in a tmp folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Env:
    root: Path
    skillopt_home: Path
    home: Path
    claude: Path
    codex: Path

    @property
    def projects(self) -> Path:
        return self.claude / "projects"

    @property
    def db(self) -> Path:
        return self.skillopt_home / "data" / "skillopt.db"

    def environ(self, **extra: str) -> dict[str, str]:
        """The variables for a subprocess (daemon, CLI) seeing this same installation."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
        env.update(
            SKILLOPT_HOME=str(self.skillopt_home),
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            CLAUDE_CONFIG_DIR=str(self.claude),
            CODEX_HOME=str(self.codex),
            COPILOT_HOME=str(self.root / "copilot"),
            CURSOR_CONFIG_DIR=str(self.root / "cursor"),
            OPENCLAW_STATE_DIR=str(self.root / "openclaw"),
            SKILLOPT_INGEST__RESCAN_INTERVAL_S="0.3",
            SKILLOPT_NIGHT__ENABLED="false",
            PYTHONUNBUFFERED="1",
        )
        env.update(extra)
        return env


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    e = Env(
        root=tmp_path,
        skillopt_home=tmp_path / "skillopt",
        home=tmp_path / "home",
        claude=tmp_path / "claude",
        codex=tmp_path / "codex",
    )
    e.home.mkdir()
    e.projects.mkdir(parents=True)
    for key, value in e.environ().items():
        if key.startswith(("SKILLOPT_", "CLAUDE_", "CODEX_", "COPILOT_", "CURSOR_", "OPENCLAW_")) or key in (
            "HOME",
            "XDG_CONFIG_HOME",
        ):
            monkeypatch.setenv(key, value)
    return e


@pytest.fixture
def pipeline(env: Env):  # type: ignore[no-untyped-def]
    """A pipeline over every source, on this test's store."""
    from skillopt_daemon import ingest
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.core.store import open_db

    settings = load_settings()
    db = open_db()
    p = ingest.Pipeline(db, ingest.load_sources(settings), settings)
    yield p
    db.close()

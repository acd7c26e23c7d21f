"""Every reader test runs with its own SKILLOPT_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Replay detection and settings must never see the real user's folders."""
    home = tmp_path_factory.mktemp("skillopt-home")
    monkeypatch.setenv("SKILLOPT_HOME", str(home))
    return home

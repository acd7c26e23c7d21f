"""Fixtures for the benchmark tests: every test runs with its own SKILLOPT_HOME."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path_factory.mktemp("skillopt-home")))

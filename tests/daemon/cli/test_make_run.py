"""`make run` installs only what the daemon needs, says what it is doing and what comes next, and after
`make test` installs nothing. Run against a stand-in environment whose pip and skillopt record their calls."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from testkit.fixtures import require

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    require(shutil.which("make") is not None, "make is not installed")
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls"
    for name in ("python", "pip", "skillopt"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
        tool.chmod(0o755)
    return tmp_path / "venv"


def _make(venv: Path, target: str) -> tuple[str, list[str]]:
    log = venv.parent / "calls"
    log.unlink(missing_ok=True)
    proc = subprocess.run(
        ["make", "-C", str(REPO), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MAKEFLAGS": ""},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout, log.read_text().splitlines() if log.exists() else []


def test_make_run_installs_the_daemons_needs_only_with_progress_and_next_steps(venv: Path) -> None:
    out, calls = _make(venv, "run")
    pips = [c for c in calls if c.startswith("pip ")]
    assert pips == ["pip install -e ."], calls  # not the development tools, and not --quiet
    assert calls[-1] == "skillopt daemon run"
    assert "==> installing skillopt and what the daemon needs" in out
    assert "next:" in out and "skillopt status" in out

    _, calls = _make(venv, "run")
    assert calls == ["skillopt daemon run"], "a second `make run` installs nothing"


def test_make_run_after_the_test_setup_installs_nothing(venv: Path) -> None:
    _, calls = _make(venv, "setup")  # what `make test` installs first
    assert [c for c in calls if c.startswith("pip ")] == ["pip install -e .[dev]"]
    (venv / ".installed-run").unlink()  # even without its own stamp
    time.sleep(0.01)
    out, calls = _make(venv, "run")
    assert calls == ["skillopt daemon run"], calls
    assert "already has skillopt" in out

"""Uncommitted changes a session started from are kept for replays, unless they hold a secret."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from skillopt_daemon import ingest


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "app.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "i"], check=True)
    return repo


def test_a_clean_dirty_diff_is_kept_privately_and_loads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "so"))
    repo = _repo(tmp_path)
    (repo / "app.py").write_text("x = 2\n")
    pin = ingest.pin_repo(str(repo))
    assert pin.dirty and pin.diff_hash
    path = ingest.dirty_diff_path(pin.diff_hash)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    diff = ingest.load_dirty_diff(pin.diff_hash)
    assert diff is not None and "+x = 2" in diff


def test_a_dirty_diff_holding_a_secret_is_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "so"))
    repo = _repo(tmp_path)
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (repo / "app.py").write_text(f'OPENAI_API_KEY = "{key}"\n')
    pin = ingest.pin_repo(str(repo))
    assert pin.dirty and pin.diff_hash
    assert ingest.load_dirty_diff(pin.diff_hash) is None
    stored = [p.read_bytes() for p in (tmp_path / "so").rglob("*") if p.is_file()]
    assert not any(key.encode() in data for data in stored)

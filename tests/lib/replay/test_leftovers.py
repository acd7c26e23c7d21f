"""What replays leave behind is found by what it is (a run folder's marker naming its owner process), never
by a command line, and removed once that owner has ended."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from skillopt_lib.sandbox import MARKER, ReplayTask, create_workspace, remove_leftovers


def _aged(folder: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(folder, (then, then))
    return folder


def test_leftovers_are_found_by_their_marker_and_a_reused_pid_does_not_hide_them(tmp_path: Path) -> None:
    root = tmp_path / "workspaces"
    mine = create_workspace(ReplayTask(prompt="x", id="live"), root)
    reused = create_workspace(ReplayTask(prompt="x", id="reused"), root)
    owner = json.loads((reused.run_dir / MARKER).read_text())
    # The same pid, a different process: the one that made the folder started at another time.
    owner["started"] = -1
    (reused.run_dir / MARKER).write_text(json.dumps(owner))
    # A folder a replay that outlived its night wrote after the folder was removed: no marker.
    stray = root / "20250101-030000-0123abcd"
    (stray / "repo").mkdir(parents=True)
    (stray / "repo" / "notes.md").write_text("written after the night was gone\n")
    _aged(stray, 7200)
    fresh = root / "20250101-030001-4567cdef"
    fresh.mkdir()  # being made right now: its marker is a moment away
    other = root / "not-a-replay"
    other.mkdir()
    _aged(other, 7200)

    removed = remove_leftovers(root)

    assert mine.run_dir.is_dir(), "a live replay's workspace was removed"
    assert not reused.run_dir.exists(), "a workspace whose owner's pid was reused was kept"
    assert not stray.exists(), "a stray workspace without its marker was kept"
    assert fresh.is_dir() and other.is_dir()
    assert len(removed) == 2, removed

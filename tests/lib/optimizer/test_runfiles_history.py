"""Reading a run's history while the run is still writing it, and after a crash tore a line."""

from __future__ import annotations

from pathlib import Path

from skillopt_lib.config import Redactor
from skillopt_lib.training.runfiles import RunFiles, read_history


def test_a_line_being_written_is_left_for_the_next_read(tmp_path: Path) -> None:
    files = RunFiles(tmp_path / "run", Redactor([]))
    files.append_history({"kind": "baseline", "val": {"score": 0.5}})
    files.append_history({"kind": "step", "step": 1, "accepted": True})
    with files.history_path.open("a", encoding="utf-8") as fh:
        fh.write('{"kind": "step", "step": 2, "acc')  # the writer is half way through this line
    assert [r["kind"] for r in read_history(files.dir)] == ["baseline", "step"]

    with files.history_path.open("a", encoding="utf-8") as fh:
        fh.write('epted": false}\n')
    assert [r.get("step") for r in read_history(files.dir)] == [None, 1, 2]


def test_a_torn_line_from_a_crash_is_skipped_and_a_missing_history_is_empty(tmp_path: Path) -> None:
    assert read_history(tmp_path / "no-run-yet") == []
    run = tmp_path / "run"
    run.mkdir()
    (run / "history.jsonl").write_text('{"kind": "baseline"}\n{"kind": "st\n{"kind": "step", "step": 1}\n')
    assert read_history(run) == [{"kind": "baseline"}, {"kind": "step", "step": 1}]
    # The trainer's own reader takes the last line even without its newline (it wrote it completely).
    (run / "history.jsonl").write_text('{"kind": "baseline"}\n{"kind": "test"}')
    assert [r["kind"] for r in read_history(run, complete_lines_only=False)] == ["baseline", "test"]

"""Reading complete lines from an offset, identity checks, and root walks (no database involved)."""

from __future__ import annotations

import io
import os
import tracemalloc
from pathlib import Path

from skillopt_daemon.ingest import tail


def test_partial_last_line_waits_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":')
    with open(path, "rb") as f:
        batch = tail.read_lines(f, 0)
    assert [line for _, line in batch.lines] == [b'{"a":1}']
    assert batch.end == 8 and batch.eof

    with open(path, "ab") as f:
        f.write(b"2}\n")
    with open(path, "rb") as f:
        batch = tail.read_lines(f, 8)
    assert [line for _, line in batch.lines] == [b'{"b":2}']
    assert batch.end == path.stat().st_size


def test_batches_respect_line_budget_and_resume_exactly(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(f"line {i}\n".encode() for i in range(25)))
    seen, offset = [], 0
    with open(path, "rb") as f:
        while True:
            batch = tail.read_lines(f, offset, max_lines=7, chunk_bytes=16)
            seen.extend(line for _, line in batch.lines)
            assert len(batch.lines) <= 7
            offset = batch.end
            if batch.eof:
                break
    assert seen == [f"line {i}".encode() for i in range(25)]


def test_over_long_line_is_skipped_without_being_loaded(tmp_path: Path) -> None:
    """A 50 MB single line with a 1 MB cap: skipped, the next line read, memory stays far below 50 MB."""
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as f:
        f.write(b'{"first":1}\n')
        block = b"x" * (1 << 20)
        for _ in range(50):
            f.write(block)
        f.write(b'\n{"after":1}\n')
    tracemalloc.start()
    try:
        offset, in_long, lines, oversized = 0, False, [], []
        with open(path, "rb") as f:
            while True:
                batch = tail.read_lines(
                    f, offset, in_long_line=in_long, max_line_bytes=1 << 20, max_bytes=4 << 20
                )
                lines.extend(line for _, line in batch.lines)
                oversized.extend(batch.oversized)
                offset, in_long = batch.end, batch.in_long_line
                if batch.eof:
                    break
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [b'{"first":1}', b'{"after":1}']
    assert len(oversized) == 1 and oversized[0][0] == 12
    assert peak < 12 << 20, f"peak memory {peak / 1e6:.1f} MB"


def test_over_long_line_still_being_written_is_remembered(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a" * 3000)
    with open(path, "rb") as f:
        batch = tail.read_lines(f, 0, max_line_bytes=1000, chunk_bytes=512)
    assert batch.in_long_line and batch.end == 3000 and not batch.lines
    with open(path, "ab") as f:
        f.write(b"tail-of-long\nnext\n")
    with open(path, "rb") as f:
        batch = tail.read_lines(f, batch.end, in_long_line=True, max_line_bytes=1000)
    assert [line for _, line in batch.lines] == [b"next"]
    assert not batch.in_long_line


def _known(f: io.BufferedReader, offset: int) -> tail.Known:
    ident = tail.identify(f)
    return tail.Known(
        ident.device, ident.inode, ident.size, ident.mtime_ns, ident.head_len, ident.head_hash, offset
    )


def test_identity_tells_growth_truncation_replacement_and_copies(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first line\n")
    with open(path, "rb") as f:
        known = _known(f, 11)
        assert tail.compare(f, tail.identify(f), known) == tail.UNCHANGED

    with open(path, "ab") as f:
        f.write(b"second\n")
    with open(path, "rb") as f:
        assert tail.compare(f, tail.identify(f), known) == tail.GREW

    path.write_bytes(b"new\n")  # same inode, shorter than the offset
    with open(path, "rb") as f:
        assert tail.compare(f, tail.identify(f), known) == tail.TRUNCATED

    path.write_bytes(b"other text that is longer\n")  # same inode, longer, different head
    with open(path, "rb") as f:
        assert tail.compare(f, tail.identify(f), known) == tail.REPLACED

    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(b"first line\nsecond\n")
    os.replace(copy, path)  # a new inode with the same bytes: keep reading where we were
    with open(path, "rb") as f:
        assert tail.compare(f, tail.identify(f), known) == tail.MOVED

    other = tmp_path / "other.jsonl"
    other.write_bytes(b"a different file entirely\n")
    os.replace(other, path)
    with open(path, "rb") as f:
        assert tail.compare(f, tail.identify(f), known) == tail.REPLACED


def test_walk_reports_symlink_loop_and_finds_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "s.jsonl").write_text("{}\n")
    os.symlink(root / "a", root / "a" / "b" / "loop")  # a folder link back up
    os.symlink("self.jsonl", root / "a" / "self.jsonl")  # a file link to itself
    problems: list[tail.WalkProblem] = []
    found = list(tail.walk_files(root, lambda p: p.suffix == ".jsonl", problems))
    assert found == [root / "a" / "b" / "s.jsonl"]
    kinds = {(Path(p.path).name, p.kind) for p in problems}
    assert ("loop", "symlink-loop") in kinds
    assert ("self.jsonl", "symlink-loop") in kinds


def test_watcher_picks_up_a_root_that_appears_later(tmp_path: Path) -> None:
    import threading

    seen: list[Path] = []
    event = threading.Event()

    def on_path(p: Path) -> None:
        seen.append(p)
        event.set()

    root = tmp_path / "later"
    w = tail.Watcher(on_path)
    w.start()
    try:
        w.want([root])
        assert w.watched == []
        root.mkdir()
        assert w.refresh() == [root]
        (root / "x.jsonl").write_text("{}\n")
        assert event.wait(5)
        assert root / "x.jsonl" in seen
    finally:
        w.stop()

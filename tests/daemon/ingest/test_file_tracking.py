"""Which files are followed and what is counted for them: one row per file however many paths lead to it,
counters that describe the file as it is now, and timestamps that cannot date a session to 1970."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest

from skillopt_daemon import ingest
from skillopt_daemon.core.timeutil import to_iso, utcnow
from testkit.ingest_helpers import (
    claude_line,
    claude_session_lines,
    cli,
    query,
    start_daemon,
    wait_for,
    write_claude_session,
)

from .conftest import Env


def _ingest(pipeline: ingest.Pipeline) -> list[ingest.FileOutcome]:
    return pipeline.ingest_paths(pipeline.discover())


def _files(db) -> list[tuple[str, int, int, str]]:  # type: ignore[no-untyped-def]
    return db.execute("SELECT path, lines, records, skipped_json FROM ingest_files ORDER BY path").fetchall()


def test_a_transcript_reached_through_a_symlink_loop_is_followed_once(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    path = write_claude_session(env.projects, "looped", turns=2)
    os.symlink(env.projects, path.parent / "loop")
    _ingest(pipeline)
    source = pipeline.source_for(path)
    assert source is not None
    # What a watch event or a walk from inside the loop names: the same file under an alias path.
    alias = path.parent / "loop" / path.parent.name / path.name
    assert alias.exists()
    with open(path, "ab") as f:
        f.write(claude_line("user", "looped-more", "looped", content="one more"))
    pipeline.ingest_paths([(source, alias), (source, path)])
    rows = _files(pipeline.db)
    assert [r[0] for r in rows] == [str(path)]
    (turns,) = pipeline.db.execute("SELECT turn_count FROM sessions WHERE session_id = 'looped'").fetchone()
    assert turns == 2 * 2 + 2 + 1


def test_the_daemon_follows_each_transcript_once_despite_a_symlink_loop(env: Env) -> None:
    paths = [write_claude_session(env.projects, f"s{i}", turns=1, cwd=f"/tmp/p{i}") for i in range(3)]
    os.symlink(env.projects, paths[0].parent / "loop")
    proc = start_daemon(env.environ(), env.root / "daemon.log")
    try:
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM ingest_meta WHERE key = 'backfill_done_at'"), timeout=30
        )
        # Live activity everywhere, including in a folder created through the loop.
        for i, path in enumerate(paths):
            with open(path, "ab") as f:
                f.write(claude_line("user", f"more{i}", f"s{i}", content="more"))
        (paths[0].parent / "loop" / "-tmp-new").mkdir()
        (env.projects / "-tmp-new" / "s9.jsonl").write_bytes(b"".join(claude_session_lines("s9", turns=1)))
        wait_for(lambda: query(env.db, "SELECT 1 FROM sessions WHERE session_id = 's9'"), timeout=15)
        wait_for(lambda: len(query(env.db, "SELECT 1 FROM turns WHERE key LIKE 'more%'")) == 3, timeout=15)
        time.sleep(1.0)  # a few rescans
        (n,) = query(env.db, "SELECT COUNT(*) FROM ingest_files")[0]
        assert n == 4
        res = cli(env.environ(), "status", "--json")
        assert json.loads(res.stdout)["sessions"]["files"] == 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_counters_describe_a_file_read_again_not_the_sum_of_reads(
    env: Env, pipeline: ingest.Pipeline, how: str
) -> None:
    lines = claude_session_lines("counted", turns=2)
    content = b"".join(lines[:2]) + b"not json\n" + b"{broken\n" + b"".join(lines[2:])
    path = write_claude_session(env.projects, "counted", turns=2)
    path.write_bytes(content)
    _ingest(pipeline)
    first = _files(pipeline.db)
    (session_skips,) = pipeline.db.execute("SELECT skipped_json FROM sessions").fetchone()
    assert first[0][1] == len(lines) + 2 and json.loads(first[0][3])

    if how == "truncated":
        path.write_bytes(b"".join(lines[:1]))  # cut short, read again from the start, then complete again
        _ingest(pipeline)
        with open(path, "ab") as f:
            f.write(content[len(lines[0]) :])
    else:  # the same records written anew (other bytes: compact JSON), replacing the file
        compact = json.dumps(json.loads(lines[0]), separators=(",", ":")).encode() + b"\n"
        part = path.with_name("new.part")
        part.write_bytes(compact + content[len(lines[0]) :])
        os.replace(part, path)
    pipeline._seen.clear()
    _ingest(pipeline)
    assert _files(pipeline.db) == first
    assert pipeline.db.execute("SELECT skipped_json FROM sessions").fetchone()[0] == session_skips


@pytest.mark.parametrize("stamp", [12345, 12345000, "1970-01-01T03:25:45Z", "0001-01-01T00:00:00Z"])
def test_a_timestamp_from_before_these_tools_existed_does_not_date_a_session(
    env: Env, pipeline: ingest.Pipeline, stamp: object
) -> None:
    good = "2026-11-30T10:00:00.000Z"
    path = env.projects / "-tmp-old" / "old.jsonl"
    path.parent.mkdir()
    path.write_bytes(
        claude_line("user", "u1", "old", content="first", timestamp=stamp)  # type: ignore[arg-type]
        + claude_line("assistant", "a1", "old", parent="u1", content="ok", timestamp=good)
    )
    _ingest(pipeline)
    started, ended = pipeline.db.execute(
        "SELECT started_at, ended_at FROM sessions WHERE session_id = 'old'"
    ).fetchone()
    assert started == good and ended == good
    kinds = {k for (k,) in pipeline.db.execute("SELECT kind FROM ingest_errors")}
    assert "implausible-timestamp" in kinds


def test_one_rule_for_timestamps_ahead_of_the_clock(env: Env, pipeline: ingest.Pipeline) -> None:
    """A few hours ahead (a skewed clock, local time read as UTC) is kept; more than a day ahead is not."""
    soon = to_iso(utcnow() + timedelta(hours=3))
    later = to_iso(utcnow() + timedelta(hours=30))
    path = env.projects / "-tmp-ahead" / "ahead.jsonl"
    path.parent.mkdir()
    path.write_bytes(
        claude_line("user", "u1", "ahead", content="first", timestamp="2026-11-30T10:00:00.000Z")
        + claude_line("assistant", "a1", "ahead", parent="u1", content="ok", timestamp=soon)
        + claude_line("assistant", "a2", "ahead", parent="a1", content="ok", timestamp=later)
    )
    _ingest(pipeline)
    (ended,) = pipeline.db.execute("SELECT ended_at FROM sessions WHERE session_id = 'ahead'").fetchone()
    assert ended == soon
    times = dict(pipeline.db.execute("SELECT key, timestamp FROM turns"))
    assert times["a1"] == soon and times["a2"] is None

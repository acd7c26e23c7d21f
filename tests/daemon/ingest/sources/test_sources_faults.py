"""Hostile and odd input: readers never raise, skip what they cannot use, count it, and stay bounded."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from skillopt_daemon.core import paths
from skillopt_daemon.ingest.sources import SOURCES, build_source
from skillopt_daemon.ingest.sources.base import (
    REPLAY_MARKER_FILE,
    REPLAY_MARKER_TEXT,
    Record,
    SkipRecord,
    TurnRecord,
)
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource
from skillopt_daemon.ingest.sources.codex import CodexSource
from skillopt_daemon.ingest.sources.copilot_vscode import CopilotVSCodeSource

from .helpers import FIXTURES, Parsed, git_repo


def claude_line(**fields: object) -> bytes:
    base: dict[str, object] = {
        "sessionId": "s1",
        "cwd": "/nowhere",
        "version": "2.1.197",
        "entrypoint": "cli",
    }
    base.update(fields)
    return json.dumps(base).encode()


def feed(src: ClaudeCodeSource | CodexSource, lines: list[bytes], name: str = "s1.jsonl") -> Parsed:
    ctx = src.context(Path("/tmp") / name)
    out: list[Record] = []
    for ln in lines:
        out.extend(src.parse_line(ctx, ln))
    return Parsed(out)


@pytest.fixture
def claude_src(tmp_path: Path) -> ClaudeCodeSource:
    src = build_source(ClaudeCodeSource, tmp_path, pin_repo=False)
    assert isinstance(src, ClaudeCodeSource)
    return src


def test_truncated_line_and_non_objects_become_skips(claude_src: ClaudeCodeSource) -> None:
    good = claude_line(type="user", uuid="u1", message={"role": "user", "content": "hello"})
    deep = b"[" * 100_000 + b"]" * 100_000
    p = feed(claude_src, [good, good[: len(good) // 2], b"[1, 2]", b"42", b"   ", deep])
    assert p.user_texts() == ["hello"]
    reasons = ["invalid json", "not a json object", "not a json object", "blank line", "invalid json"]
    assert p.skip_reasons() == reasons


def test_invalid_utf8_is_replaced_and_reported(claude_src: ClaudeCodeSource) -> None:
    line = claude_line(type="user", uuid="u1", message={"role": "user", "content": "caf\u00e9 XX"})
    line = line.replace(b"XX", b"\xff\xfe")
    p = feed(claude_src, [line])
    assert p.user_texts() == ["caf\u00e9 \ufffd\ufffd"]
    assert p.skip_reasons() == ["invalid utf-8 (replaced)"]


def test_fifty_megabyte_line_is_cut_to_size(claude_src: ClaudeCodeSource) -> None:
    big = "x" * (50 * 1024 * 1024)
    user = claude_line(type="user", uuid="u1", message={"role": "user", "content": "start " + big})
    result = claude_line(
        type="user",
        uuid="u2",
        message={
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": big + " 1 failed"}],
        },
    )
    p = feed(claude_src, [user, result])
    (turn,) = [t for t in p.turns if t.role == "user"]
    assert turn.text.startswith("start ") and len(turn.text) <= claude_src.max_text_chars + 20
    (res,) = p.results
    assert len(res.output_excerpt) <= claude_src.excerpt_chars + 40
    assert res.output_excerpt.endswith("1 failed")  # the tail, where test summaries are, is kept


def test_unknown_types_are_counted_not_fatal(claude_src: ClaudeCodeSource) -> None:
    p = feed(
        claude_src,
        [
            claude_line(type="hologram", uuid="h"),
            claude_line(uuid="n"),
            claude_line(type="user", uuid="u", message={}),
        ],
    )
    assert p.skip_reasons() == ["unknown record type hologram", "record without type"]
    assert [t.text for t in p.turns] == [""]  # a user record without content is kept, empty


def test_timestamps_future_and_zoneless(claude_src: ClaudeCodeSource) -> None:
    p = feed(
        claude_src,
        [
            claude_line(type="user", uuid="u1", timestamp="2999-01-01T00:00:00Z", message={"content": "a"}),
            claude_line(
                type="assistant", uuid="a1", timestamp="2026-11-01T10:00:00", message={"content": "b"}
            ),
            claude_line(
                type="assistant", uuid="a2", timestamp="2026-11-01T10:00:01", message={"content": "c"}
            ),
        ],
    )
    assert p.turns[0].timestamp is None
    assert p.turns[1].timestamp == "2026-11-01T10:00:00.000Z"
    reasons = p.skip_reasons()
    assert reasons.count("timestamp in the future (ignored)") == 1
    assert reasons.count("timestamp without zone (taken as UTC)") == 1  # reported once per file


def test_sidechains_and_subagent_files_are_dropped_with_a_count(claude_src: ClaudeCodeSource) -> None:
    side = claude_line(type="user", uuid="s", isSidechain=True, message={"content": "sub-task"})
    p = feed(claude_src, [side, side])
    assert p.turns == [] and p.skip_reasons() == ["sidechain record", "sidechain record"]
    ctx = claude_src.context(Path("/tmp/proj/s1/subagents/agent-1.jsonl"))
    first = claude_src.parse_line(ctx, claude_line(type="user", uuid="x", message={"content": "hi"}))
    second = claude_src.parse_line(ctx, claude_line(type="user", uuid="y", message={"content": "hi"}))
    assert [type(r) for r in first] == [SkipRecord] and second == []


def test_injected_context_is_meta(claude_src: ClaudeCodeSource) -> None:
    p = feed(
        claude_src,
        [
            claude_line(
                type="user",
                uuid="1",
                isMeta=True,
                message={"content": "Base directory for this skill: /s\n\nbody"},
            ),
            claude_line(type="user", uuid="2", message={"content": "<command-name>/clear</command-name>"}),
            claude_line(
                type="user", uuid="3", message={"content": "<system-reminder>x</system-reminder>real ask"}
            ),
        ],
    )
    assert [t.is_meta for t in p.turns] == [True, True, False]
    assert p.user_texts() == ["real ask"]


def test_replays_are_marked_by_folder_marker_file_and_text(
    tmp_path: Path, claude_src: ClaudeCodeSource
) -> None:
    ws = paths.workspaces_dir() / "run-1" / "task-3"
    ws.mkdir(parents=True)
    src = build_source(ClaudeCodeSource, tmp_path, pin_repo=False)
    p = feed(src, [claude_line(type="user", uuid="u", cwd=str(ws), message={"content": "do it"})])
    assert p.extra("skillopt_replay") is True
    marked = tmp_path / "elsewhere" / "sub"
    marked.mkdir(parents=True)
    (marked.parent / REPLAY_MARKER_FILE).write_text("")
    p = feed(
        src, [claude_line(type="user", uuid="u", cwd=str(marked), message={"content": "do it"})], "s2.jsonl"
    )
    assert p.extra("skillopt_replay") is True
    p = feed(
        src,
        [claude_line(type="user", uuid="u", message={"content": f"{REPLAY_MARKER_TEXT}\ndo it"})],
        "s3.jsonl",
    )
    assert p.extra("skillopt_replay") is True
    p = feed(src, [claude_line(type="user", uuid="u", message={"content": "mine"})], "s4.jsonl")
    assert p.extra("skillopt_replay") is None


def test_repo_state_is_pinned_with_dirtiness(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit = git_repo(repo)
    (repo / "README.md").write_text("changed\n")
    src = build_source(ClaudeCodeSource, tmp_path)
    p = feed(src, [claude_line(type="user", uuid="u", cwd=str(repo), gitBranch="", message={"content": "x"})])
    assert p.info("git_commit") == commit
    assert p.extra("git_dirty") is True
    assert p.extra("git_pinned_at")
    not_repo = tmp_path / "plain"
    not_repo.mkdir()
    p = feed(
        src, [claude_line(type="user", uuid="u", cwd=str(not_repo), message={"content": "x"})], "s5.jsonl"
    )
    assert p.info("git_commit") is None


def test_codex_older_rollouts_and_events(tmp_path: Path) -> None:
    src = build_source(CodexSource, tmp_path, pin_repo=False)
    assert isinstance(src, CodexSource)
    lines = [
        {"id": "0199-old", "timestamp": "2025-05-01T10:00:00Z", "instructions": ""},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<user_instructions>x</user_instructions>"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]},
        {
            "type": "function_call",
            "name": "shell",
            "call_id": "c1",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest"]}),
        },
        {
            "timestamp": "2025-05-01T10:00:05Z",
            "type": "event_msg",
            "payload": {"type": "exec_command_end", "call_id": "c1", "exit_code": 1},
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1}}),
        },
        {
            "timestamp": "2025-05-01T10:00:06Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "run the tests"},
        },
        {
            "timestamp": "2025-05-01T10:00:07Z",
            "type": "event_msg",
            "payload": {"type": "turn_aborted", "reason": "interrupted"},
        },
        {"timestamp": "2025-05-01T10:00:08Z", "type": "event_msg", "payload": {"type": "brand_new_event"}},
        {"timestamp": "2025-05-01T10:00:09Z", "type": "mystery", "payload": {}},
    ]
    p = feed(src, [json.dumps(x).encode() for x in lines], "rollout-2025-05-01T10-00-00-0199-old.jsonl")
    assert p.user_texts() == ["run the tests"]  # once, though the event repeats it
    assert p.calls[0].input_summary == "bash -lc pytest"
    assert (p.results[0].exit_code, p.results[0].is_error, p.results[0].output_excerpt) == (
        1,
        True,
        "1 failed",
    )
    assert any(t.role == "system" and "interrupted" in t.text for t in p.turns)
    assert p.skip_reasons() == [
        "unknown record type event_msg.brand_new_event",
        "unknown record type mystery",
    ]
    # Keys without ids are content + position: the same lines give the same keys.
    again = feed(src, [json.dumps(x).encode() for x in lines], "rollout-2025-05-01T10-00-00-0199-old.jsonl")
    assert [t.key for t in again.turns] == [t.key for t in p.turns]


def test_codex_subagent_threads_are_dropped(tmp_path: Path) -> None:
    src = build_source(CodexSource, tmp_path, pin_repo=False)
    assert isinstance(src, CodexSource)
    meta = {"type": "session_meta", "payload": {"id": "t2", "cwd": "/w", "source": {"subagent": "review"}}}
    msg = {
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "review"}]},
    }
    p = feed(src, [json.dumps(meta).encode(), json.dumps(msg).encode()], "rollout-x-t2.jsonl")
    assert p.turns == [] and p.skip_reasons() == ["sub-agent transcript"]


@pytest.mark.parametrize("cls", list(SOURCES.values()) + [CopilotVSCodeSource], ids=lambda c: c.__name__)
def test_random_garbage_never_raises(cls: type, tmp_path: Path) -> None:
    rng = random.Random(1234)
    src = build_source(cls, tmp_path, pin_repo=False)
    path = tmp_path / "x" / "sessions" / "f.jsonl"
    shapes = [
        lambda: bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200))),
        lambda: json.dumps(
            {
                "type": rng.choice(["user", "assistant", "message", "session_meta", "response_item"]),
                "message": rng.choice([None, 1, "s", [], {"content": [1, None, {"type": "tool_use"}]}]),
                "payload": rng.choice(
                    [
                        None,
                        {},
                        {"type": "message", "content": 5},
                        {"type": "function_call_output", "output": [1]},
                    ]
                ),
                "data": rng.choice([None, {"content": {"x": 1}}, {"toolRequests": [None, {}]}]),
                "timestamp": rng.choice([None, 1e30, -5, "soon", "2026-13-45T99:00:00Z"]),
            }
        ).encode(),
    ]
    if src.line_oriented:
        ctx = src.context(path)
        for _ in range(300):
            out = src.parse_line(ctx, rng.choice(shapes)())
            assert all(not isinstance(r, TurnRecord) or isinstance(r.text, str) for r in out)
    else:
        for _ in range(100):
            blob = b"\n".join(rng.choice(shapes)() for _ in range(rng.randint(1, 5)))
            src.parse_file(src.context(path), blob)
        src.parse_file(src.context(path), b"")
        src.parse_file(
            src.context(path), (FIXTURES / "devin/exports/devin-9a8b7c6d5e4f.json").read_bytes()[:100]
        )

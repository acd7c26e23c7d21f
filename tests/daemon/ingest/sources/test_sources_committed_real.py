"""Fast checks on the committed transcripts that the real CLIs wrote (regenerate: tests/daemon/ingest/sources/make_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.ingest.redact import redact
from skillopt_daemon.ingest.signals import derive_signals
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource
from skillopt_daemon.ingest.sources.codex import CodexSource

from .helpers import FIXTURES, parsed

REAL = FIXTURES / "real"
CASES = [
    (ClaudeCodeSource, REAL / "claude-code", "projects/*/*.jsonl"),
    (CodexSource, REAL / "codex", "sessions/*/*/*/rollout-*.jsonl"),
]


def only(root: Path, pattern: str) -> Path:
    (path,) = sorted(root.glob(pattern))
    return path


@pytest.mark.parametrize(("cls", "root", "pattern"), CASES, ids=["claude-code", "codex"])
def test_committed_real_transcript(cls: type, root: Path, pattern: str) -> None:
    path = only(root, pattern)
    src = build_source(cls, root, pin_repo=False)
    assert src.is_transcript(path)
    p = parsed(src, path)
    assert p.info("project_path") == "/home/dev/project"
    assert p.info("tool_version") == src.known_version
    assert p.user_texts() == ["fix the failing test", "no, use pytest"]
    assert not p.skips, p.skip_reasons()
    sig = derive_signals(p.turns, p.calls, p.results)
    assert [f.exit_code for f in sig.failed_commands] == [3]
    assert sig.final_test_outcome == "passed"
    assert [c.text for c in sig.corrections] == ["no, use pytest"]


@pytest.mark.parametrize(("cls", "root", "pattern"), CASES, ids=["claude-code", "codex"])
def test_committed_transcripts_hold_nothing_secret_looking(cls: type, root: Path, pattern: str) -> None:
    text = only(root, pattern).read_text()
    assert redact(text)[1] == 0
    assert "/tmp/" not in text.replace("`/tmp`", "")

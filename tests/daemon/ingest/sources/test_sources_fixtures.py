"""Readers of the tools that cannot run here (Copilot, VS Code, Cursor, Devin, OpenClaw), on fixtures that
follow each tool's documented format, plus the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillopt_daemon.core.config import Settings, ToolSettings
from skillopt_daemon.ingest.sources import SOURCES, all_sources, build_source, source_for
from skillopt_daemon.ingest.sources.copilot import CopilotSource
from skillopt_daemon.ingest.sources.copilot_vscode import CopilotVSCodeSource, apply_ops
from skillopt_daemon.ingest.sources.cursor import CursorSource, unslug
from skillopt_daemon.ingest.sources.devin import DevinSource
from skillopt_daemon.ingest.sources.openclaw import OpenClawSource
from skillopt_lib.agents import AgentTool

from .helpers import FIXTURES, parsed


def test_copilot_cli_events_give_turns_calls_and_failed_command() -> None:
    src = build_source(CopilotSource, FIXTURES / "copilot", pin_repo=False)
    path = FIXTURES / "copilot/session-state/5b1c3d2e-0000-4000-8000-000000000001/events.jsonl"
    assert src.is_transcript(path)
    p = parsed(src, path)
    assert p.info("session_id") == "5b1c3d2e-0000-4000-8000-000000000001"
    assert p.info("project_path") == "/home/dev/api-server"
    assert p.info("tool_version") == "0.0.400"
    assert p.info("model") == "claude-sonnet-4.5"
    assert p.info("started_at") == "2026-11-02T09:00:00.000Z"
    assert p.info("ended_at") == "2026-11-02T09:01:00.000Z"
    assert p.user_texts() == [
        "run the unit tests and fix what fails",
        "no, don't touch app.js, the test is wrong",
    ]
    # The call appears in the message's toolRequests and in execution_start: one key, stored once.
    assert {c.key for c in p.calls} == {"tc-1"}
    assert p.calls[0].name == "bash" and p.calls[0].input_summary == "npm test"
    (res,) = p.results
    assert res.call_key == "tc-1" and res.is_error is True and res.exit_code == 1
    assert "1 failed, 4 passed" in res.output_excerpt
    assert p.skip_reasons() == ["unknown record type session.shiny_new_event"]


def test_copilot_cli_older_single_file_layout() -> None:
    src = build_source(CopilotSource, FIXTURES / "copilot", pin_repo=False)
    path = FIXTURES / "copilot/session-state/7d3e4f50-0000-4000-8000-000000000002.jsonl"
    assert src.is_transcript(path)
    p = parsed(src, path)
    assert p.info("session_id") == "7d3e4f50-0000-4000-8000-000000000002"
    assert p.info("project_path") == "/home/dev/legacy"
    assert p.user_texts() == ["list the files"]
    assert p.results[0].is_error is False
    assert [t.text for t in p.turns if t.role == "assistant"][-1] == "Two files: README.md and setup.py."


def test_vscode_chat_oplog_replays_sets_splices_and_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    src = build_source(CopilotVSCodeSource, FIXTURES / "copilot", pin_repo=False)
    path = (
        FIXTURES
        / "vscode/workspaceStorage/9f2ab3c4d5e6/chatSessions/c0ffee00-1111-4222-8333-444455556666.jsonl"
    )
    assert src.is_transcript(path) and not src.line_oriented
    p = parsed(src, path)
    assert p.info("session_id") == "c0ffee00-1111-4222-8333-444455556666"
    assert p.info("project_path") == "/home/dev/my site"  # from workspace.json, URI-decoded
    assert p.info("title") == "Dark mode toggle"
    assert p.info("started_at") == "2026-11-02T09:00:00.000Z"
    assert p.info("ended_at") == "2026-11-02T09:01:00.000Z"
    # request_2 was spliced in and then deleted (kind 3): only the first request remains.
    assert p.user_texts() == ["add a dark mode toggle"]
    (answer,) = [t for t in p.turns if t.role == "assistant"]
    assert answer.text == "I'll add a toggle to the header. Done: the toggle is in `Header.tsx`."
    assert answer.model == "copilot/gpt-4.1"
    assert [(c.key, c.name) for c in p.calls] == [("tool-1", "copilot_runInTerminal")]
    assert "unknown record type kind 9" in p.skip_reasons()


def test_vscode_roots_follow_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    src = build_source(CopilotVSCodeSource, tmp_path / ".copilot", pin_repo=False)
    assert any(str(r).startswith(str(tmp_path)) and r.name == "workspaceStorage" for r in src.roots())


def test_vscode_apply_ops_handles_broken_lines() -> None:
    state, skips = apply_ops(
        [b'{"kind":0,"v":{"requests":[]}}', b"{broken", b'{"kind":1,"k":["a","b"],"v":1}']
    )
    assert state == {"requests": []}
    assert [s.reason for s in skips] == ["invalid json", "operation on a missing path"]


def test_cursor_transcript_uses_user_query_workspace_path_and_mtime() -> None:
    src = build_source(CursorSource, FIXTURES / "cursor", pin_repo=False)
    path = (
        FIXTURES
        / "cursor/projects/home-dev-webapp/agent-transcripts/8a8b8c8d-0000-4000-8000-00000000000c.jsonl"
    )
    assert src.is_transcript(path)
    p = parsed(src, path)
    assert p.info("session_id") == "8a8b8c8d-0000-4000-8000-00000000000c"
    assert p.info("project_path") == "/home/dev/webapp"
    assert p.user_texts() == ["why does the login form submit twice?"]
    assert [c.name for c in p.calls] == ["Grep"]
    assert p.results[0].call_key == "cur-call-1"
    # No timestamps in the format: every turn carries the file's modification time.
    from skillopt_daemon.core import timeutil

    mtime = timeutil.to_iso(timeutil.from_epoch(path.stat().st_mtime))
    assert {t.timestamp for t in p.turns} == {mtime}
    assert p.skip_reasons() == ["unknown record type narrator"]


def test_cursor_slug_is_resolved_against_the_disk(tmp_path: Path) -> None:
    (tmp_path / "home" / "me" / "my-app").mkdir(parents=True)
    assert unslug("home-me-my-app", root=tmp_path) == str(tmp_path / "home" / "me" / "my-app")
    assert unslug("nowhere-at-all", root=tmp_path) is None


def test_devin_atif_transcript() -> None:
    src = build_source(DevinSource, FIXTURES / "devin", pin_repo=False)
    path = FIXTURES / "devin/cli/transcripts/d3v1n000-0000-4000-8000-000000000001.json"
    assert src.is_transcript(path) and not src.line_oriented
    p = parsed(src, path)
    assert p.info("session_id") == "d3v1n000-0000-4000-8000-000000000001"
    assert p.info("project_path") == "/home/dev/service"
    assert p.info("tool_version") == "1.2.0" and p.info("model") == "swe-1.5"
    assert p.user_texts() == ["make the build pass"]
    system = [t for t in p.turns if t.role == "system"]
    assert system and all(t.is_meta for t in system)
    assert [(r.call_key, r.exit_code, r.is_error) for r in p.results] == [
        ("call_1", 101, True),
        ("call_2", 0, False),
    ]
    assert p.turns[2].input_tokens == 1200
    assert p.skip_reasons() == ["unknown step source observer"]


def test_devin_cloud_export_times_are_utc() -> None:
    src = build_source(DevinSource, FIXTURES / "devin", pin_repo=False)
    p = parsed(src, FIXTURES / "devin/exports/devin-9a8b7c6d5e4f.json")
    assert p.info("session_id") == "devin-9a8b7c6d5e4f"
    assert p.info("started_at") == "2026-11-04T07:00:00.000Z"
    assert p.info("title") == "Upgrade lodash"
    assert p.user_texts() == ["Upgrade lodash to the latest version in acme/web", "use pnpm, not npm"]
    assert p.extra("pull_request") == "https://github.com/acme/web/pull/42"


def test_openclaw_reads_only_the_branch_ending_at_the_last_entry() -> None:
    src = build_source(OpenClawSource, FIXTURES / "openclaw", pin_repo=False)
    path = FIXTURES / "openclaw/agents/main/sessions/0c1a0000-0000-4000-8000-000000000001.jsonl"
    assert src.is_transcript(path)
    p = parsed(src, path)
    assert p.info("project_path") == "/home/dev/notes"
    assert p.info("model") == "claude-sonnet-4-5"
    assert p.user_texts() == ["summarize TODO.md (capital letters)"]
    assert "todo.md" not in p.dump().replace("TODO.md", "")  # the abandoned branch is gone
    assert p.skip_reasons().count("abandoned branch") == 4
    assert "unknown record type telemetry_blob" in p.skip_reasons()
    assert [(c.key, c.name) for c in p.calls] == [("oc-call-2", "bash")]
    assert [(r.exit_code, r.is_error) for r in p.results] == [(0, False)]
    assert p.info("ended_at") == "2026-11-05T14:01:04.000Z"


def test_registry_covers_every_tool() -> None:
    assert set(SOURCES) == set(AgentTool)


def test_all_sources_honours_enabled_and_each_tools_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    settings = Settings(
        tools={
            AgentTool.CURSOR: ToolSettings(enabled=False),
            AgentTool.CLAUDE_CODE: ToolSettings(home=tmp_path / "claude-home"),
            AgentTool.DEVIN: ToolSettings(extra_dirs=[tmp_path / "devin-exports"]),
        }
    )
    sources = all_sources(settings)
    tools = [s.tool for s in sources]
    assert AgentTool.CURSOR not in tools
    assert tools.count(AgentTool.COPILOT) == 2  # the CLI and VS Code Copilot Chat
    by_tool = {s.tool: s for s in sources}
    assert by_tool[AgentTool.CLAUDE_CODE].roots()[0] == tmp_path / "claude-home" / "projects"
    assert by_tool[AgentTool.CODEX].roots()[0] == tmp_path / "codex-home" / "sessions"
    assert tmp_path / "devin-exports" in by_tool[AgentTool.DEVIN].roots()
    name = "rollout-2026-11-30T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl"
    rollout = tmp_path / "codex-home/sessions/2026/11/30" / name
    found = source_for(rollout, sources)
    assert found is not None and found.tool is AgentTool.CODEX
    assert found.context(rollout).session_key == "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    assert source_for(tmp_path / "elsewhere.jsonl", sources) is None


def test_all_sources_can_select_tools() -> None:
    sources = all_sources(Settings(), tools=[AgentTool.OPENCLAW])
    assert [s.tool for s in sources] == [AgentTool.OPENCLAW]

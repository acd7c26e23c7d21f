"""Gemini CLI's reader on a session the real CLI (0.61.0) wrote offline against the scripted model server
(`fixtures/real/gemini/`, paths renamed): a task whose check fails with exit code 3."""

from __future__ import annotations

from pathlib import Path

from skillopt_daemon.ingest.sources import SOURCES, build_source
from skillopt_daemon.ingest.sources.gemini import GeminiSource
from skillopt_lib.agents import AgentTool, spec
from testkit import agent_clis as ac

from .helpers import FIXTURES, parse_path, parsed

HOME = FIXTURES / "real" / "gemini"
SESSION = HOME / "tmp/shop/chats/session-2026-12-02T01-31-348998a6.jsonl"


def test_a_real_gemini_session_gives_its_turns_call_and_failed_check() -> None:
    assert SOURCES[AgentTool.GEMINI] is GeminiSource
    src = build_source(GeminiSource, HOME, pin_repo=False)
    assert src.roots() == [HOME / "tmp"]
    assert src.is_transcript(SESSION)
    p = parsed(src, SESSION)
    assert p.info("session_id") == "348998a6-3480-41fa-9a8e-2f4903f47011"
    assert p.info("project_path") == "/home/dev/shop"
    assert p.info("model") == "gemini-2.5-flash"
    assert p.info("started_at").startswith("2026-12-02T01:31")
    assert p.user_texts() == ["Please run the release check"]  # Gemini's <session_context> is context
    assert any(t.is_meta and "<session_context>" in t.text for t in p.turns)
    (call,) = p.calls
    assert call.name == "run_shell_command" and call.input_summary == "echo checking; exit 3"
    (result,) = p.results
    assert result.call_key == call.key and result.exit_code == 3  # the command ran; the check failed
    assert "checking" in result.output_excerpt and "untrusted_context" not in result.output_excerpt
    # The model message is written twice (before and after its tool call): one turn, keyed by its id.
    assistant = [t for t in p.turns if t.role == "assistant"]
    assert len({t.key for t in assistant}) == 2
    assert assistant[-1].text == "Done: wrote out.txt"


def test_reading_the_file_again_from_a_stored_offset_adds_nothing_new() -> None:
    src = build_source(GeminiSource, HOME, pin_repo=False)
    ctx = src.context(SESSION)
    lines = [line for line in SESSION.read_bytes().split(b"\n") if line.strip()]
    first = [r for line in lines[:5] for r in src.parse_line(ctx, line)]
    rest = [r for line in lines[5:] for r in src.parse_line(src.context(SESSION, ctx.state), line)]
    whole = parse_path(src, SESSION)
    keys = {getattr(r, "key", None) for r in whole} - {None}
    assert {getattr(r, "key", None) for r in first + rest} - {None} == keys


def test_the_install_script_and_the_tool_row_pin_the_tested_gemini_version() -> None:
    script = (Path(__file__).parents[4] / "scripts" / "install-agent-clis.sh").read_text()
    assert f'GEMINI_VERSION="{ac.GEMINI_VERSION}"' in script
    assert spec(AgentTool.GEMINI).tested_versions == (ac.GEMINI_VERSION, ac.GEMINI_VERSION)
    assert GeminiSource.known_version == ac.GEMINI_VERSION

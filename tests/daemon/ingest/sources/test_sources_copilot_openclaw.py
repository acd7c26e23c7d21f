"""The Copilot CLI and OpenClaw readers on what the real, pinned programs wrote
(`fixtures/real/{copilot,openclaw}`, regenerate with `python -m tests.sources.record_real_fixtures`)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from skillopt_daemon.ingest.signals import derive_signals
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.copilot import CopilotSource
from skillopt_daemon.ingest.sources.openclaw import OpenClawSource
from skillopt_lib.agents import AgentTool, spec
from testkit import agent_clis as ac

from .helpers import FIXTURES, parsed

REAL = FIXTURES / "real"
OPENCLAW_DB = REAL / "openclaw/agents/main/agent/openclaw-agent.sqlite"


def copilot_events() -> Path:
    (path,) = sorted((REAL / "copilot/session-state").glob("*/events.jsonl"))
    return path


def test_copilot_1_0_102_session_has_no_unknown_records_tokens_models_exit_codes_and_title() -> None:
    src = build_source(CopilotSource, REAL / "copilot", pin_repo=False)
    p = parsed(src, copilot_events())
    assert p.info("tool_version") == ac.COPILOT_VERSION
    assert not src.known_version or p.info("tool_version") == src.known_version
    assert not p.skips, p.skip_reasons()
    assert p.info("is_automation") is True, "a `copilot -p` run is headless"
    assert p.info("title") == "fix the failing test"
    assert p.user_texts() == ["fix the failing test", "say hello"]
    answers = [t for t in p.turns if t.role == "assistant"]
    assert answers and all(t.model == "gpt-4.1" for t in answers)
    assert all(t.input_tokens and t.output_tokens for t in answers)
    assert [r.exit_code for r in p.results] == [3, 0]
    sig = derive_signals(p.turns, p.calls, p.results)
    assert {f.exit_code for f in sig.failed_commands} == {3}


def test_openclaw_2026_sqlite_sessions_are_read() -> None:
    src = build_source(OpenClawSource, REAL / "openclaw", pin_repo=False)
    assert src.is_transcript(OPENCLAW_DB)
    p = parsed(src, OPENCLAW_DB)
    assert p.info("tool_version") == "4" == src.known_version
    assert p.info("project_path") == "/home/dev/project"
    assert p.info("model") == "scripted-model"
    assert p.extra("agent_id") == "main"
    assert not p.skips, p.skip_reasons()
    assert p.user_texts() == ["fix the failing test", "say hello"]
    assert [t.text for t in p.turns if t.role == "assistant"][-1] == "Hello there."
    assert [c.name for c in p.calls] == ["exec", "exec"]
    # The long listing was stored zstd-compressed; its text still arrives.
    assert [r.exit_code for r in p.results] == [3, 0]
    assert "collected test 119 of 120" in p.results[1].output_excerpt
    sig = derive_signals(p.turns, p.calls, p.results)
    assert [f.exit_code for f in sig.failed_commands] == [3]


def test_openclaw_database_is_compressed_where_large_and_opened_read_only(tmp_path: Path) -> None:
    with sqlite3.connect(f"file:{OPENCLAW_DB}?mode=ro", uri=True) as conn:
        (packed,) = conn.execute(
            "SELECT COUNT(*) FROM transcript_events WHERE event_zstd IS NOT NULL"
        ).fetchone()
    assert packed >= 1, "the fixture must hold a compressed event"
    copy = tmp_path / "agents/main/agent/openclaw-agent.sqlite"
    copy.parent.mkdir(parents=True)
    shutil.copy(OPENCLAW_DB, copy)
    src = build_source(OpenClawSource, tmp_path, pin_repo=False)
    before = copy.read_bytes()
    p = parsed(src, copy)
    assert p.user_texts() == ["fix the failing test", "say hello"]
    assert copy.read_bytes() == before
    assert sorted(f.name for f in copy.parent.iterdir()) == [copy.name], "no journal or WAL was created"


def test_openclaw_legacy_jsonl_sessions_are_still_read() -> None:
    src = build_source(OpenClawSource, FIXTURES / "openclaw", pin_repo=False)
    path = FIXTURES / "openclaw/agents/main/sessions/0c1a0000-0000-4000-8000-000000000001.jsonl"
    assert src.is_transcript(path)
    assert parsed(src, path).user_texts()


def test_install_script_and_tool_table_pin_the_tested_versions() -> None:
    script = (Path(__file__).parents[4] / "scripts" / "install-agent-clis.sh").read_text()
    assert f'COPILOT_VERSION="{ac.COPILOT_VERSION}"' in script
    assert f'OPENCLAW_VERSION="{ac.OPENCLAW_VERSION}"' in script
    assert spec(AgentTool.COPILOT).tested_versions == ("1.0.0", ac.COPILOT_VERSION)
    assert spec(AgentTool.OPENCLAW).tested_versions == (ac.OPENCLAW_VERSION, ac.OPENCLAW_VERSION)

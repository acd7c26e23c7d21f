"""The Claude Code and Codex readers on transcripts the real, pinned CLIs write during this test run,
driven by the scripted model server: multi-turn work with tool calls, a failing command, a `--resume`
follow-up correction, a max-turns stop, and an interactive (tmux) session."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from skillopt_daemon.ingest.signals import derive_signals
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.base import SessionInfo, ToolResultRecord
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource
from skillopt_daemon.ingest.sources.codex import CodexSource
from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.fixtures import require
from testkit.tmux import run_claude_interactive, run_codex_interactive

from .helpers import Parsed, git_repo, parse_path, parsed

pytestmark = pytest.mark.agent_cli

FAILING = "python3 -c 'import sys; print(\"FAILED tests/test_x.py::test_a\"); sys.exit(3)'"

SCRIPT = Script(
    rules=[
        Rule(
            name="fix",
            match=Match(user="fix the failing test"),
            steps=[
                Step(text="Running the tests first.", tool_calls=[bash(FAILING)]),
                Step(text="Writing a note.", tool_calls=[write_file("notes.txt", "checked\n")]),
                Step(text="I fixed the test."),
            ],
        ),
        Rule(
            name="correction",
            match=Match(user="no, use pytest"),
            steps=[Step(tool_calls=[bash("./pytest -q")]), Step(text="pytest: 3 passed.")],
        ),
        Rule(
            name="loop",
            match=Match(user="keep checking"),
            steps=[Step(tool_calls=[bash(f"echo round {i}")]) for i in range(6)],
        ),
        Rule(name="hello", match=Match(user="say hello"), steps=[Step(text="Hello there.")]),
    ]
)


@dataclass
class Runs:
    home: Path
    project: Path
    commit: str
    claude: dict[str, Path] = field(default_factory=dict)
    codex: dict[str, Path] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Run every scenario once for the module; tests only read what the CLIs wrote."""
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    require(clis.codex is not None, clis.why_missing("codex"))
    require(shutil.which("node") is not None, "the agent CLIs need Node.js on PATH")
    assert clis.claude is not None and clis.codex is not None
    base = tmp_path_factory.mktemp("real-clis")
    project = base / "project"
    project.mkdir()
    fake = project / "pytest"  # stands in for a real test suite: prints what pytest prints
    fake.write_text("#!/bin/sh\necho '3 passed in 0.01s'\n")
    fake.chmod(0o755)
    commit = git_repo(project)
    out = Runs(home=base / "home", project=project, commit=commit)
    with ScriptedServer(SCRIPT, expected_key=ac.DEFAULT_API_KEY) as server:
        env = ac.claude_env(out.home, server.url, trusted_dirs=[project])
        tools = ("Bash", "Write")
        first = ac.run_claude(clis.claude, "fix the failing test", cwd=project, env=env, allowed_tools=tools)
        assert first.returncode == 0, first.describe()
        again = ac.run_claude(
            clis.claude, "no, use pytest", cwd=project, env=env, resume=first.session_id, allowed_tools=tools
        )
        assert again.returncode == 0, again.describe()
        assert first.transcript is not None
        out.claude["work"] = first.transcript
        stop = ac.run_claude(
            clis.claude,
            "keep checking",
            cwd=project,
            env=env,
            allowed_tools=tools,
            extra_args=["--max-turns", "2"],
        )
        assert stop.returncode == 1 and stop.result and stop.result.get("subtype") == "error_max_turns"
        assert stop.transcript is not None
        out.claude["max_turns"] = stop.transcript

        cenv = ac.codex_env(out.home, server.base_url_openai, trusted_dirs=[project])
        c1 = ac.run_codex(clis.codex, "fix the failing test", cwd=project, env=cenv)
        assert c1.returncode == 0, c1.describe()
        c2 = ac.run_codex(clis.codex, "no, use pytest", cwd=project, env=cenv, resume=c1.session_id)
        assert c2.returncode == 0, c2.describe()
        assert c1.transcript is not None
        out.codex["work"] = c1.transcript

        if shutil.which("tmux"):
            ienv = ac.claude_env(out.home, server.url, trusted_dirs=[project])
            inter = run_claude_interactive(
                clis.claude,
                ["say hello", "fix the failing test"],
                cwd=project,
                env=ienv,
                work_dir=base / "tmux-claude",
                extra_args=["--allowedTools", "Bash,Write"],
            )
            if inter.transcript is not None:
                out.claude["interactive"] = inter.transcript
            cinter = run_codex_interactive(
                clis.codex, ["say hello"], cwd=project, env=cenv, work_dir=base / "tmux-codex"
            )
            if cinter.transcript is not None:
                out.codex["interactive"] = cinter.transcript
    yield out


def claude(runs: Runs, name: str) -> Parsed:
    return parsed(build_source(ClaudeCodeSource, runs.home / ".claude"), runs.claude[name])


def codex(runs: Runs, name: str) -> Parsed:
    return parsed(build_source(CodexSource, runs.home / ".codex"), runs.codex[name])


def stable(records: list) -> list:
    """Records without the moment the repo was read (the only thing allowed to differ between parses)."""
    for r in records:
        if isinstance(r, SessionInfo):
            r.extra.pop("git_pinned_at", None)
    return records


def by_call(p: Parsed) -> dict[str, tuple[str, str, ToolResultRecord | None]]:
    results = {r.call_key: r for r in p.results}
    return {c.key: (c.name, c.input_summary, results.get(c.key)) for c in p.calls}


# ------------------------------------------------------------------------------------------- Claude Code
def test_claude_session_facts(runs: Runs) -> None:
    p = claude(runs, "work")
    assert p.info("session_id") == runs.claude["work"].stem
    assert p.info("project_path") == str(runs.project)
    assert p.info("tool_version") == ac.CLAUDE_CODE_VERSION
    assert p.info("entrypoint") == "sdk-cli" and p.info("is_automation") is True
    assert p.info("git_commit") == runs.commit and p.extra("git_dirty") is False
    assert p.info("model")
    assert p.info("started_at") <= p.info("ended_at")
    assert not p.skips, p.skip_reasons()


def test_claude_user_turns_calls_and_failing_command(runs: Runs) -> None:
    p = claude(runs, "work")
    # The --resume follow-up landed in the same transcript, after the first prompt.
    assert p.user_texts() == ["fix the failing test", "no, use pytest"]
    calls = by_call(p)
    failing = [v for v in calls.values() if v[0] == "Bash" and "FAILED" in v[1]]
    assert len(failing) == 1
    _, _, res = failing[0]
    assert res is not None and res.is_error is True and res.exit_code == 3
    assert "FAILED tests/test_x.py::test_a" in res.output_excerpt
    passing = [v for v in calls.values() if v[0] == "Bash" and "pytest" in v[1]]
    assert passing and passing[0][2] is not None and passing[0][2].exit_code == 0
    assert any(v[0] == "Write" for v in calls.values())
    # Every call hangs off a stored assistant turn, and parents name stored turns.
    keys = {t.key for t in p.turns}
    assert all(c.turn_key in keys for c in p.calls)
    assert all(t.parent_key in keys for t in p.turns if t.parent_key)


def test_claude_reparse_is_stable_and_resumable(runs: Runs) -> None:
    """Parsing twice gives the same keys; stopping midway and resuming from the saved state gives the same."""
    src = build_source(ClaudeCodeSource, runs.home / ".claude")
    path = runs.claude["work"]
    whole = stable(parse_path(src, path))
    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    ctx = src.context(path)
    part = []
    for ln in lines[: len(lines) // 2]:
        part.extend(src.parse_line(ctx, ln))
    saved = json.loads(json.dumps(ctx.state))  # the state survives a restart as JSON
    ctx2 = src.context(path, saved)
    for ln in lines[len(lines) // 2 :]:
        part.extend(src.parse_line(ctx2, ln))
    assert stable(part) == whole
    assert stable(parse_path(src, path)) == whole


def test_claude_max_turns_stop(runs: Runs) -> None:
    p = claude(runs, "max_turns")
    assert p.user_texts() == ["keep checking"]
    assert p.calls, "the stopped session made tool calls"
    assert derive_signals(p.turns, p.calls, p.results).abrupt_end == "no answer after the last tool call"


@pytest.mark.parametrize("tool", ["claude", "codex"])
def test_signals_of_real_sessions(runs: Runs, tool: str) -> None:
    p = claude(runs, "work") if tool == "claude" else codex(runs, "work")
    sig = derive_signals(p.turns, p.calls, p.results)
    assert [c.text for c in sig.corrections] == ["no, use pytest"]
    assert [f.exit_code for f in sig.failed_commands] == [3]
    assert [(r.framework, r.outcome) for r in sig.test_runs] == [("pytest", "passed")]
    assert sig.final_test_outcome == "passed"
    assert sig.abrupt_end is None


def test_claude_interactive_session(runs: Runs) -> None:
    if "interactive" not in runs.claude:
        require(False, "the interactive Claude Code session did not run (tmux missing)")
    p = claude(runs, "interactive")
    assert p.info("entrypoint") == "cli" and p.info("is_automation") is False
    assert p.user_texts() == ["say hello", "fix the failing test"]
    assert any(v[2] is not None and v[2].exit_code == 3 for v in by_call(p).values())
    assert [s for s in p.skip_reasons() if s.startswith("unknown")] == []


# ------------------------------------------------------------------------------------------- Codex
def test_codex_session_facts(runs: Runs) -> None:
    p = codex(runs, "work")
    assert p.info("project_path") == str(runs.project)
    assert p.info("tool_version") == ac.CODEX_VERSION
    assert p.info("git_commit") == runs.commit
    assert p.info("model") == ac.CODEX_MODEL
    assert p.info("is_automation") is True  # codex exec
    assert runs.codex["work"].name.endswith(f"{p.info('session_id')}.jsonl")
    assert not p.skips, p.skip_reasons()


def test_codex_user_turns_once_and_injected_context_is_meta(runs: Runs) -> None:
    p = codex(runs, "work")
    assert p.user_texts() == ["fix the failing test", "no, use pytest"]
    meta = [t for t in p.turns if t.role == "user" and t.is_meta]
    assert meta and all(t.text.lstrip().startswith("<") or t.text.startswith("#") for t in meta)
    assert len({t.key for t in p.turns}) == len(p.turns)


def test_codex_exit_codes(runs: Runs) -> None:
    p = codex(runs, "work")
    calls = by_call(p)
    failing = [v for v in calls.values() if "FAILED" in v[1]]
    assert len(failing) == 1 and failing[0][2] is not None
    assert failing[0][2].exit_code == 3 and failing[0][2].is_error is True
    assert "FAILED tests/test_x.py::test_a" in failing[0][2].output_excerpt
    passing = [v for v in calls.values() if "pytest" in v[1]]
    assert passing and passing[0][2] is not None and passing[0][2].exit_code == 0
    assert any(v[0] == "apply_patch" for v in calls.values())


def test_codex_rollout_moved_to_archive_keeps_keys(runs: Runs, tmp_path: Path) -> None:
    src = build_source(CodexSource, runs.home / ".codex")
    original = stable(parse_path(src, runs.codex["work"]))
    archived = tmp_path / "archived_sessions" / runs.codex["work"].name
    archived.parent.mkdir()
    shutil.copy(runs.codex["work"], archived)
    assert stable(parse_path(src, archived)) == original


def test_codex_interactive_session(runs: Runs) -> None:
    if "interactive" not in runs.codex:
        require(False, "the interactive Codex session did not run (tmux missing)")
    p = codex(runs, "interactive")
    assert p.user_texts() == ["say hello"]
    assert p.info("is_automation") is False
    assert [s for s in p.skip_reasons() if s.startswith("unknown")] == []


def test_session_ids_are_uuids(runs: Runs) -> None:
    uuid.UUID(claude(runs, "work").info("session_id"))
    uuid.UUID(codex(runs, "work").info("session_id"))

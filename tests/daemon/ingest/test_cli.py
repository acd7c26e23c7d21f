"""`skillopt ingest` and `skillopt sessions`, run in process."""

from __future__ import annotations

import json

import pytest

from skillopt_lib.errors import ConfigError, ConflictError, NotFoundError
from testkit import cli
from testkit.ingest_helpers import claude_line, dump, write_claude_session, write_codex_session

from .conftest import Env


@pytest.fixture
def run(env: Env):  # type: ignore[no-untyped-def]
    """`skillopt ARGS` in this process, in the fixture's environment."""
    return cli.here


def test_ingest_and_backfill_store_each_session_once(env: Env, run) -> None:  # type: ignore[no-untyped-def]
    write_claude_session(env.projects, "c1", turns=2, cwd="/tmp/alpha")
    write_codex_session(env.codex, "0199a0b1-aaaa-bbbb-cccc-0000000000c1", cwd="/tmp/beta")
    res = run("ingest", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads(res.stdout)
    assert summary["read"] == 2 and summary["errors"] == 0
    first = dump(env.db)

    res = run("ingest", "--json")
    assert json.loads(res.stdout)["bytes"] == 0  # nothing new

    res = run("ingest", "--backfill", "--tool", "claude", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["read"] == 1  # only Claude Code's transcript was read again
    assert dump(env.db) == first

    res = run("ingest", "--tool", "nosuchtool")
    assert res.returncode == ConfigError.exit_code


def test_sessions_list_filters_and_show(env: Env, run) -> None:  # type: ignore[no-untyped-def]
    write_claude_session(env.projects, "aaa-111", turns=1, cwd="/srv/alpha", day=1)
    write_claude_session(env.projects, "aaa-222", turns=1, cwd="/srv/beta", day=28)
    write_codex_session(env.codex, "0199a0b1-aaaa-bbbb-cccc-0000000000c2", cwd="/srv/alpha")
    assert run("ingest", "--quiet").returncode == 0

    def ids(*args: str) -> list[str]:
        res = run("sessions", "list", "--json", *args)
        assert res.returncode == 0, res.stdout + res.stderr
        return sorted(s["session_id"] for s in json.loads(res.stdout))

    assert ids() == ["0199a0b1-aaaa-bbbb-cccc-0000000000c2", "aaa-111", "aaa-222"]
    assert ids("--tool", "codex") == ["0199a0b1-aaaa-bbbb-cccc-0000000000c2"]
    assert ids("--project", "alpha") == ["0199a0b1-aaaa-bbbb-cccc-0000000000c2", "aaa-111"]
    assert ids("--tool", "claude-code", "--since", "2026-11-20") == ["aaa-222"]
    assert run("sessions", "list", "--since", "someday").returncode == ConfigError.exit_code

    res = run("sessions", "show", "aaa-1", "--json")
    detail = json.loads(res.stdout)
    assert detail["session_id"] == "aaa-111" and detail["project_path"] == "/srv/alpha"
    roles = [t["role"] for t in detail["turns"]]
    assert roles[0] == "user" and "assistant" in roles
    calls = [c for t in detail["turns"] for c in t["tool_calls"]]
    assert calls and calls[0]["name"] == "Bash" and calls[0]["output_excerpt"] == "1 passed"

    res = run("sessions", "show", "aaa-1")  # the human view
    assert res.returncode == 0 and "fix the failing test" in res.stdout
    assert run("sessions", "show", "aaa").returncode == ConflictError.exit_code
    assert run("sessions", "show", "zzz").returncode == NotFoundError.exit_code


def test_show_orders_turns_by_the_chain_not_by_line(env: Env, run) -> None:  # type: ignore[no-untyped-def]
    """Interactive Claude Code can write a prompt's record after the answer's first records."""
    path = env.projects / "-tmp-x" / "chain.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        claude_line(
            "assistant", "a1", "chain", parent="u1", content="answer", timestamp="2026-11-30T10:00:02.000Z"
        )
        + claude_line(
            "user", "u1", "chain", parent=None, content="question", timestamp="2026-11-30T10:00:01.000Z"
        )
        + claude_line(
            "user", "u2", "chain", parent="a1", content="thanks", timestamp="2026-11-30T10:00:03.000Z"
        )
    )
    assert run("ingest", "--quiet").returncode == 0
    detail = json.loads(run("sessions", "show", "chain", "--json").stdout)
    assert [t["text"] for t in detail["turns"]] == ["question", "answer", "thanks"]


def _claude_session_at(env: Env, session: str, entrypoint: str, cwd: str) -> None:
    from testkit.ingest_helpers import claude_session_lines

    folder = env.projects / cwd.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    text = b"".join(claude_session_lines(session, turns=1, cwd=cwd))
    (folder / f"{session}.jsonl").write_bytes(
        text.replace(b'"entrypoint": "cli"', f'"entrypoint": "{entrypoint}"'.encode())
    )


def test_headless_runs_are_shown_as_headless_work_and_only_sdk_programs_as_automation(env: Env, run) -> None:  # type: ignore[no-untyped-def]
    """`claude -p` typed by a person is mined like the TUI's sessions: `sessions list`, `sessions show` and
    `status` call it headless, never "automation"; a program on the Agent SDK is automation, with why."""
    _claude_session_at(env, "tui-1", "cli", "/srv/alpha")
    _claude_session_at(env, "print-1", "sdk-cli", "/srv/alpha")
    _claude_session_at(env, "sdkpy-1", "sdk-py", "/srv/bot")
    assert run("ingest", "--quiet").returncode == 0

    listed = {s["session_id"]: s for s in json.loads(run("sessions", "list", "--json").stdout)}
    assert (listed["tui-1"]["kind"], listed["print-1"]["kind"], listed["sdkpy-1"]["kind"]) == (
        "interactive",
        "headless",
        "automation",
    )
    assert listed["print-1"]["kind_reason"] is None and listed["print-1"]["is_automation"] is True
    assert "Agent SDK program" in listed["sdkpy-1"]["kind_reason"]
    out = run("sessions", "list").stdout.splitlines()
    table = {sid: next(line for line in out if sid in line) for sid in ("print-1", "sdkpy-1")}
    assert "headless" in table["print-1"] and "automation" not in table["print-1"]
    assert "automation" in table["sdkpy-1"]
    shown = run("sessions", "show", "print-1").stdout
    assert "headless" in shown and "automation" not in shown and "mined" not in shown
    bot = run("sessions", "show", "sdkpy-1").stdout
    assert "no: an Agent SDK program (entrypoint 'sdk-py'): not mined" in bot

    sessions = json.loads(run("status", "--json").stdout)["sessions"]
    assert sessions["flagged_kinds"] == {"headless": 1, "automation": 1, "skipped": 0}
    line = sessions["lines"][0]
    assert "1 headless (claude -p, codex exec: mined as work)" in line
    assert "1 automation (Agent SDK programs, harnesses: not mined)" in line
    assert "flagged as automation" not in line


def test_notify_fast_path_writes_the_same_note_without_typer(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from skillopt_daemon.ingest import notes as notify

    class Stdin(io.TextIOWrapper):
        def isatty(self) -> bool:
            return False

    hook = json.dumps(
        {"session_id": "s9", "transcript_path": "/tmp/s9.jsonl", "cwd": "/tmp", "reason": "clear"}
    )
    monkeypatch.setattr("sys.stdin", Stdin(io.BytesIO(hook.encode())))
    assert notify.fast_main(["session-end", "--tool", "codex"]) == 0
    (path,) = (env.skillopt_home / "data" / "inbox").glob("*.json")
    note = json.loads(path.read_text())
    assert note["event"] == "session-end" and note["tool"] == "codex" and note["reason"] == "clear"
    assert notify.fast_main(["session-end", "--help"]) is None  # help and the unexpected go to typer
    assert notify.fast_main(["sessions", "list"]) is None
    assert not env.db.exists()

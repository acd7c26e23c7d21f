"""Small builders of Claude Code and Codex transcript lines, and table dumps to compare stores."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from testkit import cli as harness_cli

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def claude_line(
    rtype: str,
    uid: str,
    session: str,
    *,
    parent: str | None = None,
    cwd: str = "/tmp/project",
    content: Any = "",
    timestamp: str = "2026-11-30T10:00:00.000Z",
    entrypoint: str = "cli",
    extra: dict[str, Any] | None = None,
) -> bytes:
    rec: dict[str, Any] = {
        "type": rtype,
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": session,
        "cwd": cwd,
        "gitBranch": "main",
        "version": "2.1.197",
        "entrypoint": entrypoint,
        "timestamp": timestamp,
        "isSidechain": False,
    }
    if rtype == "user":
        rec["message"] = {"role": "user", "content": content}
    elif rtype == "assistant":
        rec["message"] = {
            "id": f"msg-{uid}",
            "role": "assistant",
            "model": "claude-test",
            "content": content if isinstance(content, list) else [{"type": "text", "text": content}],
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    if extra:
        rec.update(extra)
    return json.dumps(rec).encode() + b"\n"


def claude_session_lines(
    session: str,
    *,
    turns: int = 3,
    cwd: str = "/tmp/project",
    prompt: str = "fix the failing test",
    output: str = "1 passed",
    pad: int = 0,
    day: int = 30,
) -> list[bytes]:
    """A plausible session: prompt, then per turn an assistant tool call and its result."""
    lines = []
    prev = f"{session}-u0"
    ts = f"2026-11-{day:02d}T10:00:00.000Z"
    lines.append(claude_line("user", prev, session, cwd=cwd, content=prompt, timestamp=ts))
    for i in range(turns):
        a = f"{session}-a{i}"
        call = f"{session}-call{i}"
        ts = f"2026-11-{day:02d}T10:{(i + 1) % 60:02d}:00.000Z"
        lines.append(
            claude_line(
                "assistant",
                a,
                session,
                parent=prev,
                cwd=cwd,
                timestamp=ts,
                content=[
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"pytest -k t{i}"}}
                ],
            )
        )
        r = f"{session}-r{i}"
        body = output + ("x" * pad)
        lines.append(
            claude_line(
                "user",
                r,
                session,
                parent=a,
                cwd=cwd,
                timestamp=ts,
                content=[{"type": "tool_result", "tool_use_id": call, "content": body, "is_error": False}],
                extra={"toolUseResult": {"stdout": body, "stderr": "", "interrupted": False}},
            )
        )
        prev = r
    lines.append(
        claude_line(
            "assistant", f"{session}-end", session, parent=prev, cwd=cwd, content="done", timestamp=ts
        )
    )
    return lines


def write_claude_session(projects: Path, session: str, **kw: Any) -> Path:
    cwd = kw.get("cwd", "/tmp/project")
    folder = projects / cwd.replace("/", "-").replace(".", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_bytes(b"".join(claude_session_lines(session, **kw)))
    return path


def codex_lines(thread: str, *, cwd: str = "/tmp/project", prompt: str = "run the tests") -> list[bytes]:
    ts = "2026-11-30T10:00:00.000Z"

    def line(kind: str, payload: dict[str, Any]) -> bytes:
        return json.dumps({"timestamp": ts, "type": kind, "payload": payload}).encode() + b"\n"

    return [
        line(
            "session_meta",
            {
                "id": thread,
                "timestamp": ts,
                "cwd": cwd,
                "originator": "codex_cli_rs",
                "cli_version": "0.171.0",
                "source": "cli",
                "model_provider": "openai",
                "git": {"commit_hash": "0" * 40, "branch": "main"},
            },
        ),
        line(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
        ),
        line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"pytest"}',
                "call_id": "c1",
            },
        ),
        line(
            "response_item",
            {"type": "function_call_output", "call_id": "c1", "output": "Exit code: 1\n1 failed"},
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "one failure"}],
            },
        ),
    ]


def write_codex_session(codex_home: Path, thread: str, **kw: Any) -> Path:
    folder = codex_home / "sessions" / "2026" / "11" / "30"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-11-30T10-00-00-{thread}.jsonl"
    path.write_bytes(b"".join(codex_lines(thread, **kw)))
    return path


def new_id() -> str:
    return str(uuid.uuid4())


# Columns that describe content (not when or in which order a particular run stored it).
DUMP_QUERIES = {
    "sessions": "SELECT tool, session_id, project_path, git_branch, model, entrypoint, tool_version, title, "
    "started_at, ended_at, repo_commit, is_automation, is_replay, drop_reason, has_user_turn, turn_count, "
    "tool_call_count, redaction_count, skipped_json, signals_json FROM sessions ORDER BY tool, session_id",
    "turns": "SELECT s.session_id, t.key, t.role, t.text, t.timestamp, t.parent_key, t.is_meta, t.model, "
    "t.input_tokens, t.output_tokens FROM turns t JOIN sessions s ON s.id = t.session_pk ORDER BY 1, 2",
    "tool_calls": "SELECT s.session_id, c.key, c.turn_key, c.name, c.input_summary, c.timestamp, "
    "c.exit_code, c.is_error, c.output_excerpt FROM tool_calls c JOIN sessions s ON s.id = c.session_pk "
    "ORDER BY 1, 2",
    "ingest_files": 'SELECT path, tool, size, "offset", in_long_line, state_json, lines, records, '
    "skipped_json FROM ingest_files ORDER BY path",
}


def dump(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {name: conn.execute(sql).fetchall() for name, sql in DUMP_QUERIES.items()}
    finally:
        conn.close()


def query(db_path: Path, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
    if not db_path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    except sqlite3.OperationalError:
        return []
    try:
        return conn.execute(sql, list(args)).fetchall()
    except sqlite3.OperationalError:
        return []  # not migrated yet
    finally:
        conn.close()


def wait_for(pred: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def start_daemon(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = open(log, "ab")  # noqa: SIM115 - the child owns it
    return subprocess.Popen(
        [sys.executable, "-m", "skillopt_daemon.service.daemon"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=str(PROJECT_ROOT),
    )


def cli(
    env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`skillopt ARGS` as its own process (`testkit.cli.run`), from the project's folder."""
    return harness_cli.run(*args, env=env, input=stdin, timeout=timeout, cwd=PROJECT_ROOT)


def files_under(root: Path) -> list[Path]:
    out: list[Path] = []
    for folder, _dirs, names in os.walk(root):
        out.extend(Path(folder) / n for n in names)
    return out


class Crash(BaseException):
    """Not an Exception: the pipeline must not catch it, as it could not catch SIGKILL."""


def empty_store(pipeline: Any) -> None:
    """Every session and file forgotten, by the store and by the pipeline's caches: as before the first run."""
    with pipeline.db.conn:
        for table in ("turns", "tool_calls", "file_sessions", "ingest_files", "sessions", "ingest_errors"):
            pipeline.db.execute(f"DELETE FROM {table}")
    pipeline.writer.forget()
    pipeline._seen.clear()


def dump_clean(db_path: Path, pipeline: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The store after an uninterrupted ingest, then emptied again for the run under test."""
    pipeline.ingest_paths(pipeline.discover())
    clean = dump(db_path)
    empty_store(pipeline)
    return clean


@contextlib.contextmanager
def crash_at_finish(n: int) -> Iterator[None]:
    """Inside, the writer dies (`Crash`) as it finishes its `n`-th batch, like a process killed in the
    middle of a transaction: nothing after that point runs. The real writer is back on the way out."""
    import pytest

    from skillopt_daemon.ingest.writer import RecordWriter

    real_finish = RecordWriter.finish
    calls = {"n": 0}

    def failing_finish(self: Any, batch: Any, file_id: Any = None) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            raise Crash
        real_finish(self, batch, file_id)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RecordWriter, "finish", failing_finish)
        yield

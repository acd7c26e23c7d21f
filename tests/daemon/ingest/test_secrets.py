"""Redaction at the door: after the daemon and the CLI have handled a transcript full of secrets, none of
them is in any file under SKILLOPT_HOME (database, WAL, logs, notes) or in anything the CLI printed."""

from __future__ import annotations

import json
import random

from ingest.sources.secrets_corpus import make_secrets
from testkit.ingest_helpers import claude_line, cli, files_under, query, start_daemon, wait_for

from .conftest import Env


def test_no_secret_is_stored_anywhere(env: Env) -> None:
    corpus = [(s.kind, s.text, s.secret) for s in make_secrets(random.randrange(1 << 30))]
    assert len({kind for kind, _, _ in corpus}) >= 20

    # Every secret three times: typed in a prompt, inside a tool call's input, and in the tool's output.
    lines = []
    prev = None
    for i, (kind, text, _secret) in enumerate(corpus):
        u, a, r = f"u{i}", f"a{i}", f"r{i}"
        lines.append(claude_line("user", u, "leaky", parent=prev, content=f"use this for {kind}: {text}"))
        call = f"call{i}"
        lines.append(
            claude_line(
                "assistant",
                a,
                "leaky",
                parent=u,
                content=[
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"echo '{text}'"}}
                ],
            )
        )
        lines.append(
            claude_line(
                "user",
                r,
                "leaky",
                parent=a,
                content=[
                    {
                        "type": "tool_result",
                        "tool_use_id": call,
                        "content": f"ok\n{text}\n",
                        "is_error": False,
                    }
                ],
                extra={"toolUseResult": {"stdout": f"ok\n{text}\n", "stderr": "", "interrupted": False}},
            )
        )
        prev = r
    path = env.projects / "-tmp-leaky" / "leaky.jsonl"
    path.parent.mkdir(parents=True)
    half = len(lines) // 2
    path.write_bytes(b"".join(lines[:half]))

    proc = start_daemon(env.environ(), env.root / "daemon.log")
    try:
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM ingest_meta WHERE key = 'backfill_done_at'"), timeout=30
        )
        with open(path, "ab") as f:  # the rest arrives live
            f.write(b"".join(lines[half:]))
        wait_for(lambda: query(env.db, f"SELECT 1 FROM turns WHERE key = 'r{len(corpus) - 1}'"), timeout=10)
        note = {"session_id": "leaky", "transcript_path": str(path), "cwd": "/tmp/leaky", "reason": "other"}
        assert cli(env.environ(), "notify", "session-end", stdin=json.dumps(note)).returncode == 0
        printed = ""
        for args in (
            ["sessions", "list", "--json"],
            ["sessions", "show", "leaky", "--json", "--full"],
            ["status"],
        ):
            res = cli(env.environ(), *args)
            assert res.returncode == 0, res.stderr
            printed += res.stdout + res.stderr
        everything_on_disk = b"".join(p.read_bytes() for p in files_under(env.skillopt_home))  # DB still open
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0

    (count,) = query(env.db, "SELECT redaction_count FROM sessions WHERE session_id = 'leaky'")[0]
    assert count >= 3 * len(corpus)
    stored = json.dumps(
        query(env.db, "SELECT text FROM turns") + query(env.db, "SELECT output_excerpt FROM tool_calls")
    )
    assert "[REDACTED" in stored

    everything_on_disk += b"".join(p.read_bytes() for p in files_under(env.skillopt_home))  # after close
    leaked = [kind for kind, _, secret in corpus if secret.encode() in everything_on_disk]
    assert leaked == [], f"secrets found under SKILLOPT_HOME: {leaked}"
    shown = [kind for kind, _, secret in corpus if secret in printed]
    assert shown == [], f"secrets printed by the CLI: {shown}"

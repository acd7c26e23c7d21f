"""Generated Claude Code and Codex transcripts for the ingest benchmarks.

Sessions look like real ones in shape and size: a prompt, then assistant text and tool calls whose outputs
range from a line to several kilobytes (test runs, file reads, diffs). Text is drawn from a pool of
pre-built snippets so that generating hundreds of megabytes takes seconds, not minutes.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "fix test parser config module import error value return function class update refactor docs build "
    "cache retry timeout request response handler client server query index table column migrate schema "
    "token session user project branch commit merge review deploy release version logger metrics"
).split()

CODE = [
    "def handle(request):\n    return Response(status=200, body=render(request))\n",
    "for item in items:\n    if item.ready:\n        queue.put(item)\n",
    "class Store:\n    def __init__(self, path):\n        self.path = path\n",
    "import os\nimport sys\nfrom pathlib import Path\n",
    "    assert result == expected, f'{result!r} != {expected!r}'\n",
]


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _output(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    total = 0
    while total < size:
        if rng.random() < 0.5:
            piece = rng.choice(CODE)
        else:
            name = f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}"
            piece = f"{name} PASSED [{rng.randint(1, 99)}%]\n"
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


@dataclass
class Corpus:
    claude_home: Path
    codex_home: Path
    files: int = 0
    bytes: int = 0


def _claude_session(rng: random.Random, sid: str, cwd: str, target: int) -> bytes:
    out: list[str] = []
    size = 0
    prev = None
    t = 0

    def rec(kind: str, uid: str, parent: str | None, message: dict, extra: dict | None = None) -> str:
        nonlocal t
        t += 1
        r = {
            "type": kind,
            "uuid": uid,
            "parentUuid": parent,
            "isSidechain": False,
            "sessionId": sid,
            "cwd": cwd,
            "gitBranch": "main",
            "version": "2.1.197",
            "entrypoint": "cli",
            "userType": "external",
            "timestamp": f"2026-11-{1 + t // 80000 % 28:02d}T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:"
            f"{t % 60:02d}.000Z",
            "message": message,
        }
        if extra:
            r.update(extra)
        return json.dumps(r) + "\n"

    while size < target:
        u = str(uuid.UUID(int=rng.getrandbits(128)))
        line = rec("user", u, prev, {"role": "user", "content": f"please {_words(rng, rng.randint(5, 30))}"})
        out.append(line)
        size += len(line)
        prev = u
        for _ in range(rng.randint(1, 6)):
            a = str(uuid.UUID(int=rng.getrandbits(128)))
            call = f"toolu_{rng.getrandbits(64):016x}"
            msg = {
                "id": f"msg_{rng.getrandbits(64):016x}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": f"pytest -k {rng.choice(WORDS)}"},
                    }
                ],
                "usage": {"input_tokens": rng.randint(100, 5000), "output_tokens": rng.randint(10, 500)},
            }
            line = rec("assistant", a, prev, msg)
            body = _output(rng, int(rng.expovariate(1 / 1500)) + 50)
            r = str(uuid.UUID(int=rng.getrandbits(128)))
            result = rec(
                "user",
                r,
                a,
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call, "content": body, "is_error": False}
                    ],
                },
                {"toolUseResult": {"stdout": body, "stderr": "", "interrupted": False}},
            )
            out.append(line)
            out.append(result)
            size += len(line) + len(result)
            prev = r
        a = str(uuid.UUID(int=rng.getrandbits(128)))
        line = rec(
            "assistant",
            a,
            prev,
            {
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": _words(rng, 40)}],
            },
        )
        out.append(line)
        size += len(line)
        prev = a
    return "".join(out).encode()


def _codex_session(rng: random.Random, thread: str, cwd: str, target: int) -> bytes:
    out: list[str] = []
    size = 0

    def rec(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-11-30T10:00:00.000Z", "type": kind, "payload": payload}) + "\n"

    meta = rec(
        "session_meta",
        {
            "id": thread,
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.171.0",
            "source": "cli",
            "model_provider": "openai",
            "git": {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main"},
        },
    )
    out.append(meta)
    size += len(meta)
    n = 0
    while size < target:
        lines = [
            rec(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"please {_words(rng, 20)}"}],
                },
            ),
            rec("event_msg", {"type": "user_message", "message": "..."}),
        ]
        for _ in range(rng.randint(1, 5)):
            n += 1
            call = f"call_{n}"
            lines.append(
                rec(
                    "response_item",
                    {
                        "type": "function_call",
                        "name": "exec_command",
                        "arguments": json.dumps({"cmd": "pytest -q"}),
                        "call_id": call,
                    },
                )
            )
            body = _output(rng, int(rng.expovariate(1 / 1500)) + 50)
            lines.append(
                rec(
                    "response_item",
                    {"type": "function_call_output", "call_id": call, "output": f"Exit code: 0\n{body}"},
                )
            )
        lines.append(
            rec(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": _words(rng, 40)}],
                },
            )
        )
        out.extend(lines)
        size += sum(len(x) for x in lines)
    return "".join(out).encode()


def generate(root: Path, total_bytes: int, *, seed: int = 1, session_bytes: int = 400_000) -> Corpus:
    """About `total_bytes` of transcripts, 60% Claude Code and 40% Codex, sessions of ~`session_bytes`."""
    rng = random.Random(seed)
    corpus = Corpus(root / "claude", root / "codex")
    written = 0
    i = 0
    while written < total_bytes:
        size = int(rng.uniform(0.3, 1.7) * session_bytes)
        cwd = f"/home/dev/project-{i % 23}"
        if rng.random() < 0.6:
            sid = str(uuid.UUID(int=rng.getrandbits(128)))
            folder = corpus.claude_home / "projects" / cwd.replace("/", "-")
            folder.mkdir(parents=True, exist_ok=True)
            data = _claude_session(rng, sid, cwd, size)
            (folder / f"{sid}.jsonl").write_bytes(data)
        else:
            thread = str(uuid.UUID(int=rng.getrandbits(128)))
            folder = corpus.codex_home / "sessions" / "2026" / "11" / f"{1 + i % 28:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            data = _codex_session(rng, thread, cwd, size)
            (folder / f"rollout-2026-11-30T10-00-00-{thread}.jsonl").write_bytes(data)
        written += len(data)
        i += 1
    corpus.files = i
    corpus.bytes = written
    return corpus


def claude_line(sid: str, uid: str, parent: str | None, text: str, cwd: str = "/home/dev/project-0") -> bytes:
    """One more user line for an existing Claude Code session (append and latency benchmarks)."""
    return (
        json.dumps(
            {
                "type": "user",
                "uuid": uid,
                "parentUuid": parent,
                "isSidechain": False,
                "sessionId": sid,
                "cwd": cwd,
                "version": "2.1.197",
                "entrypoint": "cli",
                "timestamp": "2026-11-30T12:00:00.000Z",
                "message": {"role": "user", "content": text},
            }
        ).encode()
        + b"\n"
    )

"""Redaction at the door: secrets of every kind, planted in user prompts, tool inputs and tool outputs of
every tool's format, never leave a reader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from skillopt_daemon.core.config import IngestSettings, Settings
from skillopt_daemon.ingest.redact import Redactor, redact
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.base import BaseSource
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource
from skillopt_daemon.ingest.sources.codex import CodexSource
from skillopt_daemon.ingest.sources.copilot import CopilotSource
from skillopt_daemon.ingest.sources.copilot_vscode import CopilotVSCodeSource
from skillopt_daemon.ingest.sources.cursor import CursorSource
from skillopt_daemon.ingest.sources.devin import DevinSource
from skillopt_daemon.ingest.sources.openclaw import OpenClawSource
from skillopt_lib.errors import ConfigError
from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac

from .helpers import parsed
from .secrets_corpus import Secret, make_secrets

SECRETS = make_secrets()


def test_corpus_has_at_least_twenty_kinds() -> None:
    assert len({s.kind for s in SECRETS}) >= 20


@pytest.mark.parametrize("secret", SECRETS, ids=lambda s: s.kind)
def test_each_kind_is_redacted_in_plain_text(secret: Secret) -> None:
    text = f"please use this: {secret.text}\nthanks"
    out, n = redact(text)
    assert secret.secret not in out
    assert n >= 1 and "[REDACTED:" in out
    assert out.startswith("please use this: ") and out.endswith("thanks")


@pytest.mark.parametrize(
    "benign",
    [
        "max_tokens = 100000",
        "token = get_token()",
        'secret = os.environ["SECRET"]',
        "the task-management-system-overview",
        "a basic understanding of everything",
        "password: Optional[str] = None",
        "export API_KEY=$OPENAI_API_KEY",
        "see https://example.com/a?b=c",
        "git commit -m 'fix: tokenizer'",
        "def authenticate(user, password):",
    ],
)
def test_ordinary_code_is_left_alone(benign: str) -> None:
    assert redact(benign) == (benign, 0)


def test_a_label_before_the_key_does_not_hide_the_value() -> None:
    out, n = redact("notes for token-yaml: auth_token: Zq81mXw0PLkR5dTy7")
    assert "Zq81mXw0PLkR5dTy7" not in out and n >= 1


def test_redaction_is_idempotent_and_counts() -> None:
    text = " ".join(s.text for s in SECRETS)
    once, n = redact(text)
    assert n >= len(SECRETS)
    assert redact(once) == (once, 0)


def test_user_patterns_from_settings(tmp_path: Path) -> None:
    settings = Settings(ingest=IngestSettings(redact_patterns=[r"ACME-\d{6}"]))
    src = build_source(ClaudeCodeSource, tmp_path, settings, pin_repo=False)
    line = json.dumps(
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"content": "ticket ACME-123456"}}
    )
    (_, turn, *_) = src.parse_line(src.context(tmp_path / "s.jsonl"), line.encode())
    assert getattr(turn, "text", None) == "ticket [REDACTED:custom]"
    with pytest.raises(ConfigError) as err:
        Redactor(["(unclosed"])
    assert err.value.hint


# --------------------------------------------------------------------------- a corpus in every format
def claude_lines(p: str, i: str, o: str) -> list[dict]:
    base = {"sessionId": "s-claude", "cwd": "/w", "version": "2.1.197", "entrypoint": "cli"}
    return [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2026-11-01T00:00:00Z",
            "message": {"role": "user", "content": p},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "running"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": i}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "toolUseResult": {"stdout": o, "stderr": o, "interrupted": False},
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": o, "is_error": False}],
            },
        },
        {**base, "type": f"weird-{i}"},
    ]


def codex_lines(p: str, i: str, o: str) -> list[dict]:
    return [
        {
            "timestamp": "2026-11-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "s-codex", "cwd": "/w", "cli_version": "0.171.0"},
        },
        {
            "timestamp": "2026-11-01T00:00:01Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": p}]},
        },
        {
            "timestamp": "2026-11-01T00:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c1",
                "arguments": json.dumps({"cmd": i}),
            },
        },
        {
            "timestamp": "2026-11-01T00:00:03Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": f"Process exited with code 0\nOutput:\n{o}",
            },
        },
        {
            "timestamp": "2026-11-01T00:00:04Z",
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "call_id": "c2",
                "input": f"*** Begin Patch\n*** Add File: .env\n+{i}\n*** End Patch",
            },
        },
    ]


def copilot_lines(p: str, i: str, o: str) -> list[dict]:
    return [
        {
            "type": "session.start",
            "id": "e1",
            "timestamp": "2026-11-01T00:00:00Z",
            "data": {"sessionId": "s-copilot", "context": {"cwd": "/w"}},
        },
        {"type": "user.message", "id": "e2", "timestamp": "2026-11-01T00:00:01Z", "data": {"content": p}},
        {
            "type": "assistant.message",
            "id": "e3",
            "data": {
                "messageId": "m1",
                "content": "ok",
                "toolRequests": [{"toolCallId": "c1", "name": "bash", "arguments": {"command": i}}],
            },
        },
        {
            "type": "tool.execution_complete",
            "id": "e4",
            "data": {"toolCallId": "c1", "success": True, "result": {"content": o}},
        },
    ]


def cursor_lines(p: str, i: str, o: str) -> list[dict]:
    return [
        {"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>{p}</user_query>"}]}},
        {
            "role": "assistant",
            "message": {
                "content": [{"type": "tool_use", "id": "c1", "name": "Shell", "input": {"command": i}}]
            },
        },
        {
            "role": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "c1", "content": o}]},
        },
    ]


def openclaw_lines(p: str, i: str, o: str) -> list[dict]:
    return [
        {
            "type": "session",
            "version": 3,
            "id": "s-openclaw",
            "timestamp": "2026-11-01T00:00:00Z",
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "message": {"role": "user", "content": [{"type": "text", "text": p}]},
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": i}}],
            },
        },
        {
            "type": "message",
            "id": "m3",
            "parentId": "m2",
            "message": {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": o}]},
        },
    ]


def devin_doc(p: str, i: str, o: str) -> dict:
    return {
        "schema_version": "ATIF-v1.4",
        "session_id": "s-devin",
        "steps": [
            {"step_id": 1, "source": "user", "message": p},
            {
                "step_id": 2,
                "source": "agent",
                "message": "ok",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "exec", "arguments": {"command": i}}],
                "observation": {"results": [{"source_call_id": "c1", "content": o}]},
            },
        ],
    }


def vscode_ops(p: str, i: str, o: str) -> list[dict]:
    return [
        {"kind": 0, "v": {"sessionId": "s-vscode", "requests": []}},
        {
            "kind": 2,
            "k": ["requests"],
            "v": [
                {
                    "requestId": "r1",
                    "message": {"text": p},
                    "response": [
                        {"value": o},
                        {
                            "kind": "toolInvocationSerialized",
                            "toolId": "run",
                            "toolCallId": "c1",
                            "invocationMessage": {"value": i},
                            "pastTenseMessage": {"value": o},
                            "isComplete": True,
                        },
                    ],
                }
            ],
        },
    ]


Writer = Callable[[Path, str, str, str], Path]


def jsonl(make: Callable[[str, str, str], list[dict]], rel: str) -> Writer:
    def write(root: Path, p: str, i: str, o: str) -> Path:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(x) + "\n" for x in make(p, i, o)))
        return path

    return write


def devin_writer(root: Path, p: str, i: str, o: str) -> Path:
    path = root / "cli/transcripts/s-devin.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(devin_doc(p, i, o), indent=1))
    return path


FORMATS: list[tuple[type[BaseSource], Writer]] = [
    (ClaudeCodeSource, jsonl(claude_lines, "projects/-w/s-claude.jsonl")),
    (CodexSource, jsonl(codex_lines, "sessions/2026/11/01/rollout-2026-11-01T00-00-00-s-codex.jsonl")),
    (CopilotSource, jsonl(copilot_lines, "session-state/s-copilot/events.jsonl")),
    (CopilotVSCodeSource, jsonl(vscode_ops, "workspaceStorage/h/chatSessions/s-vscode.jsonl")),
    (CursorSource, jsonl(cursor_lines, "projects/w/agent-transcripts/s-cursor.jsonl")),
    (OpenClawSource, jsonl(openclaw_lines, "agents/main/sessions/s-openclaw.jsonl")),
    (DevinSource, devin_writer),
]


@pytest.mark.parametrize(("cls", "write"), FORMATS, ids=lambda v: getattr(v, "__name__", ""))
def test_no_secret_survives_any_reader(cls: type[BaseSource], write: Writer, tmp_path: Path) -> None:
    prompt = "Here are my credentials, set them up:\n" + "\n".join(s.text for s in SECRETS)
    tool_input = "cat > .env <<EOF\n" + "\n".join(s.text for s in SECRETS) + "\nEOF"
    tool_output = "env dump:\n" + "\n".join(f"VAR{n}={s.text}" for n, s in enumerate(SECRETS))
    path = write(tmp_path, prompt, tool_input, tool_output)
    src = build_source(cls, tmp_path, pin_repo=False)
    p = parsed(src, path)
    dump = p.dump()
    leaked = [s.kind for s in SECRETS if s.secret in dump]
    assert leaked == []
    # Each planted secret shows up as a marker, and the session reports how many were removed.
    assert dump.count("[REDACTED:") >= 2 * len(SECRETS)
    assert (p.info("redactions") or 0) >= 2 * len(SECRETS)
    assert p.turns and p.calls


def test_secrets_in_real_claude_and_codex_transcripts(tmp_path: Path) -> None:
    """The real CLIs write a prompt with secrets and a command that prints them; the readers drop them all."""
    from testkit.fixtures import require

    clis = ac.locate_agent_clis()
    require(clis.claude is not None and clis.codex is not None, clis.why_missing("claude/codex"))
    assert clis.claude is not None and clis.codex is not None
    leak_file = tmp_path / "project" / "secrets.txt"
    leak_file.parent.mkdir()
    leak_file.write_text("\n".join(s.text for s in SECRETS) + "\n")
    script = Script(
        rules=[
            Rule(
                name="show",
                match=Match(user="configure"),
                steps=[
                    Step(tool_calls=[bash(f"cat {leak_file}")]),
                    Step(text="Configured."),
                ],
            )
        ]
    )
    prompt = "configure the app with these:\n" + "\n".join(s.text for s in SECRETS)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        env = ac.claude_env(tmp_path / "home", server.url, trusted_dirs=[leak_file.parent])
        run = ac.run_claude(clis.claude, prompt, cwd=leak_file.parent, env=env)
        cenv = ac.codex_env(tmp_path / "home", server.base_url_openai, trusted_dirs=[leak_file.parent])
        crun = ac.run_codex(clis.codex, prompt, cwd=leak_file.parent, env=cenv)
    assert run.transcript is not None and crun.transcript is not None, run.describe() + crun.describe()
    raw = run.transcript.read_text() + crun.transcript.read_text()
    assert all(s.secret in raw or s.secret.replace("\n", "\\n") in raw for s in SECRETS[:3])  # really there
    for cls, path in ((ClaudeCodeSource, run.transcript), (CodexSource, crun.transcript)):
        p = parsed(build_source(cls, tmp_path / "home", pin_repo=False), path)
        assert [s.kind for s in SECRETS if s.secret in p.dump()] == []
        assert any("cat " in c.input_summary for c in p.calls)
        assert (p.info("redactions") or 0) >= 2 * len(SECRETS)


def test_trigger_anchored_scan_finds_what_a_full_scan_finds() -> None:
    """The fast path (patterns tried only at their triggers) must agree with applying every pattern in turn."""
    import random

    red = Redactor()
    rng = random.Random(11)
    seps = [" ", "\n", "\t", ", ", " key=", ": ", "\nexport TOKEN=", " https://x.io/a?sig=", "'", " Bearer "]
    for seed in range(60):
        items = [s.text for s in make_secrets(seed)] + [
            "plain words",
            "api_key = os.environ['K']",
            "task-list",
        ]
        rng.shuffle(items)
        text = "".join(rng.choice(seps) + item for item in items)
        present = {t for t in red._triggers if t in text.lower()}
        full = red._run(red._single, present, text)
        assert red._redact_at_triggers(text, text.lower()) == full

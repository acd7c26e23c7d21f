"""Signals derived from sessions: corrections, failed commands, test runs and their outcome, abrupt ends."""

from __future__ import annotations

import pytest

from skillopt_daemon.ingest.kinds import Kind, is_correction, message_kinds
from skillopt_daemon.ingest.signals import derive_signals, suite_framework, suite_outcome
from skillopt_daemon.ingest.sources.base import ToolCallRecord, ToolResultRecord, TurnRecord


def turn(key: str, role: str, text: str = "", meta: bool = False) -> TurnRecord:
    return TurnRecord("s", key, role, text, is_meta=meta)  # type: ignore[arg-type]


def call(key: str, turn_key: str, cmd: str, name: str = "Bash") -> ToolCallRecord:
    return ToolCallRecord("s", key, turn_key, name, cmd)


def result(key: str, code: int | None, out: str = "", is_error: bool | None = None) -> ToolResultRecord:
    return ToolResultRecord(
        "s", key, code, is_error if is_error is not None else (code not in (0, None)), out
    )


@pytest.mark.parametrize(
    "text",
    [
        "no, use pytest",
        "No. That's the wrong file",
        "that's wrong, the function is in utils.py",
        "don't touch the migrations",
        "Please don't add comments",
        "actually, keep the old name",
        "use uv instead",
        "it still fails",
        "you forgot the tests",
        "revert that change",
        "I said the staging branch",
        "the build didn't pass",
        "Rename it to foo rather than bar",
        "please no noqa comments, remove the unused imports instead",
        "pas de Any, écris les vrais types",
        "不要用 print，用 logging",
        "nein, neue Einträge gehören nach oben, nicht ans Ende",
        "niente noqa, sistema il codice",
        "sbagliato, la voce va in fondo",
    ],
)
def test_corrections_are_recognised(text: str) -> None:
    assert is_correction(text)


def test_a_rule_with_instead_is_a_correction_not_a_new_task() -> None:
    texts = ["fix the lint warnings in app/", "please no noqa comments, remove the unused imports instead"]
    assert [k for k, _ in message_kinds(texts)] == [Kind.TASK, Kind.CORRECTION]


def test_signals_count_the_corrections_mining_reads_in_every_language() -> None:
    """The dashboard's correction count and what the night learns from are the same messages."""
    from skillopt_daemon.night.mining.attempts import user_messages

    said = [
        "add type hints to app/dates.py",
        "pas de Any, écris les vrais types",
        "不要用 print，用 logging",
        "use pytest fixtures, não unittest",
        "nein, neue Einträge gehören nach oben, nicht ans Ende",
        "please no noqa comments, remove the unused imports instead",
        "no problem, thanks! next: add logging",
        "show me the diff",
    ]
    turns: list[TurnRecord] = []
    for i, text in enumerate(said):
        turns += [turn(f"u{i}", "user", text), turn(f"a{i}", "assistant", "done")]
    signalled = [c.text for c in derive_signals(turns).corrections]
    rows = [{"key": t.key, "role": t.role, "text": t.text, "is_meta": 0} for t in turns]
    mined = [m.text for m in user_messages(rows) if m.kind is Kind.CORRECTION]
    assert signalled == mined == said[1:6]


@pytest.mark.parametrize(
    "text",
    [
        "add a dark mode toggle",
        "now write the docs",
        "no problem, thanks! next: add logging",
        "great, commit it",
        "notify the user when the upload ends",
        "nothing else for now; deploy",
    ],
)
def test_ordinary_prompts_are_not_corrections(text: str) -> None:
    assert not is_correction(text)


@pytest.mark.parametrize(
    ("cmd", "framework"),
    [
        ("pytest -q tests/", "pytest"),
        ("cd app && python -m pytest -x", "pytest"),
        ("uv run pytest", "pytest"),
        ("npm test", "npm test"),
        ("pnpm run test -- --watch=false", "npm test"),
        ("npx vitest run", "npm test"),
        ("go test ./...", "go test"),
        ("cargo test --all", "cargo test"),
        ("make test", "make test"),
        ("./gradlew test", "gradle"),
        ("mvn -q test", "maven"),
        ("bundle exec rspec", "rspec"),
        ("ls -la", None),
        ("cat pytest.ini", None),
        ("git commit -m 'add tests'", None),
    ],
)
def test_test_commands(cmd: str, framework: str | None) -> None:
    assert suite_framework(cmd) == framework


def test_outcome_prefers_exit_code_then_output() -> None:
    assert suite_outcome(0, "1 failed") == "passed"
    assert suite_outcome(1, "") == "failed"
    assert suite_outcome(None, "===== 3 passed in 0.1s =====") == "passed"
    assert suite_outcome(None, "2 failed, 1 passed") == "failed"
    assert suite_outcome(None, "nothing to see") is None


def test_session_with_correction_failure_and_final_green_run() -> None:
    turns = [
        turn("u1", "user", "fix the failing test"),
        turn("a1", "assistant", "running tests"),
        turn("a2", "assistant", "done"),
        turn("u2", "user", "no, use pytest not unittest"),
        turn("a3", "assistant", ""),
        turn("a4", "assistant", "all green"),
    ]
    calls = [
        call("c1", "a1", "python -m unittest"),
        call("c2", "a1", "grep -r foo src"),
        call("c3", "a3", "pytest -q"),
    ]
    results = [
        result("c1", 1, "FAILED (failures=1)"),
        result("c2", 2, "No such file"),
        result("c3", 0, "3 passed"),
    ]
    sig = derive_signals(turns, calls, results)
    assert [c.turn_key for c in sig.corrections] == ["u2"]
    assert [(f.call_key, f.exit_code) for f in sig.failed_commands] == [("c1", 1), ("c2", 2)]
    assert [(r.framework, r.outcome) for r in sig.test_runs] == [("unittest", "failed"), ("pytest", "passed")]
    assert sig.final_test_outcome == "passed"
    assert sig.abrupt_end is None
    assert sig.as_dict()["correction_count"] == 1


def test_first_prompt_is_never_a_correction_and_meta_turns_are_ignored() -> None:
    turns = [
        turn("m", "user", "<environment_context>no, nothing</environment_context>", meta=True),
        turn("u1", "user", "no tests exist yet, please add some"),
        turn("a1", "assistant", "added"),
        turn("m2", "user", "Base directory for this skill: /x\n\nDon't do that", meta=True),
    ]
    sig = derive_signals(turns)
    assert sig.corrections == []
    assert sig.abrupt_end is None


@pytest.mark.parametrize(
    ("turns", "calls", "results", "why"),
    [
        (
            [turn("u1", "user", "go"), turn("a1", "assistant", "ok"), turn("u2", "user", "and then?")],
            [],
            [],
            "ended on a user turn",
        ),
        (
            [turn("u1", "user", "go"), turn("a1", "assistant", "")],
            [call("c1", "a1", "sleep 100")],
            [],
            "unfinished tool call",
        ),
        (
            [turn("u1", "user", "go"), turn("a1", "assistant", ""), turn("t1", "tool", "", meta=True)],
            [call("c1", "a1", "echo 1")],
            [result("c1", 0, "1")],
            "no answer after the last tool call",
        ),
        (
            [
                turn("u1", "user", "go"),
                turn("a1", "assistant", "hm"),
                turn("x", "user", "[Request interrupted by user]", meta=True),
            ],
            [],
            [],
            "interrupted",
        ),
        ([turn("u1", "user", "go"), turn("a1", "assistant", "done")], [], [], None),
    ],
)
def test_abrupt_ends(turns: list, calls: list, results: list, why: str | None) -> None:
    assert derive_signals(turns, calls, results).abrupt_end == why


def test_update_sessions_writes_signals_json_from_stored_rows() -> None:
    import json

    from skillopt_daemon.core import timeutil
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.ingest.signals import update_sessions

    db = open_db()
    now = timeutil.utcnow_iso()
    with db.conn:
        pk = (
            db["sessions"]
            .insert({"tool": "claude-code", "session_id": "s1", "first_seen_at": now, "updated_at": now})
            .last_pk
        )
        rows = [
            ("u1", "user", "fix it"),
            ("a1", "assistant", ""),
            ("a2", "assistant", "done"),
            ("u2", "user", "no, use pytest"),
        ]
        for seq, (key, role, text) in enumerate(rows):
            db["turns"].insert({"session_pk": pk, "key": key, "seq": seq, "role": role, "text": text})
        db["tool_calls"].insert(
            {
                "session_pk": pk,
                "key": "c1",
                "seq": 0,
                "turn_key": "a1",
                "name": "Bash",
                "input_summary": "pytest -q",
                "exit_code": 1,
                "is_error": 1,
                "output_excerpt": "1 failed",
                "result_at": now,
            }
        )
        update_sessions(db, [pk])
    stored = json.loads(db.execute("SELECT signals_json FROM sessions WHERE id = ?", [pk]).fetchone()[0])
    assert stored["correction_count"] == 1 and stored["corrections"][0]["text"] == "no, use pytest"
    assert stored["failed_commands"][0]["exit_code"] == 1
    assert stored["test_runs"] == [
        {"call_key": "c1", "command": "pytest -q", "framework": "pytest", "outcome": "failed"}
    ]
    assert stored["final_test_outcome"] == "failed"
    assert stored["abrupt_end"] == "ended on a user turn"

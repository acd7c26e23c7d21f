"""What a session says about how the work went, derived from its ordered turns, calls and results.

These signals are the cheapest honest evidence skillopt has: a user correcting the agent in the next prompt
("no, use pytest"; what counts as one is `kinds`, the night's mining reads messages with the same rules) is
a rubric item for that kind of task; the test command a user's session ended on is an
outcome check for replays; failed commands and abrupt ends mark attempts that went wrong. Everything here
is a pure function of the normalized records (the same dataclasses the sources emit), so the ingest
pipeline, the miner and tests can all call it without a database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from skillopt_daemon.ingest.kinds import Kind, message_kinds
from skillopt_daemon.ingest.sources.base import ToolCallRecord, ToolResultRecord, TurnRecord

if TYPE_CHECKING:
    import sqlite_utils

# Commands that run a test suite, with the framework named.
_TEST_COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
        ("pytest", r"(?:^|[\s;&|(/])(?:py\.test|pytest)(?=[\s;&|)]|$)|python\d?(?:\.\d+)?\s+-m\s+pytest\b"),
        ("unittest", r"python\d?(?:\.\d+)?\s+-m\s+unittest\b"),
        ("tox", r"(?:^|[\s;&|(])(?:tox|nox)\b"),
        ("npm test", r"\b(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?test\b|\bnpx\s+(?:jest|vitest|mocha)\b"),
        ("jest", r"(?:^|[\s;&|(/])(?:jest|vitest|mocha)\b"),
        ("deno test", r"\bdeno\s+test\b"),
        ("go test", r"\bgo\s+test\b"),
        ("cargo test", r"\bcargo\s+(?:test|nextest)\b"),
        ("make test", r"\bmake\s+(?:[\w-]+\s+)*(?:test|check|tests)\b"),
        ("maven", r"\bmvnw?\s+(?:[\w:-]+\s+)*(?:test|verify)\b"),
        ("gradle", r"\bgradlew?\s+(?:[\w:-]+\s+)*test\b"),
        ("dotnet test", r"\bdotnet\s+test\b"),
        ("rspec", r"\brspec\b|\brake\s+test\b|\brails\s+test\b"),
        ("phpunit", r"\bphpunit\b"),
        ("ctest", r"\bctest\b"),
        ("swift test", r"\bswift\s+test\b"),
        ("mix test", r"\bmix\s+test\b"),
    )
)
_FAILED_OUTPUT = re.compile(
    r"\b(?:\d+\s+failed|failed\b|FAIL\b|FAILED\b|failures?:\s*[1-9]|errors?:\s*[1-9]|test result: FAILED"
    r"|Tests:\s+\d+\s+failed|panicked|AssertionError|\d+\s+errors?\b)",
)
_PASSED_OUTPUT = re.compile(
    r"\b(?:\d+\s+passed|passed\b|PASS\b|ok\s+\S+|test result: ok|Tests:\s+\d+\s+passed|OK\b|All tests passed)"
)
_SHELL_TOOLS = frozenset(
    {
        "bash",
        "shell",
        "exec_command",
        "local_shell",
        "run_in_terminal",
        "runinterminal",
        "exec",
        "terminal",
        "copilot_runinterminal",
        "run_terminal_cmd",
        "execute_command",
        "command",
    }
)
_INTERRUPTED = ("[Request interrupted by user", "turn aborted")

Outcome = Literal["passed", "failed"]


@dataclass(frozen=True)
class Correction:
    turn_key: str
    text: str


@dataclass(frozen=True)
class FailedCommand:
    call_key: str
    tool: str
    command: str
    exit_code: int | None


@dataclass(frozen=True)
class SuiteRun:
    call_key: str
    command: str
    framework: str
    outcome: Outcome | None  # None: the run has no result (yet), or it says neither


@dataclass
class SessionSignals:
    corrections: list[Correction] = field(default_factory=list)
    failed_commands: list[FailedCommand] = field(default_factory=list)
    test_runs: list[SuiteRun] = field(default_factory=list)
    # The outcome of the last test run that has one: the session's best outcome check.
    final_test_outcome: Outcome | None = None
    # Why the session looks cut off, or None: "ended on a user turn", "unfinished tool call",
    # "no answer after the last tool call", "interrupted".
    abrupt_end: str | None = None

    def as_dict(self, limit: int = 20) -> dict[str, Any]:
        """JSON-ready form stored as the session's `signals_json` (lists capped at `limit` items each)."""
        return {
            "corrections": [{"turn_key": c.turn_key, "text": c.text} for c in self.corrections[:limit]],
            "failed_commands": [
                {"call_key": f.call_key, "tool": f.tool, "command": f.command, "exit_code": f.exit_code}
                for f in self.failed_commands[:limit]
            ],
            "test_runs": [
                {"call_key": r.call_key, "command": r.command, "framework": r.framework, "outcome": r.outcome}
                for r in self.test_runs[-limit:]
            ],
            "correction_count": len(self.corrections),
            "failed_command_count": len(self.failed_commands),
            "test_run_count": len(self.test_runs),
            "final_test_outcome": self.final_test_outcome,
            "abrupt_end": self.abrupt_end,
        }


def suite_framework(command: str) -> str | None:
    """The test framework a shell command runs, or None if it runs no tests."""
    for name, rx in _TEST_COMMANDS:
        if rx.search(command):
            return name
    return None


def suite_outcome(exit_code: int | None, output: str) -> Outcome | None:
    """Passed or failed: by exit code when there is one, else by what the output says (failures win)."""
    if exit_code is not None:
        return "passed" if exit_code == 0 else "failed"
    if _FAILED_OUTPUT.search(output):
        return "failed"
    if _PASSED_OUTPUT.search(output):
        return "passed"
    return None


def _is_shell(name: str) -> bool:
    return name.lower() in _SHELL_TOOLS


def derive_signals(
    turns: Sequence[TurnRecord],
    calls: Sequence[ToolCallRecord] = (),
    results: Sequence[ToolResultRecord] = (),
) -> SessionSignals:
    """Signals of one session; `turns` and `calls` in conversation order, results matched by call key."""
    sig = SessionSignals()
    by_call = {r.call_key: r for r in results}

    # Which user messages are corrections: the same reading, in the same context, as the night's mining.
    said = [t for t in turns if t.role == "user" and not t.is_meta and t.text.strip()]
    for turn, (kind, _) in zip(said, message_kinds(t.text.strip() for t in said), strict=True):
        if kind is Kind.CORRECTION:
            sig.corrections.append(Correction(turn.key, turn.text[:500]))

    for call in calls:
        res = by_call.get(call.key)
        failed = res is not None and (res.is_error is True or (res.exit_code not in (None, 0)))
        if failed and res is not None:
            sig.failed_commands.append(
                FailedCommand(call.key, call.name, call.input_summary[:500], res.exit_code)
            )
        framework = suite_framework(call.input_summary) if _is_shell(call.name) or call.name == "?" else None
        if framework:
            outcome = suite_outcome(res.exit_code, res.output_excerpt) if res is not None else None
            if res is not None and outcome is None and res.is_error is not None:
                outcome = "failed" if res.is_error else None
            sig.test_runs.append(SuiteRun(call.key, call.input_summary[:500], framework, outcome))
    for run in reversed(sig.test_runs):
        if run.outcome is not None:
            sig.final_test_outcome = run.outcome
            break

    sig.abrupt_end = _abrupt_end(turns, calls, by_call)
    return sig


def _abrupt_end(
    turns: Sequence[TurnRecord], calls: Sequence[ToolCallRecord], by_call: dict[str, ToolResultRecord]
) -> str | None:
    relevant = [t for t in turns if t.role in ("user", "assistant", "system")]
    if not relevant:
        return None
    last = relevant[-1]
    if any(marker in last.text[:200] for marker in _INTERRUPTED):
        return "interrupted"
    if last.role == "user" and not last.is_meta:
        return "ended on a user turn"
    if calls and calls[-1].key not in by_call:
        return "unfinished tool call"
    # A finished session ends with the agent's answer; one whose last assistant turn made a tool call was
    # stopped before it could answer (max turns, a crash, the user closing the window).
    last_assistant = next((t for t in reversed(relevant) if t.role == "assistant"), None)
    if last_assistant is not None and any(c.turn_key == last_assistant.key for c in calls):
        return "no answer after the last tool call"
    return None


# The columns the signals read, in the order `signals_json_of_rows` takes them.
TURN_COLUMNS = ("key", "role", "text", "is_meta")
CALL_COLUMNS = (
    "key",
    "turn_key",
    "name",
    "input_summary",
    "exit_code",
    "is_error",
    "output_excerpt",
    "result_at",
)


def signals_json_of_rows(turn_rows: Iterable[Sequence[Any]], call_rows: Iterable[Sequence[Any]]) -> str:
    """A session's `signals_json` from its stored rows: `TURN_COLUMNS` of its turns and `CALL_COLUMNS` of
    its tool calls, each in `seq` order. The one conversion from rows, for rows read back from the store
    and for the rows a batch is about to insert alike."""
    turns = [
        TurnRecord("", str(key), role, text or "", is_meta=bool(is_meta))
        for key, role, text, is_meta in turn_rows
        if role != "tool"  # results wrapped as turns: `derive_signals` reads them from the calls
    ]
    calls: list[ToolCallRecord] = []
    results: list[ToolResultRecord] = []
    for key, turn_key, name, summary, exit_code, is_error, excerpt, result_at in call_rows:
        key = str(key)
        calls.append(ToolCallRecord("", key, str(turn_key or ""), str(name or "?"), summary or ""))
        if result_at is not None or exit_code is not None or is_error is not None:
            err = None if is_error is None else bool(is_error)
            results.append(ToolResultRecord("", key, exit_code, err, excerpt or ""))
    return json.dumps(derive_signals(turns, calls, results).as_dict(), ensure_ascii=False)


def update_sessions(db: sqlite_utils.Database, session_pks: Sequence[int]) -> None:
    """Recompute `sessions.signals_json` from the stored turns and tool calls (in `seq` order).

    The ingest pipeline calls this inside the transaction that stored a batch, so the signals always
    describe exactly the committed rows.
    """
    for pk in session_pks:
        turn_rows = db.execute(
            f"SELECT {', '.join(TURN_COLUMNS)} FROM turns WHERE session_pk = ? ORDER BY seq, id", [pk]
        ).fetchall()
        call_rows = db.execute(
            f"SELECT {', '.join(CALL_COLUMNS)} FROM tool_calls WHERE session_pk = ? ORDER BY seq, id", [pk]
        ).fetchall()
        db.execute(
            "UPDATE sessions SET signals_json = ? WHERE id = ?",
            [signals_json_of_rows(turn_rows, call_rows), pk],
        )

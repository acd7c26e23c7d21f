"""Sessions into attempts: one attempt per task a person asked for, with everything that followed it.

Each user message gets a kind (`ingest/kinds.py`, or the model's label when there is one). A task starts an
attempt; follow-ups, questions and acknowledgements stay with it; a correction is kept verbatim as a
rubric item of its attempt. The commands the agent ran (with their exit codes) tell whether the attempt
succeeded: checks first, then the person's reaction.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from skillopt_daemon.core.timeutil import parse_iso
from skillopt_daemon.ingest.kinds import Kind, is_ack, message_kinds
from skillopt_daemon.night.mining.labels import Label, Request

_TEST_CMD = re.compile(
    r"(?:^|[\s;&|(])(?:python3?\s+-m\s+)?(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|ctest|"
    r"phpunit|mix\s+test|go\s+(?:test|build|vet)|cargo\s+(?:test|build|check|clippy)|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:test|build|lint|check|typecheck)|make(?:\s+(?:test|check|build|all|[\w-]*lint))?"
    r"(?:\s|$)|mvn\s+(?:test|verify|package)|gradle\w*\s+(?:test|build|check)|ruff\s+check|mypy|tsc|eslint|"
    r"dotnet\s+(?:test|build)|swift\s+(?:test|build)|bazel\s+(?:test|build)|"
    # a project's own check scripts: python3 check_report.py, ./scripts/test.sh, bash verify.sh
    r"(?:python3?\s+|bash\s+|sh\s+|node\s+|\./)\S*(?:test|check|verify|lint|validate)\S*)",
    re.IGNORECASE,
)


@lru_cache(maxsize=65536)
def _is_check(command: str) -> bool:
    """Whether a command runs tests or a build. The first line only: a heredoc that writes a test file
    mentions pytest without running it. Cached: mining asks it of every run of every attempt, many times."""
    lines = command.strip().splitlines()
    return bool(lines) and bool(_TEST_CMD.search(lines[0]))


@dataclass
class CommandRun:
    command: str
    exit_code: int | None = None
    is_error: bool | None = None
    output: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as `dataclasses.asdict` gives them, without its deep copy (every task row holds some)."""
        return dict(vars(self))

    @property
    def failed(self) -> bool:
        return bool(self.is_error) or (self.exit_code is not None and self.exit_code != 0)

    @property
    def is_check(self) -> bool:
        return _is_check(self.command)


@dataclass
class Message:
    """One user message as mining understood it (shown by `skillopt tasks mine --explain`)."""

    turn_key: str
    text: str
    kind: str
    why: str
    source: str  # model | cache | lexical


@dataclass
class Attempt:
    """One task a person asked for and the agent's work on it, until the next task."""

    key: str
    tool: str
    session_id: str
    prompt: str
    session_pk: int | None = None
    turn_key: str = ""
    project_path: str | None = None
    repo_commit: str | None = None
    repo_dirty: bool | None = None
    repo_diff_hash: str | None = None
    started_at: str | None = None
    commands: list[CommandRun] = field(default_factory=list)
    corrections: list[str] = field(default_factory=list)
    accepted: bool | None = None
    abrupt_end: bool = False
    skills_used: list[str] = field(default_factory=list)
    # How many commands had run when each correction arrived: a correction after the last check means the
    # user was not satisfied even though the checks passed.
    correction_points: list[int] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    # From the model's label of the request, when there is one.
    intent: str = ""
    work: str = ""
    rules: list[str] = field(default_factory=list)
    one_off: bool = False
    # What the agent spent on it, which a replay of it is capped by (`night/learning/replay_caps.py`).
    tool_calls: int = 0
    """Every tool call the agent made for it (commands, edits, reads, skills), follow-ups included."""
    work_s: float | None = None
    """Seconds the agent worked on it: from each of the user's messages to the agent's last step before the
    next one, summed, so the user's own pauses do not count. None when the transcript has no timestamps."""

    @property
    def rubric(self) -> list[str]:
        """The person's corrections, verbatim (already redacted at ingest): what a good attempt respects."""
        return list(self.corrections)

    @property
    def final_checks(self) -> dict[str, CommandRun]:
        """The last run of each test/build command, in order of first appearance."""
        out: dict[str, CommandRun] = {}
        for run in self.commands:
            if run.is_check:
                out[run.command.strip()] = run
        return out

    @property
    def unresolved_errors(self) -> list[str]:
        last: dict[str, CommandRun] = {}
        for run in self.commands:
            last[run.command.strip()] = run
        return [cmd for cmd, run in last.items() if run.failed]

    @property
    def outcome(self) -> str:
        """success / failure / unknown, from outcomes first: checks, then the user's reaction."""
        checks = self.final_checks
        if checks and all(not run.failed for run in checks.values()) and not self.corrections_after_checks:
            return "success"
        if checks and any(run.failed for run in checks.values()):
            return "failure"
        if self.accepted:
            return "success"
        if self.corrections or self.abrupt_end:
            return "failure"
        return "unknown"

    @property
    def corrections_after_checks(self) -> bool:
        last_check = max((i for i, run in enumerate(self.commands) if run.is_check), default=-1)
        return any(point > last_check for point in self.correction_points)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["outcome"] = self.outcome
        return d


def is_acceptance(text: str) -> bool:
    return is_ack(text)


def rubric_item(correction: str) -> str:
    """Turn "no, use pytest instead" into "use pytest instead": the rule the user wanted followed."""
    text = correction.strip().splitlines()[0] if correction.strip() else ""
    # Only a leading "no," that stands alone: "no noqa, fix the code" keeps its "no".
    text = re.sub(r"^\s*(?:no|nope|wrong|actually|stop)\s*[,.!:;-]+\s*", "", text, flags=re.IGNORECASE)
    return text.strip().rstrip(".!") or correction.strip()


# ---------------------------------------------------------------------------------------------- messages


@dataclass
class UserMessage:
    """A user message with its lexical reading and the request a model would be shown."""

    turn: dict[str, Any]
    text: str
    request: Request
    kind: Kind
    why: str


def user_messages(turns: Sequence[dict[str, Any]]) -> list[UserMessage]:
    """The session's user messages with their lexical kinds; each one's context is the task it follows."""
    kept: list[tuple[dict[str, Any], str]] = []
    for turn in turns:
        if turn["role"] != "user" or turn.get("is_meta"):
            continue
        text = (turn.get("text") or "").strip()
        if text:
            kept.append((turn, text))
    out: list[UserMessage] = []
    task = ""
    for (turn, text), (kind, why) in zip(kept, message_kinds(t for _, t in kept), strict=True):
        out.append(UserMessage(turn, text, Request(text, task), kind, why))
        if kind is Kind.TASK:
            task = text
    return out


def _reading(
    msg: UserMessage, labels: Mapping[str, Label], has_task: bool
) -> tuple[Kind, str, str, Label | None]:
    """The kind to act on: the model's label when there is one, else the lexical kind."""
    label = labels.get(msg.request.hash)
    if label is None:
        return msg.kind, msg.why, "lexical", None
    kind = Kind(label.kind)
    why = f"the model: {label.intent}" if label.intent else "the model's label"
    if kind in (Kind.FOLLOWUP, Kind.CORRECTION, Kind.ACK, Kind.QUESTION) and not has_task:
        kind, why = Kind.TASK, "the first request of the session"
    return kind, why, label.source, label


# ---------------------------------------------------------------------------------------------- segmenting


def segment(
    session: dict[str, Any],
    turns: Sequence[dict[str, Any]],
    calls: Sequence[dict[str, Any]],
    labels: Mapping[str, Label] | None = None,
    *,
    messages: Sequence[UserMessage] | None = None,
) -> list[Attempt]:
    """Split one session into attempts. `turns` and `calls` are rows of the store's tables, in seq order;
    `labels` are model labels by request hash (missing ones take the lexical path); `messages` are
    `user_messages(turns)` when the caller has already read them."""
    calls_by_turn: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in calls:
        calls_by_turn[str(c.get("turn_key") or "")].append(c)
    readings = {id(m.turn): m for m in (user_messages(turns) if messages is None else messages)}
    attempts: list[Attempt] = []
    current: Attempt | None = None
    last_role = ""
    pending_calls = 0
    clock = _WorkClock()
    for turn in turns:
        if turn.get("is_meta"):
            continue
        msg = readings.get(id(turn))
        if msg is not None:
            last_role = "user"
            clock.close(current)
            current = _on_user_message(session, msg, labels or {}, current, attempts)
            clock.open(turn.get("timestamp"))
        elif turn["role"] == "assistant" and current is not None:
            last_role = "assistant" if (turn.get("text") or "").strip() else last_role
            turn_calls = calls_by_turn.get(turn["key"], [])
            current.tool_calls += len(turn_calls)
            clock.seen([turn.get("timestamp")])
            clock.seen(c.get(k) for c in turn_calls for k in ("timestamp", "result_at"))
            pending_calls = _on_calls(current, turn_calls, pending_calls)
    clock.close(current)
    if current is not None:
        signals = _loads(session.get("signals_json"))
        abrupt = bool(signals.get("abrupt_end")) if isinstance(signals, dict) else False
        current.abrupt_end = abrupt or last_role == "user" or pending_calls > 0
    return attempts


class _WorkClock:
    """How long the agent worked after each user message: from the message to the agent's last step (a reply,
    a tool call or its result) before the next message, credited to the attempt the message belonged to."""

    def __init__(self) -> None:
        self.start: datetime | None = None
        self.last: datetime | None = None

    @staticmethod
    def _when(value: Any) -> datetime | None:
        if not isinstance(value, str) or not value:
            return None
        try:
            return parse_iso(value)[0]
        except ValueError:
            return None

    def open(self, timestamp: Any) -> None:
        self.start = self._when(timestamp)
        self.last = None

    def seen(self, timestamps: Iterable[Any]) -> None:
        for value in timestamps:
            when = self._when(value)
            if when is not None and (self.last is None or when > self.last):
                self.last = when

    def close(self, attempt: Attempt | None) -> None:
        if attempt is not None and self.start is not None and self.last is not None:
            span = max(0.0, (self.last - self.start).total_seconds())
            attempt.work_s = (attempt.work_s or 0.0) + span
        self.start = self.last = None


def _on_user_message(
    session: dict[str, Any],
    msg: UserMessage,
    labels: Mapping[str, Label],
    current: Attempt | None,
    attempts: list[Attempt],
) -> Attempt | None:
    kind, why, source, label = _reading(msg, labels, current is not None)
    note = Message(str(msg.turn["key"]), msg.text, kind.value, why, source)
    if kind is Kind.META:
        if current is not None:
            current.messages.append(note)
        return current
    if kind is Kind.TASK or current is None:
        current = _new_attempt(session, msg, label)
        attempts.append(current)
    elif kind is Kind.ACK:
        current.accepted = True
    elif kind is Kind.CORRECTION:
        current.corrections.append(msg.text)
        current.correction_points.append(len(current.commands))
        current.accepted = False
        if label is not None:
            current.rules.extend(r for r in label.rules if r not in current.rules)
    current.messages.append(note)
    return current


def _new_attempt(session: dict[str, Any], msg: UserMessage, label: Label | None) -> Attempt:
    turn = msg.turn
    return Attempt(
        key=f"{session['tool']}:{session['session_id']}:{turn['key']}",
        tool=session["tool"],
        session_id=session["session_id"],
        session_pk=session.get("id"),
        turn_key=turn["key"],
        prompt=msg.text,
        project_path=session.get("project_path"),
        repo_commit=session.get("repo_commit"),
        repo_dirty=bool(session["repo_dirty"]) if session.get("repo_dirty") is not None else None,
        repo_diff_hash=session.get("repo_diff_hash"),
        started_at=turn.get("timestamp") or session.get("started_at"),
        intent=label.intent if label else "",
        work=label.work if label else "",
        one_off=label.one_off if label else False,
    )


def _on_calls(current: Attempt, calls: Sequence[dict[str, Any]], pending: int) -> int:
    """Record the agent's tool calls on the attempt; returns how many calls are still without a result."""
    for c in calls:
        name = str(c.get("name") or "")
        summary = str(c.get("input_summary") or "")
        if name.lower() == "skill":
            skill = _skill_from_input(summary)
            if skill:
                current.skills_used.append(skill)
            continue
        if _is_shell_tool(name):
            current.commands.append(
                CommandRun(
                    command=_command_from_input(summary),
                    exit_code=c.get("exit_code"),
                    is_error=bool(c["is_error"]) if c.get("is_error") is not None else None,
                    output=str(c.get("output_excerpt") or "")[:2000],
                )
            )
        if c.get("result_at") is None and c.get("exit_code") is None and c.get("is_error") is None:
            pending += 1
        else:
            pending = 0
    return pending


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return {}
    return value or {}


_SHELL_TOOLS = {
    "bash",
    "shell",
    "exec_command",
    "local_shell",
    "run_terminal_cmd",
    "terminal",
    "execute",
    "run",
}


def _is_shell_tool(name: str) -> bool:
    n = name.lower()
    return n in _SHELL_TOOLS or n.endswith(".bash") or n.startswith("shell") or n == "exec"


def _command_from_input(summary: str) -> str:
    """Input summaries are JSON-ish ({"command": ...}, {"cmd": ...}) or the command itself."""
    text = summary.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for k in ("command", "cmd", "script"):
                v = data.get(k)
                if isinstance(v, list):
                    v = " ".join(str(p) for p in v)
                if isinstance(v, str) and v:
                    return _strip_shell_wrapper(v)
        m = re.search(r'"(?:command|cmd)"\s*:\s*"((?:[^"\\]|\\.)*)', text)
        if m:
            return _strip_shell_wrapper(m.group(1).encode().decode("unicode_escape", "ignore"))
    return _strip_shell_wrapper(text)


def _strip_shell_wrapper(cmd: str) -> str:
    m = re.match(r"^(?:/bin/)?(?:ba)?sh\s+-l?c\s+(['\"])(.*)\1\s*$", cmd.strip(), re.DOTALL)
    return m.group(2) if m else cmd.strip()


def _skill_from_input(summary: str) -> str | None:
    try:
        data = json.loads(summary)
        if isinstance(data, dict) and isinstance(data.get("skill"), str):
            return str(data["skill"]).split(":")[-1]
    except ValueError:
        pass
    m = re.search(r'"?skill"?\s*[:=]\s*"?([\w:.-]+)', summary)
    return m.group(1).split(":")[-1] if m else None

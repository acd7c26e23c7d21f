"""What running an agent on a task is, whatever the agent: the exec protocol, its limits and its results.

Chat backends answer one prompt; exec backends run the user's own coding agent (Claude Code, Codex, Copilot,
Cursor) headless in a sandboxed workspace and report what it did. These types sit below both the backends
that implement the protocol (`skillopt_lib.backends`) and the sandbox that drives them (`skillopt_lib.sandbox`),
so neither needs the other to know what a run is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SkillBundle
from skillopt_lib.usage import Usage

# Variables that name a replay to the tools' own hooks and to skillopt's ingest (which drops such sessions).
REPLAY_ENV = "SKILLOPT_REPLAY"
# A single stream line longer than this is cut: nobody needs a 50 MB tool result to judge a replay.
MAX_LINE_BYTES = 1_000_000
EXCERPT_CHARS = 2000


class ExecStatus(str, Enum):
    """How a replay ended. Only `ok` counts as the agent finishing; the rest say why it did not."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    MAX_TURNS = "max_turns"
    PERMISSION_DENIED = "permission_denied"
    CRASHED = "crashed"


class ArgvWrapper(Protocol):
    """Something that runs a command differently (in a network namespace): the command line to start."""

    def wrap(self, argv: Sequence[str]) -> list[str]: ...


@dataclass(frozen=True)
class ExecLimits:
    """What one run may use. `None` for tools means the backend's configured default set."""

    max_turns: int | None = 30
    timeout_s: float = 600.0
    model: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    denied_tools: tuple[str, ...] = ()
    permission_mode: str | None = None
    max_output_bytes: int = 5_000_000
    # Runs the CLI confined (`skillopt_lib.netjail.Jail`: its `wrap(argv)` gives the command to start); the
    # sandbox sets it for each replay.
    confine: ArgvWrapper | None = field(default=None, compare=False, repr=False)

    def with_(self, **changes: Any) -> ExecLimits:
        return replace(self, **changes)


@dataclass
class ToolCallRecord:
    """One tool the agent used, as the CLI reported it. `exit_code` is set for shell commands."""

    name: str
    input: Any = None
    exit_code: int | None = None
    is_error: bool = False
    denied: bool = False
    output: str = ""
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "input": self.input,
            "exit_code": self.exit_code,
            "is_error": self.is_error,
            "denied": self.denied,
            "output": self.output,
        }


@dataclass
class CheckResult:
    """A task's check command run in the workspace after the agent finished."""

    command: str
    exit_code: int | None
    output: str = ""
    duration_s: float = 0.0
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 3),
            "output": self.output,
        }


@dataclass
class ExecResult:
    """Everything observed about one run. The sandbox fills `diff`, `files_changed`, `checks`, `workspace`."""

    status: ExecStatus
    tool: str = ""
    final_message: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    diff: str = ""
    files_changed: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_reported: bool = False
    duration_s: float = 0.0
    exit_code: int | None = None
    error: str | None = None
    stderr: str = ""
    session_id: str | None = None
    num_turns: int | None = None
    checks: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    workspace: str | None = None
    output_truncated: bool = False
    malformed_lines: int = 0
    # Hosts the run tried to reach besides its model endpoint and was refused (`skillopt_lib.netjail`).
    network_blocked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status is ExecStatus.OK

    @property
    def finished(self) -> bool:
        """The agent ran to its end: `ok`, or ok but for tool calls it was refused (a tool the replay does not
        allow, such as a bundled skill). Its work is scored either way; the refusal is recorded."""
        return self.status in (ExecStatus.OK, ExecStatus.PERMISSION_DENIED)

    @property
    def checks_passed(self) -> bool | None:
        """True when every check passed, None when the task had none."""
        if not self.checks:
            return None
        return all(c.passed for c in self.checks)

    @property
    def failed_tool_calls(self) -> list[ToolCallRecord]:
        return [t for t in self.tool_calls if t.is_error or t.denied or (t.exit_code not in (None, 0))]

    def to_dict(self, *, with_events: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status.value,
            "tool": self.tool,
            "final_message": self.final_message,
            "tool_calls": [t.to_dict() for t in self.tool_calls],
            "files_changed": self.files_changed,
            "diff": self.diff,
            "usage": self.usage.to_dict(),
            "cost_reported": self.cost_reported,
            "duration_s": round(self.duration_s, 3),
            "exit_code": self.exit_code,
            "error": self.error,
            "session_id": self.session_id,
            "num_turns": self.num_turns,
            "checks": [c.to_dict() for c in self.checks],
            "checks_passed": self.checks_passed,
            "warnings": self.warnings,
            "workspace": self.workspace,
            "output_truncated": self.output_truncated,
            "malformed_lines": self.malformed_lines,
            "network_blocked": self.network_blocked,
        }
        if with_events:
            out["events"] = self.events
        return out


@runtime_checkable
class ExecBackend(Protocol):
    """An agent CLI (Claude Code, Codex, Copilot, Cursor) that works on a task in a prepared workspace.

    The agent of exec environments and of the nightly replays. The sandbox (`skillopt_lib.sandbox.replay`)
    calls, in order: `preflight` (once per replay; cheap after the first call), `install_skill`,
    `prepare_home`, then `run`. Most CLIs subclass `CliExecBackend`, which implements all of it around
    `build_argv`, `prepare_home` and `interpret`.

    Thread safety: one instance serves every concurrent replay of a run. Methods must not keep per-run state
    on the instance; everything a run needs arrives as arguments (its own workspace, home and environment).
    """

    name: str
    """The backend's registered name ("claude-code", "codex", ...)."""

    tool: AgentTool
    """Which agent tool this drives; its row in `skillopt_lib.agents.TOOLS` gives executables, skill folders
    and tested versions."""

    limits: ExecLimits
    """The limits a `run` without its own `limits` uses."""

    def preflight(self) -> list[str]:
        """Check the CLI can be started, before any workspace is made.

        Returns:
            Warnings to show the user once (an untested CLI version; see `version_warning`); empty when
            there are none. The result is cached, so calling it before every run costs nothing.

        Raises:
            ExternalToolError: the CLI is not installed or not executable, with a hint naming how to install
                it or the setting that points at it. Never raises for anything else.
        """
        ...

    def install_skill(self, workspace: Path, skill: SkillBundle) -> Path:
        """Write `skill`'s files where the tool reads project skills inside `workspace`.

        Parameters:
            workspace: the throwaway replay workspace (never the user's project).
            skill: the candidate skill; its `name` names the folder.

        Returns:
            The folder the skill was written to. Same-named copies the tool would also read are removed
            from the workspace first, so nothing shadows the candidate.

        Raises:
            OSError only when the workspace cannot be written (the sandbox reports it as a broken replay).
        """
        ...

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        """Make `home` an isolated config home for the tool, carrying only the user's credentials.

        Parameters:
            home: an empty private folder the sandbox made for this run.
            workspace: the run's workspace, for tools whose config names the project folder.

        Returns:
            The variables to add to the run's scrubbed environment (e.g. `CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
            provider keys found in the caller's environment). Keys are copied, never written to logs.

        Raises:
            Nothing for missing credentials (the run then fails with the tool's own message, reported in its
            result); OSError only when `home` cannot be written.
        """
        ...

    def run(
        self, prompt: str, *, cwd: Path, env: Mapping[str, str], limits: ExecLimits | None = None
    ) -> ExecResult:
        """Run the CLI headless on `prompt` in `cwd` and report what it did.

        Parameters:
            prompt: the task as the user would type it.
            cwd: the workspace (the skill already installed).
            env: the complete environment of the process (the sandbox's scrubbed allowlist plus
                `prepare_home`'s variables); the backend adds nothing from its own process.
            limits: turns, wall time, model, tools, permission mode and output bytes for this run; None
                means `self.limits`.

        Returns:
            An `ExecResult`. Every agent failure is a result, not an exception: a crash, a time-out (the whole
            process group is killed), too many turns, a denied permission or unreadable output each set the
            matching `ExecStatus` with the reason in `error`. `usage` holds the tokens and cost the CLI
            reported (`cost_reported` says whether it reported a cost); the sandbox fills `diff`,
            `files_changed` and `checks` afterwards.

        Raises:
            ExternalToolError: only when the CLI cannot be started at all.
        """
        ...


@runtime_checkable
class AgentCli(ExecBackend, Protocol):
    """An exec backend around a CLI on this machine: what a night asks of the agent it replays with, besides
    running it. `CliExecBackend` implements both; `status` and the night's model choice call them before any
    replay, so a missing or signed-out CLI is said up front rather than at the first run."""

    def executable(self) -> str:
        """The CLI's path, resolved once. Raises ExternalToolError (with how to install it) when missing."""
        ...

    def login(self) -> str | None:
        """Where the CLI's sign-in was found, read from files only; None when there is none ("unknown" when
        the tool cannot tell)."""
        ...

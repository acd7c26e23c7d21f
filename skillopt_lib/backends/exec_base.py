"""The exec backend protocol: a real agent CLI working on a task in a workspace, observed from outside.

Chat backends answer one prompt; exec backends run the user's own coding agent (Claude Code, Codex, Copilot,
Cursor) headless in a sandboxed workspace and report what it did. The sandbox (`skillopt_lib.sandbox`) owns the
workspace, the environment and the checks; a backend owns what differs between tools: the command line, the
isolated config home, where project skills live, and how to read the tool's event stream.

The subprocess runner lives here because every backend needs the same guarantees: the whole process group
dies on a time-out (agents spawn shells that spawn servers), output is bounded (a runaway `cat` must not
exhaust memory), and the final `result` line survives truncation because it carries the outcome.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from packaging.version import InvalidVersion, Version

from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.backends.base import Usage
from skillopt_lib.errors import ExternalToolError
from skillopt_lib.skill import SkillBundle

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

    @property
    def ok(self) -> bool:
        return self.status is ExecStatus.OK

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


# --------------------------------------------------------------------------------------------------
# Running a CLI
# --------------------------------------------------------------------------------------------------


@dataclass
class ProcessOutcome:
    returncode: int | None
    lines: list[str]
    stderr: str
    duration_s: float
    timed_out: bool = False
    stopped: str | None = None
    truncated: bool = False


class _BoundedLines:
    """Keep the first and the last lines of a stream within a byte budget; the middle is dropped.

    The head shows how the run started, the tail how it ended (Claude's `result`, Codex's `turn.completed`).
    """

    def __init__(self, budget: int) -> None:
        self.head_budget = budget // 2
        self.tail_budget = budget - self.head_budget
        self.head: list[str] = []
        self.head_bytes = 0
        self.tail: deque[str] = deque()
        self.tail_bytes = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        size = len(line.encode("utf-8", "replace"))
        if not self.tail and self.head_bytes + size <= self.head_budget:
            self.head.append(line)
            self.head_bytes += size
            return
        self.tail.append(line)
        self.tail_bytes += size
        while self.tail_bytes > self.tail_budget and len(self.tail) > 1:
            gone = self.tail.popleft()
            self.tail_bytes -= len(gone.encode("utf-8", "replace"))
            self.dropped += 1
        if self.tail_bytes > self.tail_budget:  # one line bigger than the whole tail budget
            only = self.tail.pop()
            cut = only.encode("utf-8", "replace")[: max(self.tail_budget, 0)].decode("utf-8", "ignore")
            self.tail.append(cut)
            self.tail_bytes = len(cut.encode("utf-8"))
            self.dropped += 1

    def lines(self) -> list[str]:
        return [*self.head, *self.tail]


def _read_lines(stream: IO[bytes], sink: Callable[[str, bool], None]) -> None:
    """Read complete lines; a line longer than MAX_LINE_BYTES is cut and flagged as truncated."""
    partial = b""
    while True:
        chunk = stream.readline(MAX_LINE_BYTES)
        if not chunk:
            break
        if chunk.endswith(b"\n"):
            if partial:
                sink(partial.decode("utf-8", "replace"), True)
                partial = b""
            else:
                sink(chunk.decode("utf-8", "replace").rstrip("\r\n"), False)
        elif not partial:
            partial = chunk  # keep the first MAX_LINE_BYTES of an overlong line, drop the rest
    if partial:
        sink(partial.decode("utf-8", "replace"), True)


def _read_tail(stream: IO[bytes], keep: int, out: list[bytes]) -> None:
    buf = bytearray()
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 2 * keep:
            del buf[: len(buf) - keep]
    out.append(bytes(buf[-keep:]))


def kill_group(proc: subprocess.Popen[bytes], grace_s: float = 2.0) -> None:
    """Terminate the process group (agent, its shells and anything they started), then kill it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace_s)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure nothing else of the group survives.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(
    argv: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int = 5_000_000,
    stop_when: Callable[[str], str | None] | None = None,
    stderr_keep: int = 64_000,
    merge_stderr: bool = False,
) -> ProcessOutcome:
    """Run a program in its own session and collect its stdout lines within a byte budget.

    `stop_when(line)` may return a reason to stop the program early (a limit the CLI cannot enforce itself);
    the process group is then killed and the reason reported in `stopped`.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
    )
    bounded = _BoundedLines(max_output_bytes)
    state: dict[str, Any] = {"stopped": None, "cut_lines": 0}
    lock = threading.Lock()

    def sink(line: str, cut: bool) -> None:
        with lock:
            bounded.add(line)
            if cut:
                state["cut_lines"] += 1
            if stop_when is not None and state["stopped"] is None:
                reason = stop_when(line)
                if reason:
                    state["stopped"] = reason
                    try:
                        os.killpg(proc.pid, signal.SIGTERM)
                    except (ProcessLookupError, PermissionError):
                        pass

    assert proc.stdout is not None
    err_parts: list[bytes] = []
    threads = [threading.Thread(target=_read_lines, args=(proc.stdout, sink), daemon=True)]
    if proc.stderr is not None:
        threads.append(
            threading.Thread(target=_read_tail, args=(proc.stderr, stderr_keep, err_parts), daemon=True)
        )
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        kill_group(proc, grace_s=0.5)
        raise
    # Whatever the ending, nothing the agent started may outlive the run.
    kill_group(proc, grace_s=2.0 if timed_out else 0.5)
    for t in threads:
        t.join(timeout=5)
    for pipe in (proc.stdout, proc.stderr):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass
    return ProcessOutcome(
        returncode=proc.returncode,
        lines=bounded.lines(),
        stderr=(err_parts[0] if err_parts else b"").decode("utf-8", "replace"),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        stopped=state["stopped"] if not timed_out else None,
        truncated=bounded.dropped > 0 or state["cut_lines"] > 0,
    )


def parse_json_lines(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """JSON objects of a stream, and how many non-empty lines were not JSON objects (garbled or cut)."""
    events: list[dict[str, Any]] = []
    bad = 0
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            events.append(value)
        else:
            bad += 1
    return events, bad


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else {} (event fields are not trusted to have their shape)."""
    return value if isinstance(value, dict) else {}


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The end of a long text (errors and test failures are usually printed last)."""
    if len(text) <= limit:
        return text
    return "…" + text[-limit:]


# --------------------------------------------------------------------------------------------------
# Finding the CLI and checking its version
# --------------------------------------------------------------------------------------------------

# A release number ("2.1.197") with an optional pre-release tag ("-alpha.3", "rc1").
_RELEASE = r"\d+(?:\.\d+)+"
_VERSION_RE = re.compile(rf"({_RELEASE})(?:[-.]?[A-Za-z]+[.\d]*)?")
_version_cache: dict[str, str | None] = {}
_version_lock = threading.Lock()


def parse_version(text: str) -> Version | None:
    """The first version number in a CLI's `--version` output ("2.1.197 (Claude Code)"); None when there is
    none. A tag `packaging` cannot read is dropped, keeping the release number."""
    for m in _VERSION_RE.finditer(text):
        for candidate in (m.group(0).rstrip("."), m.group(1)):
            try:
                return Version(candidate)
            except InvalidVersion:
                continue
    return None


def find_cli(
    tool: AgentTool, names: Sequence[str], configured: str | None = None, path: str | None = None
) -> str:
    """The CLI's executable: the configured path or name, else the first of `names` on PATH."""
    candidates = [configured] if configured else list(names)
    for cand in candidates:
        if os.sep in cand or cand.startswith("."):
            p = Path(cand).expanduser()
            if p.is_file() and os.access(p, os.X_OK):
                return str(p.resolve())
            continue
        found = shutil.which(cand, path=path)
        if found:
            return found
    shown = configured or " or ".join(names)
    raise ExternalToolError(
        f"the {tool.value} CLI ({shown}) was not found",
        hint=f"install it ({spec(tool).install_hint}), or set tools.{tool.value}.cli to its path",
    )


def cli_version(exe: str, env: Mapping[str, str] | None = None) -> str | None:
    """`<exe> --version`, cached per executable; None when it cannot be read."""
    with _version_lock:
        if exe in _version_cache:
            return _version_cache[exe]
    try:
        proc = subprocess.run(
            [exe, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
        )
        text = (proc.stdout or "") + (proc.stderr or "")
        v = parse_version(text)
        found = str(v) if v else None
    except (OSError, subprocess.SubprocessError):
        found = None
    with _version_lock:
        _version_cache[exe] = found
    return found


def version_warning(tool: AgentTool, version: str | None, tested: tuple[str, str]) -> str | None:
    """A warning when the installed CLI is outside the range skillopt was tested with (formats change)."""
    if version is None:
        return f"could not read the {tool.value} CLI version; skillopt was tested with {tested[0]} to {tested[1]}"  # noqa: E501
    v, lo, hi = parse_version(version), parse_version(tested[0]), parse_version(tested[1])
    if v is None or lo is None or hi is None:
        return None
    if v < lo or v > hi:
        side = "older" if v < lo else "newer"
        return (
            f"{tool.value} CLI {version} is {side} than the versions skillopt was tested with "
            f"({tested[0]} to {tested[1]}); its output format may differ"
        )
    return None


def default_user_tool_home(tool: AgentTool) -> Path:
    """The user's own config home of a tool (used only to copy credentials from)."""
    row = spec(tool)
    if row.home_env and os.environ.get(row.home_env):
        return Path(os.environ[row.home_env]).expanduser()
    return Path(os.environ.get("HOME") or Path.home()) / row.home_default


def copy_private(src: Path, dst: Path) -> bool:
    """Copy a credentials file readable only by the user; False when there is none."""
    if not src.is_file():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(src.read_bytes())
    os.chmod(dst, 0o600)
    return True


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, 0o600)


# --------------------------------------------------------------------------------------------------
# The shared part of every CLI backend
# --------------------------------------------------------------------------------------------------


class CliExecBackend:
    """Common behaviour of the CLI backends: locating the executable, installing skills, running.

    Subclasses set `tool` and `credential_env` and implement `build_argv`, `prepare_home` and `interpret`;
    the executables and tested versions come from the tool's row in `agents.TOOLS`.
    """

    name: str = ""
    tool: AgentTool = AgentTool.CLAUDE_CODE
    # Provider credentials and endpoints passed through to the CLI when set in the caller's environment.
    credential_env: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        cli: str | None = None,
        limits: ExecLimits | None = None,
        user_home: str | Path | None = None,
        base_env: Mapping[str, str] | None = None,
        check_version: bool = True,
    ) -> None:
        """`cli`: executable path or name; `user_home`: the user's own config home for this tool (credentials
        are copied from it); `base_env`: where provider credentials are read from (default: os.environ)."""
        self.cli = cli
        self.limits = limits or ExecLimits()
        self.user_home = Path(user_home).expanduser() if user_home else default_user_tool_home(self.tool)
        self.base_env = dict(base_env) if base_env is not None else None
        self.check_version = check_version
        self._exe: str | None = None
        self._warnings: list[str] | None = None

    # -- the executable
    def executable(self) -> str:
        """Resolve the CLI once; raises ExternalToolError naming the npm package when it is missing."""
        if self._exe is None:
            self._exe = find_cli(
                self.tool, spec(self.tool).executables, self.cli, path=self._env().get("PATH")
            )
        return self._exe

    def preflight(self) -> list[str]:
        """Locate the CLI and return warnings (an untested version) to show before the first run."""
        exe = self.executable()
        if self._warnings is None:
            self._warnings = []
            tested = spec(self.tool).tested_versions
            if self.check_version and tested is not None:
                w = version_warning(self.tool, cli_version(exe), tested)
                if w:
                    self._warnings.append(w)
        return list(self._warnings)

    def _env(self) -> Mapping[str, str]:
        return self.base_env if self.base_env is not None else os.environ

    def credentials(self) -> dict[str, str]:
        """The provider variables this tool needs, taken from the caller's environment (never stored)."""
        src = self._env()
        return {k: src[k] for k in self.credential_env if src.get(k)}

    # -- skills
    def skill_dir(self, workspace: Path, skill_name: str) -> Path:
        return workspace / spec(self.tool).project_skill_dirs[0] / skill_name

    def install_skill(self, workspace: Path, skill: SkillBundle) -> Path:
        """Write the candidate where the tool reads project skills, removing same-named copies the tool would
        also read (in this throwaway workspace only), so nothing shadows the candidate."""
        name = skill.name or "skill"
        for rel in spec(self.tool).project_skill_dirs:
            other = workspace / rel / name
            if other.exists() or other.is_symlink():
                if other.is_dir() and not other.is_symlink():
                    shutil.rmtree(other)
                else:
                    other.unlink()
        target = self.skill_dir(workspace, name)
        target.mkdir(parents=True, exist_ok=True)
        for rel_path, data in skill.files.items():
            dest = target / rel_path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            if rel_path.startswith("scripts/"):
                os.chmod(dest, 0o755)
        return target

    # -- running
    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        raise NotImplementedError

    def build_argv(self, exe: str, prompt: str, limits: ExecLimits, cwd: Path) -> list[str]:
        raise NotImplementedError

    def stop_when(self, limits: ExecLimits) -> Callable[[str], str | None] | None:
        """A watcher for limits the CLI cannot enforce itself (None when it can)."""
        return None

    def interpret(self, outcome: ProcessOutcome, limits: ExecLimits) -> ExecResult:
        raise NotImplementedError

    def run(
        self, prompt: str, *, cwd: Path, env: Mapping[str, str], limits: ExecLimits | None = None
    ) -> ExecResult:
        limits = limits or self.limits
        warnings = self.preflight()
        exe = self.executable()
        argv = self.build_argv(exe, prompt, limits, cwd)
        try:
            outcome = run_process(
                argv,
                cwd=cwd,
                env=env,
                timeout_s=limits.timeout_s,
                max_output_bytes=limits.max_output_bytes,
                stop_when=self.stop_when(limits),
            )
        except OSError as exc:
            raise ExternalToolError(
                f"could not start the {self.tool.value} CLI {exe}: {exc.strerror or exc}",
                hint=f"check the installation ({spec(self.tool).install_hint})",
            ) from None
        result = self.interpret(outcome, limits)
        result.tool = self.tool.value
        result.duration_s = outcome.duration_s
        result.exit_code = outcome.returncode
        result.stderr = excerpt(outcome.stderr)
        result.output_truncated = outcome.truncated
        result.warnings = [*warnings, *result.warnings]
        if outcome.truncated:
            result.warnings.append(
                f"the CLI printed more than {limits.max_output_bytes} bytes; the middle was dropped"
            )
        if result.malformed_lines:
            result.warnings.append(
                f"{result.malformed_lines} output line(s) were not valid JSON and were skipped"
            )
        if outcome.timed_out:
            result.status = ExecStatus.TIMEOUT
            result.error = f"stopped after the {limits.timeout_s:g} s time limit"
        elif outcome.stopped:
            result.status = ExecStatus.MAX_TURNS
            result.error = outcome.stopped
        return result


def crashed_or_error(outcome: ProcessOutcome, what: str) -> tuple[ExecStatus, str]:
    """Status when the stream had no final record: killed by a signal or a non-zero exit is a crash."""
    rc = outcome.returncode
    tail = excerpt(outcome.stderr.strip(), 400)
    if rc is not None and rc < 0:
        return ExecStatus.CRASHED, f"the CLI was killed by signal {-rc} before {what}"
    if rc not in (0, None):
        return ExecStatus.CRASHED, f"the CLI exited with code {rc} before {what}" + (
            f": {tail}" if tail else ""
        )
    return ExecStatus.ERROR, f"the CLI output ended before {what} (truncated or malformed stream)"


def create_from_config(cls: type[CliExecBackend], cfg: Any, context: Mapping[str, Any]) -> CliExecBackend:
    """Build an exec backend from a `BackendConfig` (`skillopt_lib.backends.create_backend`).

    `cfg.model` picks the agent's model; `cfg.options` holds the rest: `cli` (executable), `home` (the
    user's config home of the tool, to copy credentials from), `max_turns`, `timeout_s` (default 600, not
    the chat timeout), `allowed_tools`, `denied_tools`, `permission_mode`, `max_output_bytes`, and any
    keyword the backend class accepts (`sandbox` for Codex, ...).
    """
    opts = dict(getattr(cfg, "options", {}) or {})
    limit_keys = {
        "max_turns",
        "timeout_s",
        "allowed_tools",
        "denied_tools",
        "permission_mode",
        "max_output_bytes",
    }
    limits = ExecLimits(
        max_turns=opts.get("max_turns", 30),
        timeout_s=float(opts.get("timeout_s", 600.0)),
        model=getattr(cfg, "model", None) or None,
        allowed_tools=tuple(opts["allowed_tools"]) if opts.get("allowed_tools") is not None else None,
        denied_tools=tuple(opts.get("denied_tools") or ()),
        permission_mode=opts.get("permission_mode"),
        max_output_bytes=int(opts.get("max_output_bytes", 5_000_000)),
    )
    extra = {k: v for k, v in opts.items() if k not in limit_keys and k not in ("cli", "home")}
    return cls(cli=opts.get("cli"), user_home=opts.get("home"), limits=limits, **extra)

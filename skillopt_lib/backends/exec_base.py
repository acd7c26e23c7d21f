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

import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.errors import ExternalToolError
from skillopt_lib.execution import ExecLimits, ExecResult, ExecStatus
from skillopt_lib.fsio import write_private
from skillopt_lib.process import ProcessOutcome, excerpt, run_process
from skillopt_lib.skill import SkillBundle

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
    return spec(tool).default_home(os.environ, Path(os.environ.get("HOME") or Path.home()))


def copy_private(src: Path, dst: Path) -> bool:
    """Copy a credentials file readable only by the user; False when there is none."""
    if not src.is_file():
        return False
    write_private(dst, src.read_bytes())
    return True


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

    def login(self) -> str | None:
        """Where this CLI's sign-in is found, read from files and the environment without running the CLI
        (a check cheap enough for `skillopt status`), or None when none is. A tool that cannot tell says
        "unknown" rather than None, so nothing is refused on a guess."""
        return "unknown"

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
        if limits.confine is not None:
            argv = limits.confine.wrap(argv)
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


def turn_cap(limits: ExecLimits, is_turn: Callable[[str], bool]) -> Callable[[str], str | None] | None:
    """A `stop_when` watcher for a CLI with no turn limit of its own: counts the output lines `is_turn` says
    start a tool call and stops the run past `limits.max_turns`; None when no cap is set."""
    if not limits.max_turns:
        return None
    cap = limits.max_turns
    count = [0]

    def watch(line: str) -> str | None:
        if is_turn(line):
            count[0] += 1
            if count[0] > cap:
                return f"stopped at the limit of {cap} turns (tool calls)"
        return None

    return watch


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

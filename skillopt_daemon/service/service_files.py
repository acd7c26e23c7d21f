"""How the daemon is started outside a terminal: its command, its log file, and the user service files
(a systemd unit on Linux, a launchd agent on macOS) that start it at login.

The files are written, never enabled: enabling a service changes what runs at every login, so the user
runs the command `install_service` returns. They carry SKILLOPT_HOME and the agent tools' home variables of
the shell that wrote them, so the service reads the same folders the user's commands do, and that shell's
PATH (without skillopt's own virtual environment) plus the folder of every agent CLI it resolves: systemd
--user and launchd start services with a bare PATH, where a `claude` in `~/.local/bin`, under nvm or in
`/opt/homebrew/bin` would not be found. They never carry a model key: the service reads the keys stored
with `skillopt keys set`, and `install_service` warns about a key the service will not have.
"""

from __future__ import annotations

import os
import plistlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.config import Settings, load_settings, tool_home
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.backends.exec_base import find_cli
from skillopt_lib.errors import DaemonError, SkillOptError
from skillopt_lib.process import user_path

SERVICE_NAME = "skillopt"
LAUNCHD_LABEL = "dev.skillopt.daemon"


def daemon_log_file() -> Path:
    return paths.log_dir() / "daemon.log"


def service_command() -> list[str]:
    return [sys.executable, "-m", "skillopt_daemon.service.daemon"]


def systemd_unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(paths.user_home() / ".config")
    return Path(base) / "systemd" / "user" / f"{SERVICE_NAME}.service"


def launchd_plist_path() -> Path:
    return paths.user_home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


@dataclass
class AgentCLIs:
    """The agent CLIs as the shell writing the service file resolves them, and the ones it cannot find."""

    found: dict[str, str] = field(default_factory=dict)  # tool -> absolute path of its CLI
    warnings: list[str] = field(default_factory=list)


def agent_clis(settings: Settings | None = None) -> AgentCLIs:
    """Resolve each enabled tool's CLI (its configured path, else PATH). A tool whose home folder exists but
    whose CLI is not found gets a warning: the service could not replay its sessions either."""
    try:
        settings = settings or load_settings()
    except SkillOptError:
        settings = Settings()
    out = AgentCLIs()
    for tool in AgentTool:
        conf = settings.tool(tool)
        if not conf.enabled:
            continue
        try:
            out.found[tool.value] = find_cli(tool, spec(tool).executables, conf.cli)
        except SkillOptError:
            try:
                used = tool_home(tool).is_dir()
            except SkillOptError:
                used = False
            if used or conf.cli:
                out.warnings.append(
                    f"the {tool.value} CLI ({conf.cli or spec(tool).executable}) was not found: the service "
                    f"will not find it either; install it, or set its path with "
                    f"`skillopt config set tools.{tool.value}.cli PATH` and run install-service again"
                )
    return out


def service_path(clis: AgentCLIs) -> str:
    """This shell's PATH without skillopt's own virtual environment (the service starts skillopt by its
    interpreter's full path, and replays must find the user's toolchain, not skillopt's Python), followed
    by the folder of each resolved CLI that is not on it."""
    parts = [p for p in user_path(os.environ.get("PATH", os.defpath)).split(os.pathsep) if p]
    for exe in clis.found.values():
        folder = str(Path(exe).parent)
        if folder not in parts:
            parts.append(folder)
    return os.pathsep.join(parts)


def _service_env(clis: AgentCLIs | None = None) -> dict[str, str]:
    env = {"PATH": service_path(clis or agent_clis())}
    for key in ("SKILLOPT_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "OPENCLAW_STATE_DIR"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def systemd_unit(clis: AgentCLIs | None = None) -> str:
    env_lines = "".join(f'Environment="{k}={v}"\n' for k, v in sorted(_service_env(clis).items()))
    command = " ".join(_systemd_quote(a) for a in service_command())
    return (
        "[Unit]\n"
        "Description=skillopt daemon: ingests agent session logs and runs the nightly skill training\n"
        "After=default.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"ExecStart={command}\n"
        f"{env_lines}"
        "Restart=on-failure\n"
        "RestartSec=10\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=60\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )


def _systemd_quote(arg: str) -> str:
    return f'"{arg}"' if any(c.isspace() for c in arg) else arg


def launchd_plist(clis: AgentCLIs | None = None) -> bytes:
    logfile = str(daemon_log_file())
    data: dict[str, Any] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": service_command(),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": logfile,
        "StandardErrorPath": logfile,
        "ProcessType": "Background",
    }
    data["EnvironmentVariables"] = _service_env(clis)
    return plistlib.dumps(data)


@dataclass
class ServiceFile:
    path: Path
    kind: str  # systemd | launchd
    enable_hint: str
    clis: AgentCLIs = field(default_factory=AgentCLIs)
    key_warnings: list[str] = field(default_factory=list)


def key_warnings(settings: Settings | None = None) -> list[str]:
    """The night's optimizer and judge keys a service will not have: the service file carries no key, so a
    key only exported in this shell is as missing as one set nowhere (`skillopt keys set` stores it)."""
    from skillopt_daemon.night.agents import role_keys

    try:
        settings = settings or load_settings()
        return [w for k in role_keys(settings) if (w := k.problem(service=True)) is not None]
    except SkillOptError as exc:
        return [exc.message]


def install_service(platform: str | None = None) -> ServiceFile:
    """Write (never enable) the user service file for this platform; returns where and how to enable it,
    the agent CLIs the service will find (with a warning for each it will not), and a warning for each
    model key it will not have."""
    platform = platform or ("macos" if sys.platform == "darwin" else "linux")
    clis = agent_clis()
    keys_missing = key_warnings()
    if platform == "linux":
        path = systemd_unit_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fsio.atomic_write(path, systemd_unit(clis).encode())
        return ServiceFile(
            path,
            "systemd",
            f"systemctl --user daemon-reload && systemctl --user enable --now {SERVICE_NAME}.service",
            clis,
            keys_missing,
        )
    if platform == "macos":
        path = launchd_plist_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fsio.atomic_write(path, launchd_plist(clis))
        return ServiceFile(path, "launchd", f"launchctl bootstrap gui/$(id -u) {path}", clis, keys_missing)
    raise DaemonError(
        f"no service file for platform {platform!r}", hint="use --platform linux or --platform macos"
    )

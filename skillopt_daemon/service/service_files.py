"""How the daemon is started outside a terminal: its command, its log file, and the user service files
(a systemd unit on Linux, a launchd agent on macOS) that start it at login.

The files are written, never enabled: enabling a service changes what runs at every login, so the user
runs the command `install_service` returns. They carry SKILLOPT_HOME and the agent tools' home variables of
the shell that wrote them, so the service reads the same folders the user's commands do.
"""

from __future__ import annotations

import os
import plistlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.core import fsio, paths
from skillopt_lib.errors import DaemonError

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


def _service_env() -> dict[str, str]:
    env = {}
    for key in ("SKILLOPT_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "OPENCLAW_STATE_DIR"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def systemd_unit() -> str:
    env_lines = "".join(f'Environment="{k}={v}"\n' for k, v in sorted(_service_env().items()))
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


def launchd_plist() -> bytes:
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
    env = _service_env()
    if env:
        data["EnvironmentVariables"] = env
    return plistlib.dumps(data)


@dataclass
class ServiceFile:
    path: Path
    kind: str  # systemd | launchd
    enable_hint: str


def install_service(platform: str | None = None) -> ServiceFile:
    """Write (never enable) the user service file for this platform; returns where and how to enable it."""
    platform = platform or ("macos" if sys.platform == "darwin" else "linux")
    if platform == "linux":
        path = systemd_unit_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fsio.atomic_write(path, systemd_unit().encode())
        return ServiceFile(
            path,
            "systemd",
            f"systemctl --user daemon-reload && systemctl --user enable --now {SERVICE_NAME}.service",
        )
    if platform == "macos":
        path = launchd_plist_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fsio.atomic_write(path, launchd_plist())
        return ServiceFile(path, "launchd", f"launchctl bootstrap gui/$(id -u) {path}")
    raise DaemonError(
        f"no service file for platform {platform!r}", hint="use --platform linux or --platform macos"
    )

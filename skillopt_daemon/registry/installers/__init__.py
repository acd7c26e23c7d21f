"""Installers by agent tool. To add a tool, add one line to INSTALLERS naming its installer class.

Classes are imported only when asked for, so one tool's broken or missing module never stops another's.
"""

from __future__ import annotations

import importlib

from skillopt_daemon.registry.installers.base import (
    FolderInstaller,
    Installer,
    InstallPlan,
    InstallTarget,
    Location,
    atomic_write,
    scan_folder,
)
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import NotFoundError

INSTALLERS: dict[AgentTool, str] = {
    AgentTool.CLAUDE_CODE: "skillopt_daemon.registry.installers.claude_code:ClaudeCodeInstaller",
    AgentTool.CODEX: "skillopt_daemon.registry.installers.codex:CodexInstaller",
    AgentTool.COPILOT: "skillopt_daemon.registry.installers.copilot:CopilotInstaller",
    AgentTool.CURSOR: "skillopt_daemon.registry.installers.cursor:CursorInstaller",
    AgentTool.DEVIN: "skillopt_daemon.registry.installers.devin:DevinInstaller",
    AgentTool.OPENCLAW: "skillopt_daemon.registry.installers.openclaw:OpenClawInstaller",
}


def has_installer(tool: AgentTool) -> bool:
    return tool in INSTALLERS


def get_installer(tool: AgentTool) -> Installer:
    spec = INSTALLERS.get(tool)
    if spec is None:
        known = ", ".join(t.value for t in INSTALLERS)
        raise NotFoundError(
            f"skillopt cannot install skills for {tool.value} yet",
            hint=f"tools with an installer: {known}",
        )
    module, _, cls = spec.partition(":")
    installer: Installer = getattr(importlib.import_module(module), cls)()
    return installer


__all__ = [
    "INSTALLERS",
    "FolderInstaller",
    "InstallPlan",
    "InstallTarget",
    "Installer",
    "Location",
    "atomic_write",
    "get_installer",
    "has_installer",
    "scan_folder",
]

"""Installers by agent tool: what each tool's row in `agents.TOOLS` names (`installer`).

A module is imported only when its tool is asked for, so one tool's broken module never stops another's;
its installer is the `FolderInstaller` subclass whose `tool` is that tool (a built-in row names a module of
this package, a plugin's row names `"module:Class"`).
"""

from __future__ import annotations

import importlib
from collections.abc import Collection
from pathlib import Path

from skillopt_daemon.registry.installers.base import (
    FolderInstaller,
    Installer,
    InstallPlan,
    InstallTarget,
    Location,
    check_inside,
    check_writable,
    scan_folder,
)
from skillopt_lib import plugins
from skillopt_lib.agents import TOOLS, AgentTool
from skillopt_lib.errors import NotFoundError

# Every tool skillopt can install skills for: every loaded tool (iterate it, or ask `tool in INSTALLERS`).
INSTALLERS: Collection[AgentTool] = TOOLS.keys()


def has_installer(tool: AgentTool) -> bool:
    return tool in INSTALLERS


def get_installer(tool: AgentTool, *, instruction_projects: Collection[Path] = ()) -> Installer:
    """A fresh installer for `tool`; NotFoundError when skillopt has none for it.

    `instruction_projects`: projects whose integration asked for instruction files instead of skill folders
    (see `Registry.installer`, which knows them).
    """
    if tool not in INSTALLERS:
        known = ", ".join(t.value for t in INSTALLERS)
        raise NotFoundError(
            f"skillopt cannot install skills for {tool.value} yet",
            hint=f"tools with an installer: {known}",
        )
    name = TOOLS[tool].installer
    if ":" in name:
        cls = plugins.load_object(name)
        if not (isinstance(cls, type) and issubclass(cls, FolderInstaller)) or cls.tool != tool:
            raise NotFoundError(f"{name} is not a FolderInstaller subclass whose tool is {tool.value}")
        found: Installer = cls(instruction_projects=instruction_projects)
        return found
    module = importlib.import_module(f"{__name__}.{name}")
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, FolderInstaller) and getattr(obj, "tool", None) == tool:
            installer: Installer = obj(instruction_projects=instruction_projects)
            return installer
    raise NotFoundError(f"{module.__name__} defines no installer for {tool.value}")


__all__ = [
    "INSTALLERS",
    "FolderInstaller",
    "InstallPlan",
    "InstallTarget",
    "Installer",
    "Location",
    "check_inside",
    "check_writable",
    "get_installer",
    "has_installer",
    "scan_folder",
]

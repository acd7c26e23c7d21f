"""Devin reads skills from the repository only: `<repo>/.devin/skills/<name>/`. Its cloud sessions use
Knowledge entries and Playbooks instead, which `skillopt_daemon.integrations.devin_export` writes as JSON for its API."""

from __future__ import annotations

from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import InstallError


class DevinInstaller(FolderInstaller):
    tool = AgentTool.DEVIN

    def user_locations(self) -> list[Location]:
        raise InstallError(
            "Devin has no user-level skills folder; skillopt installs Devin skills per project",
            hint="use the target devin:project:PATH (or `skillopt install devin --project PATH`)",
        )

"""OpenCode (`opencode`, npm `opencode-ai`) as an agent tool, registered through `skillopt_agent_tools`.

One row says everything skillopt needs: sessions are read from OpenCode's SQLite database (`source`), approved
skills go where OpenCode reads them (`installer`), `skillopt doctor` says which other tools' skill folders
OpenCode also lists (`doctor`), and tasks are replayed with `opencode run` (`backend`, registered through
`skillopt_backends`). Parts are named, not imported, so listing plugins loads none of them.

The tool's home is OpenCode's data folder (`~/.local/share/opencode`, where the database lives); its user skills
are in its config folder (`~/.config/opencode/skills`), which the installer finds from `XDG_CONFIG_HOME`.
"""

from __future__ import annotations

from skillopt_lib.agents import AgentTool, ToolSpec
from skillopt_lib.plugins import Register, hookimpl

TOOL = "opencode"
# The OpenCode release the reader, the installer and the recorded fixtures were checked with.
TESTED_VERSION = "1.18.33"


@hookimpl
def skillopt_agent_tools(register: Register) -> None:
    register(
        ToolSpec(
            tool=AgentTool.declare(TOOL),
            title="OpenCode",
            executables=("opencode",),
            tested_versions=(TESTED_VERSION, TESTED_VERSION),
            install_hint="npm install -g opencode-ai",
            home_env=None,  # XDG_DATA_HOME moves it, but names the folder holding `opencode`: see `source`
            home_default=".local/share/opencode",
            user_skill_dir=None,  # user skills live in the config folder, not under this home: see `installer`
            project_skill_dirs=(".opencode/skills", ".opencode/skill"),
            scopes=("user", "project"),
            source="skillopt_daemon.plugins.opencode.source:OpenCodeSource",
            installer="skillopt_daemon.plugins.opencode.installer:OpenCodeInstaller",
            backend="opencode",
            doctor="skillopt_daemon.plugins.opencode.installer:doctor",
        )
    )


@hookimpl
def skillopt_backends(register: Register) -> None:
    register("opencode", "skillopt_daemon.plugins.opencode.backend:create")

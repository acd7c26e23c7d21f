"""skillopt plugin for `toy-agent`: one row says everything skillopt needs to know about the tool.

The reader and the installer are named as "module:Class" strings rather than imported here, so listing the
plugin (`skillopt plugins`) imports neither, and each is loaded only by the part of skillopt that uses it.
"""

from __future__ import annotations

from skillopt_lib.agents import ToolSpec
from skillopt_lib.plugins import Register, hookimpl

TOOL = "toy-agent"


@hookimpl
def skillopt_agent_tools(register: Register) -> None:
    register(
        ToolSpec(
            tool=TOOL,  # a plain name: skillopt declares it as an agent tool
            executables=("toy-agent",),
            tested_versions=None,
            install_hint="pip install toy-agent",
            home_env="TOY_AGENT_HOME",
            home_default=".toy-agent",
            user_skill_dir="skills",
            project_skill_dirs=(".toy-agent/skills",),
            scopes=("user", "project"),
            source="skillopt_toy.source:ToySource",
            installer="skillopt_toy.installer:ToyInstaller",
            backend=None,  # no headless runner: its sessions are mined, not replayed
            doctor="skillopt_toy.source:doctor",
        )
    )

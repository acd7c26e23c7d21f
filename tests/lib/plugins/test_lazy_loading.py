"""Nothing is loaded before it is used: importing the training loop (as every night and `skillopt train` do)
does not search the entry points or import any plugin; the first question about the tools does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = """
import sys
import skillopt_lib.trainer
from skillopt_lib import plugins
print(plugins._state is None, "skillopt_daemon.plugins.opencode" in sys.modules)
from skillopt_lib.trainer import exec_backends
print("opencode" in exec_backends(), "skillopt_daemon.plugins.opencode" in sys.modules)
"""


def test_importing_the_trainer_loads_no_plugin_until_a_tool_is_asked_for() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120, check=True
    )
    before, after = done.stdout.split("\n")[:2]
    assert before == "True False", done.stdout
    assert after == "True True", done.stdout  # the OpenCode plugin, found through its entry point

"""Every folder and file skillopt writes, in one place.

`SKILLOPT_HOME` relocates everything (config, database, skill store, runs, workspaces, logs) so tests and
users can isolate a whole installation; without it the platform's standard folders are used. The user folder
itself, and the folders the library shares (runs, workspaces, benchmarks), come from `skillopt_lib.userdir`.
"""

from __future__ import annotations

import os
from pathlib import Path

from skillopt_lib.agents import AgentTool, spec

# The user folder and the folders the library shares are resolved in the library; re-exported here.
from skillopt_lib.userdir import (
    APP as APP,
)
from skillopt_lib.userdir import (
    benchmarks_dir as benchmarks_dir,
)
from skillopt_lib.userdir import (
    config_dir as config_dir,
)
from skillopt_lib.userdir import (
    data_dir as data_dir,
)
from skillopt_lib.userdir import (
    runs_dir as runs_dir,
)
from skillopt_lib.userdir import (
    skillopt_home as skillopt_home,
)
from skillopt_lib.userdir import (
    workspaces_dir as workspaces_dir,
)


def config_file() -> Path:
    return config_dir() / "config.toml"


def db_path() -> Path:
    return data_dir() / "skillopt.db"


def skill_store_dir() -> Path:
    """Content-addressed copies of every skill version's files."""
    return data_dir() / "skills"


def inbox_dir() -> Path:
    """Notes dropped by hooks (`skillopt notify`) for the daemon to pick up."""
    return data_dir() / "inbox"


def log_dir() -> Path:
    return data_dir() / "logs"


def backups_dir() -> Path:
    """Files skillopt replaced when installing, kept so uninstall and rollback can restore them."""
    return data_dir() / "backups"


def pid_file() -> Path:
    return data_dir() / "daemon.pid"


def token_file() -> Path:
    return data_dir() / "ui-token"


def user_home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def default_tool_home(tool: AgentTool) -> Path:
    """A tool's own home folder, honouring the tool's variable (CLAUDE_CONFIG_DIR, CODEX_HOME, ...).

    Config may override this; use `skillopt_daemon.core.config.tool_home` for the resolved value.
    """
    return spec(tool).default_home(os.environ, user_home())


def ensure_private_dir(path: Path) -> Path:
    """Create a folder readable only by the user: it will hold transcripts or keys."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path

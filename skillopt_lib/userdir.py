"""skillopt's user folder, resolved in one place for the library and the daemon alike.

`SKILLOPT_HOME` relocates everything (config, data, runs, workspaces, downloaded benchmarks) so tests and
users can isolate a whole installation; without it the platform's standard folders are used. The daemon's
`core.paths` builds its own files (database, skill store, logs) on these folders, so a benchmark the user
downloaded or a run `skillopt train` wrote is found at the same place by both halves.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "skillopt"


def skillopt_home() -> Path | None:
    """The folder `SKILLOPT_HOME` names, or None when it is unset or empty."""
    value = os.environ.get("SKILLOPT_HOME")
    return Path(value).expanduser().resolve() if value else None


def config_dir() -> Path:
    home = skillopt_home()
    return home / "config" if home else Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    home = skillopt_home()
    return home / "data" if home else Path(platformdirs.user_data_dir(APP))


def runs_dir() -> Path:
    """Training runs and nightly cycles, one folder each."""
    return data_dir() / "runs"


def workspaces_dir() -> Path:
    """Throwaway replay workspaces; the daemon's sources ignore sessions whose cwd lies here."""
    return data_dir() / "workspaces"


def benchmarks_dir() -> Path:
    """Official benchmark data a user downloaded, one folder per benchmark (`skillopt train --env NAME`)."""
    return data_dir() / "benchmarks"

"""How command-line options become a `TrainConfig`, and where a run goes when no folder is given.

Layers, lowest first: the caller's defaults (the daemon passes the user's `[agent]`, `[optimizer]` and
`[prices]` settings, so a user who configured skillopt once can train without repeating endpoints), the
`--config` file, `--env` and the shortcut options, then each `--set key=value`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skillopt_lib.config import TrainConfig, apply_overrides, read_config_file, validate_config

DefaultsProvider = Callable[[], dict[str, Any]]
"""Returns TrainConfig data (e.g. `{"agent": {...}, "prices": {...}}`) to start from. Called once per
command; must not raise for a broken user configuration (return `{}` instead)."""


def merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, recursing into tables present in both."""
    out = dict(base)
    for k, v in top.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def build_config(
    base: dict[str, Any], config: Path | None, sets: list[str], env: str | None, extra: dict[str, Any]
) -> TrainConfig:
    data = merge(base, read_config_file(config) if config else {})
    if env:
        data["env"] = env
    for k, v in extra.items():
        if v is not None:
            data[k] = v
    apply_overrides(data, sets)
    return validate_config(data)


def benchmark_sets(sets: list[str], sample: bool, data_dir: Path | None, executor: str | None) -> list[str]:
    """`--sample`, `--data-dir` and `--executor` as the `--set` overrides they stand for."""
    out = list(sets)
    if sample:
        out.append("env_options.sample=true")
    if data_dir is not None:
        out.append(f"env_options.data_dir={json.dumps(str(data_dir.expanduser().resolve()))}")
    if executor:
        out.append(f"executor={json.dumps(executor)}")
    return out


def new_run_dir(runs: Path, env_name: str) -> Path:
    """A fresh `train-<UTC stamp>-<env>` folder name under `runs` (created), never an existing one."""
    slug = re.sub(r"[^a-z0-9]+", "-", env_name.lower()).strip("-")[:40] or "env"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = runs / f"train-{stamp}-{slug}"
    n = 1
    while path.exists():
        n += 1
        path = runs / f"train-{stamp}-{slug}-{n}"
    return path

"""`skillopt train` and `skillopt eval` come from the library (`skillopt_lib.cli`); the daemon only wires in
the user's settings: the `[agent]` and `[optimizer]` sections and `[prices]` fill in what a training config
leaves out, so a user who configured skillopt once can train without repeating endpoints.
"""

from __future__ import annotations

from typing import Any

import typer

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import load_settings
from skillopt_lib import cli as train_cli
from skillopt_lib.errors import ConfigError

# Values that mean "not set" in a settings section (an empty backend: the role is not configured).
_UNSET: tuple[object, ...] = (None, "", {})


def settings_defaults() -> dict[str, Any]:
    """Backend sections and prices from the user's settings, as TrainConfig data (none when they are broken:
    the training config may still say everything)."""
    try:
        settings = load_settings()
    except ConfigError:
        return {}
    data: dict[str, Any] = {}
    for role in ("agent", "optimizer"):
        section = getattr(settings, role)
        if section.backend or section.model:
            data[role] = {k: v for k, v in section.model_dump().items() if v not in _UNSET}
    if settings.prices:
        data["prices"] = {k: v.model_dump() for k, v in settings.prices.items()}
    return data


def register(app: typer.Typer) -> None:
    train_cli.register(app, defaults=settings_defaults, runs_dir=paths.runs_dir)

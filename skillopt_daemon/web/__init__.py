"""The local dashboard: `create_app(settings)` builds the web app, `DashboardServer` serves it in a thread.

Everything it shows comes from the same functions the CLI uses; see `app.py` for its security rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from skillopt_daemon.core.config import Settings

__all__ = ["create_app"]


def create_app(settings: Settings, token: str | None = None) -> FastAPI:
    from skillopt_daemon.web.app import create_app as _create

    return _create(settings, token=token)


def __getattr__(name: str) -> Any:
    if name == "DashboardServer":
        from skillopt_daemon.web.server import DashboardServer

        return DashboardServer
    raise AttributeError(name)

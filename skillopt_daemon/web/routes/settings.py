"""The settings page: the configuration (secrets masked) and the state of each agent tool's integration."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.core.config import load_settings, masked
from skillopt_daemon.integrations import doctor_section
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/settings", response_class=HTMLResponse)
def settings_page(request: Request) -> Response:
    current = load_settings()
    served = request.app.state.settings
    try:
        integrations = doctor_section(with_versions=False)
    except Exception as exc:  # a broken tool folder must not hide the settings
        integrations = {"tools": [], "lines": [f"unavailable: {exc}"], "ok": False}
    return render(
        request,
        "settings.html",
        config=json.dumps(masked(current.model_dump(mode="json")), indent=2, ensure_ascii=False),
        integrations=integrations,
        bind=f"{served.ui.host}:{served.ui.port}",
    )

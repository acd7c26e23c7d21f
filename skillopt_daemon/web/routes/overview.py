"""The overview page, and `skillopt status` as JSON for scripts holding the token."""

from __future__ import annotations

import json

import sqlite_utils
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from skillopt_daemon.core.config import load_settings
from skillopt_daemon.night.installed import outcomes
from skillopt_daemon.service.status import collect_status
from skillopt_daemon.web import charts, data
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, conn: sqlite_utils.Database = Depends(db)) -> Response:
    status = collect_status(conn)
    settings = load_settings()
    days, counts, tools = data.sessions_per_day(conn)
    return render(
        request,
        "overview.html",
        status=status,
        chart=charts.stacked_bars(days, counts, title="sessions per day", keys=tools),
        per_tool={t: sum(counts.get(d, {}).get(t, 0) for d in days) for t in tools},
        spend=data.night_spend(conn, settings.night),
        errors=data.recent_ingest_errors(conn, 10),
        learned=outcomes.card(outcomes.report(conn, settings.report)),
    )


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return RedirectResponse("/static/favicon.svg", status_code=301)


@router.get("/api/status")
def api_status(conn: sqlite_utils.Database = Depends(db)) -> Response:
    """`skillopt status --json` over HTTP, for scripts holding the token."""
    return JSONResponse(json.loads(json.dumps(collect_status(conn), default=str)))

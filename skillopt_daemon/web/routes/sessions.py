"""The sessions page (search over ingested sessions) and one session's transcript."""

from __future__ import annotations

import sqlite_utils
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.ingest.queries import find_session, session_detail
from skillopt_daemon.service.sessions import with_kinds
from skillopt_daemon.web import data
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/sessions", response_class=HTMLResponse)
def sessions(
    request: Request,
    q: str = "",
    tool: str = "",
    all: bool = False,
    conn: sqlite_utils.Database = Depends(db),
) -> Response:
    rows = data.search_sessions(conn, q, tool or None, include_all=all)
    tools = (
        [r[0] for r in conn.execute("SELECT DISTINCT tool FROM sessions ORDER BY tool").fetchall()]
        if ("sessions" in conn.table_names())
        else []
    )
    return render(request, "sessions.html", rows=rows, q=q, tool=tool, tools=tools, all=all)


@router.get("/sessions/{ident}", response_class=HTMLResponse)
def session(request: Request, ident: str, conn: sqlite_utils.Database = Depends(db)) -> Response:
    detail = session_detail(conn, find_session(conn, ident))
    with_kinds(conn, [detail])  # headless work is work: only what mining skips says why
    return render(request, "session.html", s=detail)

"""The recurring tasks mining found, and one task family with its checks, rubric and attempts."""

from __future__ import annotations

import json

import sqlite_utils
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.night.mining.families import family_rows, resolve_family, task_view
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/tasks", response_class=HTMLResponse)
def tasks(request: Request, conn: sqlite_utils.Database = Depends(db)) -> Response:
    rows = family_rows(conn) if "task_families" in conn.table_names() else []
    return render(request, "tasks.html", rows=rows)


@router.get("/tasks/{family_id}", response_class=HTMLResponse)
def task_family(request: Request, family_id: str, conn: sqlite_utils.Database = Depends(db)) -> Response:
    fam = resolve_family(conn, family_id)
    rows = list(conn.query("SELECT * FROM tasks WHERE family_id = ? ORDER BY started_at", [fam["id"]]))
    return render(
        request,
        "task_family.html",
        fam=fam,
        checks=json.loads(fam["checks_json"] or "[]"),
        rubric=json.loads(fam["rubric_json"] or "[]"),
        tasks=[task_view(t) for t in rows],
    )

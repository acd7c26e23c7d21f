"""Skills: every skill with its versions and targets, one skill's lineage and text, and rollback."""

from __future__ import annotations

from typing import Any

import sqlite_utils
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.registry import Registry, open_registry
from skillopt_daemon.web import data
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import redirect_after, render
from skillopt_daemon.web.security import check_csrf
from skillopt_lib.errors import NotFoundError

router = APIRouter()


def _skill_row(reg: Registry, name: str, pending: int) -> dict[str, Any]:
    versions = reg.versions(name)
    labels = {v.id: f"v{v.seq}" for v in versions}
    return {
        "skill": name,
        "versions": len(versions),
        "pending": pending,
        "targets": [
            (ts.target.key, labels.get(ts.active_version_id or "", "-"), ts.enabled)
            for ts in reg.targets(name)
        ],
    }


@router.get("/skills", response_class=HTMLResponse)
def skills(request: Request, conn: sqlite_utils.Database = Depends(db)) -> Response:
    reg = Registry(conn, actor="dashboard")
    pending: dict[str, int] = {}
    for p in reg.list_pending():
        pending[p.skill] = pending.get(p.skill, 0) + 1
    rows = [_skill_row(reg, name, pending.get(name, 0)) for name in reg.skill_names()]
    return render(request, "skills.html", rows=rows)


@router.get("/skills/{name}", response_class=HTMLResponse)
def skill(request: Request, name: str, v: str = "", conn: sqlite_utils.Database = Depends(db)) -> Response:
    reg = Registry(conn, actor="dashboard")
    versions = reg.versions(name)
    if not versions:
        raise NotFoundError(f"no skill {name!r}", hint="the Skills page lists the skills skillopt knows")
    shown = reg.resolve_id(v) if v else (reg.current_version(name) or versions[-1])
    if shown.skill != name:
        raise NotFoundError(f"{shown.label} is not a version of {name}")
    targets = reg.targets(name)
    bundle = reg.load_bundle(shown.id)
    return render(
        request,
        "skill.html",
        name=name,
        tree=data.lineage(versions),
        labels={x.id: x.label for x in versions},
        targets=targets,
        active_ids={ts.active_version_id for ts in targets if ts.enabled},
        shown=shown,
        text=bundle.text_files().get("SKILL.md", ""),
        files=sorted(bundle.files),
        events=list(reversed(reg.history(name)))[:100],
    )


@router.post("/skills/{name}/rollback", dependencies=[Depends(check_csrf)])
def rollback(
    name: str,
    to: str = Form(""),
    target: str = Form(""),
    force: bool = Form(False),
    reason: str = Form(""),
) -> Response:
    """`skillopt rollback`: to `to`, else the active version's parent (a first version is removed)."""
    reg, _ = open_registry(actor="dashboard")
    try:
        outcomes = reg.rollback(
            name,
            to=to.strip() or None,
            targets=[target.strip()] if target.strip() else None,
            force=force,
            reason=reason.strip() or None,
        )
    finally:
        reg.db.conn.close()
    return redirect_after(f"/skills/{name}", "removed" if any(o.removed for o in outcomes) else "rolled-back")

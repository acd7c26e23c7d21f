"""Proposals: the pending and decided ones, one proposal with its diff and evidence, approve and reject.

Each proposal is described by `service.proposals` as in `skillopt status` and `skillopt diff`: what the
change is in one line, its tier (a `likely` proposal is labelled "likely, not yet proven"), and for decided
ones what was decided and why.

Decisions go through the registry exactly as `skillopt approve` / `reject` do, then redirect back
(post/redirect/get), so a reload never repeats an approval.
"""

from __future__ import annotations

import sqlite_utils
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.night.mining import conflicts
from skillopt_daemon.registry import Evidence, Registry, open_registry
from skillopt_daemon.registry.models import new_skill_targets
from skillopt_daemon.service.proposals import decided_items, diff_view, proposal_item
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import redirect_after, render
from skillopt_daemon.web.security import check_csrf

router = APIRouter()


@router.get("/proposals", response_class=HTMLResponse)
def proposals(request: Request, conn: sqlite_utils.Database = Depends(db)) -> Response:
    reg = Registry(conn, actor="dashboard")
    rules = conflicts.installed(reg)  # read once for every pending proposal's conflicts
    pending = [
        (proposal_item(reg, v, rules), Evidence.model_validate(v.evidence)) for v in reg.list_pending()
    ]
    return render(request, "proposals.html", pending=pending, decided=decided_items(reg, limit=50))


@router.get("/proposals/{ref}", response_class=HTMLResponse)
def proposal(request: Request, ref: str, conn: sqlite_utils.Database = Depends(db)) -> Response:
    reg = Registry(conn, actor="dashboard")
    v = reg.resolve_id(ref)
    # A night's proposal says what the user said that motivated each line it adds, beside the line.
    view = diff_view(reg, v.id)
    extra = {k: val for k, val in v.evidence.items() if k not in Evidence.model_fields and k != "tasks"}
    targets = [ts.target.key for ts in reg.targets(v.skill) if ts.enabled]
    if not targets and not reg.targets(v.skill):
        # A new skill goes where its family's sessions came from, else where skillopt's integration is
        # installed, as `skillopt approve` does.
        targets = [t.key for t in new_skill_targets(v.evidence)]
        targets = targets or [i.target.key for i in reg.integration_targets()]
    return render(
        request,
        "proposal.html",
        v=v,
        ev=Evidence.model_validate(v.evidence),
        item=view["proposal"],
        diff_title=view["title"],
        diff_lines=diff_lines(view["diff"]),
        per_task=v.evidence.get("tasks") or [],
        extra=extra,
        targets=targets,
        parent=reg.get_version(v.parent_id) if v.parent_id else None,
    )


@router.post("/proposals/{ref}/approve", dependencies=[Depends(check_csrf)])
def approve(ref: str, target: str = Form(""), force: bool = Form(False)) -> Response:
    reg, _ = open_registry(actor="dashboard")
    try:
        result = reg.approve(ref, targets=[target.strip()] if target.strip() else None, force=force)
    finally:
        reg.db.conn.close()
    return redirect_after(f"/proposals/{result.version.id}", "approved")


@router.post("/proposals/{ref}/reject", dependencies=[Depends(check_csrf)])
def reject(ref: str, reason: str = Form("")) -> Response:
    reg, _ = open_registry(actor="dashboard")
    try:
        v = reg.reject(ref, reason)
    finally:
        reg.db.conn.close()
    return redirect_after(f"/proposals/{v.id}", "rejected")


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """(css class, line) for a unified diff: the page colours additions and removals."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("  ↳ "):
            cls = "provenance"
        elif line.startswith("  ⚠ "):
            cls = "screen"
        else:
            cls = "ctx"
        out.append((cls, line))
    return out

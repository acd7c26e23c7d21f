"""Did the rules work? The correction funnel and each installed rule's family before and after its rule.

The figures are `night/installed/outcomes.py`'s, the same as `skillopt report` and the MCP `report` tool.
"""

from __future__ import annotations

import sqlite_utils
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.core.config import load_settings
from skillopt_daemon.night.installed import outcomes
from skillopt_daemon.web import charts
from skillopt_daemon.web.deps import db
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/outcomes", response_class=HTMLResponse)
def outcomes_page(request: Request, conn: sqlite_utils.Database = Depends(db)) -> Response:
    data = outcomes.report(conn, load_settings().report)
    learned = data["learned"]
    chart = charts.before_after(
        [
            (
                f"{o['rule']['version']}: {', '.join(o['family_names']) or o['rule']['line']}",
                o["figures"]["rate_before"],
                o["figures"]["rate_after"],
            )
            for o in learned
        ],
        title="share of each family's sessions with the correction, before and after its rule",
    )
    return render(
        request,
        "outcomes.html",
        data=data,
        headline=outcomes.headline(data),
        stages=[(outcomes.STAGE_NAMES[k], k) for k in outcomes.STAGES],
        chart=chart,
    )

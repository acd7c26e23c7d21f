"""Training runs (from `skillopt train` and from each night): the list, one run, and its live part."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from skillopt_daemon.web import charts, data
from skillopt_daemon.web.render import render

router = APIRouter()


@router.get("/runs", response_class=HTMLResponse)
def runs(request: Request) -> Response:
    return render(request, "runs.html", runs=data.list_runs())


@router.get("/runs/{run_id:path}", response_class=HTMLResponse)
def run(request: Request, run_id: str) -> Response:
    return render(request, "run.html", **run_context(run_id))


@router.get("/runs-live/{run_id:path}", response_class=HTMLResponse)
def run_live(request: Request, run_id: str) -> Response:
    """The part of a run's page that changes while it trains (htmx swaps it in every few seconds)."""
    return render(request, "run_live.html", **run_context(run_id))


def run_context(run_id: str) -> dict[str, Any]:
    """A run's detail with its chart of train and validation scores per step."""
    detail = data.run_detail(run_id)
    chart = charts.line_chart(
        [
            charts.Series("train", detail["train_points"]),
            charts.Series("validation", detail["val_points"]),
        ],
        title="train and validation score per step",
        y_range=(0.0, 1.0),
        markers=[(x, "accepted") for x in detail["accepted_marks"]],
    )
    return {**detail, "chart": chart, "run_id": run_id}

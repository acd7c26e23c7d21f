"""Turning a page's data into HTML: the Jinja2 templates with their filters, and the page for an error.

Autoescape is on for every template, so a transcript can only ever show as text, and every printed value
passes through `safetext.printable`, so control characters in it show as escapes. A redirect after an action
names a message from `FLASH` in its query; it never carries text of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from skillopt_daemon.core.timeutil import humanize_age, local_display
from skillopt_daemon.web import auth
from skillopt_lib.errors import ConflictError, NotFoundError, SkillOptError
from skillopt_lib.safetext import printable
from skillopt_lib.usage import format_cost

HERE = Path(__file__).parent
FLASH = {
    "approved": "Approved and installed.",
    "rejected": "Rejected. Nothing was installed.",
    "rolled-back": "Rolled back. The chosen version is active again.",
    "removed": "Rolled back its first version: the skill is removed. Make a version active again below.",
}
ERROR_STATUS = {NotFoundError: 404, ConflictError: 409}


def _shown(value: Any) -> Any:
    """Every value a template prints, with control characters shown as escapes (`safetext.printable`), as
    the CLI shows them: stored text reads the same in a terminal and on a page. Markup the page built itself
    (a chart's SVG) stays markup."""
    if isinstance(value, Markup):
        return Markup(printable(str(value)))
    if isinstance(value, str):
        return printable(value)
    return value


def _templates() -> Jinja2Templates:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_shown,
    )
    env.filters["ago"] = humanize_age
    env.filters["local"] = local_display
    env.filters["pct"] = lambda v: "-" if v is None else f"{float(v):.0%}"
    env.filters["score"] = lambda v: "-" if v is None else f"{float(v):.3f}"
    env.filters["signed"] = lambda v: "-" if v is None else f"{float(v):+.3f}"
    env.filters["usd"] = format_cost
    env.filters["num"] = lambda v: "-" if v is None else f"{int(v):,}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    return Jinja2Templates(env=env)


templates = _templates()


def render(request: Request, template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    """A page, with what every page's layout needs: the flash message, the CSRF token, the nav entry."""
    ctx.setdefault("flash", FLASH.get(request.query_params.get("done", "")))
    ctx["csrf"] = getattr(request.state, "csrf", "")
    ctx["csrf_field"] = auth.CSRF_FIELD
    ctx["nav"] = request.url.path.split("/")[1] or "overview"
    return templates.TemplateResponse(request, template, ctx, status_code=status_code)


def redirect_after(path: str, done: str) -> Response:
    """Post/redirect/get: after an action, show `path` with the flash message `done` (a key of FLASH)."""
    return RedirectResponse(f"{path}?{urlencode({'done': done})}", status_code=303)


async def error_page(request: Request, exc: Exception) -> Response:
    """Our errors as a page (or JSON for a script), with the status that says what kind of error it is."""
    assert isinstance(exc, SkillOptError)
    status = next((s for k, s in ERROR_STATUS.items() if isinstance(exc, k)), 400)
    if request.headers.get("accept", "").startswith("application/json"):
        return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=status)
    return render(request, "error.html", status_code=status, message=exc.message, hint=exc.hint)

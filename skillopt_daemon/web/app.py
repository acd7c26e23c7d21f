"""The dashboard's web app: server-rendered pages over the same functions the CLI calls.

Pages are Jinja2 templates with autoescape on, so a transcript can only ever show as text; the only
scripts are the vendored htmx file (live updates of a running training run) and nothing inline, which
the Content-Security-Policy enforces. Forms work without JavaScript: a POST does the action through the
registry and redirects back (post/redirect/get), so a reload never repeats an approval.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import sqlite_utils
from fastapi import Depends, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape

from skillopt_daemon.core.config import Settings, masked
from skillopt_daemon.core.timeutil import humanize_age, local_display
from skillopt_daemon.service.dashboard import ensure_token
from skillopt_daemon.web import auth, charts, data
from skillopt_lib.errors import ConflictError, NotFoundError, SkillOptError

log = logging.getLogger("skillopt.web")

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # "same-origin", not "no-referrer": with no-referrer browsers send `Origin: null` on our own form POSTs.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
# What a redirect after an action may say; the query names a message, it never carries text of its own.
FLASH = {
    "approved": "Approved and installed.",
    "rejected": "Rejected. Nothing was installed.",
    "rolled-back": "Rolled back. The chosen version is active again.",
}
ERROR_STATUS = {NotFoundError: 404, ConflictError: 409}


def _templates() -> Jinja2Templates:
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["ago"] = humanize_age
    env.filters["local"] = local_display
    env.filters["pct"] = lambda v: "-" if v is None else f"{float(v):.0%}"
    env.filters["score"] = lambda v: "-" if v is None else f"{float(v):.3f}"
    env.filters["signed"] = lambda v: "-" if v is None else f"{float(v):+.3f}"
    env.filters["usd"] = lambda v: "-" if v is None else f"${float(v):.4f}"
    env.filters["num"] = lambda v: "-" if v is None else f"{int(v):,}"
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    return Jinja2Templates(env=env)


def _db() -> Iterator[sqlite_utils.Database]:
    from skillopt_daemon.core.store import open_db

    db = open_db()
    try:
        yield db
    finally:
        db.conn.close()


def create_app(settings: Settings, token: str | None = None) -> FastAPI:
    """The dashboard for these settings; the token defaults to the one in the data folder (created if new)."""
    secret = token or ensure_token()
    templates = _templates()
    app = FastAPI(title="skillopt", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def render(request: Request, template: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("flash", FLASH.get(request.query_params.get("done", "")))
        ctx["csrf"] = getattr(request.state, "csrf", "")
        ctx["csrf_field"] = auth.CSRF_FIELD
        ctx["nav"] = request.url.path.split("/")[1] or "overview"
        return templates.TemplateResponse(request, template, ctx, status_code=status_code)

    # ---------------------------------------------------------------------------------------- guard

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await _guarded(request, call_next)
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    async def _guarded(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not auth.host_allowed(request.headers.get("host"), settings.ui.host):
            return PlainTextResponse("unknown Host: open the dashboard with `skillopt ui`", status_code=400)
        given = request.query_params.get("token")
        if given is not None:
            if not auth.token_matches(secret, given):
                return _refused("the token in the address is not this dashboard's")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            resp = RedirectResponse(target, status_code=303)
            _set_cookies(resp, secret, auth.new_csrf())
            return resp
        if auth.token_matches(secret, request.cookies.get(auth.TOKEN_COOKIE)):
            request.state.auth = "cookie"
        elif auth.token_matches(secret, auth.bearer(request.headers.get("authorization"))):
            request.state.auth = "bearer"
        else:
            return _refused("this page needs the dashboard's token")
        csrf = request.cookies.get(auth.CSRF_COOKIE)
        new_csrf = None
        if not csrf:
            csrf = new_csrf = auth.new_csrf()
        request.state.csrf = csrf
        if (
            request.method not in ("GET", "HEAD")
            and request.state.auth == "cookie"
            and not auth.same_origin(
                request.headers.get("origin"),
                request.headers.get("host"),
                request.headers.get("sec-fetch-site"),
            )
        ):
            return PlainTextResponse("cross-site request refused", status_code=403)
        response = await call_next(request)
        if new_csrf:
            response.set_cookie(
                auth.CSRF_COOKIE, new_csrf, httponly=True, samesite="strict", path="/", secure=False
            )
        return response

    def _refused(why: str) -> Response:
        body = templates.get_template("refused.html").render(why=why)
        return HTMLResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    async def check_csrf(request: Request) -> None:
        """Cookie-authenticated POSTs must carry the session's CSRF token (a Bearer client cannot be forged)."""
        if getattr(request.state, "auth", None) != "cookie":
            return
        form = await request.form()
        sent = form.get(auth.CSRF_FIELD)
        if not isinstance(sent, str) or not auth.token_matches(request.state.csrf, sent):
            raise _CsrfError()

    @app.exception_handler(SkillOptError)
    async def skillopt_error(request: Request, exc: SkillOptError) -> Response:
        status = next((s for k, s in ERROR_STATUS.items() if isinstance(exc, k)), 400)
        if request.headers.get("accept", "").startswith("application/json"):
            return JSONResponse({"error": exc.message, "hint": exc.hint}, status_code=status)
        return render(request, "error.html", status_code=status, message=exc.message, hint=exc.hint)

    @app.exception_handler(_CsrfError)
    async def csrf_error(request: Request, exc: _CsrfError) -> Response:
        return PlainTextResponse(
            "the form's CSRF token is missing or stale: reload the page and try again", status_code=403
        )

    # ---------------------------------------------------------------------------------------- pages

    @app.get("/", response_class=HTMLResponse)
    def overview(request: Request, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.service.status import collect_status

        status = collect_status(db)
        days, counts, tools = data.sessions_per_day(db)
        return render(
            request,
            "overview.html",
            status=status,
            chart=charts.stacked_bars(days, counts, title="sessions per day", keys=tools),
            per_tool={t: sum(counts.get(d, {}).get(t, 0) for d in days) for t in tools},
            spend=data.night_spend(db, load_settings().night),
            errors=data.recent_ingest_errors(db, 10),
        )

    @app.get("/sessions", response_class=HTMLResponse)
    def sessions(
        request: Request,
        q: str = "",
        tool: str = "",
        all: bool = False,
        db: sqlite_utils.Database = Depends(_db),
    ) -> Response:
        rows = data.search_sessions(db, q, tool or None, include_all=all)
        tools = (
            [r[0] for r in db.execute("SELECT DISTINCT tool FROM sessions ORDER BY tool").fetchall()]
            if ("sessions" in db.table_names())
            else []
        )
        return render(request, "sessions.html", rows=rows, q=q, tool=tool, tools=tools, all=all)

    @app.get("/sessions/{ident}", response_class=HTMLResponse)
    def session(request: Request, ident: str, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.ingest.queries import find_session, session_detail

        detail = session_detail(db, find_session(db, ident))
        return render(request, "session.html", s=detail)

    @app.get("/tasks", response_class=HTMLResponse)
    def tasks(request: Request, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.night.families import family_rows

        rows = family_rows(db) if "task_families" in db.table_names() else []
        return render(request, "tasks.html", rows=rows)

    @app.get("/tasks/{family_id}", response_class=HTMLResponse)
    def task_family(request: Request, family_id: str, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.night.families import resolve_family, task_view

        fam = resolve_family(db, family_id)
        rows = list(db.query("SELECT * FROM tasks WHERE family_id = ? ORDER BY started_at", [fam["id"]]))
        return render(
            request,
            "task_family.html",
            fam=fam,
            checks=json.loads(fam["checks_json"] or "[]"),
            rubric=json.loads(fam["rubric_json"] or "[]"),
            tasks=[task_view(t) for t in rows],
        )

    @app.get("/proposals", response_class=HTMLResponse)
    def proposals(request: Request, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.registry import Evidence, Registry

        reg = Registry(db, actor="dashboard")
        pending = [(v, Evidence.model_validate(v.evidence)) for v in reg.list_pending()]
        decided = []
        for name in reg.skill_names():
            decided += [
                v for v in reg.versions(name) if v.origin in ("proposed", "trained") and v.state != "proposed"
            ]
        decided.sort(key=lambda v: v.decided_at or v.created_at, reverse=True)
        return render(request, "proposals.html", pending=pending, decided=decided[:50])

    @app.get("/proposals/{ref}", response_class=HTMLResponse)
    def proposal(request: Request, ref: str, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.registry import Evidence, Registry

        reg = Registry(db, actor="dashboard")
        v = reg.resolve_id(ref)
        title, diff = reg.diff(v.id)
        ev = Evidence.model_validate(v.evidence)
        extra = {k: val for k, val in v.evidence.items() if k not in Evidence.model_fields and k != "tasks"}
        targets = [ts.target.key for ts in reg.targets(v.skill) if ts.enabled]
        if not targets and not reg.targets(v.skill):
            # A new skill goes where skillopt's integration is installed, as `skillopt approve` does.
            targets = [i.target.key for i in reg.integration_targets()]
        return render(
            request,
            "proposal.html",
            v=v,
            ev=ev,
            diff_title=title,
            diff_lines=_diff_lines(diff),
            per_task=v.evidence.get("tasks") or [],
            extra=extra,
            targets=targets,
            parent=reg.get_version(v.parent_id) if v.parent_id else None,
        )

    @app.post("/proposals/{ref}/approve", dependencies=[Depends(check_csrf)])
    def approve(request: Request, ref: str, target: str = Form(""), force: bool = Form(False)) -> Response:
        from skillopt_daemon.registry import open_registry

        reg, _ = open_registry(actor="dashboard")
        try:
            result = reg.approve(ref, targets=[target.strip()] if target.strip() else None, force=force)
        finally:
            reg.db.conn.close()
        return _after(request, f"/proposals/{result.version.id}", "approved")

    @app.post("/proposals/{ref}/reject", dependencies=[Depends(check_csrf)])
    def reject(request: Request, ref: str, reason: str = Form("")) -> Response:
        from skillopt_daemon.registry import open_registry

        reg, _ = open_registry(actor="dashboard")
        try:
            v = reg.reject(ref, reason)
        finally:
            reg.db.conn.close()
        return _after(request, f"/proposals/{v.id}", "rejected")

    @app.get("/skills", response_class=HTMLResponse)
    def skills(request: Request, db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.registry import Registry

        reg = Registry(db, actor="dashboard")
        pending: dict[str, int] = {}
        for p in reg.list_pending():
            pending[p.skill] = pending.get(p.skill, 0) + 1
        rows = []
        for name in reg.skill_names():
            versions = reg.versions(name)
            labels = {v.id: f"v{v.seq}" for v in versions}
            rows.append(
                {
                    "skill": name,
                    "versions": len(versions),
                    "pending": pending.get(name, 0),
                    "targets": [
                        (ts.target.key, labels.get(ts.active_version_id or "", "-"), ts.enabled)
                        for ts in reg.targets(name)
                    ],
                }
            )
        return render(request, "skills.html", rows=rows)

    @app.get("/skills/{name}", response_class=HTMLResponse)
    def skill(request: Request, name: str, v: str = "", db: sqlite_utils.Database = Depends(_db)) -> Response:
        from skillopt_daemon.registry import Registry

        reg = Registry(db, actor="dashboard")
        versions = reg.versions(name)
        if not versions:
            raise NotFoundError(f"no skill {name!r}", hint="the Skills page lists the skills skillopt knows")
        shown = reg.resolve_id(v) if v else (reg.current_version(name) or versions[-1])
        if shown.skill != name:
            raise NotFoundError(f"{shown.label} is not a version of {name}")
        targets = reg.targets(name)
        active_ids = {ts.active_version_id for ts in targets if ts.enabled}
        labels = {x.id: x.label for x in versions}
        return render(
            request,
            "skill.html",
            name=name,
            tree=data.lineage(versions),
            labels=labels,
            targets=targets,
            active_ids=active_ids,
            shown=shown,
            text=reg.load_bundle(shown.id).text_files().get("SKILL.md", ""),
            files=sorted(reg.load_bundle(shown.id).files),
            events=list(reversed(reg.history(name)))[:100],
        )

    @app.post("/skills/{name}/rollback", dependencies=[Depends(check_csrf)])
    def rollback(
        request: Request, name: str, to: str = Form(""), target: str = Form(""), force: bool = Form(False)
    ) -> Response:
        from skillopt_daemon.registry import open_registry

        reg, _ = open_registry(actor="dashboard")
        try:
            reg.rollback(
                name,
                to=to.strip() or None,
                targets=[target.strip()] if target.strip() else None,
                force=force,
            )
        finally:
            reg.db.conn.close()
        return _after(request, f"/skills/{name}", "rolled-back")

    @app.get("/runs", response_class=HTMLResponse)
    def runs(request: Request) -> Response:
        return render(request, "runs.html", runs=data.list_runs())

    @app.get("/runs/{run_id:path}", response_class=HTMLResponse)
    def run(request: Request, run_id: str) -> Response:
        return render(request, "run.html", **_run_context(run_id))

    @app.get("/runs-live/{run_id:path}", response_class=HTMLResponse)
    def run_live(request: Request, run_id: str) -> Response:
        """The part of a run's page that changes while it trains (htmx swaps it in every few seconds)."""
        return render(request, "run_live.html", **_run_context(run_id))

    @app.get("/settings", response_class=HTMLResponse)
    def settings_page(request: Request) -> Response:
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.integrations import doctor_section

        current = load_settings()
        try:
            integrations = doctor_section(with_versions=False)
        except Exception as exc:  # a broken tool folder must not hide the settings
            integrations = {"tools": [], "lines": [f"unavailable: {exc}"], "ok": False}
        return render(
            request,
            "settings.html",
            config=json.dumps(masked(current.model_dump(mode="json")), indent=2, ensure_ascii=False),
            integrations=integrations,
            bind=f"{settings.ui.host}:{settings.ui.port}",
        )

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return RedirectResponse("/static/favicon.svg", status_code=301)

    @app.get("/api/status")
    def api_status(db: sqlite_utils.Database = Depends(_db)) -> Response:
        """`skillopt status --json` over HTTP, for scripts holding the token."""
        from skillopt_daemon.service.status import collect_status

        return JSONResponse(json.loads(json.dumps(collect_status(db), default=str)))

    return app


class _CsrfError(Exception):
    pass


def _set_cookies(resp: Response, token: str, csrf: str) -> None:
    resp.set_cookie(auth.TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/", secure=False)
    resp.set_cookie(auth.CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/", secure=False)


def _after(request: Request, path: str, done: str) -> Response:
    return RedirectResponse(f"{path}?{urlencode({'done': done})}", status_code=303)


def _diff_lines(diff: str) -> list[tuple[str, str]]:
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
        else:
            cls = "ctx"
        out.append((cls, line))
    return out


def _run_context(run_id: str) -> dict[str, Any]:
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

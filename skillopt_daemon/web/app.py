"""The dashboard's web app: server-rendered pages over the same functions the CLI calls.

Pages are Jinja2 templates (`render`), one router per page (`routes/`), behind the guard in `security`:
the token, CSRF protection, the Host check and a Content-Security-Policy that allows no inline script.
Forms work without JavaScript: a POST does the action through the registry and redirects back
(post/redirect/get), so a reload never repeats an approval.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from skillopt_daemon.core.config import Settings
from skillopt_daemon.service.dashboard import ensure_token
from skillopt_daemon.web.render import HERE, error_page
from skillopt_daemon.web.routes import outcomes, overview, proposals, runs, sessions, skills, tasks
from skillopt_daemon.web.routes import settings as settings_routes
from skillopt_daemon.web.security import add_security
from skillopt_lib.errors import SkillOptError

ROUTERS = (overview, sessions, tasks, proposals, outcomes, skills, runs, settings_routes)


def create_app(settings: Settings, token: str | None = None) -> FastAPI:
    """The dashboard for these settings; the token defaults to the one in the data folder (created if new)."""
    app = FastAPI(title="skillopt", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    add_security(app, token or ensure_token(), settings.ui.host)
    app.add_exception_handler(SkillOptError, error_page)
    for module in ROUTERS:
        app.include_router(module.router)
    return app

"""`skillopt ui`: open the dashboard the daemon serves, or serve it from this terminal with `--serve`."""

from __future__ import annotations

import urllib.error
import urllib.request
import webbrowser
from typing import Any

import typer
from rich.markup import escape

from skillopt_daemon.cli.output import console, err_console
from skillopt_lib.errors import DaemonError

PROBE_TIMEOUT_S = 3.0


def _answers(base: str, token: str) -> bool:
    """Whether a dashboard that knows our token answers at `base` (another program on the port does not)."""
    req = urllib.request.Request(base + "api/status", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=PROBE_TIMEOUT_S) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _open(url: str, browser: bool) -> None:
    console.print(url, markup=False, highlight=False, soft_wrap=True)
    if browser:
        try:
            opened = webbrowser.open(url)
        except webbrowser.Error:
            opened = False
        if not opened:
            err_console.print("could not open a browser: open the address above yourself")


def ui(
    serve: bool = typer.Option(
        False, "--serve", help="Serve the dashboard from this terminal (when the daemon is not running)."
    ),
    no_browser: bool = typer.Option(False, "--no-browser", help="Only print the address (for scripts)."),
    host: str = typer.Option(
        None, "--host", help="With --serve: the address to listen on (default ui.host)."
    ),
    port: int = typer.Option(None, "--port", help="With --serve: the port (default ui.port; 0 picks one)."),
) -> None:
    """Open the dashboard: what your agents did, what skillopt learned and why; approve or roll back."""
    from skillopt_daemon.core import fsio
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service import daemon
    from skillopt_daemon.service.dashboard import ensure_token, exposure_warning, url_for

    settings = load_settings()
    token = ensure_token()
    if serve:
        from skillopt_daemon.service.dashboard import serve_forever

        settings = settings.model_copy(deep=True)
        if host is not None:
            settings.ui.host = host
        if port is not None:
            settings.ui.port = port
        warning = exposure_warning(settings.ui.host)
        if warning:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)

        def started(server: Any) -> None:
            err_console.print("dashboard serving; Ctrl+C stops it")
            _open(url_for(server.settings.ui.host, server.port, token), not no_browser)

        serve_forever(settings, on_started=started)
        return
    if host is not None or port is not None:
        raise DaemonError(
            "--host and --port apply to --serve only",
            hint="for the daemon's dashboard: skillopt config set ui.port N, then restart the daemon",
        )
    if not fsio.daemon_running():
        raise DaemonError(
            "the daemon is not running, so nothing serves the dashboard",
            hint="start it (skillopt daemon start), or serve the dashboard from here: skillopt ui --serve",
        )
    if not settings.ui.enabled:
        raise DaemonError(
            "the daemon does not serve the dashboard (ui.enabled is false)",
            hint="skillopt config set ui.enabled true and restart the daemon, or: skillopt ui --serve",
        )
    base = url_for(settings.ui.host, settings.ui.port)
    if not _answers(base, token):
        raise DaemonError(
            f"the daemon runs but no dashboard answers at {base}",
            hint=f"see the daemon's log ({daemon.daemon_log_file()}), or serve it from here: "
            "skillopt ui --serve --port 0",
        )
    _open(url_for(settings.ui.host, settings.ui.port, token), not no_browser)


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)

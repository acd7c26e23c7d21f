"""Serving the dashboard: in a thread of the daemon, or in the foreground for `skillopt ui --serve`.

uvicorn runs its own event loop in the thread; it installs no signal handlers there (signals belong to
the daemon's main thread), and `stop()` asks it to finish open requests and close the socket.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn

from skillopt_daemon.core.config import Settings
from skillopt_daemon.web import auth
from skillopt_lib.errors import DaemonError

log = logging.getLogger("skillopt.web")
START_TIMEOUT_S = 15.0


def exposure_warning(host: str) -> str | None:
    """What to tell the user when the dashboard listens beyond this machine."""
    if auth.is_loopback(host):
        return None
    return (
        f"the dashboard listens on {host}, not only on this machine: anyone who can reach it and has the "
        "token can approve skills; set ui.host = 127.0.0.1 unless you mean it"
    )


def url_for(host: str, port: int, token: str | None = None, path: str = "/") -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}{path}" + (f"?token={token}" if token else "")


class DashboardServer:
    """The dashboard on `settings.ui.host:port` in a background thread."""

    def __init__(self, settings: Settings) -> None:
        from skillopt_daemon.web.app import create_app

        self.settings = settings
        self.token = auth.ensure_token()
        self.app = create_app(settings, token=self.token)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port: int = settings.ui.port

    @property
    def url(self) -> str:
        return url_for(self.settings.ui.host, self.port)

    def start(self) -> None:
        host = self.settings.ui.host
        warning = exposure_warning(host)
        if warning:
            log.warning(warning)
        sock = _bind(host, self.settings.ui.port)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=3
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="skillopt-dashboard", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise DaemonError(f"the dashboard could not start on {host}:{self.port}")
            time.sleep(0.02)
        log.info("dashboard at %s", self.url)

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None
        self._thread = None


def _bind(host: str, port: int) -> socket.socket:
    """Bind before starting, so a taken port is a clear error here and port 0 tells us the port it got."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise DaemonError(
            f"the dashboard cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="another program uses the port; pick another: skillopt config set ui.port 8766",
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_forever(settings: Settings, on_started: object = None) -> None:
    """`skillopt ui --serve`: the dashboard in the foreground until Ctrl-C."""
    server = DashboardServer(settings)
    server.start()
    if callable(on_started):
        on_started(server)
    try:
        while server._thread is not None and server._thread.is_alive():
            server._thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()

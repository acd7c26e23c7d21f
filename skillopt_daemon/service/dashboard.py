"""Serving the dashboard: in a thread of the daemon, or in the foreground for `skillopt ui --serve`.

The web app is found by its name, `DASHBOARD_APP`, the way any ASGI server finds an application: the
service hosts it without importing the web face, so faces stay above the service layer and never need
each other (`skillopt ui` asks this module, not the web package, for the address and the token).

uvicorn runs its own event loop in the thread; it installs no signal handlers there (signals belong to
the daemon's main thread), and `stop()` asks it to finish open requests and close the socket.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.importer import import_from_string

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings
from skillopt_lib.errors import DaemonError
from skillopt_lib.net import is_loopback_host

log = logging.getLogger("skillopt.web")
START_TIMEOUT_S = 15.0
# The dashboard application factory, called as `factory(settings, token=...)`.
DASHBOARD_APP = "skillopt_daemon.web.app:create_app"


def ensure_token(path: Path | None = None) -> str:
    """The dashboard token, created (0600, never world-readable even briefly) when missing."""
    path = path or paths.token_file()
    try:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
            return token
    except FileNotFoundError:
        pass
    paths.ensure_private_dir(path.parent)
    token = secrets.token_urlsafe(32)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(token + "\n")
    try:
        # Another process may have created it meanwhile: the first one wins, everyone reads the same token.
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def exposure_warning(host: str) -> str | None:
    """What to tell the user when the dashboard listens beyond this machine."""
    if is_loopback_host(host):
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
        self.settings = settings
        self.token = ensure_token()
        factory: Any = import_from_string(DASHBOARD_APP)
        self.app = factory(settings, token=self.token)
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
    """`skillopt ui --serve`: the dashboard in the foreground until Ctrl-C (SIGINT) or SIGTERM.

    Both signals get a handler of their own for as long as it serves, rather than relying on Python's
    KeyboardInterrupt: a process started with SIGINT ignored (as a shell does for a background job, and as
    a parent's mask passes on) would otherwise never stop on Ctrl-C, and SIGTERM would end it without
    closing its server."""
    stop = threading.Event()

    def _stop(_signum: int, _frame: object) -> None:
        stop.set()

    server = DashboardServer(settings)
    server.start()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if callable(on_started):
            on_started(server)
        while not stop.is_set() and server._thread is not None and server._thread.is_alive():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)

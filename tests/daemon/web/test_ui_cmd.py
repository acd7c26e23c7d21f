"""`skillopt ui` and the daemon's dashboard thread, run as a user runs them (real processes, real sockets)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit import cli

SKILLOPT = str(cli.SKILLOPT)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    out = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    out.update(
        SKILLOPT_HOME=str(tmp_path / "skillopt"),
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CODEX_HOME=str(home / ".codex"),
        NO_COLOR="1",
        COLUMNS="200",
        BROWSER="true",  # webbrowser must never open a real browser from a test
    )
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return cli.run(*args, env=env, timeout=60)


def fetch(url: str) -> tuple[int, str]:
    """GET with a cookie jar, following the token redirect the way a browser does."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    try:
        with opener.open(url, timeout=60) as resp:  # the first page of a loaded machine renders slowly
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def daemon(env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    procs: list[subprocess.Popen[str]] = []

    def start(**settings: str) -> subprocess.Popen[str]:
        e = {**env, **{f"SKILLOPT_{k.upper()}": v for k, v in settings.items()}}
        log = (tmp_path / "daemon.log").open("w")
        proc = subprocess.Popen(
            [SKILLOPT, "daemon", "run", "--quiet"], env=e, stdout=log, stderr=subprocess.STDOUT, text=True
        )
        procs.append(proc)
        return proc

    yield start  # type: ignore[misc]
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_for_ui(env: dict[str, str], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        r = run(env, "ui", "--no-browser")
        if r.returncode == 0:
            return r.stdout.strip()
        assert time.monotonic() < deadline, f"the dashboard never came up: {r.stderr}"
        time.sleep(0.3)


def test_without_a_daemon_ui_says_how_to_get_a_dashboard(env: dict[str, str]) -> None:
    r = run(env, "ui", "--no-browser")
    assert r.returncode == 7
    assert "the daemon is not running" in r.stderr
    assert "skillopt ui --serve" in r.stderr


def test_ui_serve_serves_in_the_foreground_until_interrupted(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [SKILLOPT, "ui", "--serve", "--no-browser", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        token = url.split("?token=")[1]
        assert (Path(env["SKILLOPT_HOME"]) / "data" / "ui-token").read_text().strip() == token
        status, body = fetch(url)
        assert status == 200 and "<h1>Overview</h1>" in body
        status, body = fetch(url.split("?")[0] + "proposals")
        assert status == 401 and "Token needed" in body
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)  # a loaded machine: shutdown waits for its workers
    assert proc.returncode == 0


def test_the_daemon_serves_the_dashboard_and_stops_it_with_itself(daemon, env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env["SKILLOPT_UI__PORT"] = str(port)
    proc = daemon(ui__port=str(port))
    url = wait_for_ui(env)
    assert url.startswith(f"http://127.0.0.1:{port}/?token=")
    status, body = fetch(url)
    assert status == 200 and "running (pid" in body  # the overview knows its daemon
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_a_daemon_with_the_dashboard_disabled_serves_none(daemon, env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env["SKILLOPT_UI__ENABLED"] = "false"
    daemon(ui__enabled="false", ui__port=str(port))
    deadline = time.monotonic() + 30
    while True:
        r = run(env, "ui", "--no-browser")
        if "ui.enabled is false" in r.stderr:
            break
        assert time.monotonic() < deadline, r.stderr
        time.sleep(0.3)
    assert r.returncode == 7
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_a_taken_port_leaves_the_daemon_running_and_ui_says_so(
    daemon, env: dict[str, str], tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        env["SKILLOPT_UI__PORT"] = str(port)
        proc = daemon(ui__port=str(port))
        deadline = time.monotonic() + 30
        while "cannot listen" not in (tmp_path / "daemon.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()
            assert proc.poll() is None
            time.sleep(0.2)
        assert proc.poll() is None  # ingest goes on without the dashboard
        r = run(env, "ui", "--no-browser")
        assert r.returncode == 7 and f"no dashboard answers at http://127.0.0.1:{port}/" in r.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ui_serve_stops_on_ctrl_c_or_sigterm_even_when_started_with_sigint_ignored(
    env: dict[str, str], sig: signal.Signals
) -> None:
    """A shell starts a background job with SIGINT ignored; `ui --serve` still stops on it, and on SIGTERM,
    closing its server and exiting 0."""
    proc = subprocess.Popen(
        [SKILLOPT, "ui", "--serve", "--no-browser", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert fetch(url)[0] == 200
    finally:
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0
    with (
        pytest.raises(OSError),
        socket.create_connection(("127.0.0.1", int(url.split(":")[2].split("/")[0])), timeout=2),
    ):
        pass

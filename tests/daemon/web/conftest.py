"""Fixtures for the dashboard tests: one built world per test module, a signed-in HTTP client, a browser."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from world import World, build_world  # noqa: E402

from testkit.fixtures import require  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "web"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with build_world(tmp_path_factory.mktemp("dashboard")) as w:
        yield w


@pytest.fixture(scope="module")
def token(world: World) -> str:
    from skillopt_daemon.service.dashboard import ensure_token

    return ensure_token()


@pytest.fixture(scope="module")
def app(world: World, token: str) -> Any:
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.web.app import create_app

    return create_app(load_settings())


@pytest.fixture
def client(app: Any, token: str) -> Iterator[Any]:
    """Signed in the way a browser is: `?token=` once, then the cookies."""
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        r = c.get(f"/?token={token}", follow_redirects=False)
        assert r.status_code == 303
        yield c


@pytest.fixture
def anon(app: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        yield c


def chromium_path() -> str:
    """Debian's chromium; missing it skips locally but fails in CI, where .ci/run installs it."""
    require(CHROMIUM.exists(), f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        require(False, "the playwright package is missing (pip install -e '.[dev]')")
    return str(CHROMIUM)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS

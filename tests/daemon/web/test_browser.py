"""The dashboard in headless Chromium, as a user sees it: every page, approve and roll back by clicking,
the chart, a run that updates live, a hostile transcript, and no way in without the token.

Screenshots land in test-artifacts/web/.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from world import EDITED, ORIGINAL, RULE, XSS, XSS_SESSION, World

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[Any]:
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import DashboardServer

    settings = load_settings()
    settings.ui.port = 0
    srv = DashboardServer(settings)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def page(browser: Any, server: Any) -> Iterator[Any]:
    """A signed-in tab that records script errors, CSP violations and dialogs (none may happen)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    pg.on(
        "console",
        lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
    )

    def on_dialog(dialog: Any) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.goto(f"{server.url}?token={server.token}")
    try:
        yield pg
    finally:
        context.close()
    assert not problems, problems


def _shot(page: Any, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def test_every_page_loads_with_real_data(page: Any, server: Any, world: World, artifacts: Path) -> None:
    assert page.url == server.url  # the token left the address bar
    assert page.locator("h1").inner_text() == "Overview"
    _shot(page, artifacts, "overview")
    for label, heading in [
        ("Sessions", "Sessions"),
        ("Task families", "Task families"),
        ("Proposals", "Proposals"),
        ("Skills", "Skills"),
        ("Training runs", "Training runs"),
        ("Settings", "Settings"),
    ]:
        page.get_by_role("link", name=label, exact=True).click()
        page.wait_for_load_state()
        assert page.locator("h1").first.inner_text() == heading
        _shot(page, artifacts, label.lower().replace(" ", "-"))
    page.get_by_role("link", name="Sessions", exact=True).click()
    page.get_by_role("searchbox").fill("failing")
    with page.expect_navigation():  # count() does not wait: let the results page arrive first
        page.get_by_role("button", name="Search").click()
    assert page.locator("table.sessions tbody tr").count() == 3
    with page.expect_navigation():
        page.locator("table.sessions tbody tr").last.get_by_role("link").first.click()
    assert page.locator("ol.transcript li").count() > 2
    _shot(page, artifacts, "session")
    with page.expect_navigation():
        page.get_by_role("link", name="Task families", exact=True).click()
    with page.expect_navigation():
        page.locator("table a[href^='/tasks/fam-']").first.click()
    # one split badge per task, as mining assigned them (the split of each group is a seeded hash)
    assert page.locator(".badge.train, .badge.val, .badge.test").count() == 3
    assert page.locator(".badge.train").count() >= 1
    _shot(page, artifacts, "task-family")


def test_a_transcript_with_a_script_shows_as_text(page: Any, server: Any, artifacts: Path) -> None:
    page.goto(f"{server.url}sessions/{XSS_SESSION}")
    page.wait_for_load_state("load")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("script:not([src])").count() == 0
    assert page.locator("ol.transcript img").count() == 0
    assert XSS in page.locator("ol.transcript").inner_text()
    _shot(page, artifacts, "session-with-script")


def test_approve_by_clicking_installs_the_skill_then_roll_it_back(
    page: Any, server: Any, world: World, artifacts: Path
) -> None:
    assert world.skill_file().read_text() == ORIGINAL
    page.get_by_role("link", name="Proposals", exact=True).click()
    page.locator(f"a[href='/proposals/{world.proposal_id}']").first.click()
    assert page.locator("pre.diff .add").filter(has_text=RULE).count() == 1
    _shot(page, artifacts, "proposal")
    page.locator("#approve").click()
    page.wait_for_load_state()
    assert page.locator(".flash").inner_text() == "Approved and installed."
    assert page.locator("#proposal-state").inner_text() == "approved"
    assert world.skill_file().read_text() == EDITED
    _shot(page, artifacts, "proposal-approved")

    page.get_by_role("link", name="Skills", exact=True).click()
    page.get_by_role("link", name="tidy-commits").click()
    assert page.locator("td.active-version").inner_text() == "tidy-commits@v2"
    page.locator("#rollback-v1").click()
    page.wait_for_load_state()
    assert page.locator(".flash").inner_text() == "Rolled back. The chosen version is active again."
    assert page.locator("td.active-version").inner_text() == "tidy-commits@v1"
    assert world.skill_file().read_text() == ORIGINAL
    assert "rollback" in page.locator("table").last.inner_text()
    _shot(page, artifacts, "skill-rolled-back")


def test_the_training_chart_renders(page: Any, server: Any, world: World, artifacts: Path) -> None:
    page.goto(f"{server.url}runs/{world.run_id}")
    chart = page.locator("#score-chart svg")
    box = chart.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 100
    lines = page.locator("#score-chart polyline")
    assert lines.count() >= 2
    for i in range(lines.count()):
        line_box = lines.nth(i).bounding_box()
        assert line_box and line_box["width"] > 50  # drawn across the steps, not collapsed
    assert page.locator("#score-chart circle.marker.accepted").count() >= 1
    _shot(page, artifacts, "run")


def test_a_running_training_run_updates_live(page: Any, server: Any, world: World, artifacts: Path) -> None:
    """The page polls while a run has no summary; new steps appear without a reload, then it settles."""
    from skillopt_daemon.core import paths

    src = paths.runs_dir() / world.run_id
    live = paths.runs_dir() / "train-live-test"
    live.mkdir()
    records = (src / "history.jsonl").read_text().splitlines()
    assert len(records) >= 3
    (live / "history.jsonl").write_text(records[0] + "\n")  # only the baseline so far
    page.goto(f"{server.url}runs/train-live-test")
    assert page.locator("#run-state").inner_text() == "running"
    assert page.locator("table.steps > tbody > tr").count() == 0
    steps = [r for r in records[1:] if json.loads(r)["kind"] == "step"]
    with (live / "history.jsonl").open("a") as fh:
        fh.write(steps[0] + "\n")
    page.locator("table.steps > tbody > tr").first.wait_for(timeout=10_000)
    _shot(page, artifacts, "run-live")
    with (live / "history.jsonl").open("a") as fh:
        fh.write("\n".join(records[2:]) + "\n")
    shutil.copy(src / "summary.json", live / "summary.json")
    deadline = time.monotonic() + 10
    while page.locator("#run-state").inner_text() != "finished":
        assert time.monotonic() < deadline, "the page did not pick up the finished run"
        page.wait_for_timeout(200)
    assert page.locator("table.steps > tbody > tr").count() == len(
        [r for r in records if json.loads(r)["kind"] in ("step", "slow_update")]
    )
    assert page.locator("#run-live[hx-get]").count() == 0  # polling stopped


def test_without_the_token_the_browser_is_refused(browser: Any, server: Any, artifacts: Path) -> None:
    context = browser.new_context()
    try:
        pg = context.new_page()
        response = pg.goto(server.url)
        assert response is not None and response.status == 401
        assert pg.locator("h1").inner_text() == "Token needed"
        assert "skillopt ui" in pg.locator("main").inner_text()
        response = pg.goto(f"{server.url}proposals")
        assert response is not None and response.status == 401
        _shot(pg, artifacts, "refused")
    finally:
        context.close()

"""`skillopt report` says how current its figures are: they follow what a night mined, so before the first
night, or when sessions were stored after the last mining, it says when they were computed and what
updates them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cycle import env, run, seed_sessions  # noqa: F401 (env is a fixture)

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso

pytestmark = pytest.mark.timeout(300)


def test_report_says_when_its_figures_were_computed_and_what_updates_them(env: dict[str, str]) -> None:  # noqa: F811
    seed_sessions(env, n=3, skill=False)
    before = run(env, "report").stdout
    assert (
        "No night has run yet, so no session is counted in these figures (3 session(s) stored): the next "
        "night (or `skillopt sleep run --now`) updates them." in before.replace("\n", " ")
    )
    as_of = json.loads(run(env, "report", "--json").stdout)["as_of"]
    assert (as_of["mined_at"], as_of["sessions_since"]) == (None, 3)

    run(env, "tasks", "mine", "--no-model")
    mined = run(env, "report")
    assert "No night has run yet" not in mined.stdout and "Figures as of" not in mined.stdout
    assert json.loads(run(env, "report", "--json").stdout)["as_of"]["note"] is None

    # A session stored after the mining is not in the figures until the next night mines it.
    db = open_db(Path(env["SKILLOPT_HOME"]) / "data" / "skillopt.db")
    with db.conn:
        db.execute("UPDATE sessions SET updated_at = ? WHERE session_id = 's0'", [utcnow_iso()])
    later = run(env, "report").stdout.replace("\n", " ")
    assert "Figures as of the last mining of your sessions (" in later
    assert (
        "1 session(s) stored since are not counted yet: the next night (or `skillopt sleep run --now`) "
        "updates them." in later
    )

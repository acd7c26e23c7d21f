"""Whole nights for an installed skill, for real: sessions written by the real `claude` CLI → ingest →
mining → replays with the real CLI → scripted optimizer → gate, where the night must refuse to propose.

The scenario (`testkit/night_scenario.py`): the agent's weekly reports fail the project's check until
its skill tells it to end the report with a sign-off line. The negatives here (a leaking candidate, a no-op
edit, a budget cap) each run the night with another optimizer model. That a night learns the rule from the
user's own words, with no model knowing it in advance, is `test_night_learns.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.fixtures import require
from testkit.night_scenario import (
    CHECK,
    World,
    make_world,
    night_script,
    record_sessions,
    restore,
    snapshot,
)

pytestmark = pytest.mark.timeout(1200)

TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth", "design", "sales"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    return Path(str(clis.claude))


@pytest.fixture(scope="module")
def sessions_home(
    tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer, claude_path: Path
) -> World:
    """Eight real sessions in which the user corrects the agent, ingested once for every test here."""
    w = make_world(tmp_path_factory.mktemp("night"), server, claude_path)
    record_sessions(w, TEAMS)
    snapshot(w)
    return w


def test_a_candidate_that_tells_the_agent_to_run_the_check_is_not_a_leak(sessions_home: World) -> None:
    """Quoting the project's check ("run python3 check_report.py before finishing") is a good rule for a
    command check: the replays run the check themselves, and gaming it is caught per replay instead."""
    w = restore(sessions_home)
    w.configure("opt-leak")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "proposed", outcome
    pending = json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"]
    assert len(pending) == 1 and CHECK in w.skillopt("diff", pending[0]["id"]).stdout


def test_a_no_op_edit_is_rejected_by_the_gate(sessions_home: World) -> None:
    w = restore(sessions_home)
    w.configure("opt-noop")
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "no-improvement", outcome
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_budget_too_small_for_the_plan_spends_nothing_and_says_so(sessions_home: World) -> None:
    """The night plans a target's replays before it spends any: a budget that cannot finish the plan leaves
    the target waiting (first in line next night) instead of half-measuring a candidate."""
    w = restore(sessions_home)
    w.configure("opt-useful", max_replays=3)
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    (outcome,) = report["skills"]
    assert outcome["status"] == "waited", outcome
    assert "the night has 3 left (night.max_replays)" in outcome["reason"]
    assert report["spend"]["replays"] == 0
    status = w.skillopt("status").stdout
    assert "report-writer: waited" in status
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []
    history = json.loads(w.skillopt("sleep", "history", "--json").stdout)
    assert history[0]["status"] in ("completed", "budget")


def test_a_family_larger_than_the_whole_night_is_replayed_in_parts(sessions_home: World) -> None:
    """Eight corrected sessions (3 to learn from, read from their sessions; 5 validation groups, one pair
    each) plan 10 replays; a night of 8 can never take them all, so waiting would wait forever. The night
    replays the part that fits (4 groups, enough for the gate to decide on) and says so; the fifth group is
    left for a later night."""
    w = restore(sessions_home)
    w.configure("opt-useful", max_replays=8)
    report = _night(w)
    (outcome,) = report["skills"]
    assert outcome["status"] in ("proposed", "pending"), outcome
    assert "tonight replays 4 of its 5 validation groups" in outcome["gate_plan"]["parted"]
    assert outcome["gate_plan"]["n_items"] == 4
    assert report["spend"]["replays"] <= 8


def _night(w: World) -> dict:  # type: ignore[type-arg]
    return json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)


def _proposal(report: dict) -> str:  # type: ignore[type-arg]
    (outcome,) = report["skills"]
    assert outcome["status"] == "proposed", outcome
    assert outcome["tier"] in ("proven", "likely")
    return str(outcome["proposal_id"])


def test_a_rejected_proposal_is_not_proposed_again_and_a_rerun_buys_no_fresh_budget(
    sessions_home: World,
) -> None:
    """The user rejects the night's proposal; running the night again the same day asks the same question
    again: the gate's ledger refuses to test that candidate a second time and the night says why."""
    w = restore(sessions_home)
    w.configure("opt-useful")
    first = _proposal(_night(w))
    w.skillopt("reject", first, "--reason", "not now")
    again = _night(w)
    (outcome,) = again["skills"]
    assert outcome["status"] == "retracted", outcome
    assert "which you rejected on" in outcome["reason"]
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []


def test_a_rolled_back_version_is_not_proposed_again(sessions_home: World) -> None:
    w = restore(sessions_home)
    w.configure("opt-useful")
    first = _proposal(_night(w))
    w.skillopt("approve", first)
    w.skillopt("rollback", "report-writer")
    (outcome,) = _night(w)["skills"]
    assert outcome["status"] == "retracted", outcome
    assert "which you rolled back on" in outcome["reason"]


def test_the_night_trains_from_the_file_the_agent_reads(sessions_home: World) -> None:
    """The approved rule is removed by hand from the installed SKILL.md. The night records the hand edit
    before it replays and measures from the edited file (which fails the check again), so it proposes the
    rule again on top of the user's edit instead of seeing "no improvement" against a version nobody reads."""
    w = restore(sessions_home)
    w.configure("opt-useful")
    first = _proposal(_night(w))
    w.skillopt("approve", first)
    installed = w.home / ".claude" / "skills" / "report-writer" / "SKILL.md"
    # the skill as the user first wrote it (the world's snapshot), plus a line of their own
    snapshot_home = w.root.parent / f"{w.root.name}-snapshot" / "home"
    original = snapshot_home / ".claude" / "skills" / "report-writer" / "SKILL.md"
    assert "Reviewed-by" not in original.read_text()
    installed.write_text(original.read_text() + "\nKeep the bullet points short.\n")
    report = _night(w)
    history = w.skillopt("history", "report-writer").stdout
    assert "hand-edit" in history
    (outcome,) = report["skills"]
    assert outcome["baseline"] == 0.0, outcome
    assert outcome["status"] == "proposed", outcome
    # the proposal builds on the user's edit: their line is there, unchanged, next to the rule
    diff = w.skillopt("diff", outcome["proposal_id"]).stdout
    assert "Keep the bullet points short." in diff


def test_a_dry_run_spends_no_share_and_writes_no_evidence(sessions_home: World) -> None:
    """A rehearsal replays and decides, but touches nothing the real night reads: no ledger row (a candidate's
    share of the error budget is not spent), no pending evidence, no proposal. The real night after it then
    proposes at the first candidate's full share."""
    import sqlite3

    w = restore(sessions_home)
    w.configure("opt-useful")
    dry = json.loads(w.skillopt("sleep", "run", "--now", "--dry-run", "--json").stdout)
    (outcome,) = dry["skills"]
    assert outcome["status"] in ("dry-run", "pending"), outcome
    (db,) = w.skillopt_home.rglob("skillopt.db")
    with sqlite3.connect(db) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert con.execute("SELECT COUNT(*) FROM gate_ledger").fetchone()[0] == 0
        assert con.execute("SELECT COUNT(*) FROM gate_budgets").fetchone()[0] == 0
        assert con.execute("SELECT COUNT(*) FROM pending_evidence").fetchone()[0] == 0
        assert "versions" in tables
        assert con.execute("SELECT COUNT(*) FROM versions WHERE state = 'proposed'").fetchone()[0] == 0
    real = _night(w)
    _proposal(real)
    (shown,) = real["skills"]
    with sqlite3.connect(db) as con:
        shares = [r[0] for r in con.execute("SELECT share FROM gate_ledger ORDER BY idx")]
    assert shares and shares[0] == pytest.approx(0.8), shown

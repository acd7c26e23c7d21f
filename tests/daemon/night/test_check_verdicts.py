"""Tasks worth replaying: a task scores by its check only when the check can tell right from wrong at its
commit; otherwise by the user's rules, or it is left out, and `skillopt tasks show` says which and why.

Real repositories, real checks run in sandbox workspaces at the pinned commit, the real store and CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import sqlite_utils

from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.learning.replay import tasks_for_skill
from skillopt_daemon.night.mining.mine import Attempt, CommandRun, Family, save_families
from testkit import cli

RULE = "the report must end with the line Reviewed-by: bot"
GOOD = "python3 check_report.py"  # fails before the work, passes after it
WEAK = "python3 check_syntax.py"  # passes whatever is done
ONLINE = "python3 check_registry.py"  # needs the network


def make_repo(root: Path, counter: Path) -> tuple[Path, str]:
    repo = root / "reports"
    repo.mkdir(parents=True)
    (repo / "check_report.py").write_text(
        f"import os, sys\nopen({str(counter)!r}, 'a').write('ran\\n')\n"
        "text = open('report.md').read() if os.path.exists('report.md') else ''\n"
        "sys.exit(0 if text.rstrip().endswith('Reviewed-by: bot') else 1)\n"
    )
    (repo / "check_syntax.py").write_text("import sys\nsys.exit(0)\n")
    (repo / "check_registry.py").write_text(
        "import socket\nsocket.getaddrinfo('registry.invalid', 443)\nprint('registry reachable')\n"
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return repo, sha


def attempt(n: int, repo: Path | None, sha: str | None, runs: list[tuple[str, int, str]]) -> Attempt:
    return Attempt(
        key=f"claude-code:s{n}:t1",
        tool="claude-code",
        session_id=f"s{n}",
        prompt=f"write the weekly report for team {n} into report.md",
        project_path=str(repo) if repo else None,
        repo_commit=sha,
        started_at=f"2026-11-0{n}T10:00:00Z",
        commands=[CommandRun(cmd, code, output=out) for cmd, code, out in runs],
        corrections=[f"no, {RULE}"],
        correction_points=[1],
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "so"))
    return tmp_path


def mined(home: Path, *, rubric: list[str], checks: list[str]) -> tuple[sqlite_utils.Database, Path, str]:
    counter = home / "check-runs.txt"
    repo, sha = make_repo(home, counter)
    corrected = [(GOOD, 1, "report is missing its sign-off"), (GOOD, 0, ""), (WEAK, 0, ""), (ONLINE, 0, "")]
    attempts = [
        attempt(1, repo, sha, corrected),  # the check discriminates
        attempt(2, repo, sha, [*corrected[:3], (ONLINE, 1, "socket.gaierror: Name or service not known")]),
        attempt(3, repo, sha, [(GOOD, 1, "report is missing its sign-off")]),  # nobody fixed it
        attempt(4, None, None, corrected),  # no pinned commit: only the session shows it can fail
    ]
    fam = Family(
        id="fam-reports",
        name="write the weekly report",
        attempts=attempts,
        checks=checks,
        rubric=rubric,
        skill_name="report-writer",
        splits={a.key: "val" for a in attempts},
    )
    db = open_db()
    save_families(db, [fam], seed=1)
    return db, counter, sha


def scoring(db: sqlite_utils.Database) -> dict[str, tuple[str, str]]:
    return {r["session_id"]: (r["scoring"], r["scoring_why"]) for r in db.query("SELECT * FROM tasks")}


def test_mining_stores_what_the_sessions_show_and_the_night_checks_the_rest_at_the_commit(home: Path) -> None:
    db, counter, _ = mined(home, rubric=[RULE], checks=[GOOD])
    before = scoring(db)
    assert before["s1"][0] == "check" and "not yet run before the work" not in before["s1"][1]
    assert "failed earlier in its session and passed at its end" in before["s1"][1]
    assert before["s3"] == (
        "rubric",
        f"`{GOOD}` still failed when the session ended and nobody fixed it, so it can never pass; "
        "scored by the user's stated rules instead",
    )
    assert not counter.exists()  # mining never runs a check

    tasks = {t.id: t for t in tasks_for_skill(db, "report-writer", probe_root=home / "ws")}
    after = scoring(db)
    assert after["s1"] == (
        "check",
        f"`{GOOD}` failed before the work at this commit and passed at the end of its session",
    )
    assert after["s2"][0] == "rubric" and "the session's outcome was failure" in after["s2"][1]
    assert after["s4"][0] == "check" and "the session has no pinned commit" in after["s4"][1]
    assert counter.read_text().count("ran") == 1  # one probe: only s1 needed one
    by_session = {db["tasks"].get(i)["session_id"]: t for i, t in tasks.items()}
    assert by_session["s1"].checks == [GOOD] and by_session["s1"].scoring == "check"
    assert by_session["s3"].checks == [] and by_session["s3"].rubric == [RULE]

    tasks_for_skill(db, "report-writer", probe_root=home / "ws")
    assert counter.read_text().count("ran") == 1  # probes are cached: a check runs at a commit once ever
    assert not list((home / "ws").iterdir())  # probe workspaces are removed


def test_weak_and_offline_checks_are_dropped_and_tasks_left_without_a_check_or_rule_are_left_out(
    home: Path,
) -> None:
    db, _, _ = mined(home, rubric=[], checks=[WEAK, ONLINE])
    tasks = tasks_for_skill(db, "report-writer", probe_root=home / "ws")
    assert tasks == []
    why = scoring(db)
    assert why["s1"][0] == "excluded"
    assert (
        f"`{WEAK}` already passes before any work at this commit, so it cannot tell right from wrong"
        in (why["s1"][1])
    )
    assert f"`{ONLINE}` needs the network (it could not connect before the work)" in why["s1"][1]
    assert f"`{ONLINE}` needs the network (its last run could not connect)" in why["s2"][1]
    assert why["s2"][1].endswith("no rule from the user to judge it by: left out of replays")


def test_a_weak_check_next_to_a_good_one_is_kept_as_a_guard(home: Path) -> None:
    db, _, _ = mined(home, rubric=[RULE], checks=[GOOD, WEAK])
    tasks = tasks_for_skill(db, "report-writer", probe_root=home / "ws")
    first = next(t for t in tasks if t.prompt.endswith("team 1 into report.md"))
    assert first.checks == [GOOD]
    assert first.guards == [WEAK]


def test_a_check_that_passes_before_the_work_guards_a_rubric_task(home: Path) -> None:
    """It cannot tell right from wrong, so the rubric scores the task, but the check stays: a replay that
    breaks it did damage and fails (`night/learning/replay.py`)."""
    db, _, _ = mined(home, rubric=[RULE], checks=[WEAK])
    tasks = tasks_for_skill(db, "report-writer", probe_root=home / "ws")
    first = next(t for t in tasks if t.prompt.endswith("team 1 into report.md"))
    assert first.scoring == "rubric" and first.checks == [] and first.guards == [WEAK]


def test_tasks_show_says_how_each_task_is_scored_and_why(home: Path) -> None:
    db, _, _ = mined(home, rubric=[RULE], checks=[GOOD])
    tasks_for_skill(db, "report-writer", probe_root=home / "ws")
    out = cli.here("tasks", "show", "--family", "fam-reports")
    assert out.returncode == 0, out.stdout
    assert "scored by" in out.stdout
    assert "scored by rubric: " in out.stdout and "nobody fixed it" in out.stdout
    data = json.loads(cli.here("tasks", "show", "--family", "fam-reports", "--json").stdout)
    assert sorted(t["scored_by"] for t in data["tasks"]) == ["check", "check", "rubric", "rubric"]
    one = next(t for t in data["tasks"] if t["session"] == "s3")
    single = cli.here("tasks", "show", one["id"])
    assert "scored_by: rubric" in single.stdout and "nobody fixed it" in single.stdout

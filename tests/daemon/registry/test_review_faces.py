"""What a reviewer reads about proposals: a one-line summary of each change, how sure the gate is (a
`likely` proposal is never shown as proven), decided items with their reasons, `diff` without an id and
with `--json`, "did you mean" for a mistyped tool or backend, and families of recurring work shown as
families, not skills."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso

LIKELY = {
    "delta": 0.25,
    "tier": "likely",
    "tier_note": "4 of 4 validation tasks improved; e-value 13.3 ≥ 12.5 (likely, false-proposal rate ≤ 10%), "
    "not yet proven (needs 25)",
}
NEW_SKILL = (
    "---\n"
    "name: fix-lint\n"
    "description: Fix lint errors without silencing them. Use when the linter fails.\n"
    "---\n"
    "\n"
    "# Fix lint\n"
)


def _imported(env: Any) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)


def _propose(
    env: Any,
    text: str,
    evidence: dict[str, Any] | None = None,
    name: str = "tidy-commits",
    trained: bool = False,
) -> str:
    """Register a proposal through `skillopt propose`; `trained` stands in for a night's proposal."""
    args = ["propose", name, str(env.candidate(text, name=name))]
    if evidence is not None:
        args += ["--evidence", json.dumps(evidence)]
    if trained:
        args.append("--trained")
    return str(env.cli_json(*args)["id"])


# -- what a change is, in one line --------------------------------------------------------------------------


def test_status_says_what_each_proposal_changes_in_one_line(env: Any) -> None:
    _imported(env)
    _propose(env, env.EDITED, {"delta": 0.25})
    _propose(env, NEW_SKILL, {"new_skill": True}, name="fix-lint")
    items = {p["skill"]: p for p in env.cli_json("status")["pending"]["items"]}
    assert items["tidy-commits"]["summary"] == "+1 line: Run the tests before committing."
    assert items["fix-lint"]["summary"] == (
        "new skill: Fix lint errors without silencing them. Use when the linter fails."
    )
    out = env.cli("status", check=True).stdout
    assert "+1 line: Run the tests before committing." in out
    assert "new skill: Fix lint errors without silencing them." in out


def test_a_summary_counts_added_and_removed_lines() -> None:
    from skillopt_daemon.service.proposals import describe_change
    from skillopt_lib.skill import SkillBundle

    head = "---\nname: a\ndescription: d\n---\n\n"
    old = SkillBundle.from_text(head + "- keep\n- old rule\n")
    new = SkillBundle.from_text(head + "- keep\n- never silence a warning with `# noqa`\n- run ruff\n")
    assert describe_change(old, new) == "+2 lines, -1 line: never silence a warning with `# noqa`"
    assert describe_change(new, old) == "+1 line, -2 lines: old rule"
    assert describe_change(old, SkillBundle.from_text(head + "- keep\n")) == "-1 line: removed old rule"
    script = old.with_file("scripts/check.sh", "#!/bin/sh\nmake lint\n")
    assert describe_change(old, script) == "+2 lines, +1 file: #!/bin/sh"


def test_decided_proposals_show_what_was_decided_and_why(env: Any) -> None:
    _imported(env)
    rejected = _propose(env, env.ORIGINAL + "- Squash everything.\n")
    env.cli("reject", rejected, "--reason", "we never squash on main", check=True)
    approved = _propose(env, env.EDITED)
    env.cli("approve", approved, check=True)
    decided = {d["id"]: d for d in env.cli_json("status")["decided"]["items"]}
    assert decided[rejected]["decision"] == "rejected"
    assert decided[rejected]["reason"] == "we never squash on main"
    assert decided[approved]["decision"] == "approved"
    assert decided[approved]["reason"] == "approved with skillopt approve"
    assert decided[approved]["summary"] == "+1 line: Run the tests before committing."

    env.cli("rollback", "tidy-commits", "--reason", "the tests take an hour", check=True)
    decided = {d["id"]: d for d in env.cli_json("status")["decided"]["items"]}
    assert decided[approved]["decision"] == "rolled back"
    assert "the tests take an hour" in decided[approved]["reason"]
    out = env.cli("status", check=True).stdout
    assert "Recently decided" in out and "we never squash on main" in out and "the tests take an hour" in out


def test_only_the_decisions_shown_are_described(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`status` shows the newest few decisions: those, and only those, are read and diffed, and they are
    the first few of the whole list, newest decision first."""
    from skillopt_daemon.registry import Registry
    from skillopt_daemon.service import proposals

    _imported(env)
    for n in range(4):
        env.cli("reject", _propose(env, env.ORIGINAL + f"- Rule {n}.\n"), "--reason", f"no {n}", check=True)
    db = open_db()
    try:
        reg = Registry(db)
        every = proposals.decided_items(reg)
        described: list[str] = []
        item = proposals.proposal_item
        monkeypatch.setattr(proposals, "proposal_item", lambda r, v: described.append(v.id) or item(r, v))
        newest = proposals.decided_items(reg, limit=2)
    finally:
        db.conn.close()
    assert [d["reason"] for d in every] == ["no 3", "no 2", "no 1", "no 0"]
    assert [{**d, "age": "", "decided": ""} for d in newest] == [
        {**d, "age": "", "decided": ""} for d in every[:2]
    ]
    assert described == [d["id"] for d in every[:2]]


# -- how sure the gate is -----------------------------------------------------------------------------------


def test_a_likely_proposal_is_labelled_likely_not_yet_proven_everywhere(env: Any) -> None:
    _imported(env)
    likely = _propose(env, env.EDITED, LIKELY, trained=True)
    (item,) = env.cli_json("status")["pending"]["items"]
    assert item["tier"] == "likely" and item["proven"] is False
    assert item["tier_label"] == "likely, not yet proven" and item["tier_note"] == LIKELY["tier_note"]
    status = env.cli("status", check=True).stdout
    assert "likely, not yet proven" in status and "not yet proven (needs 25)" in status
    assert "proven" not in status.replace("not yet proven", "")

    shown = env.cli("diff", likely, check=True)
    assert "tier: likely, not yet proven: 4 of 4 validation tasks improved" in shown.stderr
    view = json.loads(env.cli("diff", likely, "--json", check=True).stdout)
    assert view["proposal"]["tier_label"] == "likely, not yet proven" and not view["proposal"]["proven"]


def test_a_nights_proposal_from_before_tiers_is_proven(env: Any) -> None:
    """A night's evidence with the gate's record but no tier (written before tiers existed) is proven."""
    _imported(env)
    gate = {"gate": "anytime", "reason": "4 of 4 improved", "stats": {"e_value": 30.0}}
    pid = _propose(env, env.EDITED, {"delta": 0.25, "gate": gate}, trained=True)
    (item,) = env.cli_json("status")["pending"]["items"]
    assert item["tier"] == "proven" and item["proven"] is True and item["tier_label"] == "proven"
    assert "tier: proven" in env.cli("diff", pid, check=True).stderr


def test_a_hand_made_proposal_is_not_replayed_never_proven(env: Any) -> None:
    """`skillopt propose` registers what nobody replayed: its evidence is the user's word, so it is `not
    replayed` wherever it is shown (status, diff, the dashboard), even when that evidence says `proven`."""
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    _imported(env)
    made = env.cli(
        "propose", "tidy-commits", str(env.candidate(env.EDITED)), "--evidence", '{"tier": "proven"}'
    )
    assert "not replayed: made by hand" in made.stdout
    pid = str(env.cli_json("status")["pending"]["items"][0]["id"])
    (item,) = env.cli_json("status")["pending"]["items"]
    assert item["tier"] == "not replayed" and item["proven"] is False
    assert item["tier_label"] == "not replayed" and "never auto-approved" in item["tier_note"]
    status = env.cli("status", check=True).stdout
    assert "not replayed" in status and "proven" not in status.replace("never proven", "")
    assert "skillopt replay --skill FOLDER --prompt TASK" in status
    shown = env.cli("diff", pid, check=True).stderr
    assert "tier: not replayed: made by hand" in shown and "tier: proven" not in shown
    assert json.loads(env.cli("diff", pid, "--json", check=True).stdout)["proposal"]["proven"] is False
    # `--trained` without the gate's record is no more measured than a plain hand edit.
    bare = _propose(env, env.ORIGINAL + "- Squash nothing.\n", {"delta": 0.1}, trained=True)
    assert (
        json.loads(env.cli("diff", bare, "--json", check=True).stdout)["proposal"]["tier"] == "not replayed"
    )

    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        page = client.get(f"/proposals/{pid}").text
        assert 'class="badge proven"' not in page and "not replayed" in page
        assert "no gate statistics" in page  # and now no green badge beside it
        assert 'class="badge proven"' not in client.get("/proposals").text
        assert "not replayed" in client.get("/").text


# -- diff ---------------------------------------------------------------------------------------------------


def test_diff_without_an_id_shows_the_newest_pending_proposal(env: Any) -> None:
    _imported(env)
    none = env.cli("diff", check=True)
    assert "No pending proposals" in none.stdout
    assert json.loads(env.cli("diff", "--json", check=True).stdout)["proposal"] is None
    _propose(env, env.ORIGINAL + "- Older rule.\n")
    newest = _propose(env, env.EDITED)
    out = env.cli("diff", check=True)
    assert newest[:8] in out.stderr and "+- Run the tests before committing.\n" in out.stdout


def test_diff_json_carries_the_diff_and_what_the_list_says(env: Any) -> None:
    _imported(env)
    pid = _propose(env, env.EDITED, {"delta": 0.25})
    view = json.loads(env.cli("diff", pid, "--json", check=True).stdout)
    assert view["ref"] == pid and view["title"].startswith("tidy-commits@v2")
    assert "+- Run the tests before committing.\n" in view["diff"]
    assert view["proposal"]["summary"] == "+1 line: Run the tests before committing."
    assert view["proposal"]["parent"] == "tidy-commits@v1"
    ranged = json.loads(env.cli("diff", "tidy-commits@v1..v2", "--json", check=True).stdout)
    assert ranged["diff"] == view["diff"] and ranged["proposal"] is None


# -- names on the command line ------------------------------------------------------------------------------


def test_a_mistyped_tool_gets_did_you_mean(env: Any) -> None:
    _imported(env)
    for args in (
        ("sessions", "list", "--tool", "claud-code"),
        ("skills", "import", "--tool", "claude-cod"),
        ("skills", "enable", "tidy-commits", "--target", "claude-cde:user"),
        ("config", "set", "tools.claude_cod.enabled", "false"),
    ):
        r = env.cli(*args)
        assert r.returncode != 0 and "did you mean 'claude-code'?" in r.stderr, (args, r.stderr)
    r = env.cli("install", "codx", "--dry-run")
    assert r.returncode != 0 and "did you mean 'codex'?" in r.stderr, r.stderr


def test_a_mistyped_backend_is_refused_when_set_and_the_file_is_unchanged(env: Any) -> None:
    env.cli("config", "set", "optimizer.model", "gpt-5", check=True)
    config = Path(env.cli("config", "path", check=True).stdout.strip())
    before = config.read_bytes()
    r = env.cli("config", "set", "optimizer.backend", "opnai")
    assert r.returncode == 6
    assert "unknown backend 'opnai' (did you mean 'openai'?)" in r.stderr
    assert "valid backends:" in r.stderr and "anthropic" in r.stderr and "claude-code-chat" in r.stderr
    assert config.read_bytes() == before
    env.cli("config", "set", "optimizer.backend", "openai", check=True)
    assert env.cli("config", "get", "optimizer.backend", check=True).stdout.strip() == "openai"


def test_a_mistyped_backend_in_a_training_run_gets_did_you_mean(env: Any) -> None:
    r = env.cli("train", "--env", "house-style", "--set", "agent.backend=opnai", "--set", "agent.model=m")
    assert r.returncode == 6 and "did you mean 'openai'?" in r.stderr, r.stderr


# -- families of recurring work ----------------------------------------------------------------------------


def _night(summary: dict[str, Any]) -> None:
    db = open_db()
    now = utcnow_iso()
    db.table("night_runs").insert(
        {
            "id": "n1",
            "trigger": "manual",
            "status": "completed",
            "dry_run": 0,
            "started_at": now,
            "finished_at": now,
            "summary_json": json.dumps(summary),
        }
    )
    db.conn.close()


def test_status_shows_an_undrafted_family_as_a_family_of_recurring_work(env: Any) -> None:
    mined = "make test is failing in figure out why and fix"
    _night(
        {
            "skills": [
                {
                    "skill": mined,
                    "status": "undecidable",
                    "reason": "3 validation tasks cannot decide at 0.8",
                    "tasks": 6,
                    "new": True,
                    "family": "fam-1",
                    "run_dir": None,
                }
            ]
        }
    )
    out = env.cli("status", check=True).stdout
    assert f"new skill {mined}" not in out
    assert f"no skill for the family '{mined}' (6 recurring tasks): waiting for more sessions" in out


def test_status_shows_what_a_family_needs_instead_of_the_min_tasks_promise(env: Any) -> None:
    _night(
        {
            "families": [
                {
                    "family": "fam-2",
                    "name": "add the changelog entry",
                    "tasks": 3,
                    "reason": "too few tasks (3; a new skill needs 4)",
                    "needs": "2 more sessions of this kind",
                },
                {
                    "family": "fam-3",
                    "name": "bump the version",
                    "tasks": 2,
                    "reason": "too few tasks (2; a new skill needs 4)",
                },
            ]
        }
    )
    out = env.cli("status", check=True).stdout
    assert "'add the changelog entry' (3 recurring tasks): waiting for 2 more sessions of this kind" in out
    assert "a new skill needs 4)" not in out.split("bump the version")[0]
    assert "'bump the version' (2 recurring tasks): too few tasks (2; a new skill needs 4)" in out


def test_the_dashboard_shows_summaries_tiers_and_reasons(env: Any) -> None:
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    _imported(env)
    likely = _propose(env, env.EDITED, LIKELY, trained=True)
    gone = _propose(env, env.ORIGINAL + "- Squash everything.\n")
    env.cli("reject", gone, "--reason", "we never squash on main", check=True)
    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        listing = client.get("/proposals").text
        waiting = listing.split("<h2>Decided</h2>")[0]
        assert "+1 line: Run the tests before committing." in waiting
        assert "likely, not yet proven" in waiting and 'class="badge proven"' not in waiting
        decided = listing.split("<h2>Decided</h2>")[1]
        assert "we never squash on main" in decided and "+1 line: Squash everything." in decided
        page = client.get(f"/proposals/{likely}").text
        assert "likely, not yet proven" in page and "not yet proven (needs 25)" in page
        assert 'id="proposal-summary">+1 line: Run the tests before committing.' in page
        overview = client.get("/").text
        assert (
            "likely, not yet proven" in overview and "+1 line: Run the tests before committing." in overview
        )
        env.cli("approve", likely, check=True)
        page = client.get("/skills/tidy-commits").text
        assert 'id="rollback"' in page
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        done = client.post(
            "/skills/tidy-commits/rollback",
            data={"csrf_token": csrf, "reason": "too slow"},
            follow_redirects=False,
        )
        assert done.status_code == 303, done.text
        decided = client.get("/proposals").text.split("<h2>Decided</h2>")[1]
        assert "rolled back" in decided and "too slow" in decided

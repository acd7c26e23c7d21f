"""The review CLI as a new user meets it: the real `skillopt` executable, isolated homes, exit codes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def test_new_user_flow_import_propose_diff_approve_rollback_history(env) -> None:
    env.write_skill()
    original = env.skill_file().read_bytes()

    out = env.run("skills", "import", check=True)
    assert "tidy-commits (claude-code:user): imported as tidy-commits@v1" in out.stdout

    listed = env.cli_json("skills", "list")
    assert listed == [
        {
            "skill": "tidy-commits",
            "versions": 1,
            "pending": 0,
            "targets": [{"target": "claude-code:user", "active": "v1", "enabled": True}],
        }
    ]

    cand = env.candidate()
    out = env.run(
        "propose",
        "tidy-commits",
        str(cand / "SKILL.md"),
        "--evidence",
        '{"delta": 0.25, "confidence": 0.9}',
        check=True,
    )
    assert "Proposed tidy-commits@v2" in out.stdout
    assert env.skill_file().read_bytes() == original

    status = env.run("status", check=True).stdout
    assert "Pending proposals" in status and "+0.250 (90% conf.)" in status
    assert "Daemon: not running" in status and "not running" in status.split("Nightly:")[1]
    pending = env.json("status")["pending"]["items"]
    assert len(pending) == 1 and pending[0]["skill"] == "tidy-commits"
    pid = pending[0]["id"][:6]

    diff = env.run("diff", pid, check=True)
    assert "+- Run the tests before committing.\n" in diff.stdout
    assert diff.stdout.startswith("--- tidy-commits@v1/SKILL.md\n+++ tidy-commits@v2/SKILL.md\n")
    assert env.cli("diff", "tidy-commits@v1..v2", check=True).stdout == diff.stdout

    out = env.run("approve", pid, check=True)
    assert "Approved tidy-commits@v2" in out.stdout and "installed at claude-code:user" in out.stdout
    assert env.skill_file().read_text() == env.EDITED

    out = env.run("rollback", "tidy-commits", check=True)
    assert "tidy-commits@v1" in out.stdout
    assert env.skill_file().read_bytes() == original

    hist = env.json("history", "tidy-commits")
    assert [e["action"] for e in hist["events"]] == ["import", "propose", "approve", "install", "rollback"]
    assert [(v["version"], v["origin"], v["state"]) for v in hist["versions"]] == [
        (1, "imported", "approved"),
        (2, "proposed", "approved"),
    ]
    assert all(e["at"].endswith("Z") for e in hist["events"])  # stored in UTC
    human = env.cli("history", "tidy-commits", check=True).stdout
    assert "rollback" in human and "tidy-commits@v2" in human

    shown = env.cli_json("skills", "show", "tidy-commits")
    assert shown["version"]["label"] == "tidy-commits@v1" and shown["text"] == env.ORIGINAL
    assert env.cli_json("skills", "show", "tidy-commits", "--version", "v2")["text"] == env.EDITED


def test_errors_have_documented_exit_codes_and_hints(env) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)

    bad = env.root / "bad" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\nname: Tidy Commits\ndescription: x\n---\nbody\n")
    r = env.cli("propose", "tidy-commits", str(bad))
    assert r.returncode == 9
    assert "line 2" in r.stderr and "name-format" in r.stderr

    r = env.cli("approve", "deadbeef")
    assert r.returncode == 3 and "no version or proposal matches" in r.stderr

    r = env.cli("rollback", "tidy-commits")
    assert r.returncode == 3 and "no earlier version" in r.stderr

    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    r = env.cli("reject", vid)
    assert r.returncode == 2 and "--reason" in r.stderr  # not at a terminal: nobody to ask
    env.cli("reject", vid, "--reason", "not now", check=True)
    r = env.cli("approve", vid)
    assert r.returncode == 4 and "already rejected" in r.stderr and "→" in r.stderr

    r = env.cli("history", "nope")
    assert r.returncode == 3 and "no skill named 'nope'" in r.stderr


def test_hand_edit_wins_through_the_cli(env) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    mine = env.ORIGINAL + "- My rule.\n"
    env.skill_file().write_text(mine)
    r = env.cli("approve", vid)
    assert r.returncode == 4
    assert "edited by hand" in r.stderr and "--force" in r.stderr
    assert env.skill_file().read_text() == mine
    hist = env.cli_json("history", "tidy-commits")
    assert [v["origin"] for v in hist["versions"]] == ["imported", "proposed", "hand-edit"]
    r = env.cli("approve", vid, "--force", check=True)
    assert env.skill_file().read_text() == env.EDITED
    # The hand edit is one rollback away.
    env.cli("rollback", "tidy-commits", "--to", "v3", check=True)
    assert env.skill_file().read_text() == mine


def test_invalid_skill_on_import_is_reported_and_others_still_import(env) -> None:
    env.write_skill()
    env.write_skill("broken", "---\nname: broken\ndescription: ok\nmetadata: [x]\n---\n")
    r = env.cli("skills", "import")
    assert r.returncode == 9
    assert "tidy-commits (claude-code:user): imported" in r.stdout
    assert "line 4" in r.stderr and "metadata-map" in r.stderr
    assert [s["skill"] for s in env.cli_json("skills", "list")] == ["tidy-commits"]


def test_unwritable_target_exits_11(env) -> None:
    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    env.claude_home.mkdir(parents=True)
    (env.claude_home / "skills").write_text("in the way")
    r = env.cli("approve", vid, "--target", "claude-code:user")
    assert r.returncode == 11 and "not a folder" in r.stderr
    assert env.cli_json("status")["pending"]["items"][0]["id"] == vid


def test_corrupt_database_is_refused_with_exit_5(env) -> None:
    db = env.skillopt_home / "data" / "skillopt.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database at all" * 100)
    r = env.run("status")
    assert r.returncode == 5
    assert "cannot be read" in r.stderr and "move it aside" in r.stderr
    assert "Traceback" not in r.stderr


def test_database_from_a_newer_skillopt_is_refused_and_not_modified(env) -> None:
    env.cli("status", check=True)  # creates the database
    db = env.skillopt_home / "data" / "skillopt.db"
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO _migrations (name, applied_at) VALUES ('m999_future', '2030-01-01T00:00:00.000Z')"
    )
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = db.read_bytes()
    for args in (["status"], ["skills", "list"], ["approve", "abc"]):
        r = env.cli(*args)
        assert r.returncode == 5, args
        assert "newer skillopt" in r.stderr and "not modified" in r.stderr
    assert db.read_bytes() == before


@pytest.mark.slow
def test_locked_database_is_reported_with_exit_5(env) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    vid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    db = env.skillopt_home / "data" / "skillopt.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                con = sqlite3.connect({str(db)!r}, isolation_level=None)
                con.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        r = env.cli("approve", vid)
        assert r.returncode == 5, r.stderr
        assert "locked by another process" in r.stderr and "Traceback" not in r.stderr
    finally:
        holder.kill()
        holder.wait()
    assert env.skill_file().read_text() == env.ORIGINAL
    env.cli("approve", vid, check=True)
    assert env.skill_file().read_text() == env.EDITED


def test_doctor_reports_keys_set_without_values(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret-value")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = env.cli("doctor", "--json")
    assert r.returncode == 0, r.stderr
    assert "sk-ant-very-secret-value" not in r.stdout + r.stderr
    data = json.loads(r.stdout)
    keys = {c["name"]: c["detail"] for c in data["checks"] if c["group"] == "API keys"}
    assert keys["ANTHROPIC_API_KEY"] == "set"
    assert keys["OPENAI_API_KEY"] == "not set"
    groups = {c["group"] for c in data["checks"]}
    assert {"paths", "database", "config", "agent CLIs", "API keys"} <= groups
    db = [c for c in data["checks"] if c["group"] == "database"]
    assert db[0]["level"] == "ok" and "migrations" in db[0]["detail"]
    human = env.cli("doctor", check=True).stdout
    assert "ANTHROPIC_API_KEY" in human


def test_doctor_fails_on_a_corrupt_database(env) -> None:
    db = env.skillopt_home / "data" / "skillopt.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"garbage" * 1000)
    r = env.cli("doctor")
    assert r.returncode == 5
    assert "cannot be read" in r.stdout


def test_config_show_get_set_path(env) -> None:
    path = Path(env.cli("config", "path", check=True).stdout.strip())
    assert path == env.skillopt_home / "config" / "config.toml"
    assert env.cli("config", "get", "night.schedule", check=True).stdout.strip() == "17 3 * * *"

    env.cli("config", "set", "night.schedule", "0 4 * * *", check=True)
    env.cli("config", "set", "night.max_cost_usd", "2.5", check=True)
    env.cli("config", "set", "night.auto_approve", '["tidy-commits"]', check=True)
    env.cli("config", "set", "tools.claude.enabled", "false", check=True)
    assert env.cli("config", "get", "night.schedule", check=True).stdout.strip() == "0 4 * * *"
    assert json.loads(env.cli("config", "get", "night.auto_approve", check=True).stdout) == ["tidy-commits"]
    assert env.cli("config", "get", "tools.claude-code.enabled", check=True).stdout.strip() == "false"
    text = path.read_text()
    assert 'schedule = "0 4 * * *"' in text and "max_cost_usd = 2.5" in text
    assert oct(path.stat().st_mode & 0o777) == "0o600"

    shown = env.cli_json("config", "show")
    assert shown["night"]["max_cost_usd"] == 2.5
    toml_out = env.cli("config", "show", check=True).stdout
    assert "[night]" in toml_out

    r = env.cli("config", "set", "night.shedule", "x")
    assert r.returncode == 6 and "unknown configuration key 'night.shedule'" in r.stderr
    assert "schedule" in r.stderr  # the hint lists the real keys
    r = env.cli("config", "set", "night.max_tokens", "lots")
    assert r.returncode == 6 and "night.max_tokens" in r.stderr
    r = env.cli("config", "get", "nope.key")
    assert r.returncode == 6 and "unknown configuration key 'nope'" in r.stderr
    r = env.cli("config", "set", "tools.vim.enabled", "true")
    assert r.returncode == 6 and "tools.vim" in r.stderr
    # A rejected value leaves the file as it was.
    assert path.read_text() == text


def test_every_list_command_has_json(env) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    for args in (
        ["status"],
        ["skills", "list"],
        ["history", "tidy-commits"],
        ["skills", "import"],
        ["doctor"],
    ):
        json.loads(env.cli(*args, "--json", check=True).stdout)


def test_config_show_masks_secret_values_but_not_budgets(env) -> None:
    from skillopt_daemon.core.config import masked

    data = {
        "agent": {"api_key": "sk-live-123", "api_key_env": "OPENAI_API_KEY", "max_tokens": 5},
        "auth_token": "",
    }
    assert masked(data) == {
        "agent": {"api_key": "****", "api_key_env": "OPENAI_API_KEY", "max_tokens": 5},
        "auth_token": "",
    }
    from skillopt_daemon.core.config import NightSettings

    shown = env.cli_json("config", "show")
    default = NightSettings().max_tokens
    assert shown["night"]["max_tokens"] == default
    assert env.cli("config", "get", "night.max_tokens", check=True).stdout.strip() == str(default)


def test_disabling_a_target_keeps_approvals_from_installing_there(env) -> None:
    env.write_skill()
    env.run("skills", "import", check=True)
    env.run("skills", "disable", "tidy-commits", "--target", "claude-code:user", check=True)
    listed = env.cli_json("skills", "list")
    assert listed[0]["targets"] == [{"target": "claude-code:user", "active": "v1", "enabled": False}]
    cand = env.candidate()
    env.run("propose", "tidy-commits", str(cand / "SKILL.md"), check=True)
    pending = env.cli_json("status")["pending"]["items"]
    refused = env.cli("approve", pending[0]["id"])
    assert refused.returncode == 4 and "--target" in refused.stderr
    assert env.skill_file().read_text() == env.ORIGINAL
    env.run("skills", "enable", "tidy-commits", "--target", "claude-code:user", check=True)
    env.run("approve", pending[0]["id"], check=True)
    assert env.skill_file().read_text() == env.EDITED
    missing = env.cli("skills", "disable", "tidy-commits", "--target", "codex:user")
    assert missing.returncode == 3


# -- the newest pending proposal, as `diff` takes it ---------------------------------------------------------


def _two_pending(env) -> tuple[str, str]:
    env.write_skill()
    env.cli("skills", "import", check=True)
    older = env.cli_json("propose", "tidy-commits", str(env.candidate(env.ORIGINAL + "- Older rule.\n")))[
        "id"
    ]
    newest = env.cli_json("propose", "tidy-commits", str(env.candidate(env.EDITED)))["id"]
    return older, newest


def test_approve_and_reject_without_an_id_take_the_newest_pending_and_say_which(env) -> None:
    older, newest = _two_pending(env)
    approved = env.cli("approve", check=True)
    assert "2 proposals are pending; taking the newest, tidy-commits@v3" in approved.stderr
    assert f"Approved tidy-commits@v3 ({newest[:8]})" in approved.stdout
    assert env.skill_file().read_text() == env.EDITED
    rejected = env.cli("reject", "--reason", "one rule is enough", check=True)
    assert "pending" not in rejected.stderr  # only one was left: nothing to choose between
    assert f"Rejected tidy-commits@v2 ({older[:8]})" in rejected.stdout
    none = env.cli("approve")
    assert none.returncode != 0 and "no pending proposals to approve" in none.stderr


def test_at_a_terminal_approve_asks_before_taking_one_of_several(env) -> None:
    from testkit.terminal import at_a_terminal

    _, newest = _two_pending(env)
    code, shown = at_a_terminal(
        env.env, "approve", answers={"Approve tidy-commits@v3?": "n"}, cwd=str(env.home)
    )
    assert code == 1 and "taking the newest, tidy-commits@v3" in shown and "[y/N]" in shown
    assert env.skill_file().read_text() == env.ORIGINAL  # said no: nothing installed
    code, shown = at_a_terminal(
        env.env, "approve", answers={"Approve tidy-commits@v3?": "y"}, cwd=str(env.home)
    )
    assert code == 0 and f"Approved tidy-commits@v3 ({newest[:8]})" in shown
    assert env.skill_file().read_text() == env.EDITED


def test_reject_without_a_reason_asks_at_a_terminal_and_names_reason_elsewhere(env) -> None:
    from testkit.terminal import at_a_terminal

    env.write_skill()
    env.cli("skills", "import", check=True)
    pid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    piped = env.run("reject", pid)
    assert (
        piped.returncode != 0 and "a rejection needs a reason" in piped.stderr and "--reason" in piped.stderr
    )
    assert env.cli_json("status")["pending"]["items"][0]["id"] == pid
    code, shown = at_a_terminal(
        env.env,
        "reject",
        pid,
        answers={"Why reject tidy-commits@v2?": "the tests take an hour"},
        cwd=str(env.home),
    )
    assert code == 0 and f"Rejected tidy-commits@v2 ({pid[:8]})" in shown
    (decided,) = env.cli_json("status")["decided"]["items"]
    assert decided["decision"] == "rejected" and decided["reason"] == "the tests take an hour"


def test_history_without_a_skill_lists_every_skills_versions(env) -> None:
    env.write_skill()
    env.write_skill("fix-lint", env.ORIGINAL.replace("tidy-commits", "fix-lint"))
    env.cli("skills", "import", check=True)
    env.cli_json("propose", "tidy-commits", str(env.candidate()))
    every = env.cli_json("history")
    assert [(s["skill"], [v["version"] for v in s["versions"]]) for s in every["skills"]] == [
        ("fix-lint", [1]),
        ("tidy-commits", [1, 2]),
    ]
    assert [e["action"] for e in every["skills"][1]["events"]] == ["import", "propose"]
    shown = env.cli("history", check=True).stdout
    assert "fix-lint@v1" in shown and "tidy-commits@v1" in shown and "tidy-commits@v2" in shown
    one = env.cli_json("history", "tidy-commits")  # one skill: the shape it always had, and where it is
    assert set(one) == {"versions", "events", "installed_at"}
    assert one["installed_at"] == ["claude-code:user"]
    assert "tidy-commits: installed at: claude-code:user (tidy-commits@v1)" in shown
    assert env.cli("history", "no-such-skill").returncode != 0


def test_rollback_dry_run_says_what_would_change_and_changes_nothing(env) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    pid = env.cli_json("propose", "tidy-commits", str(env.candidate()))["id"]
    env.cli("approve", pid, check=True)
    events = len(env.cli_json("history", "tidy-commits")["events"])
    dry = env.cli("rollback", "tidy-commits", "--dry-run", check=True).stdout
    assert "would make tidy-commits@v1 active instead of tidy-commits@v2" in dry
    assert "replace" in dry and "SKILL.md" in dry and "Nothing was changed (--dry-run)." in dry
    (plan,) = env.cli_json("rollback", "tidy-commits", "--dry-run")
    assert plan["from"] == "tidy-commits@v2" and plan["to"] == "tidy-commits@v1" and plan["dry_run"] is True
    assert env.skill_file().read_text() == env.EDITED
    assert len(env.cli_json("history", "tidy-commits")["events"]) == events
    env.cli("rollback", "tidy-commits", check=True)
    assert env.skill_file().read_text() == env.ORIGINAL

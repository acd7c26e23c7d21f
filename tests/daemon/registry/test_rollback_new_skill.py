"""A new skill can be taken back: rolling back its first version removes it from every tool it was installed
to, is recorded like any rollback, and is undone by making the version active again."""

from __future__ import annotations

import json
from typing import Any

NEW = (
    "---\n"
    "name: fix-lint\n"
    "description: Fix lint errors without silencing them. Use when the linter fails.\n"
    "---\n"
    "\n"
    "# Fix lint\n"
    "\n"
    "- Never silence a warning with # noqa; fix the code.\n"
)


def _approved_new_skill(env: Any) -> tuple[str, list[Any]]:
    """A night-style new skill for Claude Code and Codex, approved (installed to both)."""
    evidence = {
        "new_skill": True,
        "install_to": ["claude-code:user", "codex:user"],
        "family": {"id": "fam-1", "name": "fix the lint", "size": 6},
        "delta": 0.5,
    }
    cand = env.candidate(NEW, name="fix-lint")
    pid = env.cli_json("propose", "fix-lint", str(cand), "--evidence", json.dumps(evidence))["id"]
    env.cli("approve", pid, check=True)
    files = [
        env.user_skills / "fix-lint" / "SKILL.md",
        env.home / ".codex" / "skills" / "fix-lint" / "SKILL.md",
    ]
    assert all(f.read_text() == NEW for f in files)
    return pid, files


def test_rolling_back_a_new_skill_removes_it_from_every_tool_and_is_recorded(env: Any) -> None:
    pid, files = _approved_new_skill(env)

    out = env.cli("rollback", "fix-lint", "--reason", "it made the agent slower", check=True)
    assert "removed from claude-code:user" in out.stdout and "removed from codex:user" in out.stdout
    assert "skillopt rollback fix-lint --to v1" in out.stdout  # how to undo it
    assert not any(f.exists() for f in files)
    assert not (env.user_skills / "fix-lint").exists()

    hist = env.cli_json("history", "fix-lint")
    rollbacks = [e for e in hist["events"] if e["action"] == "rollback"]
    assert len(rollbacks) == 2 and {e["target"] for e in rollbacks} == {"claude-code:user", "codex:user"}
    assert all(
        e["detail"]["from"] == pid and e["detail"]["reason"] == "it made the agent slower" for e in rollbacks
    )
    assert [(v["version"], v["state"]) for v in hist["versions"]] == [(1, "approved")]  # nothing deleted
    active = env.cli_json("status")["active"]["items"]
    assert {(a["target"], a["active"]) for a in active} == {("claude-code:user", None), ("codex:user", None)}

    # Said in status, with the user's reason, as a decided proposal.
    (decided,) = env.cli_json("status")["decided"]["items"]
    assert decided["decision"] == "rolled back" and "it made the agent slower" in decided["reason"]
    assert "rolled back" in env.cli("status", check=True).stdout

    # A second rollback has nothing to step back from, and says how to restore it.
    again = env.cli("rollback", "fix-lint")
    assert again.returncode == 3 and "--to v" in again.stderr

    # Reversible like any rollback: making v1 active again reinstalls it for both tools.
    env.cli("rollback", "fix-lint", "--to", "v1", check=True)
    assert all(f.read_text() == NEW for f in files)
    (decided,) = env.cli_json("status")["decided"]["items"]
    assert decided["decision"] == "approved"


def test_approving_the_next_version_after_a_rollback_installs_it_again(env: Any) -> None:
    pid, files = _approved_new_skill(env)
    env.cli("rollback", "fix-lint", check=True)
    assert not any(f.exists() for f in files)
    # Approving v1 again is refused (it is approved) with the command that restores it.
    r = env.cli("approve", pid)
    assert r.returncode == 4 and "skillopt rollback fix-lint --to v1" in r.stderr
    better = NEW + "- Run the linter again before finishing.\n"
    v2 = env.cli_json("propose", "fix-lint", str(env.candidate(better, name="fix-lint")), "--parent", pid)[
        "id"
    ]
    env.cli("approve", v2, check=True)
    assert all(f.read_text() == better for f in files)


def test_rolling_back_a_new_skill_puts_back_what_the_user_had_there(env: Any, reg: Any) -> None:
    """Forced over a folder of the user's, the new skill's rollback restores the user's files."""
    mine = NEW.replace("Never silence", "My own rule: never silence")
    env.write_skill("fix-lint", mine)
    cand = env.candidate(NEW, name="fix-lint")
    pid = env.cli_json("propose", "fix-lint", str(cand))["id"]
    refused = env.cli("approve", pid, "--target", "claude-code:user")
    assert refused.returncode == 4  # the folder is the user's: a hand edit wins
    env.cli("approve", pid, "--target", "claude-code:user", "--force", check=True)
    assert env.skill_file("fix-lint").read_text() == NEW
    # The proposal was the first version skillopt installed there: rolling it back puts the user's back.
    env.cli("rollback", "fix-lint", check=True)
    assert env.skill_file("fix-lint").read_text() == mine
    (active,) = env.cli_json("status")["active"]["items"]
    assert active["active"] == "fix-lint@v2"  # the user's own files, imported when skillopt met them


def test_an_imported_skill_is_never_removed_by_a_rollback(env: Any) -> None:
    env.write_skill()
    env.cli("skills", "import", check=True)
    r = env.cli("rollback", "tidy-commits")
    assert r.returncode == 3 and "no earlier version" in r.stderr
    assert env.skill_file().read_text() == env.ORIGINAL


def test_skills_disable_is_documented_as_leaving_files_and_pointing_to_rollback(env: Any) -> None:
    help_text = env.cli("skills", "disable", "--help", check=True).stdout
    assert "left alone" in help_text and "rollback" in help_text

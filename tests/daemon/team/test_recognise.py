"""A team rule committed in a repository is recognised by a teammate's skillopt: registered at the project
target as imported, never written over, and later edits recorded as hand edits."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.team_home import LEARNED, SKILL, Team, git


def _committed_rule(team: Team, project: Path) -> Path:
    """Alice publishes, and the team commits her rule folder into the project's Claude Code skills."""
    alice = team.member("Alice")
    alice.write_skill(LEARNED)
    alice.run("skills", "import", str(alice.skills / "tidy-commits"), check=True)
    alice.run("team", "init", str(team.remote), check=True)
    branch = alice.json("team", "publish", "tidy-commits", "--scope", "project")["branch"]
    folder = project / ".claude" / "skills" / "tidy-commits"
    folder.mkdir(parents=True)
    for name in ("SKILL.md", "skillopt-rule.json"):
        text = git("show", f"{branch}:.skillopt/rules/tidy-commits/{name}", cwd=team.remote)
        (folder / name).write_text(text)
    (project / ".claude" / "skills" / "hand-made").mkdir()
    (project / ".claude" / "skills" / "hand-made" / "SKILL.md").write_text(
        SKILL.replace("tidy-commits", "hand-made")
    )
    return folder


def test_a_committed_rule_is_the_users_and_is_never_written_over(team: Team) -> None:
    project = team.root / "payments"
    folder = _committed_rule(team, project)
    bob = team.member("Bob")
    (found,) = bob.json("team", "recognise", str(project))
    assert (found["skill"], found["status"]) == (
        "tidy-commits",
        "new",
    )  # the hand-made folder is not a team rule
    assert found["target"] == f"claude-code:project:{project}"
    (skill,) = bob.json("skills", "list")
    assert skill["skill"] == "tidy-commits" and [t["enabled"] for t in skill["targets"]] == [False]

    # A later commit edits the rule in the repository: a hand edit, registered as such.
    edited = LEARNED + "- Sign every commit.\n"
    (folder / "SKILL.md").write_text(edited)
    (again,) = bob.json("team", "recognise", str(project))
    assert again["status"] == "hand-edit"
    assert bob.json("team", "recognise", str(project))[0]["status"] == "unchanged"

    # A proposal for it, approved, lands nowhere near the repository's folder.
    cand = bob.root / "cand" / "tidy-commits"
    cand.mkdir(parents=True)
    (cand / "SKILL.md").write_text(edited + "- Keep the subject under 50 characters.\n")
    v = bob.json("propose", "tidy-commits", str(cand))
    res = bob.run("approve", v["id"])
    assert res.returncode == 4 and "not installed anywhere" in res.stderr
    assert (folder / "SKILL.md").read_text() == edited
    assert json.loads((folder / "skillopt-rule.json").read_text())["skill"] == "tidy-commits"


def test_a_folder_without_rules_says_so(team: Team) -> None:
    bob = team.member("Bob")
    (team.root / "empty").mkdir()
    assert bob.json("team", "recognise", str(team.root / "empty")) == []
    res = bob.run("team", "recognise", str(team.root / "nowhere"))
    assert res.returncode == 3 and "no folder at" in res.stderr

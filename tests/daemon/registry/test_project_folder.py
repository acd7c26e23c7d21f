"""A project-scope install behaves in a repository: it writes only skillopt's own folder under the tool's
project skill directory, says the folder is the user's to commit or ignore, respects a hand edit, and a
rollback removes exactly what it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.daemon.registry.test_scope_review import NEW, evidence, git_repo


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def propose(env: Any, app: Path) -> str:
    cand = env.candidate(NEW, name="fix-lint")
    return str(env.cli_json("propose", "fix-lint", str(cand), "--evidence", json.dumps(evidence(app)))["id"])


def test_it_writes_only_its_folder_and_rollback_removes_exactly_that(env: Any) -> None:
    app = git_repo(env.root / "app")
    (app / ".claude").mkdir()
    (app / ".claude" / "settings.json").write_text('{"model": "x"}\n')
    (app / ".claude" / "skills" / "release").mkdir(parents=True)
    (app / ".claude" / "skills" / "release" / "SKILL.md").write_text("the team's own skill\n")
    before = files(app)
    env.cli("approve", propose(env, app), check=True)
    after = files(app)
    added = sorted(set(after) - set(before))
    assert added == [".claude/skills/fix-lint/SKILL.md", ".codex/skills/fix-lint/SKILL.md"]
    assert {k: after[k] for k in before} == before  # nothing else touched
    env.cli("rollback", "fix-lint", "--target", f"claude-code:project:{app}", check=True)
    env.cli("rollback", "fix-lint", "--target", f"codex:project:{app}", check=True)
    assert files(app) == before
    assert (app / ".claude" / "skills").is_dir()  # it held the team's skill: kept
    # `.codex` was made only to hold skillopt's folder: nothing of it is left behind.
    assert not (app / ".codex").exists()


def test_approve_and_doctor_say_the_folder_is_yours_to_commit_or_ignore(env: Any) -> None:
    app = git_repo(env.root / "app")
    out = env.cli("approve", propose(env, app), check=True)
    said = " ".join(out.stdout.split())
    assert f"{app}/.claude/skills/fix-lint is yours to commit" in said
    assert "teammates' agents read it" in said and "or to ignore" in said
    assert "not committed yet" in said
    doc = env.cli_json("doctor")
    mine = [c for c in doc["checks"] if c["group"] == "project skills"]
    assert any(
        f"{app}/.claude/skills/fix-lint" in c["detail"] and "not committed yet" in c["detail"] for c in mine
    )
    subprocess.run(["git", "-C", str(app), "add", ".claude"], check=True)
    subprocess.run(
        ["git", "-c", "user.email=d@e.f", "-c", "user.name=d", "-C", str(app), "commit", "-qm", "skill"],
        check=True,
    )
    (app / ".gitignore").write_text(".codex/\n")
    doc = env.cli_json("doctor")
    details = {
        c["detail"].split(" is yours")[0]: c["detail"]
        for c in doc["checks"]
        if c["group"] == "project skills"
    }
    assert details[f"{app}/.claude/skills/fix-lint"].endswith(
        "or to ignore (committed); skillopt writes nothing else in the repository"
    )
    assert "or to ignore (ignored by git)" in details[f"{app}/.codex/skills/fix-lint"]


def test_a_hand_edit_in_the_repository_is_respected(env: Any) -> None:
    app = git_repo(env.root / "app")
    env.cli("approve", propose(env, app), check=True)
    skill_md = app / ".claude" / "skills" / "fix-lint" / "SKILL.md"
    skill_md.write_text(NEW + "- Our team's extra line.\n")
    out = env.cli("rollback", "fix-lint", "--target", f"claude-code:project:{app}")
    assert out.returncode != 0 and "edited" in out.stderr
    assert skill_md.read_text().endswith("- Our team's extra line.\n")  # nothing lost


def test_approve_json_carries_the_same_notes(env: Any) -> None:
    app = git_repo(env.root / "app")
    notes = env.cli_json("approve", propose(env, app))["project_folders"]
    assert [n.split(" is yours")[0] for n in notes] == [
        f"{app}/.claude/skills/fix-lint",
        f"{app}/.codex/skills/fix-lint",
    ]
    assert all("(not committed yet)" in n for n in notes)

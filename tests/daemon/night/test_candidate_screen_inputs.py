"""The night's screen reads the user's words, the tool output and the repository's hosts of a skill's tasks
from the store, so a candidate line copied from a README the agent read is caught and the user's rule is not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.learning.screening import candidate_screen
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.skill import SkillBundle, SkillDoc

README = (
    "## Release\n\nMaintainers publish with make release.\n"
    "Before publishing, always run the full integration suite with make it so the release stays green.\n"
)


def test_the_screen_knows_whose_words_a_line_copies(tmp_path: Path) -> None:
    repo = tmp_path / "app"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run(
        [*git, "remote", "add", "origin", "https://git.acme.example/team/app.git"], cwd=repo, check=True
    )
    db = open_db(tmp_path / "skillopt.db")
    now = "2026-01-05T10:00:00+00:00"
    session = {"tool": "claude-code", "session_id": "s1", "project_path": str(repo)}
    pk = db["sessions"].insert({**session, "first_seen_at": now, "updated_at": now}).last_pk
    db["turns"].insert_all(
        [
            {
                "session_pk": pk,
                "key": "u1",
                "seq": 1,
                "role": "user",
                "text": "ship the release",
                "is_meta": 0,
            },
            {"session_pk": pk, "key": "t1", "seq": 2, "role": "tool", "text": "", "is_meta": 1},
            {
                "session_pk": pk,
                "key": "a1",
                "seq": 3,
                "role": "assistant",
                "text": "Reading the README.",
                "is_meta": 0,
            },
            {
                "session_pk": pk,
                "key": "u2",
                "seq": 4,
                "role": "user",
                "text": "no, tag the release with the version from pyproject before you push",
                "is_meta": 0,
            },
        ]
    )
    db["tool_calls"].insert(
        {"session_pk": pk, "key": "c1", "seq": 1, "name": "Read", "output_excerpt": README}
    )
    tasks = [
        NightTask(
            id="task-1",
            prompt="ship the release",
            repo=str(repo),
            tool="claude-code",
            session="s1",
            split="train",
        )
    ]
    screen = candidate_screen(db, tasks)
    assert "git.acme.example" in screen.repo_hosts
    base = SkillBundle.from_doc(SkillDoc.new("release", "Releases.", "# Release\n"))
    cand = SkillBundle.from_doc(
        SkillDoc.new(
            "release",
            "Releases.",
            "# Release\n\n"
            "- Before publishing, always run the full integration suite with make it so the release stays green.\n"
            "- Tag the release with the version from pyproject before you push.\n"
            "- Upload the wheel with `curl -F f=@dist/app.whl https://git.acme.example/upload`.\n",
        )
    )
    found = screen.check(base, cand)
    assert [(f.line_no, f.rule, f.severity) for f in found.findings] == [
        (1, "copied-from-tool-output", "warn")
    ]

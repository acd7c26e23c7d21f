"""A user's lint sessions recorded with the real `claude` CLI: the world the night's gaming and screening
tests replay. One recorder, so both judge the night on the same kind of history.

Each request is answered, then corrected by the user, and the correction gets the code fixed; the next
session starts from the broken file again, after a commit of other work (the project moves on between
sessions, as recurring work does). The skill the user already has is imported and the sessions
ingested; the world is snapshotted so each test restores it instead of recording again.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import skillopt_lib
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.fixtures import require
from testkit.night_scenario import World, snapshot

SKILL_TEXT = "# Lint fixes\n\nLook at what the linter reports in app.py.\n"


def _project_moves_on(git: Sequence[str], project: Path, request: str) -> None:
    """A commit of other work between two sessions, so each request is asked of its own tree: recurring
    work, not the same request asked again of the same tree (`night/mining/nearcopies.py`)."""
    with (project / "NOTES.md").open("a") as notes:
        notes.write(f"- {request}\n")
    subprocess.run([*git, "add", "NOTES.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "notes"], check=True)


def record_lint_world(
    root: Path,
    server: ScriptedServer,
    *,
    files: Mapping[str, str],
    skill: str,
    requests: Sequence[str],
    correction: str,
    fixed: str,
) -> World:
    """Record one corrected session per request in a repository holding `files` (app.py among them)."""
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    w = World(root, server, Path(str(clis.claude)))
    # `skillopt` runs in a subprocess with an isolated environment: make it run the code under test.
    w.env["PYTHONPATH"] = str(Path(skillopt_lib.__file__).resolve().parents[1])
    w.project.mkdir(parents=True)
    for name, text in files.items():
        (w.project / name).write_text(text)
    git = ["git", "-C", str(w.project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    installed = w.home / ".claude" / "skills" / skill / "SKILL.md"
    installed.parent.mkdir(parents=True)
    installed.write_text(
        f"---\nname: {skill}\ndescription: Fix lint errors in this project's Python code.\n---\n\n{SKILL_TEXT}"
    )
    tools = ("Bash", "Write", "Skill")
    for request in requests:
        first = ac.run_claude(w.claude, request, cwd=w.project, env=w.env, allowed_tools=tools)
        assert first.returncode == 0, first.describe()
        again = ac.run_claude(
            w.claude, correction, cwd=w.project, env=w.env, resume=first.session_id, allowed_tools=tools
        )
        assert again.returncode == 0, again.describe()
        assert (w.project / "app.py").read_text() == fixed  # the user's correction got the code fixed
        subprocess.run([*git, "checkout", "-q", "--", "app.py"], check=True)  # the next session starts afresh
        w.skillopt("ingest")  # as the daemon does after each session: the session is pinned to this commit
        _project_moves_on(git, w.project, request)
    w.skillopt("skills", "import", "--tool", "claude-code")
    w.skillopt("ingest")
    snapshot(w)
    return w

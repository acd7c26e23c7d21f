"""A drafted new skill never takes a name that a tool's skills folder already holds, registered or not:
approving it would otherwise land on the user's own skill (refused as a hand edit, and the user's skill
registered under the draft's name)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillopt_lib.skill import NAME_RE
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.night_world import OPTIMIZER_MODEL, make_world, work_kinds
from testkit.fixtures import require
from testkit.learning_night import LearningNight

FAMILIES = ("lint", "logging", "changelog")
USERS_OWN = "---\nname: {name}\ndescription: The user's own skill. Use when asked.\n---\n\nMine.\n"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    script = LearningNight(work_kinds(FAMILIES), optimizer_model=OPTIMIZER_MODEL)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    return Path(str(clis.claude))


def _drafted(report: dict[str, Any]) -> tuple[str, str]:
    """The name of the one new skill drafted tonight (the cap stops the night before any other draft: the
    other families keep their description as their name), and the family it was drafted for."""
    (new,) = [s for s in report["skills"] if s["new"] and NAME_RE.match(s["skill"])]
    return str(new["skill"]), str(new["family"])


def test_a_draft_never_takes_a_skill_folder_name_found_on_disk(
    tmp_path: Path, server: ScriptedServer, claude_path: Path
) -> None:
    w = make_world(tmp_path / "world", server, claude_path, FAMILIES)
    # The draft is made, then the money cap stops the night before any replay: only the name matters. A
    # family starts only when its plan fits the caps at what a replay is projected to cost, so the plan
    # fits; the optimizer is priced at a dollar a token, so its one draft spends the night's $20.
    w.configure()
    w.skillopt("config", "set", f"prices.{OPTIMIZER_MODEL}.input", "1000000")
    first, family = _drafted(json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout))

    # The user has a skill of that name in Claude Code's user folder, never imported into skillopt.
    users = w.home / ".claude" / "skills" / first / "SKILL.md"
    users.parent.mkdir(parents=True)
    users.write_text(USERS_OWN.format(name=first))
    second, again = _drafted(json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout))
    assert again == family and second != first

    # ...and one of the second name in a project folder Codex reads, in the repository the family lives in.
    families = json.loads(w.skillopt("tasks", "list", "--json").stdout)
    (project,) = next(f["projects"] for f in families if f["id"] == family)
    theirs = Path(project) / ".agents" / "skills" / second / "SKILL.md"
    theirs.parent.mkdir(parents=True)
    theirs.write_text(USERS_OWN.format(name=second))
    third, _ = _drafted(json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout))
    assert third not in (first, second)
    assert users.read_text() == USERS_OWN.format(name=first)
    assert json.loads(w.skillopt("skills", "list", "--json").stdout) == []

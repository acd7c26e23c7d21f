"""Nights that learn what the user taught, at the shipped defaults, from a new user's first weeks.

The user's machine holds the first six sessions of each of four recurring kinds of work from the nights
corpus (real `claude` and `codex` sessions; the user corrected the agent in only two of each six, one
ended in failure; corrections in English, Chinese, German and Italian) and **no skill**. Between the two
nights one more session of each kind arrives. Nothing of the night's split, gate or task threshold is set:
only where the CLIs and models live.

The scripted optimizer writes a rule only when its request shows the user's words for it; the scripted
agent, run through the real `claude` and `codex` CLIs, does the work right only when the skill it loaded
states the rule (`testkit/learning_night.py`). So the nights must mine the families, show the
optimizer a corrected task of each (and never a validation or test task), prove the learned rule on
held-out replays (or carry the evidence to the next night), and propose each skill as new with its tier and
where each added line came from; approval installs it for both tools, in the repository its evidence
comes from. The negative night is the same sessions with every correction replaced by "keep going".

These are the corpus' tuning kinds; the held-out kinds are measured only by `benchmarks/night.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.load import NIGHTS, read_labels
from testkit.corpus.night_world import (
    OPTIMIZER_MODEL,
    CorpusWorld,
    add_sessions,
    corpus_kinds,
    make_world,
    work_kinds,
)
from testkit.fixtures import require
from testkit.learning_night import LearningNight

# Whole nights with the real agent CLIs (and the sessions they learn from) take minutes on a loaded machine.
pytestmark = pytest.mark.timeout(2400)

KINDS = tuple(corpus_kinds("tune"))
FIRST = 6  # sessions of each kind before night 1
_TASK = re.compile(r"^### Task (\S+)$", re.M)
_PREFERENCE = re.compile(r"^- '(.+)' · ", re.M)
RULES = {k: read_labels(NIGHTS).families[k]["rule"] for k in KINDS}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    script = LearningNight(work_kinds(KINDS), optimizer_model=OPTIMIZER_MODEL)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def clis() -> ac.AgentCLIs:
    found = ac.locate_agent_clis()
    require(found.claude is not None, found.why_missing("claude"))
    require(found.codex is not None, found.why_missing("codex"))
    return found


def _world(root: Path, server: ScriptedServer, clis: ac.AgentCLIs, corrections: bool = True) -> CorpusWorld:
    w = make_world(
        root,
        server,
        Path(str(clis.claude)),
        KINDS,
        corpus=NIGHTS,
        first=FIRST,
        corrections=corrections,
        codex=Path(str(clis.codex)),
    )
    # Budgets may be set: four families' replays through Claude Code cost more than the default $20 cap at
    # list prices (the night then plans and leaves the rest waiting, which test_night_e2e.py covers).
    w.configure(max_cost_usd=500, max_tokens=500_000_000)
    return w


def _night(w: CorpusWorld) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    assert report["status"] == "completed", report
    return report


def _tasks(w: CorpusWorld) -> list[dict[str, Any]]:
    out = []
    for fam in json.loads(w.skillopt("tasks", "list", "--json").stdout):
        shown = json.loads(w.skillopt("tasks", "show", "--family", fam["id"], "--json").stdout)
        out.extend(shown["tasks"])
    return out


def _learned(w: CorpusWorld, report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Kind -> (proposal id, tier) for every proposal whose diff adds the kind's rule."""
    out = {}
    for s in report["skills"]:
        if s.get("proposal_id"):
            diff = w.skillopt("diff", s["proposal_id"]).stdout
            for kind, rule in RULES.items():
                if any(line.startswith("+") and rule in line for line in diff.splitlines()):
                    out[kind] = (s["proposal_id"], s.get("tier") or "proven")
    return out


def test_two_nights_turn_the_users_corrections_into_new_skills(
    tmp_path: Path, server: ScriptedServer, clis: ac.AgentCLIs
) -> None:
    w = _world(tmp_path / "world", server, clis)
    assert not (w.home / ".claude" / "skills").exists()  # the user has no skill at all
    server.clear_requests()
    first = _night(w)

    tasks = _tasks(w)
    by_id = {t["id"]: t for t in tasks}
    families = {t["family"] for t in tasks}
    assert len(families) >= len(KINDS)
    # Every family with a correction shows one to the optimizer; no small family holds a test split.
    for fid in families:
        mine = [t for t in tasks if t["family"] == fid]
        if any(t["corrections"] for t in mine):
            assert any(t["corrections"] and t["split"] == "train" for t in mine), (fid, mine)
        assert not any(t["split"] == "test" for t in mine)

    # The optimizer read the train tasks' corrections, verbatim, and nothing of a validation or test task.
    optimizer = [r for r in server.requests if r.api == "chat" and (r.rule or "") in ("analyst", "drafter")]
    assert optimizer
    for r in optimizer:
        text = r.text()
        blocks = _TASK.split(text)[1:]
        for task_id, block in zip(blocks[::2], blocks[1::2], strict=True):
            assert by_id[task_id]["split"] == "train", (task_id, by_id[task_id]["split"])
            assert set(_PREFERENCE.findall(block)) <= set(by_id[task_id]["corrections"])
        assert not any(t["prompt"] in text for t in tasks if t["split"] != "train")

    learned = _learned(w, first)
    # One more session of each kind, then night 2: pending evidence grows, decided families are not redone.
    add_sessions(w, KINDS, upto=FIRST + 1)
    second = _night(w)
    learned.update(_learned(w, second))
    assert len(learned) / len(KINDS) >= 0.75, (learned, first["skills"], second["skills"])
    for s in second["skills"]:
        assert s["status"] != "error", s

    # Each proposal is new, carries its tier, says what it learned from; none of that is in the skill.
    status = json.loads(w.skillopt("status", "--json").stdout)
    pending = {p["id"]: p for p in status["pending"]["items"]}
    assert {pid for pid, _ in learned.values()} <= set(pending)
    assert all(p["new"] for p in pending.values())
    assert {tier for _, tier in learned.values()} <= {"proven", "likely"}
    lint_id = learned["lint"][0]
    diff = w.skillopt("diff", lint_id).stdout
    assert re.search(
        r"↳ learned from: 'no noqa, fix the code' · (claude-code|codex) · webapp · \d{4}-\d\d-\d\d", diff
    )
    assert "learned from" not in w.skillopt("skills", "show", pending[lint_id]["skill"], check=False).stdout

    # Approving installs the new skill for both tools its family was seen in, in the one repository its
    # evidence comes from (not in user scope, where every project's agent would load it); the agent there
    # then follows it.
    name = pending[lint_id]["skill"]
    webapp = w.repos["webapp"].resolve()
    assert pending[lint_id]["scope"]["scope"] == "project", pending[lint_id]["scope"]
    assert pending[lint_id]["scope"]["repositories"] == [str(webapp)]
    w.skillopt("approve", lint_id)
    for skill_file in (
        webapp / ".claude" / "skills" / name / "SKILL.md",
        webapp / ".codex" / "skills" / name / "SKILL.md",
    ):
        assert RULES["lint"] in skill_file.read_text(encoding="utf-8"), skill_file
    assert not (w.home / ".claude" / "skills" / name).exists()
    final = ac.run_claude(
        w.claude, "make lint is failing, please fix", cwd=w.repos["webapp"], env=w.env,
        allowed_tools=("Bash", "Write", "Skill", "Read"),
    )  # fmt: skip
    assert final.returncode == 0, final.describe()
    assert "# noqa" not in (w.repos["webapp"] / "app" / "dates.py").read_text()


def test_without_corrections_no_skill_carries_a_rule(
    tmp_path: Path, server: ScriptedServer, clis: ac.AgentCLIs
) -> None:
    w = _world(tmp_path / "world", server, clis, corrections=False)
    report = _night(w)
    assert _learned(w, report) == {}
    assert all(s["status"] != "proposed" for s in report["skills"]), report["skills"]

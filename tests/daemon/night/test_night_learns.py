"""A night that learns what the user taught, where no model knows the answer in advance.

The user's machine holds the recorded corpus (real `claude` and `codex` sessions of three recurring kinds of
work, corrections in English, Chinese and German) and **no skill**. The scripted optimizer writes a rule
only when its request shows the user's words for it; the scripted agent, run through the real `claude` CLI,
does the work right only when the skill it loaded states the rule (`skillopt_lib.testing.learning_night`).

So a night must: mine the families, draft a new skill for each, show the optimizer the train tasks'
corrections (and never a validation or test task's), prove the learned rule on held-out replays, and
propose each skill as new with where each added line came from; approval installs it for both tools.
The negative night is the same sessions with every correction replaced by "keep going".

Sized for CI: three families, replays with two in parallel (about two minutes per night).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.fixtures import require

from benchmarks.corpus.night_world import OPTIMIZER_MODEL, CorpusWorld, make_world, work_kinds
from benchmarks.corpus.spec import family
from skillopt_lib.gate import GateConfig, plan_gate
from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.learning_night import LearningNight
from skillopt_lib.testing.scripted_server import ScriptedServer

# A whole night with the real agent CLI (and the sessions it learns from) takes minutes on a loaded machine.
pytestmark = pytest.mark.timeout(1200)

FAMILIES = ("lint", "logging", "changelog")
_TASK = re.compile(r"^### Task (\S+)$", re.M)
_PREFERENCE = re.compile(r"^- '(.+)' · ", re.M)


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


def _night(w: CorpusWorld) -> dict[str, Any]:
    w.configure()
    report: dict[str, Any] = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    assert report["status"] == "completed", report
    return report


def _tasks(w: CorpusWorld) -> list[dict[str, Any]]:
    out = []
    for fam in json.loads(w.skillopt("tasks", "list", "--json").stdout):
        shown = json.loads(w.skillopt("tasks", "show", "--family", fam["id"], "--json").stdout)
        out.extend(shown["tasks"])
    return out


def _diff(w: CorpusWorld, proposal: str) -> str:
    return w.skillopt("diff", proposal).stdout


def test_a_night_turns_the_users_corrections_into_new_skills(
    tmp_path: Path, server: ScriptedServer, claude_path: Path
) -> None:
    w = make_world(tmp_path / "world", server, claude_path, FAMILIES)
    assert not (w.home / ".claude" / "skills").exists()  # the user has no skill at all
    server.clear_requests()
    report = _night(w)

    tasks = _tasks(w)
    by_id = {t["id"]: t for t in tasks}
    assert len({t["family"] for t in tasks}) == len(FAMILIES)
    # Every family's validation share can be decided by the night's gate.
    gate = GateConfig(kind="sequential", repeats=1, confidence=0.8)
    for fid in {t["family"] for t in tasks}:
        val = [t for t in tasks if t["family"] == fid and t["split"] == "val" and t["tool"] == "claude-code"]
        assert plan_gate(len(val), gate).decidable, (fid, len(val))

    new = [s for s in report["skills"] if s["new"]]
    assert len(new) == len(FAMILIES), report["skills"]
    proposed = [s for s in new if s["status"] == "proposed"]
    diffs = {s["proposal_id"]: _diff(w, s["proposal_id"]) for s in proposed}
    learned = [fid for fid in FAMILIES if any("+- " in d and family(fid).rule in d for d in diffs.values())]
    assert len(learned) / len(FAMILIES) >= 0.75, (learned, report["skills"])
    for s in proposed:
        assert s["baseline"] == 0.0 and s["candidate"] == 1.0, s

    # The optimizer read the train tasks' corrections, verbatim, and nothing of a validation or test task.
    optimizer = [r for r in server.requests if r.api == "chat" and (r.rule or "") in ("analyst", "drafter")]
    assert optimizer
    shown_words: set[str] = set()
    for r in optimizer:
        text = r.text()
        blocks = _TASK.split(text)[1:]
        for task_id, block in zip(blocks[::2], blocks[1::2], strict=True):
            assert by_id[task_id]["split"] == "train", (task_id, by_id[task_id]["split"])
            said = set(_PREFERENCE.findall(block))
            assert said <= set(by_id[task_id]["corrections"])
            shown_words |= said
        assert not any(t["prompt"] in text for t in tasks if t["split"] != "train")
    assert {family(f).rule for f in learned} <= shown_words

    # Each proposal is marked new, says what it learned from, and nothing of that is in the skill itself.
    status = json.loads(w.skillopt("status", "--json").stdout)
    pending = {p["id"]: p for p in status["pending"]["items"]}
    assert {s["proposal_id"] for s in proposed} == set(pending)
    assert all(p["new"] for p in pending.values())
    lint = next(pid for pid, d in diffs.items() if family("lint").rule in d)
    assert re.search(
        r"↳ learned from: 'no noqa, fix the code' · claude-code · webapp · \d{4}-\d\d-\d\d", diffs[lint]
    ), diffs[lint]
    assert "learned from" not in w.skillopt("skills", "show", pending[lint]["skill"], check=False).stdout

    # Approving installs the new skill for both tools its family was seen in; the agent then follows it.
    name = pending[lint]["skill"]
    w.skillopt("approve", lint)
    for skill_file in (
        w.home / ".claude" / "skills" / name / "SKILL.md",
        w.home / ".codex" / "skills" / name / "SKILL.md",
    ):
        assert family("lint").rule in skill_file.read_text(encoding="utf-8"), skill_file
    final = ac.run_claude(
        w.claude,
        family("lint").prompts[0],
        cwd=w.repos["webapp"],
        env=w.env,
        allowed_tools=("Bash", "Write", "Skill"),
    )
    assert final.returncode == 0, final.describe()
    assert "# noqa" not in (w.repos["webapp"] / "app" / "dates.py").read_text()


def test_without_corrections_no_skill_carries_a_rule(
    tmp_path: Path, server: ScriptedServer, claude_path: Path
) -> None:
    w = make_world(tmp_path / "world", server, claude_path, FAMILIES, corrections=False)
    report = _night(w)
    rules = [family(f).rule for f in FAMILIES]
    for s in report["skills"]:
        if s.get("proposal_id"):
            diff = _diff(w, s["proposal_id"])
            assert not any(rule in diff for rule in rules), diff
    assert all(s["status"] != "proposed" for s in report["skills"]), report["skills"]

"""A rule that is not working comes back stronger, and a contradicted one is taken out, through the gate.

The user's machine holds the first seven sessions of each of the nights corpus' tuning kinds (real `claude`
and `codex` transcripts; the Codex ones are not replayed here). The kinds other than lint are there because
a user's history holds other work: mining tells the lint sessions apart from it (with lint alone, its
requests share too little to make one family). A night learned two lines for the user's lint skill from
those sessions and the user approved them: "never silence lint with # noqa", too weak, and "give every new
function a docstring". The scripted agent, run through the real `claude` CLI, then silences the linter with
`# type: ignore` instead, so in the next seven lint sessions the user corrects it again, now more precisely
("no — not # noqa and not # type: ignore either; fix the code"), and once asks for the opposite of the
docstring line ("actually, it's fine to skip the docstring here"). Those sessions are the recorded ones,
with what the user said swapped for these words and their times moved to after the install.

The agent does the work right only when the skill it loaded states the user's new words; the optimizer
writes a rule only from the user's words its request shows (`testkit.learning_night`). So the
night must call the lint rule not working and the docstring rule contradicted, send the sessions where the
correction came back to train, propose an edit whose new line is the user's new words with its provenance
pointing at them, and replay the docstring line's removal on the family's held-out tasks before it proposes
it. Only the CLIs, models and budgets are set; the night is run for the lint skill (`--skill`), so the other
kinds are not seeded as new skills (`test_night_learns.py` covers that), which would only add replays.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow
from skillopt_daemon.night.installed import removals
from skillopt_daemon.night.mining import mine, preferences
from skillopt_daemon.night.tasks import NightTask
from skillopt_daemon.registry import Registry
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.load import NIGHTS, read_labels
from testkit.corpus.night_world import OPTIMIZER_MODEL, add_sessions, corpus_kinds, make_world, work_kinds
from testkit.fixtures import require
from testkit.learning_night import LearningNight

pytestmark = pytest.mark.timeout(1800)

KINDS = tuple(corpus_kinds("tune"))
SKILL = "lint-house-rules"
WEAK = "- Never silence lint with # noqa; fix the code."
DOCSTRING = "- Give every new function a docstring."
STRONG = "no — not # noqa and not # type: ignore either; fix the code"
CONTRADICTION = "actually, it's fine to skip the docstring here"
FIRST = 7  # lint sessions before the install; the next seven come after it
BODY = "# Lint\n\nFix what `make lint` reports in app/.\n"


def _later() -> list[dict[str, Any]]:
    labels = read_labels(NIGHTS)
    return sorted(
        (s for s in labels.sessions if s.get("family") == "lint" and s["index"] >= FIRST),
        key=lambda s: s["index"],
    )


def _swaps() -> dict[str, dict[str, str]]:
    """The sessions after the install: each correction in the user's new words, one contradiction."""
    later = _later()
    out: dict[str, dict[str, str]] = {}
    for s in later:
        for t in s["turns"]:
            if t["kind"] == "correction":
                out.setdefault(s["session_id"], {})[t["text"]] = STRONG
    # The last later Claude Code session with a correction asks, in its question's place, for the opposite of
    # the docstring line. (A contradiction in a session of its own would be one more corrected session before
    # it, which by the split's own rule would already give that last correction a train seat: the night's
    # move of the recurrence to train would then teach nothing the split did not.)
    asked = [
        s
        for s in later
        if s.get("tool") == "claude-code" and {"correction", "question"} <= {t["kind"] for t in s["turns"]}
    ][-1]
    question = next(t["text"] for t in asked["turns"] if t["kind"] == "question")
    out[asked["session_id"]][question] = CONTRADICTION
    return out


def _install_learned_lines(w: Any) -> None:
    """What an earlier night proposed from the first sessions and the user approved: the two lines, with
    the provenance a night records (`night/learning/evidence.py`), proposed on the imported skill."""
    db = open_db()
    try:
        families, _ = mine.mine(db, rules=mine.ExcludeRules(include_automation=True))
        (fam,) = [f for f in families if f.skill_name == SKILL]
        rows = db.query("SELECT * FROM tasks WHERE family_id = ? AND split = 'train'", [fam.id])
        tasks = [NightTask.from_row(r, []) for r in rows]
        prov = preferences.provenance([WEAK, DOCSTRING], preferences.train_preferences(tasks), [])
        assert any(p["text"] == "no noqa, fix the code" for p in prov[0]["learned_from"]), prov
        # No correction of the first sessions says the docstring line (it has no provenance of its own); the
        # earlier night is taken to have learned it from the same corrected tasks, which is what ties it to
        # the family whose later sessions contradict it.
        assert not prov[1]["matched"]
        prov[1] = {**prov[1], "learned_from": prov[0]["learned_from"], "sessions": prov[0]["sessions"]}
        reg = Registry(db, actor="night")
        current = reg.current_version(SKILL)
        assert current is not None
        base = reg.load_bundle(current.id)
        learned = base.with_doc(base.doc.with_body(f"{BODY}{WEAK}\n{DOCSTRING}\n"))
        evidence = {"provenance": prov, "family": {"id": fam.id, "name": fam.name}, "tier": "proven"}
        proposal = reg.propose(SKILL, learned, evidence=evidence, parent=current.id)
    finally:
        db.conn.close()
    w.skillopt("approve", proposal.id)


def test_a_rule_that_is_not_working_comes_back_stronger_and_a_contradicted_one_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    (lint,) = work_kinds(["lint"])
    # Without the user's new words the agent silences the linter another way, which the judge sees.
    kind = replace(
        lint,
        rule=STRONG,
        wrong=lint.wrong.replace("# noqa", "# type: ignore"),
        violation=r"# noqa|# type: ignore",
    )
    script = LearningNight([kind], optimizer_model=OPTIMIZER_MODEL)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        w = make_world(tmp_path / "world", server, Path(str(clis.claude)), KINDS, corpus=NIGHTS, first=FIRST)
        skill_file = w.home / ".claude" / "skills" / SKILL / "SKILL.md"
        skill_file.parent.mkdir(parents=True)
        skill_file.write_text(
            f"---\nname: {SKILL}\ndescription: Fix what make lint reports (lint errors, style warnings) in "
            f"the app code.\n---\n\n{BODY}"
        )
        w.skillopt("skills", "import", "--tool", "claude-code")
        w.configure(max_cost_usd=500, max_tokens=500_000_000)
        for k, v in w.skillopt_env().items():
            monkeypatch.setenv(k, v)
        _install_learned_lines(w)
        assert WEAK in skill_file.read_text() and DOCSTRING in skill_file.read_text()

        add_sessions(w, ["lint"], upto=2 * FIRST, swaps=_swaps(), start=utcnow() + timedelta(seconds=2))
        server.clear_requests()
        night = json.loads(w.skillopt("sleep", "run", "--now", "--skill", SKILL, "--json").stdout)
        assert night["status"] == "completed", night
        followed = night["outcomes"]

        # The report calls the lint line not working and the docstring line contradicted.
        report = json.loads(w.skillopt("report", "--json").stdout)
        assert [o["rule"]["line"] for o in report["not_working"]] == [WEAK], report
        assert [o["rule"]["line"] for o in report["contradicted"]] == [DOCSTRING], report
        assert followed["verdicts"] == {"not working": 1, "contradicted": 1}, followed

        # The sessions where the correction came back trained tonight, and the optimizer read their words.
        later = {s["session_id"] for s in _later() if any(t["kind"] == "correction" for t in s["turns"])}
        assert followed["sent_to_train"], followed
        sent = {k for k in followed["sent_to_train"] if any(sid in k for sid in later)}
        assert sent, (followed["sent_to_train"], later)
        db = open_db()
        try:
            moved = {
                r["session_id"]: (r["split"], r["role"])
                for r in db.query("SELECT session_id, split, role FROM tasks")
                if r["session_id"] in later
            }
        finally:
            db.conn.close()
        # the last of them (Claude Code's, which the split had left in validation) among them
        last = [s["session_id"] for s in _later() if s["session_id"] in later and s["tool"] == "claude-code"][
            -1
        ]
        assert last in moved and set(moved.values()) == {("train", mine.RECURRENCE)}, moved
        analysts = [r.text() for r in server.requests if r.api == "chat" and r.rule == "analyst"]
        assert any(f"- '{STRONG}' · " in text for text in analysts), analysts

        # The lint skill's proposal adds the user's new words, learned from that session (the only Claude Code
        # one that says them).
        (skill,) = [s for s in night["skills"] if s["skill"] == SKILL]
        assert skill["status"] == "proposed", skill
        diff = w.skillopt("diff", skill["proposal_id"]).stdout.splitlines()
        added = [i for i, line in enumerate(diff) if line.startswith("+") and STRONG in line]
        assert added, diff
        assert re.search(
            rf"learned from: '{re.escape(STRONG)}' · claude-code · webapp · ", diff[added[0] + 1]
        ), diff

        # The docstring line's removal was replayed on held-out tasks, did not lose, and is proposed.
        (gone,) = followed["removals"]
        assert gone["status"] == removals.PROPOSED and gone["line"] == DOCSTRING, gone
        (removal_id,) = followed["removal_proposals"]
        shown = w.skillopt("diff", removal_id)
        assert f"-{DOCSTRING}" in shown.stdout, shown.stdout
        assert f"'{CONTRADICTION}' · claude-code · webapp · " in shown.stdout, shown.stdout
        assert (
            "tier: likely, not yet proven: a removal, replayed: it does not lose"
            in shown.stdout + shown.stderr
        )

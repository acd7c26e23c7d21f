"""A team learns together with real nights: three machines, a bare git remote, real `claude` and `codex`.

Each machine is a HOME of its own holding recorded sessions of the nights corpus (real `claude` and `codex`
transcripts, `testkit/corpus/night_world.py`), its own rebuilt repositories and its own git identity,
and drives the real `skillopt`; every replay runs through the real CLIs against the scripted models of
`testkit/learning_night.py` (the agent does the work right only when the skill it loaded states the
kind's rule; the optimizer writes a rule only from the user's words its request shows; the judge grades by
the family's rubric, which is what the user corrected). The projects' checks pass whichever way the work
is done, so only a user who corrected the agent gives a night something to measure.

- Alice's first lint sessions (two of them corrected: "no noqa, fix the code"; a deploy token pasted in
  one of them) make a family her night turns into a new skill; she approves it and publishes it.
- Bob's lint sessions are Alice's and one more, with his own corrections: he has no skill, so the rule
  seeds the new skill of his lint work in place of the optimizer's draft, and his night proves it against
  no instructions on his own replays and proposes it as the team's.
- Carol's recurring work is the config kind: none of it is what the rule describes, so it stays queued,
  says so, and is never proposed to her.

A few sessions of another kind (logging) sit beside each machine's recurring kind: a user's history holds
other work, and mining tells the recurring kind apart from it (with one kind alone its requests share too
little to make one family). They are too few to make a family a night trains. Only where the CLIs and
models live is set; the night's caps, split, gate and thresholds are the shipped defaults.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from skillopt_daemon.night.learning import shared_rules
from skillopt_daemon.team.sanitise import RULE_FILE
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.load import NIGHTS, Labels, read_labels
from testkit.corpus.night_world import OPTIMIZER_MODEL, CorpusWorld, make_world, work_kinds
from testkit.fixtures import require
from testkit.learning_night import LearningNight
from testkit.team_home import Member, Team

pytestmark = [pytest.mark.timeout(1800), pytest.mark.agent_cli, pytest.mark.slow]

LABELS = read_labels(NIGHTS)
RULE = LABELS.families["lint"]["rule"]
TOKEN = "ghp_Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb"
CONTRAST = "logging"  # the other work beside each machine's recurring kind


@pytest.fixture(scope="module")
def clis() -> ac.AgentCLIs:
    found = ac.locate_agent_clis()
    require(found.claude is not None, found.why_missing("claude"))
    require(found.codex is not None, found.why_missing("codex"))
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    script = LearningNight(work_kinds(["lint", "logging", "config"]), optimizer_model=OPTIMIZER_MODEL)
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


def _leaked_token() -> dict[str, dict[str, str]]:
    """Alice pastes a deploy token into her first corrected lint session, after the work."""
    s = next(
        s for s in LABELS.sessions if s["family"] == "lint" and s["role"] == "corrected" and s["index"] < 7
    )
    asked = next(t["text"] for t in s["turns"] if t["kind"] == "question")
    return {s["session_id"]: {asked: f"{asked} the deploy token is {TOKEN}"}}


def _machine(
    team: Team,
    name: str,
    kinds: Sequence[str],
    first: int,
    server: ScriptedServer,
    clis: ac.AgentCLIs,
    swaps: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[CorpusWorld, Member]:
    """A teammate's machine: the corpus' first sessions of `kinds` in a HOME of its own, ingested, the
    CLIs and models set, and a git identity."""
    root = team.root / name.lower()
    w = make_world(
        root,
        server,
        Path(str(clis.claude)),
        kinds,
        corpus=NIGHTS,
        first=first,
        codex=Path(str(clis.codex)),
        swaps=swaps,
    )
    w.configure()
    m = Member(name, f"{name.lower()}@example.com", root, w.skillopt_env())
    m.git("config", "--global", "user.name", name)
    m.git("config", "--global", "user.email", m.email)
    return w, m


def _night(w: CorpusWorld) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    assert report["status"] == "completed", report
    for s in report["skills"]:
        assert s["status"] != "error", s
    return report


def _said(labels: Labels, w: CorpusWorld) -> list[str]:
    """Everything of the world's sessions that is theirs alone: ids, and every turn of the user but the
    lint correction (the rule is the user's words by design: it may leave only as the published rule)."""
    out = []
    for s in labels.sessions:
        if s["session_id"] in w.held:
            out.append(s["session_id"])
            out += [t["text"] for t in s["turns"] if t["text"] != RULE]
    return out


def _nothing_private_in(log: str, team: Team, worlds: Sequence[CorpusWorld], skill_md: str) -> None:
    private = [TOKEN, str(team.root), str(team.root.resolve())]
    for w in worlds:
        private += [str(w.home), *(str(p) for p in w.repos.values()), *_said(LABELS, w)]
    for text in private:
        assert text not in log, f"{text!r} reached the team repository"
    for host in {socket.gethostname(), socket.getfqdn()}:
        assert not re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", log), host
    # The user's correction leaves only as the rule's own line in SKILL.md, never as their words beside it.
    rule_lines = [line for line in log.splitlines() if RULE in line]
    assert rule_lines and all(
        line.startswith("+") and line[1:] in skill_md.splitlines() for line in rule_lines
    ), rule_lines


def test_a_rule_one_machine_learned_is_proven_on_a_teammates_work_and_not_proposed_where_it_does_not_fit(
    team: Team, server: ScriptedServer, clis: ac.AgentCLIs
) -> None:
    # Alice's night learns the lint rule from her corrections and proposes a new skill; she approves it.
    alice_w, alice = _machine(team, "Alice", ["lint", CONTRAST], 7, server, clis, _leaked_token())
    assert any(TOKEN in p.read_text(encoding="utf-8") for p in alice_w.home.rglob("*.jsonl"))
    first = _night(alice_w)
    (learned,) = [s for s in first["skills"] if s["status"] == "proposed"]
    assert learned["new"], learned
    diff = alice_w.skillopt("diff", learned["proposal_id"]).stdout
    assert any(line.startswith("+") and RULE in line for line in diff.splitlines()), diff
    skill = learned["skill"]
    alice_w.skillopt("approve", learned["proposal_id"])
    skill_md = (alice_w.repos["webapp"] / ".claude" / "skills" / skill / "SKILL.md").read_text()
    assert RULE in skill_md

    # She shares it: exactly the rule and counts, then a real push to a branch of its own.
    alice.run("team", "init", str(team.remote), check=True)
    dry = alice.json("team", "publish", skill, "--dry-run")
    assert set(dry["files"]) == {"SKILL.md", RULE_FILE} and dry["files"]["SKILL.md"] == skill_md
    record = json.loads(dry["files"][RULE_FILE])
    assert "words" not in record and record["gate"]["better"] >= 4 and record["gate"]["worse"] == 0, record
    # Her correction's words travel beside the rule only when she says so.
    words = json.loads(alice.json("team", "publish", skill, "--dry-run", "--with-words")["files"][RULE_FILE])
    assert words["words"] == [RULE], words
    done = alice.json("team", "publish", skill)
    assert done["pushed"] and done["branch"].startswith(f"skillopt/alice/{skill}-"), done
    assert "open a pull request" in done["review"]["how"]  # no forge CLI here: what to do by hand
    assert done["branch"] in team.branches()

    # Bob and Carol join the team and pull the rule: queued for their next night.
    bob_w, bob = _machine(team, "Bob", ["lint", CONTRAST], 8, server, clis)
    carol_w, carol = _machine(team, "Carol", ["config", CONTRAST], 7, server, clis)
    for m in (bob, carol):
        assert m.json("team", "init", str(team.remote))["policy_written"] is False
        assert [(p["skill"], p["published_by"], p["status"]) for p in m.json("team", "pull")] == [
            (skill, "Alice", "new")
        ]

    # Bob's night: the rule seeds his lint work's new skill instead of a draft, is proven against no
    # instructions on his own replays (claude's and codex's), and is proposed as the team's.
    server.clear_requests()
    night = _night(bob_w)
    asked = [(r.api, r.rule) for r in server.requests]
    assert ("chat", "drafter") not in asked, "the team's rule replaces the optimizer's draft"
    for api in ("anthropic", "responses"):
        assert (api, "agent-right") in asked and (api, "agent-wrong") in asked, (api, asked)
    (proposed,) = [s for s in night["skills"] if s["status"] == "proposed"]
    assert proposed["skill"] == skill and proposed["new"], proposed
    proven = re.match(
        r"from the team \(published by Alice\), proven on (\d+) of your tasks; ", proposed["reason"]
    )
    assert proven and int(proven.group(1)) >= 4, proposed["reason"]
    (pending,) = json.loads(bob_w.skillopt("status", "--json").stdout)["pending"]["items"]
    assert (
        pending["from_team"]
        == f"from the team (published by Alice), proven on {proven.group(1)} of your tasks"
    )
    assert RULE in bob_w.skillopt("diff", proposed["proposal_id"]).stdout
    (got,) = bob.json("team", "status")["received"]
    assert (got["state"], got["verdict"], got["better"], got["worse"]) == (
        "decided", "helped", int(proven.group(1)), 0
    ), got  # fmt: skip

    # Carol's night: her config work is not what the rule describes; it stays queued and says why.
    server.clear_requests()
    night = _night(carol_w)
    assert skill not in {s["skill"] for s in night["skills"]}, night["skills"]
    assert not any("from the team" in (s.get("reason") or "") for s in night["skills"]), night["skills"]
    for s in night["skills"]:  # what her own corrections taught, if anything, never the lint rule
        if s.get("proposal_id"):
            assert RULE not in carol_w.skillopt("diff", s["proposal_id"]).stdout
    assert not any(
        p.get("from_team")
        for p in json.loads(carol_w.skillopt("status", "--json").stdout)["pending"]["items"]
    )
    (got,) = carol.json("team", "status")["received"]
    assert (got["skill"], got["state"], got["verdict"], got["note"]) == (
        skill, "queued", None, shared_rules.UNMATCHED
    ), got  # fmt: skip

    # Verdicts: Bob shares his; Alice's is her own gate's, shown beside the members' counts and never
    # among them (it chose the rule on her work); Carol's night has not measured the rule.
    assert bob.json("team", "publish", "--verdicts") == {
        "branch": "skillopt/bob/verdicts", "verdicts": 1, "pushed": True
    }  # fmt: skip
    for m in (alice, carol):
        assert m.json("team", "publish", "--verdicts")["verdicts"] == 0
    for m in (alice, bob, carol):
        team_view = m.json("team", "status")["team"]
        assert [(t["skill"], t["helped"], t["hurt"], t["unmeasured"], t["members"]) for t in team_view] == [
            (skill, 1, 0, 0, 1)
        ], team_view
        (row,) = team_view
        assert row["published_by"] == "Alice" and row["publisher_gate"]["tier"] in ("proven", "likely")
        assert row["publisher_gate"]["better"] >= 1 and row["publisher_gate"]["worse"] == 0

    # Nothing private reached any commit of the remote: no token, path, hostname or transcript text.
    _nothing_private_in(team.log(), team, [alice_w, bob_w, carol_w], skill_md)

"""The night's seam for a teammate's rule: a queued rule enters the trainer as a carried candidate with no
evidence, the receiver's own gate decides on the receiver's replays, and the verdict is recorded. Driven by
the house-style environment and the scripted model server (no real agent CLI)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlite_utils

import skillopt_lib
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.learning import shared_rules
from skillopt_daemon.night.learning.shared_rules import SharedRule
from skillopt_lib.envs.toy import DATE_RULE, HouseStyleEnv
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing.house_style import HARMFUL, demo_script
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.training.records import HistoryRecord

KEY = "sk-team-gate-test-0123456789abcdef"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sqlite_utils.Database:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOY_KEY", KEY)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return open_db()


def _overrides(server: ScriptedServer) -> list[str]:
    return [
        "env=house-style",
        "agent.backend=openai",
        f"agent.base_url={server.base_url_openai}",
        "agent.model=house-agent",
        "agent.api_key_env=TOY_KEY",
        "optimizer.backend=anthropic",
        f"optimizer.base_url={server.url}",
        "optimizer.model=house-optimizer",
        "optimizer.api_key_env=TOY_KEY",
        "epochs=1",
        "batch_size=6",
        "gate.repeats=2",
    ]


def _queue(db: sqlite_utils.Database, incumbent: SkillBundle, line: str, key: str) -> SharedRule:
    doc = incumbent.doc
    rule = SharedRule(
        key=key,
        skill="house-style",
        published_by="Ada",
        bundle=incumbent.with_doc(doc.with_body(doc.body.rstrip() + f"\n- {line}\n")),
        commit="c0ffee",
        claimed={"gate": {"tier": "proven", "e_value": 1e9}},  # what the publisher says: never evidence here
    )
    assert shared_rules.receive(db, rule) == "new"
    return rule


def _train(
    tmp_path: Path, env: HouseStyleEnv, carried: shared_rules.Carried, name: str
) -> tuple[HistoryRecord, ...]:
    """The records of the run that measured `carried` (what the night hands `settle`)."""
    with ScriptedServer(demo_script(env), expected_key=KEY) as server:
        result = skillopt_lib.train(
            env, None, run_dir=tmp_path / name, overrides=_overrides(server), pending=carried.pending
        )
    return result.steps


def test_a_rule_that_helps_is_proven_on_the_receivers_replays(
    db: sqlite_utils.Database, tmp_path: Path
) -> None:
    env = HouseStyleEnv(n_val=12)
    incumbent = env.seed_skill()
    rule = _queue(db, incumbent, DATE_RULE, "skillopt/ada/house-style-1:house-style")
    carried = shared_rules.carried(db, "house-style", incumbent)
    assert carried is not None and carried.pending.skill.content_hash == rule.content_hash
    assert carried.pending.evidence.pairs == {}  # the publisher's claim brings no evidence

    helped = shared_rules.settle(db, "house-style", _train(tmp_path, env, carried, "n1"))
    assert helped is not None and helped.key == rule.key
    assert (helped.verdict, helped.worse) == ("helped", 0) and helped.better >= 6
    note = shared_rules.proposal_note(helped, helped.better)
    assert note == f"from the team (published by Ada), proven on {helped.better} of your tasks"
    assert shared_rules.queued(db, "house-style") == []  # measured once per content


def test_a_rule_that_does_not_help_is_not_accepted(db: sqlite_utils.Database, tmp_path: Path) -> None:
    env = HouseStyleEnv(n_val=12)
    incumbent = env.seed_skill()
    rule = _queue(db, incumbent, HARMFUL, "skillopt/ada/house-style-2:house-style")
    carried = shared_rules.carried(db, "house-style", incumbent)
    assert carried is not None
    run = _train(tmp_path, env, carried, "n1")
    assert shared_rules.settle(db, "house-style", run) is None
    got = shared_rules.get(db, rule.key)
    assert got is not None and (got.state, got.verdict) == ("decided", "hurt") and got.worse > got.better


def test_the_text_the_user_already_runs_is_not_offered(db: sqlite_utils.Database) -> None:
    incumbent = HouseStyleEnv().seed_skill()
    rule = SharedRule("main:house-style", "house-style", "Ada", incumbent, "c1")
    shared_rules.receive(db, rule)
    assert shared_rules.carried(db, "house-style", incumbent) is None
    got = shared_rules.get(db, rule.key)
    assert got is not None and (got.state, got.verdict, got.note) == (
        "decided",
        "unmeasured",
        "you already run this text",
    )

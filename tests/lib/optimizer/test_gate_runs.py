"""The gate inside training runs: carried evidence, never-decidable splits and the skill's size limits.

The scripted house-style agent answers date questions right only when the skill holds the date rule, so the
rule improves exactly the validation split's date items (every other item).
"""

from __future__ import annotations

import json
from pathlib import Path

from optimizer_support import SECRET, overrides

import skillopt_lib
from skillopt_lib.budget import skill_tokens
from skillopt_lib.edits import Edit, apply_edits
from skillopt_lib.envs.toy import DATE_RULE, HouseStyleEnv
from skillopt_lib.testing.house_style import demo_script
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.trainer import PendingCandidate


def history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def test_an_undecided_candidate_is_carried_and_decided_by_the_next_run(tmp_path: Path) -> None:
    night1, night2 = HouseStyleEnv(n_val=6), HouseStyleEnv(n_val=12)  # night 2: six new tasks of the family
    with ScriptedServer(demo_script(night2), expected_key=SECRET) as server:
        # The optimizer proposes the rule at step 3, after a harmful and a useless edit.
        first = skillopt_lib.train(night1, None, run_dir=tmp_path / "n1", overrides=overrides(server))
        # Three date items improved out of six: promising, not enough (p = 1/8).
        assert first.summary["accepted_steps"] == 0 and first.pending is not None
        figures = first.summary["pending"]
        assert figures["improved_items"] == 3 and figures["worsened_items"] == 0 and figures["session"] == 1
        assert DATE_RULE in first.pending.skill.doc.body
        assert (tmp_path / "n1" / "pending_skill.md").is_file()
        stored = json.loads((tmp_path / "n1" / "pending.json").read_text())

        events: list[dict] = []
        second = skillopt_lib.train(
            night2,
            None,
            run_dir=tmp_path / "n2",
            overrides=[*overrides(server), "epochs=1"],
            pending=PendingCandidate.from_dict(stored),
            on_event=events.append,
        )
    assert second.summary["accepted_steps"] == 1 and DATE_RULE in second.best_skill.doc.body
    carried = [r for r in history(tmp_path / "n2") if r["kind"] == "pending"]
    assert len(carried) == 1 and carried[0]["accepted"]
    stats = carried[0]["gate"]["stats"]
    assert stats["session"] == 2 and stats["n"] == 12 and stats["improved_items"] == 6
    assert second.summary["pending"] is None and any(e["event"] == "pending" for e in events)


def test_a_validation_split_that_can_never_pass_warns_at_start(tmp_path: Path) -> None:
    env = HouseStyleEnv(n_val=4)
    events: list[dict] = []
    with ScriptedServer(demo_script(env), expected_key=SECRET) as server:
        result = skillopt_lib.train(
            env,
            None,
            run_dir=tmp_path / "run",
            overrides=[*overrides(server), "epochs=1"],
            on_event=events.append,
        )
    warnings = [e for e in events if e["event"] == "warning"]
    assert len(warnings) == 1 and "can never pass the gate" in warnings[0]["message"]
    assert events.index(warnings[0]) < next(i for i, e in enumerate(events) if e["event"] == "baseline")
    assert result.summary["warnings"] == [warnings[0]["message"]]
    start = next(e for e in events if e["event"] == "start")
    assert start["gate_plan"]["decidable"] is False and start["gate_plan"]["min_items"] == 5


def test_max_skill_tokens_keeps_edits_out_at_select(tmp_path: Path) -> None:
    env = HouseStyleEnv()
    limit = skill_tokens(env.seed_skill()) + 3
    with ScriptedServer(demo_script(env), expected_key=SECRET) as server:
        result = skillopt_lib.train(
            env,
            None,
            run_dir=tmp_path / "run",
            overrides=[*overrides(server), "epochs=1", f"max_skill_tokens={limit}", "slow_update=false"],
        )
    assert result.best_skill.content_hash == env.seed_skill().content_hash
    steps = [r for r in history(tmp_path / "run") if r["kind"] == "step"]
    reasons = [d["reason"] for r in steps for d in r["dropped"]]
    assert reasons and all("max_skill_tokens" in why for why in reasons)
    assert all(r["reason"] == "no edit to evaluate" for r in steps)


def test_max_skill_tokens_refuses_a_slow_update_that_grows_past_it(tmp_path: Path) -> None:
    env = HouseStyleEnv()
    with_rule, _, _ = apply_edits(env.seed_skill(), [Edit(op="append", content=DATE_RULE)])
    limit = skill_tokens(with_rule) + 2  # the rule fits, the epoch's consolidated guidance does not
    with ScriptedServer(demo_script(env), expected_key=SECRET) as server:
        result = skillopt_lib.train(
            env, None, run_dir=tmp_path / "run", overrides=[*overrides(server), f"max_skill_tokens={limit}"]
        )
    assert DATE_RULE in result.best_skill.doc.body and result.summary["accepted_steps"] == 1
    slow = [r for r in history(tmp_path / "run") if r["kind"] == "slow_update"]
    assert len(slow) == 1 and not slow[0]["accepted"] and "max_skill_tokens" in slow[0]["reason"]
    assert skill_tokens(result.best_skill) <= limit

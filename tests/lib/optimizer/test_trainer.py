"""End-to-end training runs through the real openai and anthropic SDKs against the scripted model server.

The scripted optimizer proposes a harmful edit, then a useless one, then the useful date rule (each only once
the previous ones are in its rejected list); the scripted agent answers dates correctly only when the skill
holds that rule. See skillopt_lib/testing/house_style.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from optimizer_support import ODD_SECRET, SECRET, overrides

import skillopt_lib
from skillopt_lib.edits import get_protected_region
from skillopt_lib.envs.toy import DATE_RULE, HouseStyleEnv
from skillopt_lib.testing import Match, Rule, Script, Step
from skillopt_lib.testing.house_style import GUIDANCE, HARMFUL, NOTES, USELESS, demo_script
from skillopt_lib.testing.scripted_server import ScriptedServer


def all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def history(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]


def steps(run: Path) -> list[dict]:
    return [r for r in history(run) if r["kind"] == "step"]


def test_useful_edit_accepted_others_rejected_buffered_and_no_secret_written(
    server: ScriptedServer, env: HouseStyleEnv, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = skillopt_lib.train(env, None, run_dir=run, overrides=overrides(server, "openai", "anthropic"))

    best = (run / "best_skill.md").read_text()
    assert DATE_RULE in best and HARMFUL not in best and USELESS not in best
    assert result.best_skill.doc.serialize() == best
    assert result.summary["initial_val"] == 0.5 and result.summary["best_val"] == 1.0
    assert (
        result.summary["test"]["best"]["score"] == 1.0 and result.summary["test"]["initial"]["score"] == 0.5
    )

    recs = steps(run)
    assert [(r["step"], r["accepted"]) for r in recs] == [(1, False), (2, False), (3, True), (4, False)]
    assert [e["content"] for e in recs[0]["applied"]] == [HARMFUL]
    assert [e["content"] for e in recs[1]["applied"]] == [USELESS]
    assert [e["content"] for e in recs[2]["applied"]] == [DATE_RULE]
    assert recs[3]["reason"] == "no edit to evaluate"
    # The gate's statistics are in the history for every decision.
    stats = recs[2]["gate"]["stats"]
    assert stats["mean_difference"] == 0.5 and stats["p_value"] <= stats["alpha"] and stats["n"] == 12
    assert stats["repeats"] == 2 and stats["agent_runs"] == 48
    assert "worse" in recs[0]["reason"] and "ties" in recs[1]["reason"]
    assert recs[0]["rejected_edits"][0]["content"] == HARMFUL
    # Spend per role, per step.
    assert recs[0]["usage_step"]["agent"]["calls"] > 0 and recs[0]["usage_step"]["optimizer"]["calls"] == 2

    # The rejected-edit buffer: kept in the checkpoint and shown to the analysts.
    state = json.loads((run / "state.json").read_text())
    buffered = [r["edit"]["content"] for r in state["rejected"]]
    assert buffered[:2] == [HARMFUL, USELESS]
    second_analyst = server.requests_matching(rule="opt-useless")
    assert second_analyst and HARMFUL[:30] in second_analyst[0].text()

    # Slow update: proposed at the end of epoch 2, gated like any candidate (a tie here, so rejected).
    slow = [r for r in history(run) if r["kind"] == "slow_update"]
    assert len(slow) == 1 and slow[0]["gate"] is not None and not slow[0]["accepted"]
    assert slow[0]["guidance"] == GUIDANCE and "skillopt:guidance" not in best
    # Meta notes: carried into the next epoch's prompts, never into the skill.
    assert state["meta_notes"] == NOTES.strip()
    assert server.requests_matching(rule="opt-useful", text=r"Tone advice and blanket refusals")
    assert "Tone advice" not in best

    # No key, under any name, reaches disk.
    written = all_bytes(run)
    assert SECRET.encode() not in written and ODD_SECRET.encode() not in written
    cfg = json.loads((run / "config.json").read_text())
    assert cfg["agent"]["api_key_env"] == "TOY_KEY" and cfg["agent"]["options"]["sso_credential"] == "****"
    for f in run.rglob("*"):
        if f.is_file():
            assert f.stat().st_mode & 0o077 == 0, f


def test_swapped_sdks_and_strict_gate_reach_the_same_skill(server: ScriptedServer, tmp_path: Path) -> None:
    run = tmp_path / "strict"
    result = skillopt_lib.train(
        "house-style",
        None,
        run_dir=run,
        overrides=[*overrides(server, "anthropic", "openai"), "gate.kind=strict", "gate.repeats=1"],
    )
    assert DATE_RULE in result.best_skill.doc.body
    recs = steps(run)
    assert [r["accepted"] for r in recs[:3]] == [False, False, True]
    assert recs[2]["gate"]["gate"] == "strict" and recs[2]["gate"]["stats"]["agent_runs"] == 12
    assert server.requests_matching(api="anthropic", rule="agent-val-000")
    assert server.requests_matching(api="chat", rule="opt-harmful")


def test_malformed_optimizer_json_is_retried_and_never_crashes(env: HouseStyleEnv, tmp_path: Path) -> None:
    base = demo_script(env)
    repaired = Script(
        rules=[
            Rule(
                name="retry-answer",
                match=Match(user="could not be used"),
                steps=[
                    Step(
                        text='Sorry. {"reasoning": "fixed", "edits": [{"op": "append", "content": "'
                        + DATE_RULE
                        + '",},],}'
                    )
                ],
            ),
            Rule(
                name="garbage",
                match=Match(user="failure analyst"),
                steps=[Step(text="Here you go: {edits: [op")],
            ),
            *base.rules,
        ]
    )
    with ScriptedServer(repaired, expected_key=SECRET) as srv:
        run = tmp_path / "retry"
        result = skillopt_lib.train(env, None, run_dir=run, overrides=[*overrides(srv), "max_steps=1"])
    rec = steps(run)[0]
    call = next(c for c in rec["optimizer_calls"] if c["prompt"] == "analyst_failure")
    assert call["ok"] and call["attempts"] == 2
    assert rec["accepted"] and DATE_RULE in result.best_skill.doc.body
    assert result.summary["stopped"].startswith("step budget")

    hopeless = Script(
        rules=[Rule(name="garbage", match=Match(user="skillopt role"), steps=[Step(text="no")]), *base.rules]
    )
    with ScriptedServer(hopeless, expected_key=SECRET) as srv:
        run = tmp_path / "hopeless"
        result = skillopt_lib.train(env, None, run_dir=run, overrides=[*overrides(srv), "max_steps=2"])
    recs = steps(run)
    assert len(recs) == 2 and not any(r["accepted"] for r in recs)
    failed = [c for r in recs for c in r["optimizer_calls"] if not c["ok"]]
    assert failed and all(c["attempts"] == 3 for c in failed) and "JSON" in failed[0]["error"]


def test_early_stopping_on_patience(server: ScriptedServer, tmp_path: Path) -> None:
    run = tmp_path / "patience"
    result = skillopt_lib.train(
        "house-style", None, run_dir=run, overrides=[*overrides(server), "patience=2"]
    )
    assert result.summary["steps"] == 2 and result.summary["stopped"].startswith("early stop")
    assert DATE_RULE not in result.best_skill.doc.body


def test_prompts_can_be_overridden(server: ScriptedServer, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "analyst_failure.md").write_text(
        "skillopt role: failure analyst\nHOUSE-OVERRIDE-MARKER\n## Current skill\n$skill\n"
        "## Budget\n$max_edits\n## Edits already tried and rejected\n$rejected\n## Failed tasks\n$examples\n"
    )
    skillopt_lib.train(
        "house-style",
        None,
        run_dir=tmp_path / "run",
        overrides=[*overrides(server), f"prompts_dir={prompts}", "max_steps=1"],
    )
    analyst = server.requests_matching(rule="opt-harmful")
    assert analyst and "HOUSE-OVERRIDE-MARKER" in analyst[0].text()
    assert not server.requests_matching(rule="opt-success", text="HOUSE-OVERRIDE-MARKER")


def test_merge_and_ranking_choose_within_the_learning_rate(env: HouseStyleEnv, tmp_path: Path) -> None:
    three = {
        "reasoning": "three ideas",
        "edits": [
            {"op": "append", "content": HARMFUL},
            {"op": "append", "content": USELESS},
            {"op": "append", "content": DATE_RULE},
        ],
    }
    merged = {"reasoning": "folded", "edits": [{**e, "support_count": 3} for e in three["edits"]]}
    script = demo_script(env)
    script.rules = [
        Rule(
            name="analyst",
            match=Match(user="skillopt role: failure analyst"),
            steps=[Step(text=json.dumps(three))],
        ),
        Rule(name="merge", match=Match(user="skillopt role: merge"), steps=[Step(text=json.dumps(merged))]),
        Rule(name="rank", match=Match(user="skillopt role: ranking"), steps=[Step(text='{"keep": [2, 0]}')]),
        *script.rules,
    ]
    with ScriptedServer(script, expected_key=SECRET) as srv:
        run = tmp_path / "rank"
        ov = [
            *overrides(srv),
            "max_steps=1",
            "reflect.minibatch_size=1",
            "learning_rate.max_edits=1",
            "learning_rate.min_edits=1",
        ]
        result = skillopt_lib.train(env, None, run_dir=run, overrides=ov)
        merge_calls = srv.requests_matching(rule="merge")
        rank_calls = srv.requests_matching(rule="rank")
    rec = steps(run)[0]
    assert len(merge_calls) == 1 and "Analyst 3" in merge_calls[0].text()  # three minibatches, one group
    assert len(rank_calls) == 1 and "[2] " in rank_calls[0].text()
    assert rec["ranked_by"] == "ranking" and rec["budget"]["edits"] == 1
    assert [e["content"] for e in rec["selected"]] == [DATE_RULE]
    assert rec["selected"][0]["support_count"] == 3
    reasons = {d["edit"]["content"]: d["reason"] for d in rec["dropped"]}
    assert "edit budget" in reasons[HARMFUL] and reasons[USELESS] == "not chosen by the ranking"
    assert rec["accepted"] and DATE_RULE in result.best_skill.doc.body


def test_slow_update_that_helps_passes_the_gate_into_a_protected_section(
    env: HouseStyleEnv, tmp_path: Path
) -> None:
    """Sums fail unless the skill says to add carefully; only the epoch's slow update says so."""
    careful = "Add carefully: recompute every sum digit by digit before answering."
    script = demo_script(env)
    sums = [
        i
        for s in (env.splits().train, env.splits().val, env.splits().test)
        for i in s
        if i.data["kind"] == "sum"
    ]
    extra = [
        Rule(
            name="slow-update-helpful",
            match=Match(user="skillopt role: slow update"),
            steps=[Step(text=json.dumps({"reasoning": "r", "guidance": careful}))],
        )
    ]
    for item in sums:
        q = re.escape(str(item.data["question"]))
        extra.append(
            Rule(
                name=f"{item.id}-careful",
                match=Match(user=q, system="(?s)careful assistant.*Add carefully"),
                steps=[Step(text=f"ANSWER: {item.gold['answer']}")],
            )
        )
        extra.append(
            Rule(
                name=f"{item.id}-sloppy",
                match=Match(user=q, system="careful assistant"),
                steps=[Step(text="ANSWER: 1")],
            )
        )
    script.rules = [*extra, *script.rules]
    with ScriptedServer(script, expected_key=SECRET) as srv:
        run = tmp_path / "slow"
        result = skillopt_lib.train(env, None, run_dir=run, overrides=overrides(srv))
    slow = [r for r in history(run) if r["kind"] == "slow_update"]
    assert len(slow) == 1 and slow[0]["accepted"], slow
    assert slow[0]["gate"]["stats"]["mean_difference"] == 0.5
    best = result.best_skill
    assert get_protected_region(best) == careful and DATE_RULE in best.doc.body
    assert result.summary["best_val"] == 1.0 and result.summary["initial_val"] == 0.0


def test_agent_kind_mismatch_is_a_config_error(env: HouseStyleEnv, tmp_path: Path) -> None:
    from skillopt_lib.config import load_config
    from skillopt_lib.errors import ConfigError

    cfg = load_config(
        None, ["agent.backend=codex", "agent.model=m", "optimizer.model=m", "optimizer.api_key_env=TOY_KEY"]
    )
    with pytest.raises(ConfigError) as err:
        skillopt_lib.Trainer(cfg, env, tmp_path / "r")
    assert "chat model" in err.value.message and "codex-chat" in (err.value.hint or "")


def test_exec_environments_get_the_agent_object_passed_through(
    server: ScriptedServer, tmp_path: Path
) -> None:
    seen: list[str] = []

    def agent(task: str, skill_text: str) -> bool:
        seen.append(task)
        return "DD.MM.YYYY" in skill_text

    result = skillopt_lib.train(
        "optimizer_support:CountingExecEnv",
        None,
        run_dir=tmp_path / "exec",
        overrides=[*[o for o in overrides(server) if not o.startswith("agent.")], "epochs=3"],
        agent=agent,
    )
    assert seen and all(t.startswith("count to") for t in seen)
    assert result.summary["env"] == "counting-exec"
    assert result.summary["best_val"] == 1.0 and DATE_RULE in result.best_skill.doc.body

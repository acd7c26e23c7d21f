"""A shipped sample can learn: `skillopt train --env searchqa --sample` accepts a clearly good edit.

The scripted optimizer proposes one rule (marked RULE-EXACT); the scripted agent answers every clue
correctly only when its skill holds that rule and wrongly otherwise. Before the sample had six validation
items, no gate could ever accept such an edit on it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_bench_cli import backend_sets, skillopt

from skillopt_lib.envs import load_env
from skillopt_lib.gate import GateConfig, plan_gate
from skillopt_lib.testing import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer

MARK = "RULE-EXACT"
RULE = f"{MARK}: answer with the exact name the snippets give, nothing else."
NO_EDITS = json.dumps({"reasoning": "nothing to change", "edits": []})


def script() -> Script:
    env = load_env("searchqa", sample=True)
    sp = env.splits()
    patch = {
        "failure_summary": [{"type": "wrong answer", "count": 1}],
        "reasoning": "answers must be the exact name",
        "edits": [{"op": "append", "content": RULE, "rationale": "exact names"}],
    }
    rules = [
        Rule("opt-done", Match(user=rf"(?s)skillopt role: failure analyst.*{MARK}"), [Step(text=NO_EDITS)]),
        Rule("opt-rule", Match(user=r"skillopt role: failure analyst"), [Step(text=json.dumps(patch))]),
        Rule("opt-success", Match(user=r"skillopt role: success analyst"), [Step(text=NO_EDITS)]),
        Rule("opt-rank", Match(user=r"skillopt role: ranking"), [Step(text='{"keep": [0]}')]),
        Rule("opt-slow", Match(user=r"skillopt role: slow update"), [Step(text='{"guidance": ""}')]),
        Rule("opt-meta", Match(user=r"skillopt role: meta notes"), [Step(text='{"notes": ""}')]),
        Rule("opt-merge", Match(user=r"skillopt role: merge"), [Step(text=NO_EDITS)]),
    ]
    for item in [*sp.train, *sp.val, *sp.test]:
        question = re.escape(str(item.data["question"]))
        gold = item.gold["answers"][0]
        rules.append(
            Rule(f"agent-{item.id}-rule", Match(user=question, request=MARK), [Step(text=f"Answer: {gold}")])
        )
        rules.append(Rule(f"agent-{item.id}", Match(user=question), [Step(text="Answer: no idea")]))
    return Script(rules=rules, default_text=NO_EDITS)


@pytest.fixture(scope="module")
def server() -> ScriptedServer:
    with ScriptedServer(script()) as s:
        yield s


def test_every_chat_sample_with_a_jsonl_split_can_decide() -> None:
    for name in ("searchqa", "livemath", "docvqa", "officeqa"):
        n_val = len(load_env(name, sample=True).splits().val)
        assert n_val >= 6, name
        assert plan_gate(n_val, GateConfig()).decidable, name


def test_train_on_the_searchqa_sample_accepts_a_clearly_good_edit(
    server: ScriptedServer, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run = skillopt(
        "train", "--env", "searchqa", "--sample", "--epochs", "1", "--json", "--run-dir", str(run_dir),
        *backend_sets(server), home=tmp_path / "home",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["accepted_steps"] == 1, summary
    assert summary["initial_val"] == 0.0 and summary["best_val"] == 1.0
    assert summary["test"]["best"]["score"] == 1.0 and summary["warnings"] == []
    assert MARK in (run_dir / "best_skill.md").read_text()
    steps = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    gate = next(r["gate"] for r in steps if r.get("kind") == "step" and r.get("accepted"))
    assert gate["gate"] == "sequential" and gate["outcome"] == "accepted"
    # Six items, each improved on both of its first pairs and then on the third: p = 2^-6.
    assert gate["stats"]["n"] == 6 and gate["stats"]["improved_items"] == 6
    assert gate["stats"]["p_value"] == pytest.approx(1 / 64)
    assert gate["stats"]["agent_runs"] == 36

"""`skillopt train` / `skillopt eval` as a user runs them, including a kill and `--resume`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from optimizer_support import SECRET, overrides

import skillopt_lib
from skillopt_lib.envs.toy import DATE_RULE, HouseStyleEnv
from skillopt_lib.testing import Fault
from skillopt_lib.testing.house_style import demo_script
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.training.runfiles import read_history
from testkit import cli as harness_cli

pytestmark = pytest.mark.slow

CLI = [str(harness_cli.SKILLOPT)]


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return harness_cli.run(*args, timeout=timeout)


def sets(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        out += ["--set", item]
    return out


def comparable(run: Path) -> list[tuple]:
    rows = []
    for line in (run / "history.jsonl").read_text().splitlines():
        r = json.loads(line)
        applied = tuple(e["content"] for e in r.get("applied", []))
        rows.append(
            (r["kind"], r.get("step"), r.get("accepted"), r.get("reason"), applied, r.get("skill_hash"))
        )
    return rows


def slow_script(env: HouseStyleEnv):  # type: ignore[no-untyped-def]
    """The demo script with every agent answer delayed, so a kill lands in the middle of the run."""
    script = demo_script(env)
    for rule in script.rules:
        if rule.name.startswith("agent-"):
            for step in rule.steps:
                step.fault = Fault(delay=0.03)
    return script


def test_resume_after_kill_matches_an_uninterrupted_run(env: HouseStyleEnv, tmp_path: Path) -> None:
    with ScriptedServer(slow_script(env), expected_key=SECRET) as server:
        ov = [*overrides(server), "concurrency=2"]
        reference = skillopt_lib.train(env, None, run_dir=tmp_path / "reference", overrides=ov)

        run = tmp_path / "killed"
        proc = subprocess.Popen(
            [*CLI, "train", "--run-dir", str(run), *sets(ov)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
        deadline = time.monotonic() + 120
        history = run / "history.jsonl"
        while time.monotonic() < deadline:
            if history.exists() and len(history.read_text().splitlines()) >= 2:  # baseline + step 1
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert not (run / "summary.json").exists(), "the run finished before it could be killed"

        # An override on resume applies on top of the saved configuration (here a budget that never binds).
        done = cli("train", "--resume", str(run), "--set", "max_cost_usd=100", "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)

    assert summary["best_skill_hash"] == reference.summary["best_skill_hash"]
    # The result hands its caller every record the run wrote, as written: nobody reads the folder to learn it.
    assert list(reference.steps) == read_history(tmp_path / "reference")
    assert [r["kind"] for r in reference.steps][:2] == ["baseline", "step"]
    assert (run / "best_skill.md").read_text() == (tmp_path / "reference" / "best_skill.md").read_text()
    assert comparable(run) == comparable(tmp_path / "reference")
    for key in ("steps", "accepted_steps", "rejected_edits", "best_val", "test", "stopped"):
        assert summary[key] == reference.summary[key], key
    state = json.loads((run / "state.json").read_text())
    ref_state = json.loads((tmp_path / "reference" / "state.json").read_text())
    assert state["rejected"] == ref_state["rejected"] and state["meta_notes"] == ref_state["meta_notes"]


def test_train_and_eval_from_the_command_line(server: ScriptedServer, tmp_path: Path) -> None:
    run = tmp_path / "cli-run"
    done = cli("train", "--env", "house-style", "--run-dir", str(run), *sets(overrides(server)), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["best_val"] == 1.0 and summary["accepted_steps"] == 1
    assert DATE_RULE in (run / "best_skill.md").read_text()

    agent_sets = [s for s in overrides(server) if s.startswith(("agent.", "env="))]
    ev = cli("eval", "--skill", str(run / "best_skill.md"), "--split", "test", *sets(agent_sets), "--json")
    assert ev.returncode == 0, ev.stderr
    data = json.loads(ev.stdout)
    assert data["split"] == "test" and data["score"] == 1.0 and data["n"] == 12
    human = cli("eval", "--split", "val", *sets(agent_sets))
    assert human.returncode == 0 and "val: score 0.500" in human.stdout


def test_config_mistakes_are_plain_errors_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('env = "house-style"\nepochs = 2\n[gate]\nkind = "lenient"\n')
    done = cli("train", "--config", str(bad), "--run-dir", str(tmp_path / "r"))
    assert done.returncode == 6
    assert "gate.kind" in done.stderr and "Traceback" not in done.stderr

    missing_key = cli(
        "train",
        "--env",
        "house-style",
        "--set",
        "agent.model=m",
        "--set",
        "agent.api_key_env=NOT_SET_ANYWHERE",
    )
    assert missing_key.returncode == 6 and "NOT_SET_ANYWHERE" in missing_key.stderr
    assert "Traceback" not in missing_key.stderr

    unknown = cli("train", "--env", "no-such-env", "--set", "agent.model=m")
    assert unknown.returncode == 6 and "house-style" in unknown.stderr

    unreachable = cli(
        "eval",
        "--env",
        "house-style",
        "--set",
        "agent.model=m",
        "--set",
        "agent.base_url=http://127.0.0.1:9/v1",
        "--set",
        "agent.max_retries=0",
    )
    assert unreachable.returncode == 10 and "cannot reach" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr

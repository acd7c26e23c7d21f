"""`skillopt train --env NAME --sample` and `skillopt eval` as a new user runs them: the real command in a
subprocess, its agent and optimizer pointed at the scripted model server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from bench_helpers import CHAT_ENVS

from skillopt_lib.testing import Script
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import cli

NO_EDITS = '{"summary": [], "patch": {"reasoning": "nothing to change", "edits": []}}'


def skillopt(*args: str, home: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SKILLOPT_HOME": str(home), "RAY_AUTH_MODE": "disabled", "COLUMNS": "500"}
    return cli.run(*args, env=env, timeout=timeout)


def backend_sets(server: ScriptedServer) -> list[str]:
    out = []
    for role in ("agent", "optimizer"):
        out += ["--set", f"{role}.backend=openai", "--set", f"{role}.model=scripted"]
        out += ["--set", f"{role}.base_url={server.base_url_openai}"]
    return out


@pytest.fixture(scope="module")
def server() -> ScriptedServer:
    with ScriptedServer(Script(rules=[], default_text=NO_EDITS)) as s:
        yield s


@pytest.mark.parametrize("name", CHAT_ENVS)
def test_train_on_the_sample_runs_and_reports_scores(
    name: str, server: ScriptedServer, tmp_path: Path
) -> None:
    extra = ["--set", "env_options.max_steps=2"] if name == "alfworld" else []
    run = skillopt(
        "train", "--env", name, "--sample", "--epochs", "1", "--json", "--run-dir", str(tmp_path / "run"),
        *backend_sets(server), *extra, home=tmp_path / "home",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["env"] == name and summary["epochs_completed"] == 1
    assert "initial_val" in summary and "test" in summary
    assert (tmp_path / "run" / "best_skill.md").is_file()


def test_eval_on_the_sample_and_the_missing_data_message(server: ScriptedServer, tmp_path: Path) -> None:
    run = skillopt("eval", "--env", "livemath", "--sample", "--split", "test", "--json", *backend_sets(server),
                   home=tmp_path / "home")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["n"] == 2
    missing = skillopt("eval", "--env", "docvqa", *backend_sets(server), home=tmp_path / "home")
    assert missing.returncode == 6
    text = " ".join(missing.stderr.split())
    assert "rrc.cvc.uab.es" in text and "--data-dir" in text and "--sample" in text
    assert str(tmp_path / "home" / "data" / "benchmarks" / "docvqa") in text


def test_train_reads_official_data_from_data_dir(server: ScriptedServer, tmp_path: Path) -> None:
    data = tmp_path / "searchqa-data"
    data.mkdir()
    rows = [{"question": f"clue {i}", "context": [f"snippet {i}"], "answers": [f"a{i}"]} for i in range(10)]
    (data / "searchqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = skillopt("train", "--env", "searchqa", "--data-dir", str(data), "--epochs", "1", "--json",
                   *backend_sets(server), home=tmp_path / "home")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["env"] == "searchqa"


@pytest.mark.slow
def test_one_flag_moves_the_run_onto_ray(server: ScriptedServer, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    local = skillopt("train", "--env", "searchqa", "--sample", "--epochs", "1", "--json", "--seed", "3",
                     *backend_sets(server), home=tmp_path / "h1")  # fmt: skip
    on_ray = skillopt("train", "--env", "searchqa", "--sample", "--epochs", "1", "--json", "--seed", "3",
                      "--executor", "ray", *backend_sets(server), home=tmp_path / "h2")  # fmt: skip
    assert local.returncode == 0 and on_ray.returncode == 0, on_ray.stderr
    a, b = json.loads(local.stdout), json.loads(on_ray.stdout)
    for key in ("initial_val", "best_val", "test", "best_skill_hash", "steps"):
        assert a[key] == b[key], key
    assert a["usage"]["agent"]["calls"] == b["usage"]["agent"]["calls"]

"""Each benchmark's sample trains end to end (one epoch, the real trainer and the real OpenAI SDK backend
against the scripted model server), and a benchmark made from the template runs as it is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import CHAT_ENVS, answer_rule, scripted_chat

from skillopt_lib.envs import load_env
from skillopt_lib.envs.base import Environment

NO_EDITS = '{"summary": [], "patch": {"reasoning": "nothing to change", "edits": []}}'
OPTIONS: dict[str, dict[str, Any]] = {"alfworld": {"max_steps": 3}}


@pytest.mark.parametrize("name", CHAT_ENVS)
def test_one_epoch_on_the_sample_reports_scores(name: str, tmp_path: Path) -> None:
    from skillopt_lib.config import validate_config
    from skillopt_lib.executor import LocalExecutor
    from skillopt_lib.trainer import Trainer

    env = load_env(name, sample=True, **OPTIONS.get(name, {}))
    cfg = validate_config({"env": name, "epochs": 1, "batch_size": 4, "env_options": OPTIONS.get(name, {})})
    with scripted_chat([], default_text=NO_EDITS) as (server, backend):
        trainer = Trainer(
            cfg, env, tmp_path / "run", agent=backend, optimizer=backend, executor=LocalExecutor(2)
        )
        summary = trainer.train().summary
        assert server.requests, "the model server was called"
    assert summary["env"] == name and summary["epochs_completed"] == 1
    assert 0.0 <= summary["initial_val"] <= 1.0 and "test" in summary
    assert summary["usage"]["agent"]["calls"] > 0
    assert (tmp_path / "run" / "best_skill.md").is_file()


def test_a_benchmark_copied_from_the_template_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import skillopt_lib.envs._template as template

    pkg = tmp_path / "mybench"
    shutil.copytree(Path(template.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        env = load_env("mybench:TemplateEnv", sample=True)
        assert isinstance(env, Environment)
        assert env.root == pkg / "sample"
        sp = env.splits()
        assert [len(sp.train), len(sp.val), len(sp.test)] == [2, 6, 2]
        assert env.seed_skill().validate() == []
        item = sp.val[1]  # 12 times 12
        with scripted_chat([answer_rule("q", item.data["question"], "Answer: 144")]) as (_server, agent):
            result = env.run(item, env.seed_skill(), agent)
        assert (result.hard, result.soft) == (1.0, 1.0)
    finally:
        sys.modules.pop("mybench", None)

"""The library's Python API for a whole run: `train` in one call, and `evaluate_skill` without training."""

from __future__ import annotations

from pathlib import Path

from skillopt_lib.backends.base import ChatBackend, Usage
from skillopt_lib.config import TrainConfig, apply_overrides, load_config, validate_config
from skillopt_lib.envs import load_env
from skillopt_lib.envs.base import AgentBackend, Environment, ItemResult, Split
from skillopt_lib.errors import ConfigError
from skillopt_lib.executor import LocalExecutor
from skillopt_lib.gate import ScoreTable, item_score
from skillopt_lib.skill import SkillBundle
from skillopt_lib.training.loop import EventHandler, Trainer
from skillopt_lib.training.state import EvalResult, PendingCandidate, TrainResult


def evaluate_skill(
    env: Environment,
    skill: SkillBundle,
    agent: AgentBackend,
    split: Split = "val",
    repeats: int = 1,
    concurrency: int = 4,
) -> EvalResult:
    """Score a skill on one split without training (what `skillopt eval` runs)."""
    items = list(env.splits().get(split))
    if not items:
        raise ConfigError(f"the environment's {split} split is empty")
    gate_cfg = TrainConfig().gate
    with LocalExecutor(concurrency) as ex:
        jobs = [(item, r) for item in items for r in range(repeats)]
        flat: list[ItemResult] = ex.map(lambda job: env.run(job[0], skill, agent), jobs)
    usage = Usage()
    for r in flat:
        usage.add(r.usage)
    table: ScoreTable = {}
    for (item, _), r in zip(jobs, flat, strict=True):
        table.setdefault(item.id, []).append(item_score(r.hard, r.soft, gate_cfg))
    return EvalResult.of(split, table, flat, len(items), repeats, usage)


def train(
    env: Environment | str,
    config: TrainConfig | str | Path | None = None,
    *,
    run_dir: str | Path,
    overrides: list[str] | None = None,
    agent: AgentBackend | None = None,
    optimizer: ChatBackend | None = None,
    initial_skill: SkillBundle | None = None,
    on_event: EventHandler | None = None,
    pending: PendingCandidate | None = None,
) -> TrainResult:
    """Train a skill in one call. `env` is an Environment or a name ("house-style", "pkg.mod:Class").

    `config` is a TrainConfig, a TOML/YAML path, or None for the defaults; `overrides` are dotted
    `key=value` strings applied on top. `pending` is an undecided candidate from an earlier run
    (`TrainResult.pending`) to finish deciding on this run's validation items first.
    """
    if isinstance(config, TrainConfig):
        cfg = config
        if overrides:
            cfg = validate_config(apply_overrides(config.model_dump(), overrides))
    else:
        cfg = load_config(config, overrides)
    if isinstance(env, str):
        cfg = cfg.model_copy(update={"env": env})
        env = load_env(env, **cfg.env_options)
    return Trainer(
        cfg,
        env,
        run_dir,
        agent=agent,
        optimizer=optimizer,
        initial_skill=initial_skill,
        on_event=on_event,
        pending=pending,
    ).train()

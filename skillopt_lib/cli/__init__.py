"""`skillopt train` and `skillopt eval`: the optimizer from the command line, owned by the library.

`register(app, defaults=..., runs_dir=...)` adds both commands to any typer app, so the library never
imports the program that hosts them: the daemon's `skillopt` registers them with the user's settings as
`defaults` and its runs folder. The library's `TrainConfig` is the source of truth for every key.

Errors are `SkillOptError`s; the host app prints them with their hint and exits with their code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from skillopt_lib import userdir
from skillopt_lib.cli.output import err_console, print_json
from skillopt_lib.errors import ConfigError, SkillOptError

if TYPE_CHECKING:
    from skillopt_lib.cli.progress import TrainProgress
    from skillopt_lib.cli.runconfig import DefaultsProvider
    from skillopt_lib.envs.base import Split
    from skillopt_lib.trainer import Trainer

# What the commands run with (backends, environments, the trainer) is imported when one of them runs: every
# other command of the program that registers them starts without those imports (a fifth of a second).

__all__ = ["TrainCommands", "register"]

_NO_ENV_HINT = "pass --env NAME (e.g. --env house-style)"
_SPLITS: dict[str, Split] = {"train": "train", "val": "val", "test": "test"}


def register(
    app: typer.Typer,
    *,
    defaults: DefaultsProvider | None = None,
    runs_dir: Callable[[], Path] = userdir.runs_dir,
) -> None:
    """Add `train` and `eval` to `app`. `defaults` supplies TrainConfig data beneath the config file (see
    `runconfig.DefaultsProvider`; None: none); `runs_dir` is where a run goes without `--run-dir` (default:
    skillopt's runs folder)."""
    commands = TrainCommands(defaults, runs_dir)
    app.command("train")(commands.train)
    app.command("eval")(commands.eval_cmd)


class TrainCommands:
    """The two commands, bound to where their defaults come from."""

    def __init__(self, defaults: DefaultsProvider | None, runs_dir: Callable[[], Path]) -> None:
        self._defaults = defaults
        self.runs_dir = runs_dir

    def defaults(self) -> dict[str, Any]:
        """TrainConfig data from the host program (its user's settings), or none."""
        return dict(self._defaults()) if self._defaults is not None else {}

    def train(
        self,
        env: str = typer.Option(None, "--env", help="Environment: a built-in name or package.module:Class."),
        config: Path = typer.Option(
            None, "--config", "-c", help="Training config (TOML or YAML).", dir_okay=False
        ),
        sets: list[str] = typer.Option(
            [], "--set", help="Override a config key: --set gate.kind=strict (repeatable)."
        ),
        run_dir: Path = typer.Option(
            None, "--run-dir", help="Where to write the run (default: skillopt's runs folder)."
        ),
        resume: Path = typer.Option(
            None, "--resume", help="Continue the run in this folder where it stopped."
        ),
        skill: Path = typer.Option(None, "--skill", help="Start from this SKILL.md or skill folder."),
        epochs: int = typer.Option(None, "--epochs", help="Shortcut for --set epochs=N."),
        seed: int = typer.Option(None, "--seed", help="Shortcut for --set seed=N."),
        sample: bool = typer.Option(False, "--sample", help="Use the sample shipped with the benchmark."),
        data_dir: Path = typer.Option(
            None, "--data-dir", help="Folder holding the benchmark's official data."
        ),
        executor: str = typer.Option(
            None, "--executor", help="Where rollouts run: local (thread pool) or ray."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Train a skill on an environment: rollouts, reflection, gated edits, checkpoints after every step."""
        from skillopt_lib.cli.progress import TrainProgress
        from skillopt_lib.cli.report import print_training
        from skillopt_lib.cli.runconfig import benchmark_sets

        sets = benchmark_sets(sets, sample, data_dir, executor)
        extra: dict[str, int | None] = {"epochs": epochs, "seed": seed}
        progress = TrainProgress(enabled=err_console.is_terminal or not json_out)
        try:
            if resume is not None:
                trainer = self._resumed(resume, config, sets, env, extra, progress)
                run_folder = Path(resume)
            else:
                trainer, run_folder = self._started(config, sets, env, extra, skill, run_dir, progress)
            try:
                result = trainer.train()
            except SkillOptError as exc:
                if (run_folder / "state.json").is_file():
                    note = f"the run is checkpointed; continue it with: skillopt train --resume {run_folder}"
                    exc.hint = f"{exc.hint}\n{note}" if exc.hint else note
                raise
        finally:
            progress.stop()
        if json_out:
            print_json(result.summary)
            return
        print_training(result)

    def _resumed(
        self,
        resume: Path,
        config: Path | None,
        sets: list[str],
        env: str | None,
        extra: dict[str, int | None],
        progress: TrainProgress,
    ) -> Trainer:
        from skillopt_lib.cli.runconfig import build_config
        from skillopt_lib.trainer import Trainer, saved_config

        cfg = None
        if config or sets or any(v is not None for v in extra.values()) or env:
            # Changes apply on top of the configuration the run was started with.
            cfg = build_config(saved_config(resume), config, sets, env, extra)
        return Trainer.resume(resume, config=cfg, on_event=progress)

    def _started(
        self,
        config: Path | None,
        sets: list[str],
        env: str | None,
        extra: dict[str, int | None],
        skill: Path | None,
        run_dir: Path | None,
        progress: TrainProgress,
    ) -> tuple[Trainer, Path]:
        from skillopt_lib.cli.runconfig import build_config, new_run_dir
        from skillopt_lib.envs import load_env
        from skillopt_lib.skill import SkillBundle
        from skillopt_lib.trainer import Trainer

        cfg = build_config(self.defaults(), config, sets, env, extra)
        if not cfg.env:
            raise ConfigError("no environment given", hint=_NO_ENV_HINT)
        environment = load_env(cfg.env, **cfg.env_options)
        initial = SkillBundle.from_path(skill) if skill else None
        if initial is None and cfg.initial_skill:
            initial = SkillBundle.from_path(cfg.initial_skill)
        target = run_dir or new_run_dir(self.runs_dir(), getattr(environment, "name", cfg.env))
        trainer = Trainer(cfg, environment, target, initial_skill=initial, on_event=progress)
        return trainer, Path(target)

    def eval_cmd(
        self,
        env: str = typer.Option(None, "--env", help="Environment: a built-in name or package.module:Class."),
        skill: Path = typer.Option(
            None, "--skill", help="SKILL.md or skill folder (default: the env's seed skill)."
        ),
        split: str = typer.Option("val", "--split", help="val or test (or train)."),
        config: Path = typer.Option(
            None, "--config", "-c", help="Config with the agent backend.", dir_okay=False
        ),
        sets: list[str] = typer.Option([], "--set", help="Override a config key (repeatable)."),
        repeats: int = typer.Option(1, "--repeats", min=1, help="Runs per item."),
        sample: bool = typer.Option(False, "--sample", help="Use the sample shipped with the benchmark."),
        data_dir: Path = typer.Option(
            None, "--data-dir", help="Folder holding the benchmark's official data."
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
    ) -> None:
        """Score a skill on one split of an environment, without training."""
        from skillopt_lib.backends import create_backend
        from skillopt_lib.cli.report import print_evaluation
        from skillopt_lib.cli.runconfig import benchmark_sets, build_config
        from skillopt_lib.envs import load_env
        from skillopt_lib.skill import SkillBundle
        from skillopt_lib.trainer import evaluate_skill

        sets = benchmark_sets(sets, sample, data_dir, None)
        chosen = _SPLITS.get(split)
        if chosen is None:
            raise ConfigError(f"unknown split {split!r}", hint="use --split val or --split test")
        cfg = build_config(self.defaults(), config, sets, env, {})
        if not cfg.env:
            raise ConfigError("no environment given", hint=_NO_ENV_HINT)
        environment = load_env(cfg.env, **cfg.env_options)
        bundle = SkillBundle.from_path(skill) if skill else environment.seed_skill()
        prices = {k: v.model_dump() for k, v in cfg.prices.items()}
        agent = create_backend(cfg.agent, "agent", prices=prices)
        with err_console.status(f"running {split} split…"):
            result = evaluate_skill(environment, bundle, agent, chosen, repeats, cfg.concurrency)
        if json_out:
            print_json(
                {"env": getattr(environment, "name", cfg.env), "skill": bundle.name, **result.to_dict()}
            )
            return
        print_evaluation(result, split, repeats)

"""`skillopt train` and `skillopt eval`: the optimizer library from the command line.

The library's `TrainConfig` is the source of truth; the `[agent]` and `[optimizer]` sections of the user's
settings fill in backends a training config leaves out, so a user who configured skillopt once can train
without repeating endpoints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import typer

from skillopt_daemon.cli.output import console, err_console, print_json, print_table
from skillopt_lib.errors import ConfigError, SkillOptError

_ROLE_KEYS = (
    "backend",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "timeout_s",
    "max_retries",
)


def _settings_defaults() -> dict[str, Any]:
    """Backend sections and prices from the user's settings, as TrainConfig data."""
    from skillopt_daemon.config import load_settings

    try:
        settings = load_settings()
    except ConfigError:
        return {}
    data: dict[str, Any] = {}
    for role in ("agent", "optimizer"):
        section = getattr(settings, role)
        if section.backend or section.model:
            values = {k: getattr(section, k) for k in _ROLE_KEYS if getattr(section, k) not in (None, "")}
            if section.azure_api_version:
                values["azure_api_version"] = section.azure_api_version
            data[role] = values
    if settings.prices:
        data["prices"] = {k: v.model_dump() for k, v in settings.prices.items()}
    return data


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _build_config(
    config: Path | None,
    sets: list[str],
    env: str | None,
    extra: dict[str, Any],
    base: dict[str, Any] | None = None,
) -> Any:
    from skillopt_lib.config import apply_overrides, read_config_file, validate_config

    start = base if base is not None else _settings_defaults()
    data = _merge(start, read_config_file(config) if config else {})
    if env:
        data["env"] = env
    for k, v in extra.items():
        if v is not None:
            data[k] = v
    apply_overrides(data, sets)
    return validate_config(data)


def _benchmark_sets(sets: list[str], sample: bool, data_dir: Path | None, executor: str | None) -> list[str]:
    """`--sample`, `--data-dir` and `--executor` as the `--set` overrides they stand for."""
    out = list(sets)
    if sample:
        out.append("env_options.sample=true")
    if data_dir is not None:
        out.append(f"env_options.data_dir={json.dumps(str(data_dir.expanduser().resolve()))}")
    if executor:
        out.append(f"executor={json.dumps(executor)}")
    return out


def _default_run_dir(env_name: str) -> Path:
    from skillopt_daemon import paths
    from skillopt_daemon.timeutil import utcnow

    slug = re.sub(r"[^a-z0-9]+", "-", env_name.lower()).strip("-")[:40] or "env"
    base = paths.runs_dir()
    base.mkdir(parents=True, exist_ok=True)
    stamp = utcnow().strftime("%Y%m%d-%H%M%S")
    path = base / f"train-{stamp}-{slug}"
    n = 1
    while path.exists():
        n += 1
        path = base / f"train-{stamp}-{slug}-{n}"
    return path


class _Progress:
    """A rich progress bar on stderr: epoch, step, scores and spend."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Any = None
        self.task: Any = None

    def __call__(self, event: dict[str, Any]) -> None:
        if event["event"] == "warning":  # shown with or without the progress bar
            err_console.print(f"warning: {event['message']}", style="yellow", highlight=False)
            return
        if not self.enabled:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        kind = event["event"]
        if kind == "start":
            self.progress = Progress(
                TextColumn("[bold]train[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=err_console,
                transient=False,
            )
            self.progress.start()
            self.task = self.progress.add_task(
                "measuring the starting skill…",
                total=max(1, int(event["total_steps"])),
                completed=event["step"],
            )
            if event.get("resumed"):
                err_console.print(f"resuming {event['run_dir']} at step {event['step']}", highlight=False)
        elif self.progress is None:
            return
        elif kind == "baseline_done":
            self.progress.update(self.task, description=f"start val {event['val']:.3f}")
        elif kind == "step_start":
            self.progress.update(
                self.task, description=f"epoch {event['epoch']} step {event['step']}: rollouts…"
            )
        elif kind == "step_done":
            spent = event["spent"]
            tokens = sum(r["input_tokens"] + r["output_tokens"] for r in spent.values())
            cost = sum(r["cost_usd"] for r in spent.values())
            verdict = "[green]accepted[/]" if event["accepted"] else "[dim]rejected[/]"
            self.progress.update(
                self.task,
                completed=event["step"],
                description=(
                    f"epoch {event['epoch']} · val {event['val']:.3f} · train {event['train']:.3f} · "
                    f"{verdict} · {tokens:,} tok ${cost:.3f}"
                ),
            )
        elif kind == "slow_update":
            word = "accepted" if event["accepted"] else "rejected"
            self.progress.console.print(
                f"epoch {event['epoch']} slow update {word}: {event['reason']}", highlight=False
            )
        elif kind == "test_start":
            self.progress.update(self.task, description=f"scoring the test split ({event['n']} items)…")
        elif kind == "done":
            self.stop()

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def train(
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
    resume: Path = typer.Option(None, "--resume", help="Continue the run in this folder where it stopped."),
    skill: Path = typer.Option(None, "--skill", help="Start from this SKILL.md or skill folder."),
    epochs: int = typer.Option(None, "--epochs", help="Shortcut for --set epochs=N."),
    seed: int = typer.Option(None, "--seed", help="Shortcut for --set seed=N."),
    sample: bool = typer.Option(False, "--sample", help="Use the sample shipped with the benchmark."),
    data_dir: Path = typer.Option(None, "--data-dir", help="Folder holding the benchmark's official data."),
    executor: str = typer.Option(None, "--executor", help="Where rollouts run: local (thread pool) or ray."),
    json_out: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Train a skill on an environment: rollouts, reflection, gated edits, checkpoints after every step."""
    sets = _benchmark_sets(sets, sample, data_dir, executor)
    from skillopt_lib.skill import SkillBundle
    from skillopt_lib.trainer import Trainer

    progress = _Progress(enabled=err_console.is_terminal or not json_out)
    try:
        if resume is not None:
            from skillopt_lib.trainer import saved_config

            cfg = None
            if config or sets or epochs is not None or seed is not None or env:
                # Changes apply on top of the configuration the run was started with.
                extra = {"epochs": epochs, "seed": seed}
                cfg = _build_config(config, sets, env, extra, base=saved_config(resume))
            trainer = Trainer.resume(resume, config=cfg, on_event=progress)
            run_folder = Path(resume)
        else:
            cfg = _build_config(config, sets, env, {"epochs": epochs, "seed": seed})
            if not cfg.env:
                raise ConfigError("no environment given", hint="pass --env NAME (e.g. --env house-style)")
            from skillopt_lib.envs import load_env

            environment = load_env(cfg.env, **cfg.env_options)
            initial = SkillBundle.from_path(skill) if skill else None
            if initial is None and cfg.initial_skill:
                initial = SkillBundle.from_path(cfg.initial_skill)
            target = run_dir or _default_run_dir(getattr(environment, "name", cfg.env))
            trainer = Trainer(cfg, environment, target, initial_skill=initial, on_event=progress)
            run_folder = Path(target)
        try:
            result = trainer.train()
        except SkillOptError as exc:
            if (run_folder / "state.json").is_file():
                note = f"the run is checkpointed; continue it with: skillopt train --resume {run_folder}"
                exc.hint = f"{exc.hint}\n{note}" if exc.hint else note
            raise
    finally:
        progress.stop()
    summary = result.summary
    if json_out:
        print_json(summary)
        return
    _print_history(result.run_dir)
    console.print(f"run folder: {result.run_dir}")
    console.print(
        f"validation {summary['initial_val']:.3f} → {summary['best_val']:.3f} "
        f"({summary['accepted_steps']} accepted step(s) of {summary['steps']}; {summary['stopped']})"
    )
    if summary.get("test"):
        t = summary["test"]
        console.print(f"test {t['initial']['score']:.3f} → {t['best']['score']:.3f}")
    console.print(f"best skill: {result.run_dir / 'best_skill.md'}")
    console.print(f"history (per step, with the gate's reasons): {result.run_dir / 'history.jsonl'}")


def _print_history(run_dir: Path) -> None:
    """One row per decision: what was tried, and the gate's verdict in its own words."""
    import json

    rows = []
    history = run_dir / "history.jsonl"
    if not history.exists():
        return
    for line in history.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["kind"] not in ("step", "slow_update"):
            continue
        if rec["kind"] == "step":
            edits = "; ".join(_short(e) for e in rec.get("applied", [])) or "-"
        else:
            edits = "slow update: " + " ".join(str(rec.get("guidance", "")).split())[:60]
        verdict = "accepted" if rec.get("accepted") else "rejected"
        if rec.get("gate") is None:
            verdict = "-"
        rows.append((rec.get("step"), edits, verdict, rec.get("reason", "")))
    if rows:
        print_table("Steps", ["step", "edits tried", "gate", "why"], rows)


def _short(edit: dict[str, Any]) -> str:
    text = " ".join(str(edit.get("content") or edit.get("target") or "").split())
    return f"{edit.get('op')}: {text[:60]}{'…' if len(text) > 60 else ''}"


def eval_cmd(
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
    data_dir: Path = typer.Option(None, "--data-dir", help="Folder holding the benchmark's official data."),
    json_out: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
) -> None:
    """Score a skill on one split of an environment, without training."""
    sets = _benchmark_sets(sets, sample, data_dir, None)
    from skillopt_lib.backends import create_backend
    from skillopt_lib.envs import load_env
    from skillopt_lib.skill import SkillBundle
    from skillopt_lib.trainer import evaluate_skill

    if split not in ("train", "val", "test"):
        raise ConfigError(f"unknown split {split!r}", hint="use --split val or --split test")
    cfg = _build_config(config, sets, env, {})
    if not cfg.env:
        raise ConfigError("no environment given", hint="pass --env NAME (e.g. --env house-style)")
    environment = load_env(cfg.env, **cfg.env_options)
    bundle = SkillBundle.from_path(skill) if skill else environment.seed_skill()
    prices = {k: v.model_dump() for k, v in cfg.prices.items()}
    agent = create_backend(cfg.agent, "agent", prices=prices)
    with err_console.status(f"running {split} split…"):
        result = evaluate_skill(environment, bundle, agent, split, repeats, cfg.concurrency)  # type: ignore[arg-type]
    if json_out:
        print_json({"env": getattr(environment, "name", cfg.env), "skill": bundle.name, **result.to_dict()})
        return
    print_table(
        None,
        ["item", "hard", "soft", "feedback"],
        [(r.item_id, f"{r.hard:g}", f"{r.soft:.2f}", (r.error or r.feedback)[:80]) for r in result.results],
    )
    console.print(
        f"{split}: score {result.score:.3f} (hard {result.hard:.3f}, soft {result.soft:.3f}) over {result.n} "
        f"item(s) × {repeats}; {result.usage.total_tokens:,} tokens, ${result.usage.cost_usd:.4f}"
    )


def register(app: typer.Typer) -> None:
    app.command("train")(train)
    app.command("eval")(eval_cmd)

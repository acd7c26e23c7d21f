"""The live view of a training run: one rich progress bar on stderr with epoch, step, scores and spend."""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from skillopt_lib.cli.output import err_console
from skillopt_lib.usage import format_cost


class TrainProgress:
    """An `on_event` handler for the Trainer; does nothing when disabled (JSON output to a pipe)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        if event["event"] == "warning":  # shown with or without the progress bar
            err_console.print(f"warning: {event['message']}", style="yellow", highlight=False, markup=False)
            return
        if not self.enabled:
            return
        kind = event["event"]
        if kind == "start":
            self._start(event)
            return
        progress, task = self.progress, self.task
        if progress is None or task is None:
            return
        if kind == "baseline_done":
            progress.update(task, description=f"start val {event['val']:.3f}")
        elif kind == "step_start":
            progress.update(task, description=f"epoch {event['epoch']} step {event['step']}: rollouts…")
        elif kind == "step_done":
            spent = event["spent"]
            tokens = sum(r["input_tokens"] + r["output_tokens"] for r in spent.values())
            cost = sum(r["cost_usd"] for r in spent.values())
            verdict = "[green]accepted[/]" if event["accepted"] else "[dim]rejected[/]"
            progress.update(
                task,
                completed=event["step"],
                description=(
                    f"epoch {event['epoch']} · val {event['val']:.3f} · train {event['train']:.3f} · "
                    f"{verdict} · {tokens:,} tok {format_cost(cost)}"
                ),
            )
        elif kind == "slow_update":
            word = "accepted" if event["accepted"] else "rejected"
            progress.console.print(
                f"epoch {event['epoch']} slow update {word}: {event['reason']}", highlight=False, markup=False
            )
        elif kind == "test_start":
            progress.update(task, description=f"scoring the test split ({event['n']} items)…")
        elif kind == "done":
            self.stop()

    def _start(self, event: dict[str, Any]) -> None:
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

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

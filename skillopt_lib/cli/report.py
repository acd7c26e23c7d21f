"""What `skillopt train` and `skillopt eval` print when they finish, for people (`--json` prints the data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillopt_lib.cli.output import console, print_table
from skillopt_lib.trainer import EvalResult, TrainResult
from skillopt_lib.training.runfiles import HISTORY_FILE, read_history
from skillopt_lib.usage import format_cost


def print_training(result: TrainResult) -> None:
    summary = result.summary
    print_history(result.run_dir)
    console.print(f"run folder: {result.run_dir}")
    console.print(
        f"validation {summary['initial_val']:.3f} → {summary['best_val']:.3f} "
        f"({summary['accepted_steps']} accepted step(s) of {summary['steps']}; {summary['stopped']})"
    )
    if summary.get("test"):
        t = summary["test"]
        console.print(f"test {t['initial']['score']:.3f} → {t['best']['score']:.3f}")
    console.print(f"best skill: {result.run_dir / 'best_skill.md'}")
    console.print(f"history (per step, with the gate's reasons): {result.run_dir / HISTORY_FILE}")


def print_history(run_dir: Path) -> None:
    """One row per decision: what was tried, and the gate's verdict in its own words."""
    rows = []
    for rec in read_history(run_dir):
        if rec.get("kind") not in ("step", "slow_update"):
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


def print_evaluation(result: EvalResult, split: str, repeats: int) -> None:
    print_table(
        None,
        ["item", "hard", "soft", "feedback"],
        [(r.item_id, f"{r.hard:g}", f"{r.soft:.2f}", (r.error or r.feedback)[:80]) for r in result.results],
    )
    console.print(
        f"{split}: score {result.score:.3f} (hard {result.hard:.3f}, soft {result.soft:.3f}) over {result.n} "
        f"item(s) × {repeats}; {result.usage.total_tokens:,} tokens, {format_cost(result.usage.cost_usd)}"
    )

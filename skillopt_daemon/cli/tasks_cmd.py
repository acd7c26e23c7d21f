"""`skillopt tasks`: the recurring task families mined from your sessions, their checks and splits."""

from __future__ import annotations

import json

import typer

from skillopt_daemon.cli.output import console, err_console, literal, print_json, print_table
from skillopt_daemon.core.config import load_settings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.mining.families import family_rows, resolve_family, task_view
from skillopt_lib.errors import ConflictError, NotFoundError

tasks_app = typer.Typer(
    help="Recurring task families mined from your agents' sessions.", no_args_is_help=True
)
JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


@tasks_app.command("list")
def list_families(json_out: bool = JSON_OPT) -> None:
    """Task families with their size, related skill, checks and split sizes."""
    db = open_db()
    rows = family_rows(db)
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No task families yet: run `skillopt tasks mine` (or wait for the nightly cycle).")
        return
    print_table(
        "Task families",
        ["id", "name", "skill", "tasks", "train/val/test", "checks", "rubric", "tools"],
        [
            (
                r["id"],
                r["name"],
                r["skill"] or "-",
                r["size"],
                "/".join(str(r["splits"].get(s, 0)) for s in ("train", "val", "test")),
                r["checks"],
                r["rubric_items"],
                ", ".join(r["tools"]),
            )
            for r in rows
        ],
    )


@tasks_app.command("show")
def show(
    ref: str = typer.Argument(None, help="A task id (or prefix); omit with --family."),
    family: str = typer.Option(
        None, "--family", help="Show a whole family: its checks, rubric and instances."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """One task, or with --family one family and every instance in it."""
    db = open_db()
    if family:
        fam = resolve_family(db, family)
        tasks = list(db.query("SELECT * FROM tasks WHERE family_id = ? ORDER BY started_at", [fam["id"]]))
        data = {
            **{k: fam[k] for k in ("id", "name", "skill_name", "size", "mined_at")},
            "checks": json.loads(fam["checks_json"] or "[]"),
            "rubric": json.loads(fam["rubric_json"] or "[]"),
            "tasks": [task_view(t) for t in tasks],
        }
        if json_out:
            print_json(data)
            return
        console.print(
            f"[bold]{literal(fam['id'])}[/]  {literal(fam['name'])}  (skill: {literal(fam['skill_name'] or '-')})"
        )
        console.print("checks: " + ("; ".join(data["checks"]) or "none"), markup=False)
        console.print("rubric: " + ("; ".join(data["rubric"]) or "none"), markup=False)
        print_table(
            None,
            ["task", "split", "outcome", "scored by", "tool", "project", "commit", "prompt"],
            [
                (
                    t["id"],
                    t["split"],
                    t["outcome"],
                    t["scored_by"],
                    t["tool"],
                    t["project_path"] or "-",
                    (t["repo_commit"] or "-")[:10],
                    t["prompt"][:80],
                )
                for t in data["tasks"]
            ],
        )
        for t in data["tasks"]:
            if t["scored_why"]:
                console.print(f"{t['id']} scored by {t['scored_by']}: {t['scored_why']}", markup=False)
        return
    if not ref:
        err_console.print("give a task id, or --family ID")
        raise typer.Exit(2)
    rows = list(db.query("SELECT * FROM tasks WHERE id = ? OR id LIKE ?", [ref, ref + "%"]))
    if not rows:
        raise NotFoundError(
            f"no task {ref!r}", hint="`skillopt tasks show --family ID` lists a family's tasks"
        )
    if len(rows) > 1 and not any(r["id"] == ref for r in rows):
        raise ConflictError(f"{ref!r} matches {len(rows)} tasks", hint="give more of the id")
    task = next((r for r in rows if r["id"] == ref), rows[0])
    view = task_view(task)
    if json_out:
        print_json(view)
        return
    for key, value in view.items():
        if isinstance(value, list):
            value = "; ".join(str(v) for v in value) or "-"
        console.print(f"[bold]{key}[/]: {literal(value)}")


@tasks_app.command("mine")
def mine_now(
    seed: int = typer.Option(None, "--seed", help="Seed for the splits (default: night.seed)."),
    include_automation: bool = typer.Option(
        None,
        "--include-automation/--exclude-automation",
        help="Also mine known automation (default: night.include_automation).",
    ),
    no_model: bool = typer.Option(
        False, "--no-model", help="Mine lexically even when an optimizer model is configured."
    ),
    explain: bool = typer.Option(
        False, "--explain", help="Show every request: its kind, intent, family and why."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Mine task families from the stored sessions now, with the night's settings."""
    # Imported here: mining loads scikit-learn and the cycle the model backends, which every other
    # `skillopt` command would otherwise pay for at start-up.
    from skillopt_daemon.night.cycle import NightBudget, mining_chat
    from skillopt_daemon.night.mining import mine

    settings = load_settings()
    if include_automation is not None:
        settings.night.include_automation = include_automation
    db = open_db()
    budget = NightBudget(
        max_tokens=settings.night.max_tokens,
        max_cost_usd=settings.night.max_cost_usd,
        max_wall_s=settings.night.max_wall_s,
        max_replays=settings.night.max_replays,
    )
    chat, note = (None, None) if no_model else mining_chat(settings, budget)
    result = mine.mine_detailed(
        db,
        seed=settings.night.seed if seed is None else seed,
        rules=mine.ExcludeRules.from_settings(settings.night),
        test_share=settings.night.test_share,
        chat=chat,
        budget=budget,
        batch=settings.night.label_batch,
    )
    report = result.report
    if note:
        report.notes.insert(0, note)
    if json_out:
        data = report.to_dict()
        if explain:
            data["requests"] = mine.explain_rows(result)
        print_json(data)
        return
    if explain:
        _print_explain(mine.explain_rows(result))
    console.print(
        f"Mined {report.families} families with {report.tasks} tasks from {report.attempts} requests "
        f"in {report.sessions} sessions (train {report.by_split.get('train', 0)}, "
        f"val {report.by_split.get('val', 0)}, test {report.by_split.get('test', 0)})."
    )
    skipped = sum(report.excluded.values())
    if skipped:
        console.print(
            f"Skipped {skipped} sessions: "
            + "; ".join(f"{n} {reason}" for reason, n in sorted(report.excluded.items()))
        )
    if report.labels:
        lab = report.labels
        console.print(
            f"Model labels: {lab['labelled']} new, {lab['cached']} cached, {lab['fallback']} lexical "
            f"({lab['model_calls']} calls, {lab['tokens']} tokens)."
        )
    for line in report.notes:
        err_console.print(line, markup=False)


def _print_explain(rows: list[dict[str, object]]) -> None:
    print_table(
        "Requests",
        ["session", "kind", "request", "intent / work", "family", "why"],
        [
            (
                f"{r['tool']}:{str(r['session'])[:8]}",
                f"{r['kind']} ({r['source']})",
                str(r["request"] or "-")[:60],
                " / ".join(str(x) for x in (r["intent"], r["work"]) if x) or "-",
                f"{r['family']} {r['family_name']}" if r["family"] else "-",
                f"{r['why']}; {r['family_why']}",
            )
            for r in rows
        ],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")

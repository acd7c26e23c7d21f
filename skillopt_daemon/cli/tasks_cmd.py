"""`skillopt tasks`: the recurring task families mined from your sessions, their checks and splits."""

from __future__ import annotations

import json

import typer

from skillopt_daemon.cli.output import console, err_console, print_json, print_table
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.families import family_rows, resolve_family, task_view
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
        console.print(f"[bold]{fam['id']}[/]  {fam['name']}  (skill: {fam['skill_name'] or '-'})")
        console.print("checks: " + ("; ".join(data["checks"]) or "none"))
        console.print("rubric: " + ("; ".join(data["rubric"]) or "none"))
        print_table(
            None,
            ["task", "split", "outcome", "tool", "project", "commit", "prompt"],
            [
                (
                    t["id"],
                    t["split"],
                    t["outcome"],
                    t["tool"],
                    t["project_path"] or "-",
                    (t["repo_commit"] or "-")[:10],
                    t["prompt"][:80],
                )
                for t in data["tasks"]
            ],
        )
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
        console.print(f"[bold]{key}[/]: {value}")


@tasks_app.command("mine")
def mine_now(
    seed: int = typer.Option(None, "--seed", help="Seed for the splits (default: night.seed)."),
    include_automation: bool = typer.Option(
        False, "--include-automation", help="Also mine `claude -p` runs."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Mine task families from the stored sessions now (the nightly cycle does this too)."""
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.night import mining as mine

    settings = load_settings()
    db = open_db()
    _, report = mine.mine(
        db, seed=settings.night.seed if seed is None else seed, include_automation=include_automation
    )
    if json_out:
        print_json(report.to_dict())
        return
    console.print(
        f"Mined {report.families} families with {report.tasks} tasks from {report.attempts} requests "
        f"(train {report.by_split.get('train', 0)}, val {report.by_split.get('val', 0)}, "
        f"test {report.by_split.get('test', 0)})."
    )


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")

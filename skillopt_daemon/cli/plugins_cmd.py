"""`skillopt plugins`: which plugins are loaded, what each provides, and what failed to load.

Built-in tools, backends and environments are plugins too (`skillopt_lib.plugins.DEFAULT_PLUGINS`), so the
list shows everything `skillopt` can use and where each part comes from.
"""

from __future__ import annotations

import typer

from skillopt_daemon.cli.output import console, err_console, literal, print_json, print_table
from skillopt_lib import plugins


def plugins_command(
    as_json: bool = typer.Option(False, "--json", help="print the plugins as JSON"),
    builtins: bool = typer.Option(True, "--builtins/--no-builtins", help="list skillopt's own plugins too"),
) -> None:
    """List the loaded plugins and the agent tools, backends and environments each provides."""
    infos = [p for p in plugins.loaded() if builtins or not p.builtin]
    problems = plugins.problems()
    if as_json:
        print_json({"plugins": [p.to_dict() for p in infos], "problems": problems})
        return
    rows = [
        (
            p.name,
            "built-in" if p.builtin else (p.version or ""),
            "; ".join(f"{what}: {', '.join(names)}" for what, names in p.provides.items()),
        )
        for p in infos
    ]
    if rows:
        print_table("plugins", ["plugin", "version", "provides"], rows)
    else:
        console.print("no third-party plugins are installed")
    for problem in problems:
        err_console.print(f"[yellow]warning:[/] {literal(problem)}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("plugins")(plugins_command)

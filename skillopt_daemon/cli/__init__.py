"""The `skillopt` command. Each command group lives in its own module and registers itself here.

A module in COMMAND_MODULES defines `register(app: typer.Typer) -> None`. Errors of ours (SkillOptError)
are printed in plain words with what to do next, and exit with the code documented in `docs/cli.md`;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.markup import escape

from skillopt.errors import SkillOptError
from skillopt_daemon.cli.output import err_console

app = typer.Typer(
    name="skillopt",
    help="Train the skills of your coding agents from their own work, and review what it proposes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

COMMAND_MODULES = [
    "review",
    "skills",
    "config_cmd",
    "doctor",
    "install_cmd",
    "replay_cmd",
    "ingest_cmd",
    "sessions",
    "daemon_cmd",
    "notify",
    "tasks_cmd",
    "train_cmd",
    "sleep_cmd",
]

for _name in COMMAND_MODULES:
    importlib.import_module(f"skillopt_daemon.cli.{_name}").register(app)


def main() -> None:
    try:
        app(standalone_mode=False)
    except SkillOptError as exc:
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.hint:
            err_console.print(f"[dim]→ {escape(exc.hint)}[/]", highlight=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(1)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        # typer may ship its own copy of click, whose exceptions are not click's own classes
        typer_click = getattr(typer, "_click", None)
        kinds = tuple(k for k in (click.ClickException, getattr(typer_click, "ClickException", None)) if k)
        if isinstance(exc, kinds):
            exc.show()
            sys.exit(exc.exit_code)
        raise

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

from skillopt_daemon.cli.output import err_console
from skillopt_lib.errors import SkillOptError

_app = typer.Typer(
    name="skillopt",
    help="Train the skills of your coding agents from their own work, and review what it proposes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from skillopt_lib import __version__

        typer.echo(f"skillopt {__version__}")
        raise typer.Exit(0)


@_app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    # A callback keeps `skillopt` a command group when `main` loads a module with a single command
    # (doctor, ui); without it typer would run that command as the whole program and reject its name.
    pass


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
    "ui_cmd",
    "keys_cmd",
    "plugins_cmd",
    "report_cmd",
    "team_cmd",
]

# Which module registers each top-level command. `main` imports only the module a command needs, so that
# `skillopt notify` (run by agent hooks at the end of every session) starts in a fraction of the time it
# takes to import every command group. A test checks this map against what the modules register.
COMMANDS: dict[str, str] = {
    "status": "review",
    "propose": "review",
    "diff": "review",
    "approve": "review",
    "reject": "review",
    "rollback": "review",
    "history": "review",
    "skills": "skills",
    "config": "config_cmd",
    "doctor": "doctor",
    "install": "install_cmd",
    "uninstall": "install_cmd",
    "devin-export": "install_cmd",
    "mcp": "install_cmd",
    "replay": "replay_cmd",
    "ingest": "ingest_cmd",
    "sessions": "sessions",
    "daemon": "daemon_cmd",
    "notify": "notify",
    "tasks": "tasks_cmd",
    "train": "train_cmd",
    "eval": "train_cmd",
    "sleep": "sleep_cmd",
    "ui": "ui_cmd",
    "keys": "keys_cmd",
    "plugins": "plugins_cmd",
    "report": "report_cmd",
    "team": "team_cmd",
}
_loaded: set[str] = set()


def load_commands(modules: list[str] | None = None) -> typer.Typer:
    """Register the given command modules (all of them by default) on the app and return it."""
    for name in COMMAND_MODULES if modules is None else modules:
        if name not in _loaded:
            importlib.import_module(f"skillopt_daemon.cli.{name}").register(_app)
            _loaded.add(name)
    return _app


def __getattr__(name: str) -> typer.Typer:
    # `from skillopt_daemon.cli import app` gets the whole command tree (docs, tests, the dashboard).
    if name == "app":
        return load_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(argv: list[str]) -> typer.Typer:
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is not None and first in COMMANDS and not any(a in ("-h", "--help") for a in argv[:1]):
        return load_commands([COMMANDS[first]])
    return load_commands()


def main() -> None:
    try:
        # outside standalone mode click returns a command's `typer.Exit` code instead of exiting with it
        code = _app_for(sys.argv[1:])(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except SkillOptError as exc:
        _print_error(exc)
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
        full = _disk_full(exc) or _damaged(exc)
        if full is not None:  # a full disk or a damaged store is the user's to fix: one line, no traceback
            _print_error(full)
            sys.exit(full.exit_code)
        raise


def _print_error(exc: SkillOptError) -> None:
    err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
    if exc.hint:  # hints hold commands to copy: never wrapped
        err_console.print(f"[dim]→ {escape(exc.hint)}[/]", highlight=False, soft_wrap=True)


def _disk_full(exc: BaseException) -> SkillOptError | None:
    """The plain error for a write that found the disk full (in SQLite or a file), or None."""
    from skillopt_daemon.core.store.db import disk_full, disk_full_error

    if not disk_full(exc):
        return None
    if isinstance(exc, OSError):
        from pathlib import Path

        where = Path(exc.filename) if isinstance(exc.filename, str) else None
        return disk_full_error(where, exc.strerror, database=where is None)
    return disk_full_error(detail=exc)


def _damaged(exc: BaseException) -> SkillOptError | None:
    """The plain error, with the repair to run, when a query found the database damaged, or None.

    A damaged file opens like a whole one; the damage shows in whichever query first reaches a broken page,
    anywhere in any command."""
    from skillopt_daemon.core.store.db import corrupt, corrupt_error

    return corrupt_error(detail=exc) if corrupt(exc) else None

"""`skillopt keys set|list|remove|path`: model API keys for a daemon that no shell of the user's starts.

A daemon started as a service (or from another terminal) never sees an `export` in the user's shell; a key
stored here (`skillopt_lib.keys`, 0600 in the data folder) is found by every backend when its variable is
not set. The value is read from a hidden prompt, or from stdin when it is piped, and never printed.
"""

from __future__ import annotations

import os
import sys

import typer

from skillopt_daemon.cli.output import console, err_console, print_json, print_table
from skillopt_lib import keys
from skillopt_lib.errors import NotFoundError

JSON_OPT = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")

keys_app = typer.Typer(
    help="Model API keys kept for the daemon (a 0600 file in skillopt's data folder), by variable name.",
    no_args_is_help=True,
)


def _read_value(var: str) -> str:
    """The key from a hidden prompt on a terminal, else the first line of stdin; never echoed."""
    if sys.stdin.isatty():
        return str(typer.prompt(f"Key for {var}", hide_input=True, default="", show_default=False))
    return sys.stdin.readline()


@keys_app.command("set")
def set_cmd(
    name: str = typer.Argument(
        ..., help="The variable the backend reads (OPENAI_API_KEY, your api_key_env) or a backend (openai)."
    ),
) -> None:
    """Store a key: typed at a hidden prompt, or piped on stdin (`skillopt keys set OPENAI_API_KEY < file`)."""
    var = keys.variable_for(name)
    stored = keys.set_key(var, _read_value(var))
    console.print(f"stored the key for {stored} in {keys.keys_file()}", markup=False)
    if os.environ.get(stored):
        err_console.print(
            f"note: {stored} is also set in this shell; the environment wins where it is set", markup=False
        )


@keys_app.command("list")
def list_cmd(json_out: bool = JSON_OPT) -> None:
    """The names of the stored keys (never their values), and whether this shell also sets each."""
    rows = [{"name": n, "in_environment": bool(os.environ.get(n))} for n in keys.stored_names()]
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("No keys stored. Store one with `skillopt keys set NAME`.", markup=False)
        return
    print_table(
        "Stored keys",
        ["name", "also set in this shell"],
        [(r["name"], "yes (it wins here)" if r["in_environment"] else "no") for r in rows],
    )


@keys_app.command("remove")
def remove_cmd(
    name: str = typer.Argument(..., help="The variable (or backend) whose key to forget."),
) -> None:
    """Forget a stored key."""
    removed = keys.remove_key(name)
    if removed is None:
        raise NotFoundError(
            f"no key is stored for {keys.variable_for(name)}",
            hint="see the stored names with `skillopt keys list`",
        )
    console.print(f"removed the key for {removed}", markup=False)


@keys_app.command("path")
def path_cmd() -> None:
    """Where the keys are stored."""
    console.print(str(keys.keys_file()), markup=False)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")

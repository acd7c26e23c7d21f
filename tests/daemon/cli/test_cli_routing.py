"""`skillopt` imports only the module a command needs; the routing map must cover every command."""

from __future__ import annotations

import importlib

import typer

import skillopt_daemon.cli as cli


def _names(app: typer.Typer) -> set[str]:
    commands = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    groups = {g.name or "" for g in app.registered_groups}
    return commands | groups


def test_every_command_is_routed_to_the_module_that_registers_it() -> None:
    for module in cli.COMMAND_MODULES:
        probe = typer.Typer()
        importlib.import_module(f"skillopt_daemon.cli.{module}").register(probe)
        for name in _names(probe):
            assert cli.COMMANDS.get(name) == module, f"`skillopt {name}` is registered by {module}"
    routed = set(cli.COMMANDS)
    assert routed == _names(cli.load_commands()), "COMMANDS names a command no module registers"

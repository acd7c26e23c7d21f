"""Placeholder: filled in by the module's owner."""

import typer


def register(app: typer.Typer) -> None:
    return None

"""`skillopt notify`: the typer face of `skillopt_daemon.ingest.notes` (the console script takes a faster path)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillopt_daemon.ingest.notes import notify_event

if TYPE_CHECKING:
    import typer


def register(app: typer.Typer) -> None:
    import typer

    notify = typer.Typer(
        help="For agent hooks: tell the daemon a session ended or started (reads the hook's JSON on stdin).",
        no_args_is_help=True,
    )

    @notify.command("session-end")
    def session_end(
        tool: str = typer.Option("claude-code", "--tool", help="the agent tool whose hook calls this"),
    ) -> None:
        """A session ended: the daemon reads its transcript at once."""
        notify_event("session-end", tool)

    @notify.command("session-start")
    def session_start(
        tool: str = typer.Option("claude-code", "--tool", help="the agent tool whose hook calls this"),
    ) -> None:
        """A session started: the daemon starts following its transcript."""
        notify_event("session-start", tool)

    app.add_typer(notify, name="notify")

"""`skillopt ingest`: read the agents' session logs into the store once, without the daemon.

The same pipeline as the daemon's (offsets and records committed together), so it can run before, after,
or even beside the daemon: bytes are never stored twice.
"""

from __future__ import annotations

import typer

from skillopt_daemon.cli.output import console, err_console, print_json
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConfigError


def register(app: typer.Typer) -> None:
    @app.command("ingest")
    def ingest_cmd(
        backfill: bool = typer.Option(
            False, "--backfill", help="read every transcript again from its start (after upgrading skillopt)"
        ),
        tool: list[str] = typer.Option([], "--tool", help="only this agent tool (repeatable)"),
        as_json: bool = typer.Option(False, "--json", help="machine-readable summary"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar"),
    ) -> None:
        """Ingest new agent sessions now (the daemon does this continuously)."""
        from skillopt_daemon import ingest
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.progress import progress_bar
        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.ingest.inbox import handle_notes

        try:
            tools = [AgentTool.parse(t) for t in tool] or None
        except ValueError as exc:
            raise ConfigError(str(exc), hint="pass one of the tool names above to --tool") from None
        settings = load_settings()
        db = open_db()
        sources = ingest.load_sources(settings, tools)
        pipeline = ingest.Pipeline(db, sources, settings)
        if backfill:
            reset_files(db, [s.tool.value for s in sources])
        pipeline.pin_sessions(None)
        handle_notes(pipeline)
        files = pipeline.discover()
        total = pipeline.pending_bytes(files)
        with progress_bar(None if quiet or as_json else err_console, "ingest", total) as advance:
            outcomes = pipeline.ingest_paths(files, on_bytes=advance)
        summary: dict[str, object] = dict(ingest.summarize(outcomes))
        summary["sources"] = sorted({s.tool.value for s in sources})
        summary["roots"] = [str(r) for r in pipeline.roots]
        if as_json:
            print_json(summary)
            return
        if not sources:
            err_console.print("no agent tool is enabled: nothing to ingest")
            return
        counts = ingest.summarize(outcomes)
        console.print(
            f"read {counts['bytes'] / 1e6:.1f} MB ({summary['lines']} lines, {summary['records']} records) "
            f"from {summary['read']} of {summary['files']} transcripts"
            + (
                f"; {summary['errors']} could not be read (see `skillopt status`)"
                if summary["errors"]
                else ""
            )
            + (
                f"; {summary['locked']} locked by its tool right now, read at the next ingest"
                if summary["locked"]
                else ""
            )
        )


def reset_files(db: object, tools: list[str]) -> int:
    """Make every transcript of `tools` read again from the start; rows are upserts, so nothing doubles."""
    import json

    conn = db.conn  # type: ignore[attr-defined]
    with conn:
        cur = conn.execute(
            "UPDATE ingest_files SET \"offset\" = 0, in_long_line = 0, state_json = '{}', head_hash = NULL, "
            "skipped_json = '{}', lines = 0, records = 0 WHERE tool IN (SELECT value FROM json_each(?))",
            [json.dumps(tools)],
        )
        conn.execute(
            "UPDATE sessions SET skipped_json = '{}' WHERE tool IN (SELECT value FROM json_each(?))",
            [json.dumps(tools)],
        )
    return int(cur.rowcount)

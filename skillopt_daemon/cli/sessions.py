"""`skillopt sessions list|show`: the agent sessions skillopt has ingested (already redacted).

Sessions that are not the user's own work (skillopt's replays, automation dropped by config, sessions with
no user turn) are hidden unless `--all` is given; `skillopt status` counts them.
"""

from __future__ import annotations

import json
from typing import Any

import typer

from skillopt_daemon.cli.output import console, literal, print_json, print_table
from skillopt_daemon.ingest.queries import (
    find_session,
    first_prompt,
    parse_since,
    query_sessions,
    session_detail,
)
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConfigError


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def register(app: typer.Typer) -> None:
    sessions = typer.Typer(help="The agent sessions skillopt has ingested (redacted).", no_args_is_help=True)

    @sessions.command("list")
    def list_cmd(
        tool: str | None = typer.Option(
            None, "--tool", help="only this agent tool (claude-code, codex, ...)"
        ),
        project: str | None = typer.Option(None, "--project", help="only projects whose path contains this"),
        since: str | None = typer.Option(
            None, "--since", help="only sessions active since: 2d, 12h, 2026-11-01"
        ),
        include_all: bool = typer.Option(
            False, "--all", help="also replays, dropped automation, empty sessions"
        ),
        limit: int = typer.Option(200, "--limit", help="at most this many (0: no limit)"),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        """List sessions, newest first."""
        from skillopt_daemon.core.store import open_db

        tool_id = _tool(tool)
        since_iso = parse_since(since) if since else None
        db = open_db()
        rows = query_sessions(
            db, tool=tool_id, project=project, since=since_iso, include_all=include_all, limit=limit or None
        )
        from skillopt_daemon.service.sessions import with_kinds

        for r in rows:
            r["first_prompt"] = first_prompt(db, r["id"])
        rows = with_kinds(db, rows)
        if as_json:
            print_json(rows)
            return
        if not rows:
            console.print("no sessions" + (" match" if (tool or project or since) else " ingested yet"))
            return
        from skillopt_daemon.core.timeutil import local_display

        print_table(
            None,
            ["id", "tool", "session", "project", "started", "turns", "calls", "flags", "first prompt"],
            [
                [
                    r["id"],
                    r["tool"],
                    r["session_id"][:12],
                    r["project_path"] or "-",
                    local_display(r["started_at"]),
                    r["turn_count"],
                    r["tool_call_count"],
                    ",".join(_flags(r)),
                    _short(r["title"] or r["first_prompt"], 50),
                ]
                for r in rows
            ],
        )

    @sessions.command("show")
    def show_cmd(
        session: str = typer.Argument(..., help="a session number, session id, or unique id prefix"),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
        full: bool = typer.Option(False, "--full", help="do not shorten long texts"),
    ) -> None:
        """One session with its turns and tool calls in order."""
        from skillopt_daemon.core.store import open_db

        db = open_db()
        from skillopt_daemon.service.sessions import with_kinds

        detail = session_detail(db, find_session(db, session))
        with_kinds(db, [detail])
        if as_json:
            print_json(detail)
            return
        _print_detail(detail, full)

    app.add_typer(sessions, name="sessions")


def _tool(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return AgentTool.parse(value).value
    except ValueError as exc:
        raise ConfigError(str(exc), hint="pass one of the tool names above to --tool") from None


def _flags(r: dict[str, Any]) -> list[str]:
    """The flags column: a headless run is `headless` (mined as work); only what mining skips is marked
    `automation`, `skipped` or `replay` (its reason is in `sessions show`)."""
    flags = []
    if r.get("kind") not in (None, "interactive"):
        flags.append(r["kind"])
    elif r.get("kind") is None and r["is_automation"]:
        flags.append("headless")
    if r["drop_reason"]:
        flags.append(f"dropped:{r['drop_reason']}")
    if not r["has_user_turn"]:
        flags.append("no-user-turn")
    if r["repo_dirty"]:
        flags.append("dirty")
    if r["redaction_count"]:
        flags.append(f"redacted:{r['redaction_count']}")
    return flags


def _print_detail(d: dict[str, Any], full: bool) -> None:
    from skillopt_daemon.core.timeutil import local_display

    limit = 10_000_000 if full else 400
    console.print(f"[bold]{literal(d['tool'])} session {literal(d['session_id'])}[/] (#{d['id']})")
    facts = [
        ("project", d["project_path"]),
        ("branch", d["git_branch"]),
        ("model", d["model"]),
        ("entrypoint", d["entrypoint"]),
        ("tool version", d["tool_version"]),
        ("started", local_display(d["started_at"])),
        ("ended", local_display(d["ended_at"])),
        (
            "repo",
            f"{d['repo_commit'][:12]}{' (dirty)' if d['repo_dirty'] else ''}"
            if d["repo_commit"]
            else d["pin_error"],
        ),
        ("flags", ", ".join(_flags(d)) or None),
        ("mined", "no: " + d["kind_reason"] if d.get("kind_reason") else None),
        ("signals", json.dumps(d["signals"]) if d["signals"] else None),
        ("skipped", json.dumps(d["skipped"]) if d["skipped"] else None),
    ]
    for label, value in facts:
        if value:
            console.print(f"  {label:13} {value}", markup=False)
    for t in d["turns"]:
        tag = t["role"] + (" (injected)" if t["is_meta"] else "")
        if t["text"].strip():
            console.print(f"\n[bold]{literal(tag)}[/]", highlight=False)
            console.print(_short(t["text"], limit) if not full else t["text"], markup=False)
        for c in t["tool_calls"]:
            _print_call(c, limit)
    for c in d["unattached_tool_calls"]:
        _print_call(c, limit)


def _print_call(c: dict[str, Any], limit: int) -> None:
    status = ""
    if c["exit_code"] is not None:
        status = f" → exit {c['exit_code']}"
    elif c["is_error"]:
        status = " → error"
    summary = literal(_short(c["input_summary"], min(limit, 200)))
    console.print(f"  [cyan]{literal(c['name'] or 'tool')}[/] {summary}{status}")
    if c["output_excerpt"]:
        console.print("    " + _short(c["output_excerpt"], min(limit, 300)), markup=False)

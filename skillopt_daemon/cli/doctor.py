"""`skillopt doctor`: what is set up, what is missing, and what to do about it.

Checks paths and their permissions, the database, the configuration, whether every transcript can be read,
the agent CLIs on PATH and which API key variables are set or stored with `skillopt keys set` (never their
values), warning when the night's optimizer or judge has its key in neither place. They only read, except
for the one repair every command makes first: an interrupted install is settled (and said so). Exits 5
when the database is unusable, 6 when the configuration is, 0 otherwise (warnings do not fail it).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import typer
from rich.text import Text

from skillopt_daemon.cli.output import console, print_json, print_table
from skillopt_daemon.core import paths
from skillopt_daemon.core.config import Settings
from skillopt_daemon.core.store.db import REPAIR_HINT, corrupt, corrupt_error
from skillopt_daemon.ingest.readable import unreadable_transcripts
from skillopt_daemon.registry import Registry
from skillopt_lib import plugins
from skillopt_lib.agents import TOOLS, spec
from skillopt_lib.errors import ConfigError, SkillOptError, StoreError

Level = Literal["ok", "warn", "error", "info"]

# The executable each tool's CLI installs.
# Variables that commonly hold model API keys; configured backends' `api_key_env` are added.
KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "CODEX_API_KEY")


@dataclass
class Check:
    group: str
    name: str
    level: Level
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "name": self.name, "level": self.level, "detail": self.detail}


def _path_check(name: str, path: Path, private: bool) -> Check:
    if not path.exists():
        return Check("paths", name, "info", f"{path} (not created yet)")
    mode = stat.S_IMODE(path.stat().st_mode)
    if not os.access(path, os.W_OK):
        return Check("paths", name, "error", f"{path} is not writable")
    if private and mode & 0o077:
        return Check(
            "paths", name, "warn", f"{path} is readable by others (mode {mode:o}); chmod go-rwx {path}"
        )
    return Check("paths", name, "ok", f"{path} (mode {mode:o})")


MAX_LISTED = 20  # unreadable paths listed one by one; the rest are counted


def _transcript_checks(settings: Settings) -> list[Check]:
    """A warning per transcript or folder under the tools' roots that cannot be read (they are not ingested)."""
    count, problems = unreadable_transcripts(settings)
    if not problems:
        return [Check("transcripts", "readable", "ok", f"{count} transcripts, all readable")]
    checks = [
        Check("transcripts", p.kind, "warn", f"{p.message}: not ingested") for p in problems[:MAX_LISTED]
    ]
    if len(problems) > MAX_LISTED:
        checks.append(Check("transcripts", "more", "warn", f"{len(problems) - MAX_LISTED} more not readable"))
    return checks


def run_checks() -> tuple[list[Check], int]:
    checks: list[Check] = []
    exit_code = 0
    home = paths.skillopt_home()
    checks.append(
        Check("paths", "SKILLOPT_HOME", "info", str(home) if home else "not set (platform folders)")
    )
    checks.append(_path_check("config folder", paths.config_dir(), False))
    checks.append(_path_check("data folder", paths.data_dir(), True))
    checks.append(_path_check("database", paths.db_path(), True))
    checks.append(_path_check("skill store", paths.skill_store_dir(), True))
    checks.append(_path_check("backups", paths.backups_dir(), True))

    settings = None
    try:
        from skillopt_daemon.core.config import load_settings

        settings = load_settings()
        checks.append(Check("config", "config file", "ok", f"{paths.config_file()} loads"))
    except ConfigError as exc:
        checks.append(Check("config", "config file", "error", exc.message))
        exit_code = exit_code or exc.exit_code

    try:
        from skillopt_daemon.core.store import SCHEMA_VERSION, open_db

        db = open_db()
        ok = db.execute("PRAGMA quick_check").fetchone()[0]
        applied = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY id")]
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        if ok != "ok":
            problems = "; ".join(
                line for r in db.execute("PRAGMA quick_check(5)") for line in str(r[0]).splitlines()
            )
            checks.append(
                Check(
                    "database", "integrity", "error", f"the database is damaged ({problems}); {REPAIR_HINT}"
                )
            )
            exit_code = exit_code or StoreError.exit_code
        else:
            checks.append(
                Check(
                    "database",
                    "schema",
                    "ok",
                    f"{len(applied)}/{SCHEMA_VERSION} migrations, journal {mode}",
                )
            )
        reg = Registry(db, actor="doctor")
        for note in reg.reconcile():
            checks.append(Check("database", "installs", "warn", f"settled: {note}"))
        checks.extend(_project_checks(reg))
        db.conn.close()
    except SkillOptError as exc:  # with what to do: a full disk must not read like a broken database
        detail = f"{exc.message}; {exc.hint}" if exc.hint else exc.message
        checks.append(Check("database", "open", "error", detail))
        exit_code = exit_code or exc.exit_code
    except sqlite3.DatabaseError as exc:  # a query reached a damaged page the quick check did not
        if not corrupt(exc):
            raise
        damaged = corrupt_error(detail=exc)
        checks.append(Check("database", "integrity", "error", f"{damaged.message}; {damaged.hint}"))
        exit_code = exit_code or damaged.exit_code

    if settings is not None:
        checks.extend(_transcript_checks(settings))

    for tool, row in TOOLS.items():
        exe = row.executable
        configured = settings.tool(tool).cli if settings else None
        found = shutil.which(configured or exe)
        if found:
            checks.append(Check("agent CLIs", tool.value, "ok", found))
        else:
            checks.append(
                Check(
                    "agent CLIs",
                    tool.value,
                    "info",
                    f"{configured or exe} not on PATH ({spec(tool).install_hint})",
                )
            )

    checks.extend(_plugin_checks())

    from skillopt_daemon.integrations import doctor_checks

    checks.extend(Check(g, n, lvl, d) for g, n, lvl, d in doctor_checks())  # type: ignore[arg-type]

    checks.extend(_key_checks(settings))
    checks.append(_jail_check(settings))
    return checks, exit_code


def _project_checks(reg: Registry) -> list[Check]:
    """Each project-scope install's folder in its repository, and whether it is committed or ignored: the
    user's call (`registry/project_folder.py`)."""
    from skillopt_daemon.registry import project_folder

    out = []
    for ts in reg.targets():
        where = project_folder.folder(ts.target, ts.installed) if ts.active_version_id else None
        if where is not None and ts.target.project is not None:
            out.append(
                Check("project skills", ts.skill, "info", project_folder.note(where, ts.target.project))
            )
    return out


def _jail_check(settings: Settings | None) -> Check:
    """Whether replays can be jailed here (`skillopt_lib.netjail`), and what nights do when they cannot."""
    from skillopt_lib import netjail

    why = netjail.namespace_unavailable()
    if why is None:
        return Check(
            "replays", "jail", "ok", "replays run in network, mount and process namespaces of their own"
        )
    if settings is not None and settings.replay.allow_unconfined:
        return Check(
            "replays",
            "jail",
            "warn",
            f"replays run unconfined ({why}; replay.allow_unconfined = true): they can reach this machine's "
            "ports, its Unix sockets and the network",
        )
    return Check(
        "replays",
        "jail",
        "error",
        f"replays cannot be jailed here ({why}): nights replay nothing; {netjail.UNCONFINED_HINT}",
    )


def _plugin_checks() -> list[Check]:
    """Plugins that failed to load or clash (a warning each), and each tool's own checks (`ToolSpec.doctor`,
    a function taking the tool and returning `(name, level, detail)` tuples)."""
    out: list[Check] = []
    for tool, row in TOOLS.items():
        if row.doctor is None:
            continue
        try:
            for name, level, detail in plugins.load_object(row.doctor)(tool):
                lvl: Level = level if level in ("ok", "warn", "error", "info") else "warn"
                out.append(Check(tool.value, str(name), lvl, str(detail)))
        except Exception as exc:  # a plugin's check that breaks is reported, never stops the others
            plugins.note_problem(f"the doctor checks of {tool.value} ({row.doctor}) failed: {exc}")
    out.extend(Check("plugins", "load", "warn", problem) for problem in plugins.problems())
    return out


def _key_checks(settings: Settings | None) -> list[Check]:
    """Which key variables are set or stored (never their values); a warning for a key the night's
    optimizer or judge needs that is in neither place, since such a night trains nothing."""
    from skillopt_daemon.night.agents import role_keys
    from skillopt_lib import keys

    try:
        stored = set(keys.stored_names())
    except SkillOptError as exc:
        return [Check("API keys", "keys file", "error", f"{exc.message}; {exc.hint or ''}".rstrip("; "))]
    names = list(KEY_VARS)
    needed = role_keys(settings) if settings is not None else []
    if settings is not None:
        for role in (settings.agent, settings.optimizer, settings.judge):
            if role.api_key_env and role.api_key_env not in names:
                names.append(role.api_key_env)
    out: list[Check] = []
    for need in needed:
        problem = need.problem()
        if problem is not None:
            out.append(Check("API keys", need.role, "warn", problem))
        elif need.source == "environment" and need.variable not in stored:
            out.append(
                Check(
                    "API keys",
                    need.role,
                    "info",
                    f"{need.variable} is set in this shell only: a daemon started as a service or from "
                    f"another terminal will not see it (`skillopt keys set {need.variable}`)",
                )
            )
    for var in names:
        where = [w for w, hit in (("set", os.environ.get(var)), ("in the keys file", var in stored)) if hit]
        out.append(Check("API keys", var, "ok" if where else "info", " and ".join(where) or "not set"))
    return out


def doctor(
    json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    repair: bool = typer.Option(
        False,
        "--repair",
        help="Rebuild a damaged database: copy it to the backups folder, recover what SQLite can still "
        "read, then read the session logs again.",
    ),
) -> None:
    """Check paths, permissions, the database, configuration, agent CLIs and which API keys are set."""
    if repair:
        repair_database(json_out)
        return
    checks, code = run_checks()
    if json_out:
        print_json({"checks": [c.to_dict() for c in checks], "exit_code": code})
    else:
        marks = {
            "ok": "[green]ok[/]",
            "warn": "[yellow]warn[/]",
            "error": "[red]error[/]",
            "info": "[dim]-[/]",
        }
        print_table(
            None,
            ["", "group", "check", "detail"],
            [(Text.from_markup(marks[c.level]), c.group, c.name, c.detail) for c in checks],
        )
        if code:
            console.print("[red]Problems found; see the errors above.[/]")
    if code:
        sys.exit(code)


def repair_database(json_out: bool) -> None:
    """`doctor --repair`: the steps of `core.store.repair`, then every session log read again (the logs are
    the source of truth for sessions), and what was recovered and what was not."""
    from skillopt_daemon.core.store.repair import repair
    from skillopt_daemon.service.status import daemon_state

    db = paths.db_path()
    if not db.exists():
        raise StoreError(f"there is no database at {db} to repair", hint="any command creates a fresh one")
    if daemon_state()["running"]:
        raise StoreError(
            "the daemon is running and writes to the database; it must not while the database is repaired",
            hint="stop it with `skillopt daemon stop`, run `skillopt doctor --repair`, then start it again",
        )
    report = repair(db)
    report.logs_read, report.sessions_after = _read_logs_again()
    if json_out:
        print_json(
            {
                "backup": str(report.backup),
                "method": report.method,
                "recovered": report.tables,
                "dropped": report.dropped,
                "sessions_recovered": report.sessions_recovered,
                "sessions_after": report.sessions_after,
                "logs_read": report.logs_read,
                "versions_recovered": report.versions_recovered,
                "unreferenced_skill_files": report.unreferenced_objects,
                "integrity": report.damage_left,
            }
        )
    else:
        console.print("[bold]Repaired the database[/]", highlight=False)
        for line in report.lines():
            console.print(f"- {line}", highlight=False, soft_wrap=True)
    if report.damage_left != "ok":
        sys.exit(StoreError.exit_code)


def _read_logs_again() -> tuple[int, int]:
    """Every session log of every enabled tool read from its start; returns the logs read and the sessions
    the store then holds."""
    from skillopt_daemon import ingest
    from skillopt_daemon.cli.ingest_cmd import reset_files
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.core.store import open_db

    settings = load_settings()
    db = open_db()
    try:
        sources = ingest.load_sources(settings)
        pipeline = ingest.Pipeline(db, sources, settings)
        reset_files(db, [s.tool.value for s in sources])
        outcomes = pipeline.ingest_paths(pipeline.discover())
        sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
        return int(ingest.summarize(outcomes)["read"]), int(sessions)
    finally:
        db.close()


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)

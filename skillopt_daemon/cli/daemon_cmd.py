"""`skillopt daemon run|start|stop|status|install-service`: the process that tails logs and runs nights."""

from __future__ import annotations

import typer

from skillopt_daemon.cli.output import console, err_console, print_json
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import ConfigError


def register(app: typer.Typer) -> None:
    daemon_app = typer.Typer(
        help="The background process: log ingest and the nightly cycle.", no_args_is_help=True
    )

    @daemon_app.command("run")
    def run_cmd(
        tool: list[str] = typer.Option([], "--tool", help="only this agent tool (repeatable)"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no backfill progress bar"),
    ) -> None:
        """Run in the foreground (Ctrl+C stops it after the current batch, offsets saved)."""
        from skillopt_daemon.service import daemon

        try:
            tools = [AgentTool.parse(t) for t in tool] or None
        except ValueError as exc:
            raise ConfigError(str(exc), hint="pass one of the tool names above to --tool") from None
        daemon.configure_logging(err_console)
        err_console.print("skillopt daemon running in the foreground; Ctrl+C stops it")
        code = daemon.Daemon(tools=tools, console=None if quiet else err_console).run()
        raise typer.Exit(code)

    @daemon_app.command("start")
    def start_cmd() -> None:
        """Start in the background (pid and log file in the data folder)."""
        from skillopt_daemon.service import daemon

        pid = daemon.start_background()
        console.print(f"daemon started (pid {pid}); log: {daemon.daemon_log_file()}")

    @daemon_app.command("stop")
    def stop_cmd(
        timeout: float = typer.Option(
            60.0, "--timeout", help="seconds to wait for the current batch to finish"
        ),
    ) -> None:
        """Stop gracefully: the current batch is finished and every offset saved."""
        from skillopt_daemon.service import daemon

        pid = daemon.stop_daemon(timeout_s=timeout)
        console.print(f"daemon stopped (pid {pid})" if pid else "the daemon was not running")

    @daemon_app.command("status")
    def status_cmd(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
        """Whether the daemon runs, and what it has ingested."""
        from skillopt_daemon import ingest
        from skillopt_daemon.service import daemon

        info = daemon.status()
        if info.get("backfill_done_at") is not None or info.get("last_ingest_at") is not None:
            from skillopt_daemon.core.store import open_db

            db = open_db()
            try:
                info["ingest"] = ingest.status_section(db)
            finally:
                db.close()
        if as_json:
            print_json(info)
            return
        from skillopt_daemon.core.timeutil import humanize_age

        if info["running"]:
            console.print(f"running (pid {info['pid']}, started {humanize_age(info.get('started_at'))})")
        else:
            console.print("not running")
        for line in info.get("ingest", {}).get("lines", []):
            console.print(f"  {line}", markup=False)
        console.print(f"  log: {info['log_file']}", markup=False)

    @daemon_app.command("install-service")
    def install_service_cmd(
        platform: str | None = typer.Option(None, "--platform", help="linux (systemd) or macos (launchd)"),
        as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    ) -> None:
        """Write a user service file that starts the daemon at login (it is not enabled for you)."""
        from skillopt_daemon.service import service_files

        svc = service_files.install_service(platform)
        if as_json:
            print_json(
                {
                    "path": str(svc.path),
                    "kind": svc.kind,
                    "enable": svc.enable_hint,
                    "clis": svc.clis.found,
                    "warnings": [*svc.clis.warnings, *svc.key_warnings],
                }
            )
            return
        console.print(f"wrote {svc.kind} service file {svc.path}", markup=False)
        for tool, exe in sorted(svc.clis.found.items()):
            console.print(f"  the service finds the {tool} CLI at {exe}", markup=False)
        for warning in [*svc.clis.warnings, *svc.key_warnings]:
            err_console.print(f"warning: {warning}", markup=False)
        console.print(f"enable it with:\n  {svc.enable_hint}", markup=False)

    app.add_typer(daemon_app, name="daemon")

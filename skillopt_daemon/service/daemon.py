"""The daemon's lifecycle: run in the foreground, start in the background, stop gracefully, report status.

One daemon per SKILLOPT_HOME: `run` takes an exclusive lock (`core.fsio`) on `daemon.lock` in the data folder and
holds it for its whole life. The kernel releases the lock when the process dies, however it dies, so a stale
pid file never blocks a restart and two daemons can never tail the same store.

The main loop owns every database write of the process. watchdog threads and the scheduler's rescan job
only put paths in a queue; the loop reads each file's new lines in batches (records and offset in one
transaction, see `ingest.py`). SIGTERM sets a flag the loop checks between batches, so `stop` finishes the
batch in hand and exits with every offset saved.

The loop owns an APScheduler `BackgroundScheduler`; the rescan is one interval job on it and
`night.schedule.add_jobs(scheduler, settings, nightly_job)` adds the nightly cycle to the same scheduler:
the schedule knows when, the daemon says what.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from apscheduler.schedulers.background import BackgroundScheduler
from rich.console import Console
from rich.logging import RichHandler

from skillopt_daemon import ingest
from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.config import Settings, load_settings
from skillopt_daemon.core.progress import progress_bar
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.store.db import disk_full, disk_full_error
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest import tail
from skillopt_daemon.ingest.inbox import handle_notes
from skillopt_daemon.ingest.redact import redact
from skillopt_daemon.night import cycle, runs, schedule
from skillopt_daemon.registry import Registry
from skillopt_daemon.service.service_files import daemon_log_file, service_command
from skillopt_lib.agents import AgentTool
from skillopt_lib.errors import DaemonError, SkillOptError

log = logging.getLogger("skillopt.daemon")

LOOP_WAIT_S = 0.2
IDLE_WAIT_S = 5.0
START_WAIT_S = 15.0
# A growing session's signals are recomputed once it has been quiet this long, or this often at most.
SIGNALS_QUIET_S = 1.0
SIGNALS_MAX_DELAY_S = 30.0
ERROR_BACKOFF_S = 2.0
# Failed passes back off exponentially from ERROR_BACKOFF_S up to this.
MAX_BACKOFF_S = 120.0
BIG_CATCH_UP_BYTES = 50_000_000


# --- the lock ---------------------------------------------------------------------------------------------


class DaemonLock:
    """The daemon's exclusive lock (`fsio.daemon_lock_file`), with its pid in the pid file while held."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None

    def acquire(self) -> None:
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(fsio.file_lock(fsio.daemon_lock_file(), timeout=0, holder=paths.pid_file()))
        except fsio.Busy as busy:
            who = f" (pid {busy.holder})" if busy.holder else ""
            raise DaemonError(
                f"the skillopt daemon is already running{who} for {paths.data_dir()}",
                hint="stop it with `skillopt daemon stop`, or set SKILLOPT_HOME to run a separate one",
            ) from None
        self._stack = stack

    def release(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None


# --- failed passes --------------------------------------------------------------------------------------


class IngestPause:
    """What the loop does when a pass fails: wait longer each time, and say it once.

    A full disk or a store locked by another writer is not a bug: it is logged in one line when it starts
    and once when ingest resumes, and kept in `ingest_meta` (`ingest.PAUSE_KEY`) for `skillopt status`, as
    far as the store still takes that one small write. Anything else is a bug and keeps its traceback.
    Either way the next try comes after 2 s, then 4, 8, ... up to `MAX_BACKOFF_S`; nothing is lost
    meanwhile, since offsets only move with the rows they cover.
    """

    def __init__(self) -> None:
        self.failures = 0
        self.state: dict[str, Any] | None = None  # the pause in force: reason, since, message

    def failed(self, db: Any, exc: BaseException) -> float:
        """Note one failed pass; returns how long to wait before the next."""
        self.failures += 1
        wait = min(ERROR_BACKOFF_S * 2 ** (self.failures - 1), MAX_BACKOFF_S)
        reason = "disk-full" if disk_full(exc) else "locked" if _locked(exc) else None
        if reason is None:
            trace, _ = redact("".join(traceback.format_exception(exc)))
            log.error("ingest pass failed; retrying in %.0fs:\n%s", wait, trace)
            return wait
        if self.state is not None and self.state["reason"] == reason:
            return wait  # said already; keep backing off quietly
        if reason == "disk-full":
            err = disk_full_error(detail=exc, then="ingest resumes on its own")
            message = f"ingest paused: {err.message}; {err.hint}"
        else:
            message = f"ingest paused: the database {paths.db_path()} is locked by another process ({exc})"
        self.state = {"reason": reason, "since": utcnow_iso(), "message": message}
        log.error("%s; retrying with backoff (next try in %.0fs)", message, wait)
        self._record(db, json.dumps(self.state))
        return wait

    def succeeded(self, db: Any) -> None:
        """A pass went through: the backoff starts over, and a pause in force ends (said once)."""
        self.failures = 0
        if self.state is None:
            return
        state, self.state = self.state, None
        log.info("ingest resumed (paused since %s: %s); nothing was lost", state["since"], state["reason"])
        self._record(db, "")

    @staticmethod
    def _record(db: Any, value: str) -> None:
        try:
            with db.conn:
                ingest.set_meta(db, ingest.PAUSE_KEY, value)
        except sqlite3.Error:
            pass  # the full disk took even this small write: status reads the free space itself


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and any(
        w in str(exc) for w in ("database is locked", "database table is locked", "busy")
    )


# --- the loop -----------------------------------------------------------------------------------------------


class Daemon:
    """One running daemon. `run()` blocks until `request_stop()` (or SIGTERM / SIGINT)."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        tools: Sequence[AgentTool] | None = None,
        console: Console | None = None,
    ) -> None:
        self.settings = settings or load_settings()
        self.tools = tools
        self.console = console  # where the backfill's progress bar goes; None: no bar
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._queue: queue.SimpleQueue[Path] = queue.SimpleQueue()
        self._rescan = threading.Event()
        self._note_waiting = threading.Event()
        self._inbox = paths.inbox_dir()
        self.scheduler: Any = None  # apscheduler BackgroundScheduler while running
        self.pipeline: Any = None
        self.dashboard: Any = None  # skillopt_daemon.service.dashboard.DashboardServer while running
        self.pause = IngestPause()

    def request_stop(self, *_: object) -> None:
        self._stop.set()
        self._wake.set()

    def _on_path(self, path: Path) -> None:
        if path.parent == self._inbox:
            self._note_waiting.set()
        self._queue.put(path)
        self._wake.set()

    def _notes_if_any(self) -> None:
        """During a long backfill: a session that just ended is read now, not after the whole history."""
        if self._note_waiting.is_set():
            self._note_waiting.clear()
            self._handle_notes()

    def _request_rescan(self) -> None:
        self._rescan.set()
        self._wake.set()

    def run(self) -> int:
        lock = DaemonLock()
        lock.acquire()
        watcher: tail.Watcher | None = None
        self.scheduler = None
        try:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, self.request_stop)
                signal.signal(signal.SIGINT, self.request_stop)
            db = open_db()
            sources = ingest.load_sources(self.settings, self.tools)
            self.pipeline = pipeline = ingest.Pipeline(db, sources, self.settings)
            with db.conn:
                ingest.set_meta(db, "daemon_started_at", utcnow_iso())
                ingest.set_meta(db, "daemon_pid", str(os.getpid()))
                ingest.set_meta(db, ingest.PAUSE_KEY, "")  # a pause of an earlier daemon is over
            log.info("daemon started (pid %s), watching %d roots", os.getpid(), len(pipeline.roots))
            # An install killed mid-way (a crashed `skillopt approve`) is settled before anything else runs.
            for note in Registry(db, actor="daemon").reconcile():
                log.warning("%s", note)
            # A night killed with the last daemon (or by hand) is settled, and its replay workspaces go.
            for note in runs.settle_stale(db):
                log.warning("%s", note)
            if not sources:
                log.warning("no agent tool sources are available: nothing to ingest")

            paths.ensure_private_dir(paths.inbox_dir())
            watcher = tail.Watcher(self._on_path)
            watcher.want(pipeline.roots)
            watcher.want([paths.inbox_dir()], recursive=False)
            watcher.start()

            self.scheduler = self._start_scheduler()
            self.dashboard = start_dashboard(self.settings)
            self._loop(db, watcher)
            log.info("daemon stopping: offsets saved")
            return 0
        finally:
            stop_dashboard(self.dashboard)
            self.dashboard = None
            if self.scheduler is not None:
                try:
                    self.scheduler.shutdown(wait=False)
                except Exception:  # already stopped
                    pass
            if watcher is not None:
                watcher.stop()
            lock.release()

    def _start_scheduler(self) -> Any:
        """The rescan job, and the nightly job on the configured schedule (`night.schedule`)."""
        scheduler = BackgroundScheduler(timezone="UTC")
        scheduler.add_job(
            self._request_rescan,
            "interval",
            seconds=max(0.05, float(self.settings.ingest.rescan_interval_s)),
            id="ingest-rescan",
            coalesce=True,
            max_instances=1,
        )
        schedule.add_jobs(scheduler, self.settings, nightly_job, weekly_job)
        scheduler.start()
        return scheduler

    def _loop(self, db: Any, watcher: tail.Watcher) -> None:
        """Backfill once, then ingest what events, notes and rescans name until asked to stop."""
        pipeline = self.pipeline
        backfilled = False
        first = True
        while not self._stop.is_set():
            if not first:
                # Events wake the loop at once; the timeout only paces signals of growing sessions.
                self._wake.wait(LOOP_WAIT_S if pipeline.stale_pending else IDLE_WAIT_S)
                self._wake.clear()
                if self._stop.is_set():
                    break
            first = False
            try:
                if not backfilled:
                    pipeline.pin_sessions(None)
                    self._handle_notes()
                    self._backfill(db)
                    backfilled = True
                else:
                    self._handle_notes()
                    self._drain_queue()
                    if self._rescan.is_set():
                        self._rescan.clear()
                        watcher.refresh()
                        self._rescan_files()
                    pipeline.refresh_signals(quiet_s=SIGNALS_QUIET_S, max_delay_s=SIGNALS_MAX_DELAY_S)
                self.pause.succeeded(db)
            except Exception as exc:
                # A full disk, the store locked by a long writer, or a bug in one pass: say so, keep running.
                # Work is retried: events are re-found by the next rescan, offsets were never advanced.
                self._rescan.set()
                self._stop.wait(self.pause.failed(db, exc))

    # --- work ---------------------------------------------------------------------------------------

    def _backfill(self, db: Any) -> None:
        pipeline = self.pipeline
        files = pipeline.discover()
        total = pipeline.pending_bytes(files)
        first = ingest.get_meta(db, "backfill_done_at") is None
        log.info("backfill: %d transcripts, %.1f MB to read", len(files), total / 1e6)
        # The first start reads the whole history; a later one may have a week of catching up to do.
        show = self.console if (first or total > BIG_CATCH_UP_BYTES) else None
        with progress_bar(show, "backfill" if first else "catching up", total) as advance:
            pipeline.ingest_paths(
                files, should_stop=self._stop.is_set, on_bytes=advance, between=self._notes_if_any
            )
        if not self._stop.is_set():
            with db.conn:
                ingest.set_meta(db, "backfill_done_at", utcnow_iso())
            log.info("backfill done")

    def _drain_queue(self) -> None:
        pending: dict[str, Path] = {}
        while True:
            try:
                path = self._queue.get_nowait()
            except queue.Empty:
                break
            pending[str(path)] = path
        inbox = paths.inbox_dir()
        todo: dict[str, tuple[Any, Path]] = {}
        for path in pending.values():
            if path.parent == inbox:
                continue  # notes are read by _handle_notes
            if path.is_dir():
                todo.update((str(p), (s, p)) for s, p in self._walk(path))
                continue
            source = self.pipeline.source_for(path)
            if source is not None:
                todo[str(path)] = (source, path)
                continue
            # A database's write-ahead log changed: its document has new rows, whatever its own file says.
            document = self.pipeline.document_for(path)
            if document is not None:
                todo[str(document[1])] = document
        if todo:
            self.pipeline.ingest_paths(list(todo.values()), should_stop=self._stop.is_set, signals=False)

    def _walk(self, folder: Path) -> list[tuple[Any, Path]]:
        out = []
        for source in self.pipeline.sources:
            for path in tail.walk_files(folder, source.is_transcript):
                if self.pipeline.source_for(path) is source:
                    out.append((source, path))
        return out

    def _rescan_files(self) -> None:
        files = [(s, p) for s, p in self.pipeline.discover() if self.pipeline.needs_read(p)]
        if files:
            self.pipeline.ingest_paths(files, should_stop=self._stop.is_set, signals=False)

    def _handle_notes(self) -> None:
        handle_notes(self.pipeline)


def start_dashboard(settings: Settings) -> Any:
    """The web dashboard in a thread of the daemon (`ui.enabled`); a failure is logged, ingest goes on."""
    if not settings.ui.enabled:
        return None
    try:
        # uvicorn and the web app load only when the dashboard is enabled.
        from skillopt_daemon.service.dashboard import DashboardServer

        server = DashboardServer(settings)
        server.start()
        return server
    except DaemonError as exc:  # e.g. the port is taken: say so in one line
        log.warning("%s; the daemon runs without the dashboard (%s)", exc.message, exc.hint or "")
        return None
    except Exception:
        log.exception("the dashboard could not start; the daemon runs without it")
        return None


def stop_dashboard(server: Any) -> None:
    if server is not None:
        try:
            server.stop()
        except Exception:
            log.exception("the dashboard did not stop cleanly")


def nightly_job() -> None:
    """What the scheduler calls: skip when nothing new arrived, else one night, never raising."""
    try:
        from skillopt_daemon.team.nightly import pull_before_night

        pull_before_night()  # teammates' rules, when a team is set up; a failure is logged, never raised
        report = cycle.run_scheduled()
        log.info("nightly cycle: %s", report.status if report else "skipped")
    except Exception:  # the daemon must survive a failed night; the run row says what happened
        log.exception("nightly cycle failed")


def weekly_job() -> None:
    """The weekly summary of what the learned rules did, as a desktop notification; never raising."""
    try:
        from skillopt_daemon.night.installed import outcomes

        outcomes.notify_weekly(open_db(), load_settings().report)
    except Exception:
        log.exception("weekly summary failed")


# --- start / stop / status ------------------------------------------------------------------------------


def start_background(*, wait_s: float = START_WAIT_S) -> int:
    """Start `run` in a new session with output to the log file; returns its pid once it holds the lock."""
    if fsio.daemon_running():
        pid = fsio.read_pid()
        raise DaemonError(
            f"the skillopt daemon is already running{f' (pid {pid})' if pid else ''}",
            hint="`skillopt daemon status` shows what it is doing; `skillopt daemon stop` stops it",
        )
    logfile = daemon_log_file()
    paths.ensure_private_dir(logfile.parent)
    fd = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as out:
        proc = subprocess.Popen(
            service_command(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DaemonError(
                f"the daemon exited at once (exit code {proc.returncode})",
                hint=f"see the end of {logfile}",
            )
        if fsio.daemon_running() and fsio.read_pid() == proc.pid:
            return proc.pid
        time.sleep(0.05)
    raise DaemonError(f"the daemon did not start within {wait_s:.0f}s", hint=f"see {logfile}")


def stop_daemon(*, timeout_s: float = 60.0) -> int | None:
    """SIGTERM the running daemon and wait until it has saved its offsets and released the lock."""
    if not fsio.daemon_running():
        return None
    pid = fsio.read_pid()
    if pid is None:
        raise DaemonError(
            "the daemon holds its lock but wrote no pid file",
            hint=f"look for it in {fsio.daemon_lock_file()}",
        )
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not fsio.daemon_running():
            # The lock goes as the last batch is saved; give the process a moment to finish exiting.
            exit_deadline = time.monotonic() + 5.0
            while fsio.pid_alive(pid) and time.monotonic() < exit_deadline:
                time.sleep(0.02)
            return pid
        time.sleep(0.05)
    raise DaemonError(
        f"the daemon (pid {pid}) did not stop within {timeout_s:.0f}s",
        hint=f"it may be finishing a long batch; wait, or end it with `kill {pid}`",
    )


def status() -> dict[str, Any]:
    """What the daemon is doing; reads the store without taking any write lock."""
    running = fsio.daemon_running()
    info: dict[str, Any] = {
        "running": running,
        "pid": fsio.read_pid() if running else None,
        "data_dir": str(paths.data_dir()),
        "log_file": str(daemon_log_file()),
    }
    if paths.db_path().exists():
        db = open_db()
        try:
            info["started_at"] = ingest.get_meta(db, "daemon_started_at") if running else None
            info["backfill_done_at"] = ingest.get_meta(db, "backfill_done_at")
            info["last_ingest_at"] = ingest.get_meta(db, "last_ingest_at")
        finally:
            db.close()
    return info


def configure_logging(console: Console | None = None, stream: IO[str] | None = None) -> None:
    """Plain timestamped lines (the log file); on a terminal, rich lines on the caller's `console`, so they
    keep clear of the progress bar drawn on the same console."""
    handler: logging.Handler
    out = stream or sys.stderr
    if out.isatty():
        handler = RichHandler(console=console or Console(stderr=True), show_path=False)
    else:
        handler = logging.StreamHandler(out)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("skillopt")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def main() -> None:
    """`python -m skillopt_daemon.service.daemon`: the foreground daemon, as run by `start` and the service files."""
    console = Console(stderr=True, highlight=False)
    configure_logging(console)
    try:
        code = Daemon(console=console if sys.stderr.isatty() else None).run()
    except SkillOptError as exc:
        _exit_with(exc)
    except (sqlite3.Error, OSError) as exc:
        if not disk_full(exc):
            raise
        _exit_with(disk_full_error(detail=exc))  # at start, before the loop can wait for room
    sys.exit(code)


def _exit_with(exc: SkillOptError) -> NoReturn:
    print(f"error: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"→ {exc.hint}", file=sys.stderr)
    sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()

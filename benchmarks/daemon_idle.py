"""The idle daemon's cost: `python -m benchmarks.daemon_idle [--files 10000] [--seconds 60]`.

Creates 10,000 small Claude Code transcripts in 500 project folders, starts the real daemon (default
settings: watchdog on every root, a rescan every 30 s), waits for the backfill, then samples the process's
CPU time and resident memory while nothing changes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _proc_stat(pid: int) -> tuple[float, int]:
    """(user + system CPU seconds, resident bytes) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return cpu, rss


def _backfilled(db: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return (
                conn.execute("SELECT 1 FROM ingest_meta WHERE key = 'backfill_done_at'").fetchone()
                is not None
            )
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--folders", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()

    from benchmarks.ingest_corpus import claude_line

    work = Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    env.update(
        SKILLOPT_HOME=str(work / "skillopt"),
        CLAUDE_CONFIG_DIR=str(work / "claude"),
        CODEX_HOME=str(work / "codex"),
        HOME=str(work / "home"),
        SKILLOPT_NIGHT__ENABLED="false",
    )
    proc = None
    try:
        for i in range(args.files):
            folder = work / "claude" / "projects" / f"-home-dev-p{i % args.folders}"
            folder.mkdir(parents=True, exist_ok=True)
            sid = f"idle-{i:05d}"
            (folder / f"{sid}.jsonl").write_bytes(
                claude_line(sid, f"{sid}-u", None, f"task {i}", cwd=f"/home/dev/p{i}")
            )
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillopt_daemon.service.daemon"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        t0 = time.perf_counter()
        db = work / "skillopt" / "data" / "skillopt.db"
        while not _backfilled(db):
            if proc.poll() is not None:
                raise RuntimeError("the daemon exited")
            time.sleep(0.2)
        print(f"backfill of {args.files} files: {time.perf_counter() - t0:.1f}s")
        time.sleep(2)  # let the signals of the backfilled sessions settle
        cpu0, _ = _proc_stat(proc.pid)
        rss_max = 0
        start = time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            time.sleep(1)
            rss_max = max(rss_max, _proc_stat(proc.pid)[1])
        cpu1, rss = _proc_stat(proc.pid)
        wall = time.perf_counter() - start
        print(
            f"idle over {wall:.0f}s with {args.files} files watched: CPU {cpu1 - cpu0:.2f}s "
            f"({100 * (cpu1 - cpu0) / wall:.2f}% of one core), "
            f"RSS {rss / 2**20:.0f} MiB (max {rss_max / 2**20:.0f} MiB)"
        )
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

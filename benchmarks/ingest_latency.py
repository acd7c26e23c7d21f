"""Write-to-queryable latency with the daemon running: `python -m benchmarks.ingest_latency [--lines 200]`.

Starts the real daemon (a subprocess, default settings) on a small corpus, then appends one line at a time
to a live transcript, and creates new session files, timing each until a reader of the database sees it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path


def _seen(db: Path, sql: str, arg: str) -> bool:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return False
    try:
        return conn.execute(sql, [arg]).fetchone() is not None
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _wait(db: Path, sql: str, arg: str, timeout: float = 30.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if _seen(db, sql, arg):
            return time.perf_counter() - t0
        time.sleep(0.001)
    raise RuntimeError(f"{arg} not ingested within {timeout}s")


def _pct(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[max(0, int(len(xs) * 0.95) - 1)]
    return f"p50 {statistics.median(xs) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {xs[-1] * 1000:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200, help="lines appended one by one")
    ap.add_argument("--sessions", type=int, default=30, help="new session files created one by one")
    ap.add_argument("--corpus-mb", type=float, default=5.0)
    args = ap.parse_args()

    from benchmarks.ingest_corpus import claude_line, generate

    work = Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
    env.update(
        SKILLOPT_HOME=str(work / "skillopt"),
        CLAUDE_CONFIG_DIR=str(work / "corpus" / "claude"),
        CODEX_HOME=str(work / "corpus" / "codex"),
        HOME=str(work / "home"),
        SKILLOPT_NIGHT__ENABLED="false",
    )
    db = work / "skillopt" / "data" / "skillopt.db"
    proc = None
    try:
        generate(work / "corpus", int(args.corpus_mb * 1e6), seed=5)
        proc = subprocess.Popen(
            [sys.executable, "-m", "skillopt_daemon.service.daemon"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        _wait(db, "SELECT 1 FROM ingest_meta WHERE key = ?", "backfill_done_at", timeout=300)

        folder = work / "corpus" / "claude" / "projects" / "-home-dev-live"
        folder.mkdir(parents=True)
        sid = str(uuid.uuid4())
        live = folder / f"{sid}.jsonl"
        with open(live, "ab") as f:
            f.write(claude_line(sid, "first", None, "start", cwd="/home/dev/live"))
        _wait(db, "SELECT 1 FROM turns WHERE key = ?", "first")

        line_lat = []
        for i in range(args.lines):
            key = f"k{i}"
            with open(live, "ab") as f:
                f.write(claude_line(sid, key, None, f"request {i}", cwd="/home/dev/live"))
            line_lat.append(_wait(db, "SELECT 1 FROM turns WHERE key = ?", key))
            time.sleep(0.02)
        session_lat = []
        for _ in range(args.sessions):
            new = str(uuid.uuid4())
            (folder / f"{new}.jsonl").write_bytes(
                claude_line(new, f"{new}-1", None, "hello", cwd="/home/dev/live")
            )
            session_lat.append(_wait(db, "SELECT 1 FROM sessions WHERE session_id = ?", new))
            time.sleep(0.02)
        print(f"appended line → queryable ({args.lines} lines): {_pct(line_lat)}")
        print(f"new session file → queryable ({args.sessions} files): {_pct(session_lat)}")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

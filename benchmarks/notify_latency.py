"""Wall time of the hook command: `python -m benchmarks.notify_latency [--runs 20]`.

Runs `skillopt notify session-end` as a hook would (a new process, the hook's JSON on stdin) and reports
its wall time beside a bare `python -c pass` and an import of only what writing a note needs, so the part
due to the CLI's start-up is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _time(cmd: list[str], env: dict[str, str], stdin: bytes, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, input=stdin, capture_output=True, check=True)
        out.append(time.perf_counter() - t)
    return out


def _fmt(xs: list[float]) -> str:
    xs = sorted(xs)
    return (
        f"p50 {statistics.median(xs) * 1000:.0f} ms, p95 {xs[max(0, int(len(xs) * 0.95) - 1)] * 1000:.0f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    env = {**os.environ, "SKILLOPT_HOME": str(work)}
    hook = json.dumps(
        {"session_id": "s", "transcript_path": "/tmp/s.jsonl", "cwd": "/tmp", "reason": "other"}
    )
    try:
        exe = Path(sys.executable).with_name("skillopt")
        cli = _time([str(exe), "notify", "session-end"], env, hook.encode(), args.runs)
        bare = _time([sys.executable, "-c", "pass"], env, b"", args.runs)
        floor = _time(
            [sys.executable, "-c", "import json, uuid; import skillopt_daemon.core.paths"],
            env,
            b"",
            args.runs,
        )
        print(f"skillopt notify session-end: {_fmt(cli)}")
        print(f"python -c pass:              {_fmt(bare)}")
        print(f"python + what a note needs:  {_fmt(floor)}")
        assert not (work / "data" / "skillopt.db").exists(), "notify must not open the database"
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

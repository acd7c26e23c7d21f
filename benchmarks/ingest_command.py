"""The first run as a user meets it: `python -m benchmarks.ingest_command [--mb 52] [--runs 5]`.

Times the whole `skillopt ingest --backfill` process (start-up, store creation, reading, the search index)
on Claude Code transcripts only, each run into a fresh store, and the same command with nothing to read
(start-up and store creation alone). Medians of `--runs` runs; wall and CPU (user + system, from the
operating system's accounting of the finished child).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(env: dict[str, str]) -> tuple[float, float]:
    """One `skillopt ingest --backfill` into a fresh store; (wall s, CPU s)."""
    shutil.rmtree(env["SKILLOPT_HOME"], ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from skillopt_daemon.entry import main; main()",
            "ingest",
            "--backfill",
            "-q",
        ],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=52.0, help="MB of Claude Code transcripts (default 52)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()

    from benchmarks.ingest_corpus import generate

    work = Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    try:
        # The corpus is 60% Claude Code: generate enough for the wanted size, keep that part only.
        corpus = generate(work / "corpus", int(args.mb * 1e6 / 0.6), seed=args.seed)
        size = sum(p.stat().st_size for p in corpus.claude_home.rglob("*.jsonl"))
        files = sum(1 for _ in corpus.claude_home.rglob("*.jsonl"))
        for folder in ("home", "empty-codex", "empty-claude"):
            (work / folder).mkdir()
        base = {k: v for k, v in os.environ.items() if not k.startswith("SKILLOPT_")}
        base.update(HOME=str(work / "home"), CODEX_HOME=str(work / "empty-codex"))
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), base.get("PYTHONPATH")]))
        full = {**base, "SKILLOPT_HOME": str(work / "store"), "CLAUDE_CONFIG_DIR": str(corpus.claude_home)}
        empty = {
            **base,
            "SKILLOPT_HOME": str(work / "store-empty"),
            "CLAUDE_CONFIG_DIR": str(work / "empty-claude"),
        }
        for name, env in (("nothing to read", empty), (f"{files} transcripts, {size / 1e6:.1f} MB", full)):
            _run(env)  # warm-up: the page cache holds the corpus and the program's files
            runs = [_run(env) for _ in range(args.runs)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(
                f"skillopt ingest --backfill, {name}: {wall:.2f}s wall, {cpu:.2f}s CPU (median of {args.runs})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

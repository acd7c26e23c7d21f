"""Cost of one appended line: `python -m benchmarks.ingest_append [--big-mb 100] [--appends 200]`.

A Claude Code transcript of 100 MB and one of 1 MB are read to the end; then one line at a time is
appended to each and ingested (open, identity check, read from the offset, parse, one transaction). The
cost must not grow with what is already in the file or the store.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big-mb", type=float, default=100.0)
    ap.add_argument("--small-mb", type=float, default=1.0)
    ap.add_argument("--appends", type=int, default=200)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    os.environ["SKILLOPT_HOME"] = str(work / "skillopt")
    os.environ["CLAUDE_CONFIG_DIR"] = str(work / "claude")
    os.environ["HOME"] = str(work / "home")
    try:
        from benchmarks.ingest_corpus import _claude_session, claude_line
        from skillopt_daemon import ingest
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.store import open_db
        from skillopt_lib.agents import AgentTool

        rng = random.Random(3)
        folder = work / "claude" / "projects" / "-home-dev-project-0"
        folder.mkdir(parents=True)
        files = {}
        for label, mb in (("big", args.big_mb), ("small", args.small_mb)):
            sid = str(uuid.uuid4())
            path = folder / f"{sid}.jsonl"
            path.write_bytes(_claude_session(rng, sid, "/home/dev/project-0", int(mb * 1e6)))
            files[label] = (sid, path)
        settings = load_settings()
        db = open_db()
        pipeline = ingest.Pipeline(db, ingest.load_sources(settings, [AgentTool.CLAUDE_CODE]), settings)
        t0 = time.perf_counter()
        pipeline.ingest_paths(pipeline.discover())
        print(f"backfill of {args.big_mb:.0f} MB + {args.small_mb:.0f} MB: {time.perf_counter() - t0:.1f}s")
        (turns,) = db.execute("SELECT COUNT(*) FROM turns").fetchone()
        print(f"store holds {turns} turns")

        results: dict[str, list[float]] = {"big": [], "small": []}
        source = pipeline.sources[0]
        for i in range(args.appends):
            for label in ("big", "small") if i % 2 == 0 else ("small", "big"):
                sid, path = files[label]
                with open(path, "ab") as f:
                    f.write(claude_line(sid, f"append-{label}-{i}", None, f"one more request number {i}"))
                t = time.perf_counter()
                out = pipeline.ingest_file(source, path)
                results[label].append(time.perf_counter() - t)
                assert out.lines == 1, out
        for label, mb in (("big", args.big_mb), ("small", args.small_mb)):
            xs = sorted(results[label])
            p50 = statistics.median(xs) * 1000
            p95 = xs[int(len(xs) * 0.95) - 1] * 1000
            print(
                f"{label:5} ({mb:5.0f} MB): one appended line ingested in p50 {p50:.2f} ms, p95 {p95:.2f} ms"
            )
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

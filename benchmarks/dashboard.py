"""Dashboard page times over HTTP, with a store filled by a real ingest of generated transcripts.

Run: `python -m benchmarks.dashboard --mb 40 --repeat 20`. Everything happens in a temporary SKILLOPT_HOME
and HOME. The dashboard is served by the same thread the daemon starts (uvicorn on 127.0.0.1) and fetched
with a Bearer token, so a figure is what a browser waits for the HTML (not for rendering it). Prints a
Markdown table of medians (min–max) for docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path


def _fmt(samples: list[float]) -> str:
    med = statistics.median(samples)
    return f"{med * 1000:.0f} ms ({min(samples) * 1000:.0f}–{max(samples) * 1000:.0f})"


def _fake_run(folder: Path, steps: int) -> None:
    """A finished run folder shaped like the trainer's (baseline, steps with gate stats and usage)."""
    folder.mkdir(parents=True)
    usage = {"agent": {"input_tokens": 4000, "output_tokens": 300, "calls": 24, "cost_usd": 0.01}}
    lines = [json.dumps({"kind": "baseline", "step": 0, "val": {"score": 0.4}, "usage_total": usage})]
    for s in range(1, steps + 1):
        rec = {
            "kind": "step",
            "step": s,
            "epoch": 1 + s // 10,
            "train": {"hard": min(1.0, 0.3 + s / (2 * steps)), "soft": 0.5},
            "val": {"incumbent": min(1.0, 0.4 + s / (2 * steps))},
            "accepted": s % 4 == 0,
            "reason": "improvement" if s % 4 == 0 else "candidate ties the incumbent",
            "gate": {"stats": {"difference": 0.02, "bound": 0.01, "n": 40, "repeats": 2}},
            "applied": [{"op": "append", "content": f"rule number {s} " * 8}],
            "rejected_edits": [],
            "usage_step": usage,
            "usage_total": usage,
        }
        lines.append(json.dumps(rec))
    (folder / "history.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "summary.json").write_text(json.dumps({"env": "bench", "steps": steps, "usage": usage}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=40.0, help="megabytes of transcripts to ingest")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200, help="steps in the training run shown")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        from benchmarks.ingest_corpus import generate

        corpus = generate(root / "corpus", int(args.mb * 1e6))
        os.environ["SKILLOPT_HOME"] = str(root / "sk")
        os.environ["HOME"] = str(root / "home")
        os.environ["CLAUDE_CONFIG_DIR"] = str(corpus.claude_home)
        os.environ["CODEX_HOME"] = str(corpus.codex_home)
        os.environ["SKILLOPT_UI__PORT"] = "0"

        from skillopt_daemon.web.server import DashboardServer

        from skillopt_daemon.core import paths
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.ingest import pipeline as ingest

        settings = load_settings()
        db = open_db()
        pipeline = ingest.Pipeline(db, ingest.load_sources(settings, None), settings)
        t = time.perf_counter()
        pipeline.ingest_paths(pipeline.discover())
        ingest_s = time.perf_counter() - t
        sessions = db.execute("SELECT COUNT(*), MAX(turn_count) FROM sessions").fetchone()
        biggest = db.execute("SELECT id FROM sessions ORDER BY turn_count DESC LIMIT 1").fetchone()[0]
        db.conn.close()
        _fake_run(paths.runs_dir() / "train-bench", args.steps)

        server = DashboardServer(settings)
        server.start()
        pages = {
            "overview": "",
            "sessions (list)": "sessions?all=true",
            "sessions (full-text search)": "sessions?all=true&q=retry+timeout",
            f"session detail ({sessions[1]} turns)": f"sessions/{biggest}",
            "training runs": "runs",
            f"training run ({args.steps} steps, chart)": "runs/train-bench",
            "settings": "settings",
        }
        results: dict[str, list[float]] = {}
        try:
            for label, path in pages.items():
                req = urllib.request.Request(
                    server.url + path, headers={"Authorization": f"Bearer {server.token}"}
                )
                samples = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    with urllib.request.urlopen(req, timeout=60) as resp:
                        resp.read()
                    samples.append(time.perf_counter() - t)
                results[label] = samples
        finally:
            server.stop()
    print(
        f"{corpus.bytes / 1e6:.0f} MB of transcripts, {sessions[0]} sessions (ingested in {ingest_s:.1f} s); "
        f"{args.repeat} requests per page\n"
    )
    print("| page | time to the full HTML, median (min–max) |")
    print("| --- | --- |")
    for label, samples in results.items():
        print(f"| {label} | {_fmt(samples)} |")


if __name__ == "__main__":
    main()

"""Backfill throughput: `python -m benchmarks.ingest_backfill [--mb 500]`.

Generates a corpus of Claude Code and Codex transcripts, then times (1) merely reading every file and
JSON-parsing every line, and (2) the real pipeline (sources with redaction, upserts, offsets, FTS) into a
fresh store. The ratio of the two is what ingest costs beyond reading the bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec


def parse_only(roots: list[Path], loads: Callable[[bytes], object] = json.loads) -> tuple[int, int, float]:
    t0 = time.perf_counter()
    lines = 0
    size = 0
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                with open(os.path.join(folder, name), "rb") as f:
                    for line in f:
                        size += len(line)
                        if line.strip():
                            loads(line)
                            lines += 1
    return lines, size, time.perf_counter() - t0


def _time_sources(sources: list) -> list[float]:  # type: ignore[type-arg]
    """Wrap each source's parse_line to add its CPU time into the returned one-element list."""
    spent = [0.0]
    for src in sources:
        inner = src.parse_line

        def timed(ctx, line, _inner=inner):  # type: ignore[no-untyped-def]
            t = time.process_time()
            try:
                return _inner(ctx, line)
            finally:
                spent[0] += time.process_time() - t

        src.parse_line = timed
    return spent


def _time_calls(owner: object, name: str) -> list[float]:
    """Wrap `owner.name` (a function or bound method) to add its CPU time into the returned one-element list.

    Each call pays two `time.process_time()` calls (well under a microsecond), counted in the totals too.
    """
    spent = [0.0]
    inner = getattr(owner, name)

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        t = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - t

    setattr(owner, name, timed)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=500.0, help="corpus size in MB (default 500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    args = ap.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="skillopt-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["SKILLOPT_HOME"] = str(work / "skillopt")
    os.environ["CLAUDE_CONFIG_DIR"] = str(work / "corpus" / "claude")
    os.environ["CODEX_HOME"] = str(work / "corpus" / "codex")
    os.environ["HOME"] = str(work / "home")  # other tools' default folders: empty
    try:
        from benchmarks.ingest_corpus import generate

        t0 = time.perf_counter()
        corpus = generate(work / "corpus", int(args.mb * 1e6), seed=args.seed)
        took = time.perf_counter() - t0
        print(f"corpus: {corpus.files} transcripts, {corpus.bytes / 1e6:.0f} MB in {took:.1f}s")

        c0 = time.process_time()
        lines, size, t_parse = parse_only([corpus.claude_home, corpus.codex_home])
        c_parse = time.process_time() - c0
        print(
            f"read + json.loads only: {lines} lines in {t_parse:.1f}s wall, {c_parse:.1f}s CPU "
            f"= {size / 1e6 / c_parse:.1f} MB/s (CPU)"
        )
        c0 = time.process_time()
        parse_only([corpus.claude_home, corpus.codex_home], msgspec.json.Decoder().decode)
        c_fast = time.process_time() - c0
        print(f"read + msgspec decode only (the readers' decoder): {c_fast:.2f}s CPU")

        from skillopt_daemon import ingest
        from skillopt_daemon.core.config import load_settings
        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.ingest import fts
        from skillopt_daemon.ingest.sources import base
        from skillopt_lib.agents import AgentTool

        settings = load_settings()
        db = open_db()
        sources = ingest.load_sources(settings, [AgentTool.CLAUDE_CODE, AgentTool.CODEX])
        pipeline = ingest.Pipeline(db, sources, settings)
        in_sources = _time_sources(sources)
        in_json = _time_calls(base, "decode_json_line")
        in_redaction = _time_calls(sources[0].redactor, "redact")  # the sources share one redactor
        in_fts = _time_calls(fts, "resume")
        in_signals = _time_calls(pipeline, "refresh_signals")
        in_commit_batches = _time_calls(pipeline, "_commit_lines")
        t0, c0 = time.perf_counter(), time.process_time()
        outcomes = pipeline.ingest_paths(pipeline.discover())
        t_ingest, c_ingest = time.perf_counter() - t0, time.process_time() - c0
        summary = ingest.summarize(outcomes)
        (turns,) = db.execute("SELECT COUNT(*) FROM turns").fetchone()
        (calls,) = db.execute("SELECT COUNT(*) FROM tool_calls").fetchone()
        mb = summary["bytes"] / 1e6
        print(
            f"ingest: {mb:.0f} MB, {summary['lines']} lines, {summary['records']} records "
            f"({turns} turns, {calls} tool calls) in {t_ingest:.1f}s wall, {c_ingest:.1f}s CPU"
        )
        print(
            f"  = {mb / c_ingest:.1f} MB/s, {summary['lines'] / c_ingest:,.0f} lines/s, "
            f"{summary['records'] / c_ingest:,.0f} records/s (CPU time; wall {mb / t_ingest:.1f} MB/s)"
        )
        print(
            f"  of which in the sources (JSON, normalizing, redaction): {in_sources[0]:.1f}s; "
            f"pipeline and store: {c_ingest - in_sources[0]:.1f}s"
        )
        rest = c_ingest - in_sources[0] - in_commit_batches[0] - in_fts[0] - in_signals[0]
        print(
            f"  sources: JSON decoding {in_json[0]:.2f}s, redaction {in_redaction[0]:.2f}s, "
            f"normalizing {in_sources[0] - in_json[0] - in_redaction[0]:.2f}s"
        )
        print(
            f"  store: records and offsets {in_commit_batches[0]:.2f}s, search index rebuilt at the end "
            f"{in_fts[0]:.2f}s, signals {in_signals[0]:.2f}s, reading lines and the rest {rest:.2f}s"
        )
        print(f"ratio ingest / parse-only (CPU): {c_ingest / c_parse:.1f}x")
        print(f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        print(f"database: {os.path.getsize(work / 'skillopt' / 'data' / 'skillopt.db') / 1e6:.0f} MB")
        db.close()
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

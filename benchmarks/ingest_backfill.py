"""Backfill throughput: `python -m benchmarks.ingest_backfill [--mb 500]`.

Generates a corpus of Claude Code and Codex transcripts, then times (1) merely reading every file and
JSON-parsing every line, and (2) the real pipeline (sources with redaction, upserts, offsets, FTS) into a
fresh store. The ratio of the two is what ingest costs beyond reading the bytes. A second backfill into
another fresh store, with timers around its parts, shows where the time goes.
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


def _ingest(home: Path, *, timed: bool) -> dict[str, float]:
    """Backfill into a fresh store at `home`; with `timed`, also where the CPU time went (timers cost some,
    and stay on module functions: the timed run comes last)."""
    from skillopt_daemon import ingest
    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.ingest import fts
    from skillopt_daemon.ingest.sources import base
    from skillopt_lib.agents import AgentTool

    os.environ["SKILLOPT_HOME"] = str(home)
    settings = load_settings()
    db = open_db()
    sources = ingest.load_sources(settings, [AgentTool.CLAUDE_CODE, AgentTool.CODEX])
    pipeline = ingest.Pipeline(db, sources, settings)
    parts: dict[str, list[float]] = {}
    if timed:
        parts = {
            "sources": _time_sources(sources),
            "json": _time_calls(base, "decode_json_line"),
            "redaction": _time_calls(sources[0].redactor, "redact"),  # the sources share one redactor
            "index": _time_calls(fts, "resume"),
            "signals": _time_calls(pipeline, "refresh_signals"),
            # New sessions' signals, from the rows their first batch inserts (inside "batches").
            "fresh": _time_calls(pipeline.writer, "_fresh_signals"),
            "batches": _time_calls(pipeline, "_commit_lines"),
        }
    t0, c0 = time.perf_counter(), time.process_time()
    outcomes = pipeline.ingest_paths(pipeline.discover())
    out: dict[str, float] = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
    out.update({name: spent[0] for name, spent in parts.items()})
    out.update({k: float(v) for k, v in ingest.summarize(outcomes).items()})
    (out["turns"],) = db.execute("SELECT COUNT(*) FROM turns").fetchone()
    (out["calls"],) = db.execute("SELECT COUNT(*) FROM tool_calls").fetchone()
    db.close()
    return out


def _print_breakdown(t: dict[str, float]) -> None:
    rest = t["cpu"] - t["sources"] - t["batches"] - t["index"] - t["signals"]
    print(f"where the time goes (a second, timed backfill into a fresh store: {t['cpu']:.1f}s CPU):")
    print(
        f"  sources {t['sources']:.2f}s: JSON decoding {t['json']:.2f}s, redaction {t['redaction']:.2f}s, "
        f"normalizing {t['sources'] - t['json'] - t['redaction']:.2f}s"
    )
    print(
        f"  store: records and offsets {t['batches'] - t['fresh']:.2f}s, search index built at the end "
        f"{t['index']:.2f}s, signals {t['signals'] + t['fresh']:.2f}s ({t['fresh']:.2f}s of them for new "
        f"sessions, from the rows they inserted), reading lines and the rest {rest:.2f}s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=500.0, help="corpus size in MB (default 500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument(
        "--no-breakdown", dest="breakdown", action="store_false", help="skip the second, timed backfill"
    )
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

        clean = _ingest(work / "skillopt", timed=False)
        c_ingest, t_ingest, mb = clean["cpu"], clean["wall"], clean["bytes"] / 1e6
        print(
            f"ingest: {mb:.0f} MB, {clean['lines']:.0f} lines, {clean['records']:.0f} records "
            f"({clean['turns']:.0f} turns, {clean['calls']:.0f} tool calls) in {t_ingest:.1f}s wall, {c_ingest:.1f}s CPU"
        )
        print(
            f"  = {mb / c_ingest:.1f} MB/s, {clean['lines'] / c_ingest:,.0f} lines/s, "
            f"{clean['records'] / c_ingest:,.0f} records/s (CPU time; wall {mb / t_ingest:.1f} MB/s)"
        )
        print(f"ratio ingest / parse-only (CPU): {c_ingest / c_parse:.1f}x")
        print(f"peak RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        print(f"database: {os.path.getsize(work / 'skillopt' / 'data' / 'skillopt.db') / 1e6:.0f} MB")
        if args.breakdown:
            shutil.rmtree(work / "skillopt")
            timed = _ingest(work / "skillopt-timed", timed=True)
            _print_breakdown(timed)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

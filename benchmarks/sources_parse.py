"""Reader throughput: `python -m benchmarks.sources_parse [--mb 100]`.

Splits the backfill cost: how fast the Claude Code and Codex readers (JSON decoding, normalization and
redaction, no database) get through the generated corpus, beside merely JSON-parsing the same lines, and
how fast the redactor scans text with and without secrets in it. Times are CPU seconds of this process,
so other load on the machine does not distort them.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import tempfile
import time
from pathlib import Path

from benchmarks.ingest_corpus import generate
from skillopt_daemon.ingest.redact import Redactor
from skillopt_daemon.ingest.sources import build_source
from skillopt_daemon.ingest.sources.base import BaseSource
from skillopt_daemon.ingest.sources.claude_code import ClaudeCodeSource
from skillopt_daemon.ingest.sources.codex import CodexSource


def lines_under(root: Path) -> list[bytes]:
    out: list[bytes] = []
    for path in sorted(root.rglob("*.jsonl")):
        out.extend(line for line in path.read_bytes().split(b"\n") if line.strip())
    return out


def time_json(lines: list[bytes]) -> float:
    t0 = time.process_time()
    for line in lines:
        json.loads(line)
    return time.process_time() - t0


def time_reader(src: BaseSource, root: Path) -> tuple[float, int]:
    records = 0
    t0 = time.process_time()
    for path in sorted(root.rglob("*.jsonl")):
        ctx = src.context(path)
        for line in path.read_bytes().split(b"\n"):
            if line.strip():
                records += len(src.parse_line(ctx, line))
    return time.process_time() - t0, records


def redaction_text(with_secrets: bool, size: int = 20_000_000) -> str:
    rng = random.Random(3)
    words = [
        "the",
        "build",
        "failed",
        "because",
        "the",
        "token",
        "cache",
        "key",
        "was",
        "stale",
        "so",
        "we",
        "retried",
        "the",
        "request",
    ]
    parts: list[str] = []
    total = 0
    while total < size:
        piece = " ".join(rng.choice(words) for _ in range(12))
        if with_secrets and rng.random() < 0.05:
            piece += " OPENAI_API_KEY=sk-proj-" + "".join(
                rng.choice(string.ascii_letters + string.digits) for _ in range(40)
            )
        parts.append(piece)
        total += len(piece) + 1
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mb", type=float, default=100.0, help="size of the generated corpus")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = generate(Path(tmp), int(args.mb * 1e6))
        print(f"corpus: {corpus.bytes / 1e6:.0f} MB in {corpus.files} files")
        for name, cls, root in (
            ("claude-code", ClaudeCodeSource, corpus.claude_home / "projects"),
            ("codex", CodexSource, corpus.codex_home / "sessions"),
        ):
            lines = lines_under(root)
            mb = sum(len(x) for x in lines) / 1e6
            tj = time_json(lines)
            src = build_source(cls, root.parent, pin_repo=False)
            tr, records = time_reader(src, root)
            print(
                f"{name:12s} {mb:7.0f} MB  json only {mb / tj:6.1f} MB/s  reader {mb / tr:6.1f} MB/s "
                f"({records / tr:,.0f} records/s, {len(lines) / tr:,.0f} lines/s)  ratio {tr / tj:.2f}"
            )
    red = Redactor()
    plain = "\n".join(
        "    total = compute(values, weights)  # sum the weighted values" for _ in range(300_000)
    )
    cases = (
        ("code, no trigger words", plain),
        ("trigger words on every line", redaction_text(False)),
        ("same, 5% of lines with a key", redaction_text(True)),
    )
    for label, text in cases:
        t0 = time.process_time()
        _, n = red.redact(text)
        dt = time.process_time() - t0
        print(f"redactor, {label:30s} {len(text) / 1e6 / dt:7.1f} MB/s ({n} redacted)")


if __name__ == "__main__":
    main()

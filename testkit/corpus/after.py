"""The nights corpus with sessions after an approval: did the rule work?

The recorded nights corpus (`tests/fixtures/corpus-nights/`, real `claude` and `codex` transcripts) holds 14
sessions per kind of work in time order, corrected at indexes 1, 5, 9 and 13. Here the first `FIRST` of each
chosen kind arrive before a rule learned from them is installed; the rest are the sessions after the
install, moved in time to just after it (every timestamp in their transcripts shifted by the same amount,
so their order and spacing stay as recorded) and, per kind, read in one of three ways:

- `follows` (the agent now follows the rule): the user no longer makes the correction (it becomes a
  neutral "keep going"), so the rule is working;
- `still` (the rule was too weak): the sessions are as recorded, and the user keeps correcting at the old
  rate, so it is not working;
- `contradicts`: the user's first correction after the install asks for the opposite of the rule
  (`CONTRADICTIONS`), and later ones are neutral.

`expected(...)` derives from `labels.json` (the truth: every message's kind) what the funnel must count.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import parse_iso, to_iso, utcnow
from skillopt_daemon.ingest import pipeline as ingest
from testkit.corpus.load import NIGHTS, Labels, corpus_settings, read_labels

FIRST = 7
NEUTRAL = "keep going"
FOLLOWS, STILL, CONTRADICTS = "follows", "still", "contradicts"
# What a user says when they want the opposite of a kind's rule.
CONTRADICTIONS = {
    "lint": "actually, do use noqa here",
    "logging": "actually, it's fine to use print here",
    "changelog": "actually, do add new entries at the end here",
    "config": "actually, camelCase keys are fine here, do use camelCase",
}
STAMP = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')


@dataclass
class Expected:
    """What the funnel must count for one kind, from the labels."""

    sessions_before: int = 0
    corrected_before: int = 0
    sessions_after: int = 0
    recurred_after: int = 0
    contradictions: int = 0
    corrections_after: list[str] = field(default_factory=list)


def sessions_of(labels: Labels, kind: str) -> list[dict[str, Any]]:
    return sorted((s for s in labels.sessions if s.get("family") == kind), key=lambda s: s["index"])


def _texts(session: dict[str, Any], role: str) -> list[str]:
    return [t["text"] for t in session["turns"] if t["kind"] == role]


def rewrites(labels: Labels, ways: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """session id -> {recorded correction: what the user says instead}, for the sessions after the install."""
    out: dict[str, dict[str, str]] = {}
    for kind, way in ways.items():
        contradicted = False
        for s in sessions_of(labels, kind)[FIRST:]:
            for text in _texts(s, "correction"):
                if way == FOLLOWS:
                    out.setdefault(s["session_id"], {})[text] = NEUTRAL
                elif way == CONTRADICTS:
                    out.setdefault(s["session_id"], {})[text] = (
                        NEUTRAL if contradicted else CONTRADICTIONS[kind]
                    )
                    contradicted = True
    return out


def expected(labels: Labels, ways: Mapping[str, str]) -> dict[str, Expected]:
    out: dict[str, Expected] = {}
    swaps = rewrites(labels, ways)
    for kind in ways:
        e = Expected()
        for i, s in enumerate(sessions_of(labels, kind)):
            corrections = [swaps.get(s["session_id"], {}).get(t, t) for t in _texts(s, "correction")]
            if i < FIRST:
                e.sessions_before += 1
                e.corrected_before += bool(corrections)
                continue
            e.sessions_after += 1
            real = [c for c in corrections if c != NEUTRAL]
            e.contradictions += sum(c == CONTRADICTIONS.get(kind) for c in real)
            e.recurred_after += any(c != CONTRADICTIONS.get(kind) for c in real)
            e.corrections_after.extend(c for c in real if c != CONTRADICTIONS.get(kind))
        out[kind] = e
    return out


def json_forms(text: str) -> list[str]:
    """How a transcript may hold `text` inside a JSON string: escaped to ASCII, or as written."""
    return [json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]


def _files_of(corpus: Path, session_id: str) -> list[Path]:
    return [p for p in sorted(corpus.rglob("*.jsonl")) if session_id in str(p.relative_to(corpus))]


def copy_sessions(
    homes: Path,
    sessions: list[dict[str, Any]],
    *,
    corpus: Path = NIGHTS,
    swaps: Mapping[str, Mapping[str, str]] | None = None,
    start: datetime | None = None,
) -> None:
    """Copy these sessions' transcripts (and sub-agent ones) into the tool homes under `homes`, with their
    corrections swapped, and, with `start`, every timestamp shifted so the earliest is `start`."""
    files = [(s, p) for s in sessions for p in _files_of(corpus, s["session_id"])]
    shift = timedelta(0)
    if start is not None and files:
        first = min(
            parse_iso(m.group(1))[0] for _, p in files for m in STAMP.finditer(p.read_text(encoding="utf-8"))
        )
        shift = start - first
    for s, src in files:
        text = src.read_text(encoding="utf-8")
        for old, new in (swaps or {}).get(s["session_id"], {}).items():
            for o, n in zip(json_forms(old), json_forms(new), strict=True):
                text = text.replace(o, n) if o else text
        if shift:
            text = STAMP.sub(lambda m: '"' + to_iso(parse_iso(m.group(1))[0] + shift) + '"', text)
        dest = homes / src.relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        meta = src.with_name(src.name.replace(".jsonl", ".meta.json"))
        if meta.exists():
            shutil.copy2(meta, dest.with_name(meta.name))


class AfterWorld:
    """A store that receives the corpus' sessions before an install, and the ones after it later."""

    def __init__(
        self,
        work: Path,
        kinds: list[str],
        *,
        corpus: Path = NIGHTS,
        db: sqlite_utils.Database | None = None,
    ) -> None:
        self.work, self.kinds, self.corpus = work, kinds, corpus
        self.labels = read_labels(corpus)
        self.homes = work / "homes"
        shutil.rmtree(self.homes, ignore_errors=True)
        self.settings = corpus_settings(self.homes)
        self.db: sqlite_utils.Database = db if db is not None else open_db(work / "after.db")

    def _ingest(self) -> None:
        pipe = ingest.Pipeline(self.db, ingest.load_sources(self.settings), self.settings)
        pipe.ingest_paths(pipe.discover())

    def before(self) -> None:
        """The first `FIRST` sessions of each kind, as recorded."""
        chosen = [s for k in self.kinds for s in sessions_of(self.labels, k)[:FIRST]]
        copy_sessions(self.homes, chosen, corpus=self.corpus)
        self._ingest()

    def after(self, ways: Mapping[str, str], *, start: datetime | None = None) -> None:
        """The rest of each kind in `ways`, read as it says, moved to just after now (the install)."""
        chosen = [s for k in ways for s in sessions_of(self.labels, k)[FIRST:]]
        copy_sessions(
            self.homes,
            chosen,
            corpus=self.corpus,
            swaps=rewrites(self.labels, ways),
            start=start or utcnow() + timedelta(seconds=1),
        )
        self._ingest()

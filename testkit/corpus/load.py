"""Load the recorded corpus into a store the way a user's machine would: copy the transcripts into tool homes
and ingest them with the real pipeline. Also reads `labels.json` (the truth, for the benchmark and tests)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core.config import Settings, ToolSettings
from skillopt_daemon.core.store import open_db
from skillopt_daemon.ingest import pipeline as ingest
from skillopt_lib.agents import AgentTool

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus"
# The nights corpus: 14 sessions per kind in time order, for learning nights (`spec.night_sessions`).
NIGHTS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus-nights"
# The scope corpus: one kind of work with opposite conventions in two repositories, one rule alike in three,
# and unrelated work in a fourth, in time order (`spec.scope_sessions`), for where new skills install.
SCOPE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "corpus-scope"
# Where the mining corpus' repositories were when it was recorded (the nights corpus says in its labels).
MINING_SOURCE_ROOT = "/tmp/skillopt-corpus/src/"


@dataclass
class Labels:
    families: dict[str, dict[str, Any]]
    sessions: list[dict[str, Any]]
    source_root: str = MINING_SOURCE_ROOT

    def by_session(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {(s["tool"], s["session_id"]): s for s in self.sessions}


def read_labels(corpus: Path = CORPUS) -> Labels:
    data = json.loads((corpus / "labels.json").read_text(encoding="utf-8"))
    root = data.get("source_root", MINING_SOURCE_ROOT)
    return Labels(families=data["families"], sessions=data["sessions"], source_root=root)


def corpus_settings(homes: Path) -> Settings:
    """Settings that read only the corpus' Claude Code and Codex homes under `homes`."""
    tools = {tool: ToolSettings(enabled=False) for tool in AgentTool}
    tools[AgentTool.CLAUDE_CODE] = ToolSettings(home=homes / "claude")
    tools[AgentTool.CODEX] = ToolSettings(home=homes / "codex")
    return Settings(tools=tools)


def ingest_corpus(
    work: Path, *, split: str | None = None, corpus: Path = CORPUS, labels: Labels | None = None
) -> sqlite_utils.Database:
    """A store holding the corpus (only the sessions of `split`, tune or heldout, when given).

    Sub-agent transcripts stay with their parent session, whichever split it is in.
    """
    labels = labels or read_labels(corpus)
    keep = {s["session_id"] for s in labels.sessions if split is None or s["split"] == split}
    homes = work / "homes"
    shutil.rmtree(homes, ignore_errors=True)
    for src in sorted(corpus.rglob("*.jsonl")):
        rel = src.relative_to(corpus)
        if not any(sid in str(rel) for sid in keep):
            continue
        dest = homes / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        meta = src.with_name(src.name.replace(".jsonl", ".meta.json"))
        if meta.exists():
            shutil.copy2(meta, dest.with_name(meta.name))
    settings = corpus_settings(homes)
    db = open_db(work / "corpus.db")
    pipe = ingest.Pipeline(db, ingest.load_sources(settings), settings)
    pipe.ingest_paths(pipe.discover())
    return db

"""One correction classifier, measured on the held-out half of the corpus recorded with the real `claude`
and `codex` CLIs, in every language the corpus records: what ingest's signals count (the dashboard) and
what mining reads (the night) are the same messages, and they are the corrections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.corrections import measure
from skillopt_daemon.core.store.db import apply_migrations
from skillopt_daemon.ingest.pipeline import Pipeline
from testkit.corpus.load import ingest_corpus, read_labels
from testkit.ingest_helpers import claude_line

from .conftest import Env

# docs/nightly.md gives the measured figures; this is the floor below which a change to the rules fails.
FLOOR = 0.9
LANGUAGES = {"en", "fr", "zh", "pt", "es", "de"}


def test_corrections_on_the_held_out_half_in_every_language(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    labels = read_labels()
    assert {f["rule_language"] for f in labels.families.values()} == LANGUAGES
    db = ingest_corpus(tmp_path, split="heldout", labels=labels)
    try:
        result = measure(db, labels)
    finally:
        db.close()
    assert result["disagree"] == []  # signals and mining mark the same messages
    assert set(result["languages"]) == LANGUAGES
    for language, score in result["languages"].items():
        assert score["corrections"] >= 3, language
        assert score["recall"] >= FLOOR, (language, score, result["wrong"])
        assert score["precision"] >= FLOOR, (language, score, result["wrong"])
    assert result["all"]["precision"] >= FLOOR and result["all"]["recall"] >= FLOOR


def test_sessions_stored_before_are_counted_again_by_the_one_classifier(env: Env, pipeline: Pipeline) -> None:
    """A store from before holds signals counted by the old English-only rules: upgrading recounts them."""
    lines = [
        claude_line("user", "u1", "typed", content="add type hints to app/dates.py"),
        claude_line("assistant", "a1", "typed", parent="u1", content="added Any everywhere"),
        claude_line("user", "u2", "typed", parent="a1", content="pas de Any, écris les vrais types"),
        claude_line("assistant", "a2", "typed", parent="u2", content="fixed"),
    ]
    path = env.projects / "-tmp-project" / "typed.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines))
    pipeline.ingest_paths(pipeline.discover())
    db = pipeline.db

    def count() -> int:
        return int(
            json.loads(db.execute("SELECT signals_json FROM sessions").fetchone()[0])["correction_count"]
        )

    assert count() == 1
    with db.conn:  # as the earlier rules left it
        db.execute('UPDATE sessions SET signals_json = \'{"correction_count": 0, "corrections": []}\'')
        db.execute("DELETE FROM _migrations WHERE name = 'm009_notes_and_signals'")
    assert count() == 0
    apply_migrations(db)
    pipeline.refresh_signals()
    assert count() == 1

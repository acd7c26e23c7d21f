"""A store holding a recorded corpus, for a test module to share: ingested once, in its own skillopt home."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlite_utils

from testkit.corpus.load import Labels, ingest_corpus


@contextmanager
def corpus_store(work: Path, corpus: Path, labels: Labels) -> Iterator[sqlite_utils.Database]:
    """The corpus ingested under `work` with `SKILLOPT_HOME` there for as long as the store is used (a
    module-scoped fixture has no `monkeypatch`, so the variable is set and restored here)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SKILLOPT_HOME", str(work / "skillopt"))
        db = ingest_corpus(work, corpus=corpus, labels=labels)
        try:
            yield db
        finally:
            db.close()

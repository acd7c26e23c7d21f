"""Mining at scale: repeated requests are compared once, yet families and splits are what comparing every
pair would give; 10,000 sessions mine in seconds."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import normalize

from benchmarks.mining import _fill_store, _home
from skillopt_daemon.core.store import open_db
from skillopt_daemon.night.mining import mine
from skillopt_daemon.night.mining.clustering import similar_components
from skillopt_daemon.night.mining.sparse import Rows


def _every_pair(matrix: Rows, threshold: float) -> np.ndarray:
    dense = matrix.toarray()
    _, parts = connected_components(csr_matrix(dense @ dense.T >= threshold), directed=False)
    return np.asarray(parts)


@pytest.mark.parametrize("threshold", [0.5, 0.85])
def test_components_match_comparing_every_pair(threshold: float) -> None:
    rng = np.random.default_rng(3)
    base = rng.random((40, 12)) * (rng.random((40, 12)) < 0.3)
    rows = base[rng.integers(0, 40, size=300)]  # many repeats
    rows[rng.integers(0, 300, size=20)] = 0.0  # requests with no words left
    matrix = Rows.from_dense(normalize(rows))
    found = similar_components(matrix, threshold)
    assert adjusted_rand_score(_every_pair(matrix, threshold), found) == 1.0


def test_empty_rows_stay_alone() -> None:
    matrix = Rows.from_dense(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]))
    labels = similar_components(matrix, 0.5)
    assert labels[0] != labels[1]
    assert labels[2] == labels[3]
    assert len(set(labels.tolist())) == 3


def test_ten_thousand_sessions_mine_in_seconds(tmp_path: Path) -> None:
    with _home(tmp_path):
        db = open_db(tmp_path / "bench.db")
        _fill_store(db, 10_000, seed=7)
        t0 = time.perf_counter()
        families, report = mine.mine(db)
        elapsed = time.perf_counter() - t0
    assert report.attempts > 10_000
    assert families
    # Five seconds on a quiet machine; the bound leaves room for a busy one.
    assert elapsed < 20.0
    splits = {t["split"] for t in db.query("SELECT split FROM tasks")}
    assert splits == {"train", "val", "test"}

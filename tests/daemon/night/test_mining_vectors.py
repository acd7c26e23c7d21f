"""Mining's vectors on numpy alone give what scikit-learn and scipy gave, which its thresholds were tuned
with: the same TF-IDF weights to the last bit, the same components and the same average-linkage clusters.
And mining runs where neither is installed, as in a user's install."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components as scipy_components
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer
from sklearn.preprocessing import normalize

from benchmarks.mining_corpus import generate
from skillopt_daemon.night.mining.clustering import normalize_prompt, vectorize
from skillopt_daemon.night.mining.linkage import average_linkage
from skillopt_daemon.night.mining.sparse import Rows, connected_components, hstack, similar_pairs
from skillopt_daemon.night.mining.tfidf import STOP_WORDS, Tfidf


def _requests(n: int = 600) -> list[str]:
    return [normalize_prompt(r.prompt) for r in generate(n, seed=11)]


def _same_cells(ours: Rows, theirs: csr_matrix) -> None:
    assert ours.shape == theirs.shape
    assert np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.indices, theirs.indices)
    assert np.array_equal(ours.data, theirs.data)  # to the last bit


def _partition(labels: np.ndarray) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for i, lab in enumerate(labels.tolist()):
        groups.setdefault(lab, set()).add(i)
    return {frozenset(g) for g in groups.values()}


def test_the_stop_words_are_scikit_learns() -> None:
    assert frozenset(ENGLISH_STOP_WORDS) == STOP_WORDS


def test_tfidf_weights_are_scikit_learns_to_the_last_bit() -> None:
    texts = _requests()
    theirs = TfidfVectorizer(
        ngram_range=(1, 2), sublinear_tf=True, stop_words="english", token_pattern=r"(?u)\b\w\w+\b"
    )
    ours = Tfidf()
    _same_cells(ours.fit_transform(texts), csr_matrix(theirs.fit_transform(texts)))
    assert ours.terms == list(theirs.get_feature_names_out())
    unseen = ["write the release notes for num", "zzz nothing known here", ""]
    _same_cells(ours.transform(unseen), csr_matrix(theirs.transform(unseen)))


def test_requests_of_only_stop_words_still_get_terms() -> None:
    vec, rows = vectorize(["do it", "do it again", ""])
    theirs = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")
    _same_cells(rows, csr_matrix(theirs.fit_transform(["do it", "do it again", "empty"])))
    assert "do it" in vec.terms


def test_rows_operations_match_scipy() -> None:
    rng = np.random.default_rng(5)
    dense = rng.random((30, 9)) * (rng.random((30, 9)) < 0.4)
    rows, theirs = Rows.from_dense(dense), csr_matrix(dense)
    pick = [4, 2, 2, 29, 0]
    assert np.array_equal(rows[pick].toarray(), theirs[pick].toarray())
    assert np.array_equal(rows.mean(), np.asarray(theirs.mean(axis=0)).ravel())
    vector = rng.random(9)
    assert np.allclose(rows.dot(vector), theirs @ vector, rtol=0, atol=1e-12)
    assert np.allclose(rows.normalized().toarray(), normalize(theirs).toarray(), rtol=0, atol=1e-15)
    side_by_side = hstack([rows, rows * 0.5])
    assert np.array_equal(side_by_side.toarray(), np.hstack([dense, dense * 0.5]))
    summed = Rows.from_triples([0, 0, 1, 1], [2, 2, 0, 1], [1.0, 2.0, 5.0, 0.0], 2, 3)
    assert summed.toarray().tolist() == [[0.0, 0.0, 3.0], [5.0, 0.0, 0.0]]  # cells add up, zeros dropped


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.85])
def test_similar_pairs_are_every_pair_at_the_threshold(threshold: float) -> None:
    _, rows = vectorize(_requests(300))
    dense = rows.toarray()
    want = np.argwhere(dense @ dense.T >= threshold)
    i, j = similar_pairs(rows, threshold)
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == sorted(map(tuple, want.tolist()))


def test_components_match_scipys_labels() -> None:
    rng = np.random.default_rng(8)
    n = 500
    a, b = rng.integers(0, n, size=350), rng.integers(0, n, size=350)
    graph = csr_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, theirs = scipy_components(graph, directed=False)
    assert np.array_equal(connected_components(n, a, b), theirs)  # same numbers, not just the same groups
    assert connected_components(3, np.array([]), np.array([])).tolist() == [0, 1, 2]


@pytest.mark.parametrize("max_distance", [0.3, 0.55, 0.85])
def test_average_linkage_matches_scikit_learns(max_distance: float) -> None:
    _, rows = vectorize(_requests(400))
    centroids = rows.toarray()[:250]
    centroids = centroids[np.linalg.norm(centroids, axis=1) > 0]
    theirs = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=max_distance
    ).fit_predict(centroids)
    ours = average_linkage(centroids, max_distance)
    assert _partition(ours) == _partition(theirs)
    assert 1 < len(set(ours.tolist())) < len(centroids)  # the cut is between the extremes


# Runs in a fresh interpreter where scikit-learn and scipy cannot be imported, as in a user's install.
WITHOUT_SCIPY = """
import importlib.abc, json, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sklearn", "scipy"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
from skillopt_daemon.night.mining.mine import cluster_prompts
labels = cluster_prompts(json.loads(sys.argv[1]))
print(json.dumps({"labels": labels, "loaded": sorted(m for m in ("sklearn", "scipy") if m in sys.modules)}))
"""


def test_mining_runs_without_scikit_learn_or_scipy() -> None:
    prompts = [
        "fix the failing test in test_orders.py",
        "fix the failing tests in test_users.py",
        "write release notes for v2.3",
        "write the release notes for v2.4",
        "fix the failing test in test_cart.py",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_SCIPY, json.dumps(prompts)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert out["loaded"] == []
    labels = out["labels"]
    assert labels[0] == labels[1] == labels[4]
    assert labels[2] == labels[3] != labels[0]

"""Grouping requests into families: what counts as "the same kind of work", as vectors and a threshold.

Without a model an attempt is described by its request's words (TF-IDF over normalized text), the checks it
ran (`make lint`, `python -m pytest`) and its project. With model labels the kind of work the model named
leads, the canonical intent breaks ties, and checks and project weigh as before; paraphrases in any language
then meet because the model already put them in English. Clustering is two-stage so that 10,000 sessions
take seconds and similar requests do not chain: near-identical attempts join into micro-clusters
(connected components of a sparse similarity graph), then micro-clusters merge by average linkage on cosine
distance. The weights and thresholds were tuned on the tuning half of the recorded corpus
(`benchmarks/mining.py`, `docs/performance.md`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.sparse import csr_matrix, diags, hstack
from scipy.sparse.csgraph import connected_components
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

MICRO_THRESHOLD = 0.5
FAMILY_SIMILARITY = 0.15  # lexical requests alone (the generated corpus of benchmarks/mining_corpus.py)
DEFAULT_THRESHOLD = FAMILY_SIMILARITY


@dataclass(frozen=True)
class Weights:
    """How much each part of an attempt counts, and how alike a family's members must be on average."""

    intent: float
    checks: float
    project: float
    similarity: float


# Tuned on the tuning half of the recorded corpus.
LEXICAL = Weights(intent=0.0, checks=0.6, project=0.2, similarity=FAMILY_SIMILARITY)
LABELLED = Weights(intent=0.4, checks=0.3, project=0.3, similarity=0.45)

# How the person asked the agent to go about the work, not what the work is: delegating to a sub-agent
# ("use a sub-agent to look first"), or how hard to think. Rare words weigh most in TF-IDF, so two requests
# sharing only such a phrase would otherwise pair up across kinds of work, checks and projects.
_HOW_NOT_WHAT = re.compile(
    # an aside about delegating, "(use a sub-agent to look first)", whole; elsewhere only the phrase itself
    r"\([^()\n]*\bsub-?agents?\b[^()\n]*\)"
    r"|\b(?:use|using|with|via|ask|have|spawn|launch)\s+(?:an?\s+|some\s+)?(?:sub-?agents?|task\s+agents?)\b"
    r"|\b(?:ultrathink|think\s+(?:hard|harder|step\s+by\s+step))\b",
    re.IGNORECASE,
)

_NORMALIZE = [
    (re.compile(r"https?://\S+"), " url "),
    (re.compile(r"(?:[\w.-]*/)+([\w-]+)(?:\.\w+)?"), r" \1 "),
    (re.compile(r"\b([\w-]+)\.(?:py|md|ts|js|go|rs|java|rb|json|toml|ya?ml|txt|sh)\b"), r" \1 "),
    (re.compile(r"\b[0-9a-f]{7,40}\b"), " hash "),
    (re.compile(r"\b\d+(?:\.\d+)*\b"), " num "),
    (re.compile(r"\[REDACTED:[^\]]*\]"), " secret "),
]


@lru_cache(maxsize=65536)
def normalize_prompt(text: str) -> str:
    """Lower-cased words with paths, hashes, numbers and secrets reduced to what kind of thing they are.

    Cached: the same request text is normalized for its features, its family's name and its rubric.
    """
    out = _HOW_NOT_WHAT.sub(" ", text).lower()
    for pattern, repl in _NORMALIZE:
        out = pattern.sub(repl, out)
    return re.sub(r"\s+", " ", out).strip()


def vectorize(texts: Sequence[str]) -> tuple[TfidfVectorizer, csr_matrix]:
    vec = TfidfVectorizer(
        ngram_range=(1, 2), sublinear_tf=True, min_df=1, stop_words="english", token_pattern=r"(?u)\b\w\w+\b"
    )
    try:
        matrix = vec.fit_transform(texts)
    except ValueError:  # only stop words: fall back to keeping them
        vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")
        matrix = vec.fit_transform([t or "empty" for t in texts])
    return vec, csr_matrix(matrix)


def _one_hot(values: Sequence[Sequence[str]]) -> csr_matrix:
    """Rows marking the values they hold (L2-normalized), each value weighted by the share of rows without it.

    A check every attempt runs (`pytest` in a Python shop) or the only project says nothing about which
    work an attempt was, so it weighs nothing; a check only some attempts run weighs almost fully.
    """
    index: dict[str, int] = {}
    rows, cols = [], []
    for i, vals in enumerate(values):
        for v in dict.fromkeys(vals):
            rows.append(i)
            cols.append(index.setdefault(v, len(index)))
    n = len(values)
    m = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, max(1, len(index))))
    share_without = 1.0 - np.asarray(m.sum(axis=0)).ravel() / max(1, n)
    return csr_matrix(normalize(m) @ diags(share_without))


@dataclass
class Features:
    matrix: csr_matrix  # rows L2-normalized: what clustering compares
    lead: csr_matrix  # TF-IDF of the leading text alone, to name families and relate skills
    vectorizer: TfidfVectorizer  # of the leading text


def features(
    lead: Sequence[str],
    intents: Sequence[str],
    checks: Sequence[Sequence[str]],
    projects: Sequence[str],
    weights: Weights,
) -> Features:
    """One row per attempt: the leading text (request or kind of work), the intent, the checks, the project."""
    vec, lead_m = vectorize([normalize_prompt(t) for t in lead])
    blocks = [lead_m]
    if weights.intent and any(intents):
        _, intent_m = vectorize([normalize_prompt(t) or "none" for t in intents])
        blocks.append(intent_m * weights.intent)
    if weights.checks:
        blocks.append(_one_hot(checks) * weights.checks)
    if weights.project:
        blocks.append(_one_hot([[p] if p else [] for p in projects]) * weights.project)
    return Features(csr_matrix(normalize(hstack(blocks).tocsr())), lead_m, vec)


def _distinct_rows(matrix: csr_matrix) -> tuple[csr_matrix, np.ndarray]:
    """The distinct non-empty rows, and for each row of `matrix` the index of its distinct row.

    Requests repeat (the same test run asked for every day), and two identical rows are always similar, so
    comparing each distinct row once finds the same components at a fraction of the cost: the similarity
    matrix grows with the square of the rows compared. Empty rows are similar to nothing, not even to each
    other, so each stays a distinct row of its own.
    """
    m = csr_matrix(matrix, copy=True)
    m.sum_duplicates()
    m.sort_indices()
    first: dict[tuple[bytes, bytes], int] = {}
    owner = np.empty(m.shape[0], dtype=np.int64)
    keep: list[int] = []
    indptr, indices, data = m.indptr, m.indices, m.data
    for i in range(m.shape[0]):
        lo, hi = indptr[i], indptr[i + 1]
        if lo == hi:
            owner[i] = len(keep)
            keep.append(i)
            continue
        key = (indices[lo:hi].tobytes(), data[lo:hi].tobytes())
        j = first.get(key)
        if j is None:
            j = first[key] = len(keep)
            keep.append(i)
        owner[i] = j
    return csr_matrix(m[keep]), owner


def _similarity_graph(matrix: csr_matrix, threshold: float, chunk: int = 2048) -> csr_matrix:
    """Sparse adjacency of pairs at or above the cosine threshold (rows are L2-normalized)."""
    n = matrix.shape[0]
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    t = matrix.T.tocsc()
    for start in range(0, n, chunk):
        block = csr_matrix(matrix[start : start + chunk] @ t)
        keep = block.data >= threshold
        kept_before = np.concatenate(([0], np.cumsum(keep)))  # pairs kept before each stored entry
        counts = kept_before[block.indptr[1:]] - kept_before[block.indptr[:-1]]
        rows.append(np.repeat(np.arange(start, start + block.shape[0]), counts))
        cols.append(block.indices[keep])
    r = np.concatenate(rows) if rows else np.array([], dtype=int)
    c = np.concatenate(cols) if cols else np.array([], dtype=int)
    return csr_matrix((np.ones(len(r), dtype=np.int8), (r, c)), shape=(n, n))


def similar_components(matrix: csr_matrix, threshold: float) -> np.ndarray:
    """A component label per row: rows joined when their cosine similarity reaches `threshold`.

    Rows must be L2-normalized. Identical rows are compared once (`_distinct_rows`).
    """
    if matrix.shape[0] == 0:
        return np.array([], dtype=np.int64)
    distinct, owner = _distinct_rows(matrix)
    _, parts = connected_components(_similarity_graph(distinct, threshold), directed=False)
    return np.asarray(parts[owner])


def cluster_matrix(matrix: csr_matrix, similarity: float, micro: float = MICRO_THRESHOLD) -> np.ndarray:
    """A cluster label per row: micro-clusters of near-identical rows, merged by average linkage."""
    if matrix.shape[0] == 0:
        return np.array([], dtype=int)
    parts = similar_components(matrix, max(micro, similarity))
    k = int(parts.max()) + 1
    if k == 1:
        return parts
    member = csr_matrix((np.ones(len(parts)), (parts, np.arange(len(parts)))), shape=(k, len(parts)))
    centroids = normalize(member @ matrix)
    agg = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - similarity
    )
    top = agg.fit_predict(centroids.toarray())
    return np.asarray(top[parts])


def cluster_prompts(prompts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """A family label for each request text alone (labels are 0..k-1, in order of first appearance)."""
    if not prompts:
        return []
    _, matrix = vectorize([normalize_prompt(p) for p in prompts])
    labels = cluster_matrix(matrix, threshold)
    remap: dict[int, int] = {}
    return [remap.setdefault(int(lab), len(remap)) for lab in labels]

"""Grouping requests into families: what counts as "the same kind of work", as vectors and a threshold.

Without a model an attempt is described by its request's words (TF-IDF over normalized text), the checks it
ran (`make lint`, `python -m pytest`) and its project. With model labels the kind of work the model named
leads, the canonical intent breaks ties, and checks and project weigh as before; paraphrases in any language
then meet because the model already put them in English. Clustering is two-stage so that 10,000 sessions
take seconds and similar requests do not chain: near-identical attempts join into micro-clusters
(connected components of a sparse similarity graph), then micro-clusters merge by average linkage on cosine
distance. The weights and thresholds were tuned on the tuning half of the recorded corpus
(`benchmarks/mining.py`, `docs/performance.md`).

The vectors are numpy's alone (`tfidf.py`, `sparse.py`, `linkage.py`): the same arithmetic as
scikit-learn's TF-IDF and scipy's average linkage, without their 200 MB in every install.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from skillopt_daemon.night.mining.linkage import average_linkage
from skillopt_daemon.night.mining.sparse import Rows, connected_components, hstack, similar_pairs
from skillopt_daemon.night.mining.tfidf import EmptyVocabulary, Tfidf

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


def vectorize(texts: Sequence[str]) -> tuple[Tfidf, Rows]:
    """TF-IDF of words and word pairs, English stop words left out; when that leaves no term at all, the
    stop words and one-letter words count too (a request of only "do it" still has terms)."""
    vec = Tfidf()
    try:
        return vec, vec.fit_transform(texts)
    except EmptyVocabulary:
        vec = Tfidf(token_pattern=r"(?u)\b\w+\b", stop_words=None)
        return vec, vec.fit_transform([t or "empty" for t in texts])


def _one_hot(values: Sequence[Sequence[str]]) -> Rows:
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
    m = Rows.from_triples(rows, cols, 1.0, n, max(1, len(index)))
    share_without = 1.0 - m.column_sums() / max(1, n)
    return m.normalized().scale_columns(share_without)


@dataclass
class Features:
    matrix: Rows  # rows L2-normalized: what clustering compares
    lead: Rows  # TF-IDF of the leading text alone, to name families and relate skills
    vectorizer: Tfidf  # of the leading text


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
    return Features(hstack(blocks).normalized(), lead_m, vec)


def _distinct_rows(matrix: Rows) -> tuple[Rows, np.ndarray]:
    """The distinct non-empty rows, and for each row of `matrix` the index of its distinct row.

    Requests repeat (the same test run asked for every day), and two identical rows are always similar, so
    comparing each distinct row once finds the same components at a fraction of the cost: the similarity
    matrix grows with the square of the rows compared. Empty rows are similar to nothing, not even to each
    other, so each stays a distinct row of its own.
    """
    first: dict[tuple[bytes, bytes], int] = {}
    owner = np.empty(matrix.n_rows, dtype=np.int64)
    keep: list[int] = []
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data
    for i in range(matrix.n_rows):
        lo, hi = indptr[i], indptr[i + 1]
        if lo == hi:
            owner[i] = len(keep)
            keep.append(i)
            continue
        # Identical requests give identical rows, their cells in the same order (`tfidf.Tfidf`, `sparse`).
        key = (indices[lo:hi].tobytes(), data[lo:hi].tobytes())
        j = first.get(key)
        if j is None:
            j = first[key] = len(keep)
            keep.append(i)
        owner[i] = j
    return matrix.take(keep), owner


def similar_components(matrix: Rows, threshold: float) -> np.ndarray:
    """A component label per row: rows joined when their cosine similarity reaches `threshold`.

    Rows must be L2-normalized. Identical rows are compared once (`_distinct_rows`).
    """
    if matrix.n_rows == 0:
        return np.array([], dtype=np.int64)
    distinct, owner = _distinct_rows(matrix)
    a, b = similar_pairs(distinct, threshold)
    parts = connected_components(distinct.n_rows, a, b)
    return np.asarray(parts[owner])


def cluster_matrix(matrix: Rows, similarity: float, micro: float = MICRO_THRESHOLD) -> np.ndarray:
    """A cluster label per row: micro-clusters of near-identical rows, merged by average linkage."""
    if matrix.n_rows == 0:
        return np.array([], dtype=int)
    parts = similar_components(matrix, max(micro, similarity))
    k = int(parts.max()) + 1
    if k == 1:
        return parts
    member = Rows.from_triples(parts, np.arange(len(parts)), 1.0, k, len(parts))
    centroids = _centroids(member, matrix)
    top = average_linkage(centroids, max_distance=1.0 - similarity)
    return np.asarray(top[parts])


def _centroids(member: Rows, matrix: Rows) -> np.ndarray:
    """Each micro-cluster's summed rows, L2-normalized, dense (one row per micro-cluster)."""
    out = np.zeros((member.n_rows, matrix.n_cols))
    cluster_of_row = np.empty(matrix.n_rows, dtype=np.int64)
    cluster_of_row[member.indices] = member.row_of_entry()
    np.add.at(out, (cluster_of_row[matrix.row_of_entry()], matrix.indices), matrix.data)
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))
    norms[norms == 0.0] = 1.0
    return out / norms[:, None]


def cluster_prompts(prompts: Sequence[str], threshold: float = DEFAULT_THRESHOLD) -> list[int]:
    """A family label for each request text alone (labels are 0..k-1, in order of first appearance)."""
    if not prompts:
        return []
    _, matrix = vectorize([normalize_prompt(p) for p in prompts])
    labels = cluster_matrix(matrix, threshold)
    remap: dict[int, int] = {}
    return [remap.setdefault(int(lab), len(remap)) for lab in labels]

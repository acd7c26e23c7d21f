"""Average-linkage clustering on cosine distance, cut at a distance: the second stage of grouping requests.

Clusters merge two at a time, always the closest pair, where the distance between two clusters is the
average distance between their members; merging stops at `max_distance`. Average linkage keeps a family
from chaining through one borderline request the way single linkage would. The merges are found with the
nearest-neighbour chain (follow each cluster's nearest neighbour until two clusters are each other's; merge
them), which finds the same tree as always merging the globally closest pair, for average linkage, in
O(n^2) time and one n x n matrix of distances; the cut takes every merge closer than `max_distance`.
"""

from __future__ import annotations

import numpy as np

from skillopt_daemon.night.mining.sparse import connected_components


def cosine_distances(unit_rows: np.ndarray) -> np.ndarray:
    """1 - cosine similarity between L2-normalized dense rows; a row of zeros is at distance 1 from all."""
    sims = unit_rows @ unit_rows.T
    distances = 1.0 - sims
    np.clip(distances, 0.0, 2.0, out=distances)
    return distances


def average_linkage(unit_rows: np.ndarray, max_distance: float) -> np.ndarray:
    """A cluster label per row (numbered in the order of each cluster's first row)."""
    n = unit_rows.shape[0]
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    dist = cosine_distances(unit_rows)
    np.fill_diagonal(dist, np.inf)
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    merged_a: list[int] = []
    merged_b: list[int] = []
    chain: list[int] = []
    remaining = n
    while remaining > 1:
        if not chain:
            chain.append(int(np.flatnonzero(alive)[0]))
        a = chain[-1]
        row = dist[a]
        b = int(np.argmin(row))
        if len(chain) > 1 and row[chain[-2]] <= row[b]:
            b = chain[-2]  # ties go back down the chain, so the chain never cycles
        if len(chain) > 1 and b == chain[-2]:
            chain.pop()
            chain.pop()
            if row[b] < max_distance:
                merged_a.append(a)
                merged_b.append(b)
            # Cluster a absorbs b: its distances become the size-weighted average of the two (Lance-Williams).
            new = (size[a] * dist[a] + size[b] * dist[b]) / (size[a] + size[b])
            dist[a] = new
            dist[:, a] = new
            dist[a, a] = np.inf
            dist[b] = np.inf
            dist[:, b] = np.inf
            size[a] += size[b]
            alive[b] = False
            remaining -= 1
        else:
            chain.append(b)
    return connected_components(n, np.array(merged_a, dtype=np.int64), np.array(merged_b, dtype=np.int64))

"""Sparse rows on numpy alone: the operations mining needs on its TF-IDF matrices, and no more.

A request has a few dozen terms out of tens of thousands, so a matrix of requests is kept compressed by
rows (CSR: row i holds the columns `indices[indptr[i]:indptr[i + 1]]` with the values `data[...]`). scipy
does this in general and costs every install 143 MB; mining needs to pick rows, scale and stack them, sum
them into a centroid, multiply them by one vector, and find the pairs of rows whose cosine similarity
reaches a threshold, and numpy does each of these in a few vectorized steps.

Sums run over a row's entries in the order they are stored, as compiled sparse libraries do, so results
are reproducible to the last bit: mining compares similarities with thresholds, and identical requests
must give identical rows for `clustering._distinct_rows` to find them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# How many cells of the dense block of similarities `similar_pairs` fills at a time: 1 M doubles, 8 MB
# (smaller blocks stay in the processor's caches; at 10,000 requests this was the fastest size).
_BLOCK_CELLS = 1 << 20


@dataclass(frozen=True)
class Rows:
    """A matrix stored by rows: `indptr` (n + 1 offsets), `indices` (columns), `data` (float64 values).

    Explicit zeros are never stored, so two rows are equal exactly when their `indices` and `data` are.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_cols: int

    @classmethod
    def from_triples(
        cls,
        rows: Sequence[int] | np.ndarray,
        cols: Sequence[int] | np.ndarray,
        values: object,
        n_rows: int,
        n_cols: int,
    ) -> Rows:
        """A matrix from (row, column, value) entries; repeated cells add up, zeros are dropped, and each
        row's entries are sorted by column."""
        r = np.asarray(rows, dtype=np.int64)
        c = np.asarray(cols, dtype=np.int64)
        v = np.broadcast_to(np.asarray(values, dtype=np.float64), r.shape)
        if len(r):
            key = r * max(1, n_cols) + c
            order = np.argsort(key, kind="stable")
            key, v = key[order], v[order]
            cells, first = np.unique(key, return_index=True)
            v = np.add.reduceat(v, first)
            r, c = cells // max(1, n_cols), cells % max(1, n_cols)
            keep = v != 0
            r, c, v = r[keep], c[keep], v[keep]
        return cls(_offsets(r, n_rows), c, np.array(v, dtype=np.float64), n_cols)

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> Rows:
        """The nonzero cells of a 2-D array."""
        dense = np.asarray(dense, dtype=np.float64)
        r, c = np.nonzero(dense)
        return cls(_offsets(r, dense.shape[0]), c.astype(np.int64), dense[r, c], dense.shape[1])

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_rows, self.n_cols

    def row_of_entry(self) -> np.ndarray:
        """For each stored entry, the row it is in."""
        return np.repeat(np.arange(self.n_rows), np.diff(self.indptr))

    def toarray(self) -> np.ndarray:
        out = np.zeros(self.shape)
        out[self.row_of_entry(), self.indices] = self.data
        return out

    def take(self, rows: Sequence[int] | np.ndarray) -> Rows:
        """The given rows, in the given order (a row may repeat)."""
        idx = np.asarray(rows, dtype=np.int64)
        starts = self.indptr[idx]
        lengths = self.indptr[idx + 1] - starts
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        pos = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return Rows(indptr, self.indices[pos], self.data[pos], self.n_cols)

    def __getitem__(self, rows: Sequence[int] | np.ndarray) -> Rows:
        return self.take(rows)

    def with_data(self, data: np.ndarray) -> Rows:
        """The same cells with new values; cells whose value became zero are dropped."""
        keep = data != 0
        if keep.all():
            return Rows(self.indptr, self.indices, data, self.n_cols)
        kept = np.concatenate(([0], np.cumsum(keep)))
        return Rows(kept[self.indptr], self.indices[keep], data[keep], self.n_cols)

    def __mul__(self, factor: float) -> Rows:
        return self.with_data(self.data * factor)

    def scale_columns(self, weights: np.ndarray) -> Rows:
        """Each column multiplied by its weight."""
        return self.with_data(self.data * weights[self.indices])

    def normalized(self) -> Rows:
        """Rows scaled to unit L2 norm; empty rows stay empty."""
        squares = np.bincount(self.row_of_entry(), weights=self.data * self.data, minlength=self.n_rows)
        norms = np.sqrt(squares)
        norms[norms == 0.0] = 1.0
        return Rows(self.indptr, self.indices, self.data / norms[self.row_of_entry()], self.n_cols)

    def column_sums(self) -> np.ndarray:
        return np.bincount(self.indices, weights=self.data, minlength=self.n_cols)

    def mean(self) -> np.ndarray:
        """The mean row, dense (each entry scaled by 1/n before the sum, as sparse libraries compute it)."""
        n = max(1, self.n_rows)
        return np.bincount(self.indices, weights=self.data * (1.0 / n), minlength=self.n_cols)

    def dot(self, vector: np.ndarray) -> np.ndarray:
        """The product with a dense vector: one value per row."""
        return np.bincount(
            self.row_of_entry(), weights=self.data * vector[self.indices], minlength=self.n_rows
        )

    def columns_major(self) -> Rows:
        """The transpose, stored by rows: for each column, the rows holding it (in row order)."""
        order = np.argsort(self.indices, kind="stable")
        return Rows(
            _offsets(self.indices[order], self.n_cols),
            self.row_of_entry()[order],
            self.data[order],
            self.n_rows,
        )


def _offsets(sorted_rows: np.ndarray, n_rows: int) -> np.ndarray:
    """Row offsets for entries already ordered by row."""
    counts = np.bincount(sorted_rows, minlength=n_rows) if len(sorted_rows) else np.zeros(n_rows, np.int64)
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def hstack(blocks: Sequence[Rows]) -> Rows:
    """Blocks with the same rows side by side; each row's entries keep the blocks' order."""
    n = blocks[0].n_rows
    offset = 0
    rows, cols, vals, order = [], [], [], []
    for b, block in enumerate(blocks):
        rows.append(block.row_of_entry())
        cols.append(block.indices + offset)
        vals.append(block.data)
        order.append(np.full(len(block.data), b))
        offset += block.n_cols
    r = np.concatenate(rows)
    by_row = np.lexsort((np.concatenate(order), r))  # stable within a block
    indices = np.concatenate(cols)[by_row]
    data = np.concatenate(vals)[by_row]
    return Rows(_offsets(r[by_row], n), indices, data, offset)


def similar_pairs(rows: Rows, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j) of rows whose dot product reaches `threshold` (every pair both ways, and i with
    itself when its row is not empty). Rows are L2-normalized, so the dot product is the cosine similarity.

    A block of rows at a time: each entry (i, term) meets every row holding that term (the column-major
    copy), and the products add up into a dense block of similarities, block rows by all rows. The work is
    the number of products that are not zero, as in a compiled sparse product; arrays are updated in place
    because at 10,000 requests there are tens of millions of them.
    """
    n = rows.n_rows
    by_term = rows.columns_major()
    entry_row = rows.row_of_entry()
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    step = max(1, _BLOCK_CELLS // max(1, n))
    for start in range(0, n, step):
        stop = min(n, start + step)
        lo, hi = rows.indptr[start], rows.indptr[stop]
        terms = rows.indices[lo:hi]
        first = by_term.indptr[terms]
        lengths = by_term.indptr[terms + 1] - first
        pos = np.arange(int(lengths.sum()), dtype=np.int64)  # where each product's other row is stored
        pos += np.repeat(first - (np.cumsum(lengths) - lengths), lengths)
        cell = by_term.indices[pos]  # the other row ...
        cell += np.repeat((entry_row[lo:hi] - start) * n, lengths)  # ... in this block row
        weight = by_term.data[pos]
        weight *= np.repeat(rows.data[lo:hi], lengths)
        block = np.bincount(cell, weights=weight, minlength=(stop - start) * n)
        flat = np.flatnonzero(block >= threshold)
        found_i.append(flat // n + start)
        found_j.append(flat % n)
    if not found_i:
        return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    return np.concatenate(found_i), np.concatenate(found_j)


def connected_components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A component label per node for the undirected edges (a[k], b[k]); components are numbered in the
    order of their smallest node, so node 0 is always in component 0.

    Each round hooks every edge's larger root under its smaller one, then halves paths until every node
    points at its root; rounds repeat until no edge joins two roots.
    """
    parent = np.arange(n)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    while len(a):
        ra, rb = parent[a], parent[b]
        differ = ra != rb
        if not differ.any():
            break
        ra, rb = ra[differ], rb[differ]
        low, high = np.minimum(ra, rb), np.maximum(ra, rb)
        np.minimum.at(parent, high, low)
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
        a, b = a[differ], b[differ]
    _, labels = np.unique(parent, return_inverse=True)
    return labels.astype(np.int64)

"""How the pipeline's batches become transactions: one each, or during a backfill several in one.

A batch (some lines of one file and the offset they end at) is always stored all or nothing. While the
daemon tails, each batch commits at once, so what an agent just wrote is searchable at once. A backfill
reads thousands of small files, and committing each on its own made the commits a fifth of its time (and
pinning and signals one more commit per session each). There, each batch is a savepoint inside a
transaction that commits every `group_seconds` (`ingest.group_commit_s`): a failed batch still rolls back
alone, a crash (even `kill -9`) still leaves the store at a batch boundary (the last group's files are
read again from their committed offsets), and another process waits for the write lock no longer than one
group takes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# From how many files on an `ingest_paths` call groups batches (one file alone is tailing).
GROUP_MIN_FILES = 8


class BatchTransactions:
    """Opens and commits the transactions the pipeline's batches are stored in.

    `after_commit` runs after every commit this class makes (the pipeline pins new sessions' repos there:
    git is too slow to run inside a transaction). Not thread safe: one per connection, used by one thread.
    """

    def __init__(
        self, conn: sqlite3.Connection, after_commit: Callable[[], None], *, group_seconds: float = 0.5
    ) -> None:
        """`group_seconds`: how long a group transaction may stay open (0: commit after every batch, as
        when not grouping); keep it far below the store's busy timeout, which other processes wait."""
        self._conn = conn
        self._after_commit = after_commit
        self.group_seconds = group_seconds
        self._grouping = 0  # nesting depth of `grouped`
        self._opened_at: float | None = None  # when the open group transaction began

    @property
    def grouping(self) -> bool:
        """Whether batches are gathered into group transactions now (work after a commit may wait)."""
        return self._grouping > 0

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """Gather the batches stored inside into group transactions; commits what is open on the way out.

        If leaving by an exception, the batches that completed are still committed (the failed one rolled
        back on its own); if that commit fails too, everything since the last commit is rolled back.
        """
        self._grouping += 1
        try:
            yield
        finally:
            self._grouping -= 1
            if not self._grouping:
                self.commit()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One batch, all or nothing: its own transaction, or a savepoint inside the open group.

        Raises what the block raised, after undoing the block's writes.
        """
        if not self._grouping:
            with self._conn:
                yield
            self._after_commit()
            return
        if not self._conn.in_transaction:  # none open yet, or other code committed it meanwhile
            self._conn.execute("BEGIN IMMEDIATE")
            self._opened_at = time.monotonic()
        self._conn.execute("SAVEPOINT ingest_batch")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:  # (code that commits on its own would have ended it)
                self._conn.execute("ROLLBACK TO ingest_batch")
                self._conn.execute("RELEASE ingest_batch")
            raise
        if self._conn.in_transaction:
            self._conn.execute("RELEASE ingest_batch")
        if self._opened_at is None or time.monotonic() - self._opened_at >= self.group_seconds:
            self.commit()

    def commit(self) -> None:
        """Commit the open group now (nothing happens when none is open), then run `after_commit`.

        A failed commit (a full disk) rolls the group back and raises: its files are read again later.
        """
        self._opened_at = None
        if self._conn.in_transaction:
            try:
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise
        self._after_commit()

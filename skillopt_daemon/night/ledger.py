"""The gate's ledger: which candidates were tested against which incumbent, kept in the store.

The night's gate (`GateConfig.anytime()`) promises that a proven proposal is a false one at most 5% of the
time, over every night and every candidate. That holds only if nothing can buy a fresh error budget: every
candidate ever tested against one incumbent shares it (`GateConfig.candidate_share`), a candidate already
decided is never tested again, the confidence a question was first asked at never loosens, and a pending
evidence file is trusted only when its digest is the one the night recorded when it wrote it.

A *target* is what a night improves: an installed skill (its name) or a family's new skill
(`new:<family id>`, whatever the draft is called, so re-drafting does not start over either).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_lib.gate import GateConfig

TABLE = "gate_ledger"


def new_skill_target(family_id: str) -> str:
    return f"new:{family_id}"


class StoreLedger:
    """A `skillopt_lib.gate.GateLedger` for one target, kept in the store's `gate_ledger` table."""

    def __init__(
        self, db: sqlite_utils.Database, target: str, may_reopen: Callable[[str], bool] | None = None
    ) -> None:
        """`may_reopen(candidate_hash)`: whether a candidate already decided may be asked about again (a text
        the user took back, once the evidence behind it grew materially); it is then charged the next share,
        like a new candidate, so asking again never buys a fresh budget."""
        self.db = db
        self.target = target
        self.may_reopen = may_reopen

    def _rows(self, incumbent_hash: str) -> list[dict[str, Any]]:
        return list(
            self.db.query(
                f"SELECT * FROM {TABLE} WHERE target = ? AND incumbent_hash = ? ORDER BY idx",
                [self.target, incumbent_hash],
            )
        )

    def row(self, incumbent_hash: str, candidate_hash: str) -> dict[str, Any] | None:
        for row in self._rows(incumbent_hash):
            if row["candidate_hash"] == candidate_hash:
                return row
        return None

    def confidence(self, incumbent_hash: str, current: float) -> float:
        """The confidence to test at: never looser than the one this incumbent was first tested at."""
        rows = self._rows(incumbent_hash)
        first = rows[0]["confidence"] if rows and rows[0]["confidence"] is not None else current
        return max(float(first), current)

    def share(self, incumbent_hash: str, candidate_hash: str, cfg: GateConfig) -> float | None:
        rows = self._rows(incumbent_hash)
        index = max((int(r["idx"]) for r in rows), default=-1) + 1
        share = cfg.candidate_share(index)
        for row in rows:
            if row["candidate_hash"] != candidate_hash:
                continue
            if row["outcome"] == "pending":
                return float(row["share"])
            if self.may_reopen is None or not self.may_reopen(candidate_hash):
                return None
            with self.db.conn:
                self.db.execute(
                    f"UPDATE {TABLE} SET idx = ?, share = ?, outcome = 'pending', tested_at = ?, decided_at = NULL "
                    "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                    [index, share, utcnow_iso(), self.target, incumbent_hash, candidate_hash],
                )
            return share
        with self.db.conn:
            self.db.table(TABLE).insert(
                {
                    "target": self.target,
                    "incumbent_hash": incumbent_hash,
                    "candidate_hash": candidate_hash,
                    "idx": index,
                    "share": share,
                    "confidence": cfg.confidence,
                    "outcome": "pending",
                    "evidence_digest": None,
                    "tested_at": utcnow_iso(),
                    "decided_at": None,
                }
            )
        return share

    def decided(self, incumbent_hash: str, candidate_hash: str, outcome: str) -> None:
        with self.db.conn:
            self.db.execute(
                f"UPDATE {TABLE} SET outcome = ?, decided_at = ?, evidence_digest = NULL "
                "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                [outcome, utcnow_iso(), self.target, incumbent_hash, candidate_hash],
            )

    def record_digest(self, incumbent_hash: str, candidate_hash: str, digest: str | None) -> None:
        """The sha256 of the pending evidence file just written for this candidate."""
        with self.db.conn:
            self.db.execute(
                f"UPDATE {TABLE} SET evidence_digest = ? "
                "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                [digest, self.target, incumbent_hash, candidate_hash],
            )

    def discard(self, incumbent_hash: str, candidate_hash: str, why: str) -> None:
        """A pending candidate whose evidence could not be trusted: decided, so it is never tested again."""
        self.decided(incumbent_hash, candidate_hash, f"discarded: {why}"[:200])


def ledger_rows(db: sqlite_utils.Database, target: str) -> list[dict[str, Any]]:
    """Every candidate tested for `target`, oldest first (for status and the tests)."""
    if TABLE not in db.table_names():
        return []
    return list(db.query(f"SELECT * FROM {TABLE} WHERE target = ? ORDER BY tested_at, idx", [target]))

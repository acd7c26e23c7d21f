"""The gate's ledger: which candidates were tested for which target, kept in the store.

The night's gate (`GateConfig.anytime()`) promises that a proven proposal is a false one at most 5% of the
time, over every night and every candidate. That holds only if nothing can buy a fresh error budget:

- A *target* is what a night improves: an installed skill (its name) or a family's new skill
  (`new:<family id>`, whatever the draft is called). Every candidate ever tested for a target shares one
  budget (`GateConfig.candidate_share`: 0.8, then half of what is left each), whatever incumbent it was
  measured against: a one-space hand edit of the skill, or a new skill re-drafted after a rejection, is the
  same target and draws the next share.
- The budget renews only with a new *lineage*: when a gated proposal is approved and becomes the skill's
  version (`lineage_of`), the edit has earned its error rate and the improved skill starts a fresh one. A
  rollback returns to the lineage (and the spent budget) of the version rolled back to.
- The settings a decision depends on (the confidence and the likely tier) are pinned when a budget is first
  used (`gate_budgets`); a later setting may tighten them, never loosen them (`StoreLedger.pinned`). The bet
  is pinned in each candidate's evidence (`PairedEvidence.bet`).
- A candidate already decided is never tested again; a pending one is continued only from the evidence the
  night kept for it in the store (`night/pending.py`), else its share counts as spent.

What this means for a long-lived skill that never earns an approval: its n-th candidate gets about 0.2 / 2^n
of the error rate, so after a handful of rejections a new candidate needs more improved items to be proposed
(each halving of its share costs about one more item that improves). That is the trade the guarantee needs:
a budget that renewed with every candidate, or every edit, would let the night try until chance says yes.
An approval resets it, so a skill that keeps improving keeps its full budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import sqlite_utils

from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_lib.gate import GateConfig

TABLE = "gate_ledger"
BUDGETS = "gate_budgets"


def new_skill_target(family_id: str) -> str:
    return f"new:{family_id}"


def lineage_of(versions: Iterable[Any], current_id: str | None) -> str:
    """The lineage of a skill whose active version is `current_id`: the id of the nearest approved `trained`
    version (a gated proposal) among it and its ancestors, or "" when there is none. `versions` are the
    skill's versions (anything with `id`, `parent_id`, `origin` and `state`). A hand edit or an import keeps
    its parent's lineage."""
    by_id = {v.id: v for v in versions}
    seen: set[str] = set()
    vid = current_id
    while vid and vid in by_id and vid not in seen:
        seen.add(vid)
        v = by_id[vid]
        if v.origin == "trained" and v.state == "approved":
            return str(v.id)
        vid = v.parent_id
    return ""


class StoreLedger:
    """A `skillopt_lib.gate.GateLedger` for one target's lineage, kept in the store's `gate_ledger` table."""

    def __init__(
        self,
        db: sqlite_utils.Database,
        target: str,
        may_reopen: Callable[[str], bool] | None = None,
        lineage: str = "",
    ) -> None:
        """`may_reopen(candidate_hash)`: whether a candidate already decided may be asked about again (a text
        the user took back, once the evidence behind it grew materially); it is then charged the next share,
        like a new candidate, so asking again never buys a fresh budget."""
        self.db = db
        self.target = target
        self.may_reopen = may_reopen
        self.lineage = lineage

    def _rows(self) -> list[dict[str, Any]]:
        """Every test of this target's lineage, in the order their shares were given."""
        return list(
            self.db.query(
                f"SELECT * FROM {TABLE} WHERE target = ? AND COALESCE(lineage, '') = ? ORDER BY idx",
                [self.target, self.lineage],
            )
        )

    def row(self, incumbent_hash: str, candidate_hash: str) -> dict[str, Any] | None:
        found = list(
            self.db.query(
                f"SELECT * FROM {TABLE} WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                [self.target, incumbent_hash, candidate_hash],
            )
        )
        return found[0] if found else None

    def _pinned_settings(self) -> dict[str, Any] | None:
        if BUDGETS not in self.db.table_names():
            return None
        found = list(
            self.db.query(
                f"SELECT settings_json FROM {BUDGETS} WHERE target = ? AND lineage = ?",
                [self.target, self.lineage],
            )
        )
        return json.loads(found[0]["settings_json"] or "{}") if found else None

    def pinned(self, confidence: float, likely: float | None) -> tuple[float, float | None]:
        """(confidence, likely tier) to test at: never looser than those the budget was first used with. A
        higher confidence, a higher likely tier or none at all tighten and are taken; a lower one, or a
        likely tier the budget began without, would loosen a running test and is not."""
        pinned = self._pinned_settings()
        if pinned is None:
            return confidence, likely
        first = pinned.get("confidence")
        conf = max(float(first), confidence) if first is not None else confidence
        if "likely_confidence" in pinned:
            was = pinned["likely_confidence"]
            likely = None if was is None or likely is None else max(float(was), likely)
        if likely is not None and likely >= conf:
            likely = None
        return conf, likely

    def confidence(self, current: float) -> float:
        """The confidence to test at: never looser than the one this budget was first used with."""
        return self.pinned(current, None)[0]

    def _pin(self, cfg: GateConfig) -> None:
        """Record the settings of the budget's first test; a budget opened before settings were pinned gets
        its likely tier now."""
        pinned = self._pinned_settings()
        settings = {"confidence": cfg.confidence, "likely_confidence": cfg.likely_confidence}
        if pinned is None:
            self.db.table(BUDGETS).insert(
                {
                    "target": self.target,
                    "lineage": self.lineage,
                    "settings_json": json.dumps(settings),
                    "opened_at": utcnow_iso(),
                }
            )
        elif "likely_confidence" not in pinned:
            self.db.execute(
                f"UPDATE {BUDGETS} SET settings_json = ? WHERE target = ? AND lineage = ?",
                [json.dumps({**settings, **pinned}), self.target, self.lineage],
            )

    def share(self, incumbent_hash: str, candidate_hash: str, cfg: GateConfig) -> float | None:
        rows = self._rows()
        index = max((int(r["idx"]) for r in rows), default=-1) + 1
        share = cfg.candidate_share(index)
        row = self.row(incumbent_hash, candidate_hash)
        if row is not None:
            if row["outcome"] == "pending" and (row["lineage"] or "") == self.lineage:
                return float(row["share"])
            if self.may_reopen is None or not self.may_reopen(candidate_hash):
                return None
            with self.db.conn:
                self.db.execute(
                    f"UPDATE {TABLE} SET idx = ?, share = ?, outcome = 'pending', tested_at = ?, decided_at = NULL, "
                    "lineage = ?, evidence_digest = NULL "
                    "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                    [index, share, utcnow_iso(), self.lineage, self.target, incumbent_hash, candidate_hash],
                )
                self._pin(cfg)
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
                    "lineage": self.lineage,
                }
            )
            self._pin(cfg)
        return share

    def decided(self, incumbent_hash: str, candidate_hash: str, outcome: str) -> None:
        with self.db.conn:
            self.db.execute(
                f"UPDATE {TABLE} SET outcome = ?, decided_at = ?, evidence_digest = NULL "
                "WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
                [outcome, utcnow_iso(), self.target, incumbent_hash, candidate_hash],
            )

    def discard(self, incumbent_hash: str, candidate_hash: str, why: str) -> None:
        """A pending candidate whose evidence could not be trusted: decided, so it is never tested again."""
        self.decided(incumbent_hash, candidate_hash, f"discarded: {why}"[:200])

    def retire_pending_except(
        self, incumbent_hash: str | None, candidate_hash: str | None, why: str
    ) -> list[dict[str, Any]]:
        """Every test of this target still pending, of any lineage, decided as spent, except the one whose
        evidence the night kept (`incumbent_hash`, `candidate_hash`): called when the night holds no kept
        evidence for them (it was deleted, never written, or the run that measured them stopped), so none of
        them restarts its evidence at the same share. Returns the rows retired."""
        rows = [
            r
            for r in self.db.query(
                f"SELECT * FROM {TABLE} WHERE target = ? AND outcome = 'pending'", [self.target]
            )
            if (r["incumbent_hash"], r["candidate_hash"]) != (incumbent_hash, candidate_hash)
        ]
        for row in rows:
            self.discard(str(row["incumbent_hash"]), str(row["candidate_hash"]), why)
        return rows


def ledger_rows(db: sqlite_utils.Database, target: str) -> list[dict[str, Any]]:
    """Every candidate tested for `target`, oldest first (for status and the tests)."""
    if TABLE not in db.table_names():
        return []
    return list(db.query(f"SELECT * FROM {TABLE} WHERE target = ? ORDER BY tested_at, idx", [target]))


class DryLedger(StoreLedger):
    """A dry run's ledger: the shares and pinned settings a real night would use, read from the store, and
    nothing written to it (a rehearsal must not spend a candidate's share or open a budget)."""

    def __init__(
        self,
        db: sqlite_utils.Database,
        target: str,
        may_reopen: Callable[[str], bool] | None = None,
        lineage: str = "",
    ) -> None:
        super().__init__(db, target, may_reopen, lineage)
        self.tested: dict[tuple[str, str], list[Any]] = {}  # (incumbent, candidate) -> [share, outcome]
        self.new = 0  # candidates the store has no row for: they take the next shares in order

    def share(self, incumbent_hash: str, candidate_hash: str, cfg: GateConfig) -> float | None:
        key = (incumbent_hash, candidate_hash)
        if key in self.tested:
            share, outcome = self.tested[key]
            return float(share) if outcome == "pending" else None
        row = self.row(incumbent_hash, candidate_hash)
        if row is not None and row["outcome"] == "pending" and (row["lineage"] or "") == self.lineage:
            share = float(row["share"])
        elif row is not None and (self.may_reopen is None or not self.may_reopen(candidate_hash)):
            return None
        else:
            index = max((int(r["idx"]) for r in self._rows()), default=-1) + 1
            share = cfg.candidate_share(index + self.new)
            self.new += 1
        self.tested[key] = [share, "pending"]
        return share

    def decided(self, incumbent_hash: str, candidate_hash: str, outcome: str) -> None:
        if (incumbent_hash, candidate_hash) in self.tested:
            self.tested[(incumbent_hash, candidate_hash)][1] = outcome

    def retire_pending_except(
        self, incumbent_hash: str | None, candidate_hash: str | None, why: str
    ) -> list[dict[str, Any]]:
        return []

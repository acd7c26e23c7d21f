"""Evidence that accumulates: splits that stay put, near-duplicate groups, guard checks, the gate's ledger.

- `split_assignments`: the split each attempt was first given. Mining recomputes families every night, but
  an attempt that validated a candidate must never later teach the optimizer (nor the reverse), and pending
  evidence names its items; so an attempt keeps its split for good.
- `tasks.split_group`: the attempt's group of near-duplicates (and of the same session); the gate counts a
  group once. `tasks.role`: corrected, failure or plain, what the split was chosen from.
- `tasks.guard_checks_json`: checks that already pass before the work at the task's commit. They cannot tell
  right from wrong, but a replay that breaks one did damage: it fails.
- `gate_ledger`: every candidate tested against an incumbent (a skill's installed version, or a family's
  new-skill draft), its share of that incumbent's error rate, the confidence it was first tested at, how
  it ended, and the digest of its pending evidence file, so a re-run, a second candidate, a reset counter or a
  hand-edited evidence file never buys a fresh error budget.
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    db.table("split_assignments").create(
        {
            "attempt_key": str,
            "family_id": str,
            "split": str,
            "split_group": str,
            "role": str,
            "assigned_at": str,
        },
        pk="attempt_key",
    )
    tasks = db.table("tasks")
    cols = {c.name for c in tasks.columns}
    for name in ("split_group", "role", "guard_checks_json"):
        if name not in cols:
            tasks.add_column(name, str)
    db.table("gate_ledger").create(
        {
            "target": str,
            "incumbent_hash": str,
            "candidate_hash": str,
            "idx": int,
            "share": float,
            "confidence": float,
            "outcome": str,
            "evidence_digest": str,
            "tested_at": str,
            "decided_at": str,
        },
        pk=("target", "incumbent_hash", "candidate_hash"),
    )

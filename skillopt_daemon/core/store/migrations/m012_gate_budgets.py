"""The gate's error budget belongs to a target's lineage, and pending evidence lives in the store.

- `gate_ledger.lineage`: which budget a test spent. A target (a skill, or `new:<family>`) has one error budget
  per lineage; a lineage starts with the skill and renews only when a gated proposal is approved (the id of
  that version), never with a hand edit or a re-draft. Existing rows get the lineage of the incumbent they
  were tested against: the nearest approved `trained` version among it and its ancestors, else "".
- `gate_budgets`: the settings a budget's decisions depend on, pinned when it was first used
  (`settings_json`: confidence and the likely tier). A budget opened before this migration pins its
  confidence now (the first one it was asked at) and its likely tier at its next use.
- `pending_evidence`: a target's undecided candidate with its paired evidence (it was a file in the runs
  folder, where deleting it restarted the candidate's evidence unnoticed). Files left by earlier versions are
  moved in when they are next read (`night/pending.py`), after the same checks as before.
"""

from __future__ import annotations

import json
from typing import Any

import sqlite_utils


def _lineage(db: sqlite_utils.Database, skill: str, content_hash: str) -> str:
    rows = list(
        db.query(
            "SELECT v.id FROM versions v JOIN skills s ON s.id = v.skill_id "
            "WHERE s.name = ? AND v.content_hash = ? ORDER BY v.seq DESC LIMIT 1",
            [skill, content_hash],
        )
    )
    vid: Any = rows[0]["id"] if rows else None
    seen: set[str] = set()
    while vid and vid not in seen:
        seen.add(vid)
        found = list(db.query("SELECT parent_id, origin, state FROM versions WHERE id = ?", [vid]))
        if not found:
            break
        if found[0]["origin"] == "trained" and found[0]["state"] == "approved":
            return str(vid)
        vid = found[0]["parent_id"]
    return ""


def migrate(db: sqlite_utils.Database) -> None:
    ledger = db.table("gate_ledger")
    if "lineage" not in {c.name for c in ledger.columns}:
        ledger.add_column("lineage", str)
    rows = list(
        db.query("SELECT target, incumbent_hash, candidate_hash, confidence, tested_at FROM gate_ledger")
    )
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        target = str(row["target"])
        lineage = "" if target.startswith("new:") else _lineage(db, target, str(row["incumbent_hash"]))
        db.execute(
            "UPDATE gate_ledger SET lineage = ? WHERE target = ? AND incumbent_hash = ? AND candidate_hash = ?",
            [lineage, target, row["incumbent_hash"], row["candidate_hash"]],
        )
        key = (target, lineage)
        if key not in first or str(row["tested_at"] or "") < str(first[key]["tested_at"] or ""):
            first[key] = row
    db.table("gate_budgets").create(
        {"target": str, "lineage": str, "settings_json": str, "opened_at": str},
        pk=("target", "lineage"),
    )
    for (target, lineage), row in first.items():
        settings = {"confidence": row["confidence"]} if row["confidence"] is not None else {}
        db.table("gate_budgets").insert(
            {
                "target": target,
                "lineage": lineage,
                "settings_json": json.dumps(settings),
                "opened_at": row["tested_at"],
            }
        )
    db.table("pending_evidence").create(
        {
            "target": str,
            "lineage": str,
            "incumbent_hash": str,
            "candidate_hash": str,
            "body": str,
            "digest": str,
            "written_at": str,
        },
        pk="target",
    )

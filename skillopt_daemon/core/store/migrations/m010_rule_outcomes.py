"""What became of each learned rule once it was installed.

Everything the correction funnel counts is already stored (sessions' corrections, mined tasks with their
families and splits, versions with the provenance of every added line, install events). What is not is
what the night *did* about a rule, which must outlive the nightly recomputation of families:

- `rule_outcomes`: one row per learned rule line (its version and the line's hash): the last verdict
  (`working`, `not working`, `too early`, `stale`, `contradicted`) with its figures, when a verdict other
  than `too early` was first reached, which attempts went back to the night as train tasks because the rule
  was not working, and the removal proposal made for a stale or contradicted rule (so it is proposed once).
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    db.table("rule_outcomes").create(
        {
            "version_id": str,
            "line_hash": str,
            "skill": str,
            "line": str,
            "families_json": str,
            "verdict": str,
            "figures_json": str,
            "first_verdict_at": str,
            "updated_at": str,
            "retrained_json": str,
            "removal_version_id": str,
        },
        pk=("version_id", "line_hash"),
    )
    db.table("rule_outcomes").create_index(["skill"])

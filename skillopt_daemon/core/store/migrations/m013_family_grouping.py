"""How each mined family was grouped: `task_families.grouped_by` is `words` (the lexical path: the words of
the requests, before any model labelled them) or `labels` (the kinds of work a model named). `skillopt
status` says that a family grouped by words is provisional: labelling regroups it. Families mined before this
migration have NULL until the next mining pass."""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    families = db.table("task_families")
    if "grouped_by" not in {c.name for c in families.columns}:
        families.add_column("grouped_by", str)

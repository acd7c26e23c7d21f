"""`shared_rules`: rules teammates published through the team repository, waiting for this user's night.

One row per published rule (`key`: the branch it came on, or `main:<skill>` for a merged one). The row holds
the rule's files as received (`bundle`), who published it, the commit it was read from (a rewritten branch
is noticed when the next pull finds the old commit gone from it), the screen's verdict at pull time, and
what this machine's night made of it (`verdict`: `helped`, `hurt` or `unmeasured`, with counts only).
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    if "shared_rules" in db.table_names():
        return
    db.table("shared_rules").create(
        {
            "key": str,
            "skill": str,
            "published_by": str,
            "content_hash": str,
            "bundle": str,
            "claimed": str,  # the publisher's evidence summary, as received: shown, never trusted
            "commit_sha": str,
            "state": str,  # queued | refused | decided | gone
            "note": str,
            "screen": str,
            "verdict": str,
            "items": int,
            "better": int,
            "worse": int,
            "received_at": str,
            "decided_at": str,
        },
        pk="key",
    )
    db.execute("CREATE INDEX IF NOT EXISTS shared_rules_skill ON shared_rules(skill, state)")

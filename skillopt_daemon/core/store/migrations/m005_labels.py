"""The label cache of mining's model path: one row per request text (and the request before it), by content
hash, so that a request is labelled by a model once ever. Failed labels are never stored: the next night tries
them again."""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    db.table("request_labels").create(
        {
            "hash": str,
            "kind": str,
            "intent": str,
            "work": str,
            "rules_json": str,
            "one_off": bool,
            "prompt_version": str,
            "model": str,
            "labelled_at": str,
        },
        pk="hash",
    )

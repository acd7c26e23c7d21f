"""Placeholder: filled in by the module's owner."""

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    raise NotImplementedError

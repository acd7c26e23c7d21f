"""The SQLite store: one database per SKILLOPT_HOME, opened through `open_db`."""

# First, before any module of the store imports sqlite-utils: so that it comes without numpy (sqlite_lib).
from skillopt_daemon.core.store import sqlite_lib  # noqa: F401, I001
from skillopt_daemon.core.store.db import SCHEMA_VERSION, open_db

__all__ = ["SCHEMA_VERSION", "open_db"]

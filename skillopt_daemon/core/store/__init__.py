"""The SQLite store: one database per SKILLOPT_HOME, opened through `open_db`."""

from skillopt_daemon.core.store.db import SCHEMA_VERSION, open_db

__all__ = ["SCHEMA_VERSION", "open_db"]

"""Dependencies the routes share: a store connection per request, closed when the response is sent."""

from __future__ import annotations

from collections.abc import Iterator

import sqlite_utils

from skillopt_daemon.core.store import open_db


def db() -> Iterator[sqlite_utils.Database]:
    conn = open_db()
    try:
        yield conn
    finally:
        conn.conn.close()

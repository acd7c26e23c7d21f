"""The store a user's history lives in: an older skillopt's database is upgraded in place without losing a
row, two commands that open a new one at once both work and migrate it once, a file that is not a database
is refused untouched with what to do, and every migration module is applied, in its number's order."""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_daemon.core.store import db as store
from skillopt_daemon.core.store.migrations import MIGRATIONS
from skillopt_lib.errors import StoreError

MIGRATIONS_DIR = Path(store.__file__).parent / "migrations"


def _applied(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY id")]


def test_every_migration_module_is_applied_in_the_order_of_its_number() -> None:
    on_disk = sorted(p.stem for p in MIGRATIONS_DIR.glob("m[0-9][0-9][0-9]_*.py"))
    listed = [name for name, _ in MIGRATIONS]
    assert listed == on_disk, "a migration module that is not listed would never run"
    numbers = [int(re.match(r"m(\d{3})_", n).group(1)) for n in listed]  # type: ignore[union-attr]
    assert numbers == sorted(set(numbers)), "numbers are unique and ascending"


def test_an_older_skillopts_database_is_upgraded_in_place_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "skillopt.db"
    old = store.sqlite_utils.Database(path)
    old.execute(
        "CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, applied_at TEXT NOT NULL)"
    )
    first = MIGRATIONS[:3]  # what an early release had
    for name, fn in first:
        fn(old)
        old.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, '2026-01-01T00:00:00Z')", [name])
    tables_before = set(old.table_names())
    old.execute("INSERT INTO skills (name, created_at) VALUES ('tidy-commits', '2026-01-01T00:00:00Z')")
    rows_before = {t: old[t].count for t in tables_before if not t.startswith(("_", "sqlite_"))}
    old.conn.close()

    db = store.open_db(path)
    assert _applied(path) == [name for name, _ in MIGRATIONS]  # the rest, in order, each once
    for table, count in rows_before.items():
        assert db[table].count == count, f"{table} lost rows in the upgrade"
    assert db["skills"].count == 1 and set(db.table_names()) > tables_before
    db.conn.close()
    assert store.apply_migrations(store.open_db(path, migrate=False)) == []  # nothing left to do


def test_two_commands_opening_a_new_database_at_once_both_work_and_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "data" / "skillopt.db"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from skillopt_daemon.core.store import open_db\n"
        "open_db(Path(sys.argv[1])).execute('SELECT 1').fetchone()\n"
    )
    env = {**os.environ, "SKILLOPT_HOME": str(tmp_path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert _applied(path) == [name for name, _ in MIGRATIONS]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # transcripts live here: the user's eyes only


def test_a_file_that_is_not_a_database_is_refused_untouched_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "skillopt.db"
    junk = b"these are not the bytes of an SQLite database\n" * 200
    path.write_bytes(junk)
    with pytest.raises(StoreError) as err:
        store.open_db(path)
    assert "cannot be read" in str(err.value) and "move it aside" in (err.value.hint or "")
    assert path.read_bytes() == junk

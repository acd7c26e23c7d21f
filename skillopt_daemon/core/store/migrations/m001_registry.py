"""The registry: skills, their immutable versions, where they are installed, and every action taken.

File contents are not stored in the database. Each file of a version lives once in the content-addressed
skill store (`paths.skill_store_dir()/objects/<sha[:2]>/<sha>`), and `version_files` maps a version's
relative paths to those hashes. A corrupt database therefore never takes the skills' text with it, and two
versions sharing a file share its bytes.

Tables:
- `skills`: one row per skill name.
- `versions`: immutable content (`content_hash` over every path and byte) plus provenance: `parent_id`,
  `origin` (imported | hand-edit | proposed | trained), `evidence` (JSON), and the review `state`
  (proposed → approved | rejected). `seq` numbers a skill's versions 1, 2, 3 for `SKILL@V` references.
- `targets`: where a skill is installed (tool, scope user|project, project path; '' for user scope), the
  version active there and the hash of every file skillopt last wrote or recognised there (`installed`,
  JSON `{absolute path: sha256}`), which is what hand edits are detected against.
- `installs`: one row per attempt to change what is on disk at a target. `state` goes intent → installed,
  or → rolled-back / failed; an `intent` row left by a killed process is reconciled with the disk on the
  next start. `plan` (JSON) holds what reconciliation needs.
- `events`: the audit log. Nothing is ever deleted from any of these tables.
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    db.execute(
        """
        CREATE TABLE skills (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE versions (
            id TEXT PRIMARY KEY,
            skill_id INTEGER NOT NULL REFERENCES skills(id),
            seq INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            parent_id TEXT REFERENCES versions(id),
            origin TEXT NOT NULL CHECK (origin IN ('imported', 'hand-edit', 'proposed', 'trained')),
            state TEXT NOT NULL CHECK (state IN ('proposed', 'approved', 'rejected')),
            evidence TEXT NOT NULL DEFAULT '{}',
            note TEXT,
            created_at TEXT NOT NULL,
            decided_at TEXT,
            decision_reason TEXT,
            UNIQUE (skill_id, seq)
        )
        """
    )
    db.execute("CREATE INDEX versions_state ON versions(state)")
    db.execute("CREATE INDEX versions_content ON versions(skill_id, content_hash)")
    db.execute(
        """
        CREATE TABLE version_files (
            version_id TEXT NOT NULL REFERENCES versions(id),
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            PRIMARY KEY (version_id, path)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE targets (
            id INTEGER PRIMARY KEY,
            skill_id INTEGER NOT NULL REFERENCES skills(id),
            tool TEXT NOT NULL,
            scope TEXT NOT NULL CHECK (scope IN ('user', 'project')),
            project TEXT NOT NULL DEFAULT '',
            enabled INTEGER NOT NULL DEFAULT 1,
            active_version_id TEXT REFERENCES versions(id),
            installed TEXT NOT NULL DEFAULT '{}',
            baseline_backup TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (skill_id, tool, scope, project)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE installs (
            id TEXT PRIMARY KEY,
            target_id INTEGER NOT NULL REFERENCES targets(id),
            version_id TEXT REFERENCES versions(id),
            kind TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('intent', 'installed', 'rolled-back', 'failed')),
            plan TEXT NOT NULL DEFAULT '{}',
            pid INTEGER,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            error TEXT
        )
        """
    )
    db.execute("CREATE INDEX installs_state ON installs(state)")
    db.execute("CREATE INDEX installs_target ON installs(target_id, started_at)")
    db.execute(
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            action TEXT NOT NULL,
            skill TEXT,
            version_id TEXT,
            target TEXT,
            actor TEXT NOT NULL,
            message TEXT NOT NULL DEFAULT '',
            detail TEXT NOT NULL DEFAULT '{}'
        )
        """
    )
    db.execute("CREATE INDEX events_skill ON events(skill, id)")

"""Tasks worth replaying: whether each mined task's check can tell right from wrong at its commit.

`tasks.scoring` is how a replay of the task is scored (`check`, `rubric`, or `excluded` from replays) and
`tasks.scoring_why` says why, for `skillopt tasks show`; `tasks.scored_checks_json` holds the checks that
discriminate. `check_probes` caches each check run at a pinned commit before any work (keyed by a hash of the
repository, commit, uncommitted changes and command), so a night runs a check at a commit once ever.
"""

from __future__ import annotations

import sqlite_utils


def migrate(db: sqlite_utils.Database) -> None:
    tasks = db.table("tasks")
    cols = {c.name for c in tasks.columns}
    for name in ("scoring", "scoring_why", "scored_checks_json"):
        if name not in cols:
            tasks.add_column(name, str)
    db.table("check_probes").create(
        {
            "key": str,
            "repo": str,
            "commit_sha": str,
            "command": str,
            "exit_code": int,
            "passed": bool,
            "network": bool,
            "output": str,
            "probed_at": str,
        },
        pk="key",
    )

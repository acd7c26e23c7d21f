"""Reading the mined task families and tasks back from the store: what `skillopt tasks` and the dashboard
show. Kept apart from `mine.py` so that showing them never imports the clustering stack."""

from __future__ import annotations

import json
from typing import Any

from skillopt_lib.errors import ConflictError, NotFoundError


def family_rows(db: Any) -> list[dict[str, Any]]:
    rows = []
    for f in db.query("SELECT * FROM task_families ORDER BY size DESC, id"):
        splits = {
            r["split"]: r["n"]
            for r in db.query(
                "SELECT split, count(*) AS n FROM tasks WHERE family_id = ? GROUP BY split", [f["id"]]
            )
        }
        rows.append(
            {
                "id": f["id"],
                "name": f["name"],
                "skill": f["skill_name"],
                "size": f["size"],
                "tools": json.loads(f["tools_json"] or "[]"),
                "projects": json.loads(f["projects_json"] or "[]"),
                "checks": len(json.loads(f["checks_json"] or "[]")),
                "rubric_items": len(json.loads(f["rubric_json"] or "[]")),
                "splits": splits,
                "mined_at": f["mined_at"],
            }
        )
    return rows


def resolve_family(db: Any, ref: str) -> dict[str, Any]:
    rows = list(db.query("SELECT * FROM task_families WHERE id = ? OR id LIKE ?", [ref, ref + "%"]))
    exact = [r for r in rows if r["id"] == ref]
    if exact:
        return exact[0]
    if not rows:
        raise NotFoundError(f"no task family {ref!r}", hint="`skillopt tasks list` shows the mined families")
    if len(rows) > 1:
        raise ConflictError(f"{ref!r} matches {len(rows)} families", hint="give more of the id")
    return rows[0]


def task_view(t: dict[str, Any]) -> dict[str, Any]:
    commands = json.loads(t["commands_json"] or "[]")
    return {
        "id": t["id"],
        "family": t["family_id"],
        "split": t["split"],
        "outcome": t["outcome"],
        "tool": t["tool"],
        "session": t["session_id"],
        "project_path": t["project_path"],
        "repo_commit": t["repo_commit"],
        "repo_dirty": bool(t["repo_dirty"]) if t["repo_dirty"] is not None else None,
        "started_at": t["started_at"],
        "prompt": t["prompt"],
        "corrections": json.loads(t["corrections_json"] or "[]"),
        "commands": [f"{c['command']} -> {c['exit_code']}" for c in commands],
        # How a replay of it is scored (check | rubric | excluded) and why: see night/checks.py.
        "scored_by": t.get("scoring") or "-",
        "scored_why": t.get("scoring_why") or "",
        "scored_checks": json.loads(t.get("scored_checks_json") or "[]"),
    }

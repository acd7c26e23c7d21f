"""What the dashboard's pages show, gathered from the store, the registry and the run folders.

Reading only: every decision goes through `skillopt_daemon.registry` and every list is built by the same
functions the CLI uses (`status.collect_status`, `ingest.queries.query_sessions`, `night.families`), so the
dashboard and the CLI never disagree. What is new here is what a terminal cannot show: per-day counts,
chart series, a run folder's history turned into rows.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import to_iso, utcnow
from skillopt_daemon.night.learning.evidence import usage_spend
from skillopt_daemon.night.runs import real_runs
from skillopt_lib.errors import NotFoundError
from skillopt_lib.training.runfiles import HISTORY_FILE, HistoryRecord, read_history

# A run whose history has not moved for this long, and that has no summary, was interrupted.
RUN_QUIET_S = 15 * 60
# The Overview's spend card totals this many of the latest real nights besides the last one.
RECENT_NIGHTS = 7


# ------------------------------------------------------------------------------------------------ overview


def sessions_per_day(
    db: sqlite_utils.Database, days: int = 14
) -> tuple[list[str], dict[str, dict[str, int]], list[str]]:
    """(days, counts[day][tool], tools) of the user's own sessions over the last `days` days, UTC."""
    if "sessions" not in db.table_names():
        return [], {}, []
    start = utcnow() - timedelta(days=days - 1)
    day_list = [(start + timedelta(days=i)).strftime("%Y-%m-%d") for i in range(days)]
    rows = db.execute(
        "SELECT substr(COALESCE(started_at, first_seen_at), 1, 10) AS day, tool, COUNT(*) FROM sessions "
        "WHERE drop_reason IS NULL AND has_user_turn = 1 AND COALESCE(started_at, first_seen_at) >= ? "
        "GROUP BY day, tool",
        [day_list[0]],
    ).fetchall()
    counts: dict[str, dict[str, int]] = {}
    tools: set[str] = set()
    for day, tool, n in rows:
        counts.setdefault(day, {})[tool] = n
        tools.add(tool)
    return day_list, counts, sorted(tools)


def recent_ingest_errors(db: sqlite_utils.Database, limit: int = 20) -> list[dict[str, Any]]:
    if "ingest_errors" not in db.table_names():
        return []
    return list(
        db.query(
            "SELECT at, tool, path, kind, level, message FROM ingest_errors ORDER BY id DESC LIMIT ?", [limit]
        )
    )


def night_spend(db: sqlite_utils.Database, night: Any) -> dict[str, Any] | None:
    """The last real nightly cycle's spend against the budget in settings, and the total of the last
    `RECENT_NIGHTS` real ones (`recent`): a dry run, a skipped night or one still running is not what a
    night costs."""
    nights = real_runs(db, RECENT_NIGHTS)
    if not nights:
        return None
    last = nights[0]
    spends = [json.loads(n.get("summary_json") or "{}").get("spend") or {} for n in nights]
    recent = {
        "nights": len(nights),
        "since": nights[-1]["started_at"],
        "cost_usd": round(sum(float(s.get("cost_usd") or 0.0) for s in spends), 6),
        "tokens": sum(int(s.get("tokens") or 0) for s in spends),
        "replays": sum(int(s.get("replays") or 0) for s in spends),
    }
    summary = json.loads(last.get("summary_json") or "{}")
    spend = summary.get("spend") or {}
    # The caps that night ran with: a night on the user's agent login has smaller ones than the settings'.
    model = summary.get("model") or {}
    return {
        "run": last["id"],
        "status": last["status"],
        "started_at": last["started_at"],
        "cost_usd": float(spend.get("cost_usd") or 0.0),
        "max_cost_usd": float(night.max_cost_usd),
        "tokens": int(spend.get("tokens") or 0),
        "max_tokens": int(model.get("max_tokens") or night.max_tokens),
        "replays": int(spend.get("replays") or 0),
        "max_replays": int(model.get("max_replays") or night.max_replays),
        "exceeded": spend.get("exceeded"),
        "skills": summary.get("skills") or [],
        "recent": recent,
    }


# ------------------------------------------------------------------------------------------------ sessions


def _fts_query(text: str) -> str:
    """User words as an FTS5 query of quoted terms (every word must appear), so no input is a syntax error."""
    words = re.findall(r"\w[\w.\-/]*", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words[:12])


def search_sessions(
    db: sqlite_utils.Database,
    q: str = "",
    tool: str | None = None,
    include_all: bool = False,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """Sessions newest first; `q` matches the transcript text (full-text), the title or the project path."""
    from skillopt_daemon.ingest.queries import first_prompt, query_sessions

    if "sessions" not in db.table_names():
        return []
    rows = query_sessions(db, tool=tool or None, include_all=include_all)
    if q.strip():
        hits: set[int] = set()
        fts = _fts_query(q)
        if fts:
            hits = {
                r[0]
                for r in db.execute(
                    "SELECT DISTINCT t.session_pk FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid "
                    "WHERE turns_fts MATCH ?",
                    [fts],
                ).fetchall()
            }
        needle = q.strip().lower()
        rows = [
            r
            for r in rows
            if r["id"] in hits
            or needle in (r["title"] or "").lower()
            or needle in (r["project_path"] or "").lower()
            or needle in r["session_id"].lower()
        ]
    rows = rows[:limit]
    for r in rows:
        r["first_prompt"] = first_prompt(db, r["id"])
    return rows


# ------------------------------------------------------------------------------------------------ skills


def lineage(versions: list[Any]) -> list[tuple[Any, int]]:
    """Versions in tree order with their depth, so a page can indent each under its parent."""
    by_parent: dict[str | None, list[Any]] = {}
    ids = {v.id for v in versions}
    for v in versions:
        by_parent.setdefault(v.parent_id if v.parent_id in ids else None, []).append(v)
    out: list[tuple[Any, int]] = []

    def walk(parent: str | None, depth: int) -> None:
        for v in sorted(by_parent.get(parent, []), key=lambda x: x.seq):
            out.append((v, depth))
            walk(v.id, depth + 1)

    walk(None, 0)
    return out


# ------------------------------------------------------------------------------------------------ runs


@dataclass
class RunInfo:
    """One training run folder: from `skillopt train` (`train-*`) or a night (`night-<id>/<skill>`)."""

    id: str
    kind: str
    path: Path
    state: str  # finished | running | interrupted
    env: str = ""
    skill: str = ""
    started: str | None = None
    updated: str | None = None
    steps: int = 0
    accepted: int = 0
    initial_val: float | None = None
    best_val: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _run_info(folder: Path, root: Path) -> RunInfo:
    rel = folder.relative_to(root).as_posix()
    summary = _read_json(folder / "summary.json")
    history = folder / HISTORY_FILE
    mtime = history.stat().st_mtime if history.exists() else folder.stat().st_mtime
    quiet = time.time() - mtime >= RUN_QUIET_S
    state = "finished" if summary else ("interrupted" if quiet else "running")
    info = RunInfo(
        id=rel,
        kind="night" if rel.startswith("night-") else "train",
        path=folder,
        state=state,
        updated=to_iso(utcnow() - timedelta(seconds=max(0.0, time.time() - mtime))),
        summary=summary,
    )
    cfg = _read_json(folder / "config.json")
    info.env = str(summary.get("env") or cfg.get("env") or "")
    info.skill = str(summary.get("skill_name") or (folder.name if info.kind == "night" else ""))
    info.started = summary.get("started") or _read_json(folder / "state.json").get("started")
    if summary:
        info.steps = int(summary.get("steps") or 0)
        info.accepted = int(summary.get("accepted_steps") or 0)
        info.initial_val = summary.get("initial_val")
        info.best_val = summary.get("best_val")
    else:
        for rec in read_history(folder):
            if rec.get("kind") == "baseline":
                info.initial_val = (rec.get("val") or {}).get("score")
            elif rec.get("kind") == "step":
                info.steps = int(rec.get("step") or info.steps)
                info.accepted += 1 if rec.get("accepted") else 0
                info.best_val = (rec.get("val") or {}).get("incumbent")
    return info


def list_runs() -> list[RunInfo]:
    """Every run folder with a history, newest first."""
    root = paths.runs_dir()
    if not root.is_dir():
        return []
    found: list[Path] = []
    for child in root.iterdir():
        if not child.is_dir():
            continue
        if (child / HISTORY_FILE).exists():
            found.append(child)
        elif child.name.startswith("night-"):
            found.extend(g for g in child.iterdir() if g.is_dir() and (g / HISTORY_FILE).exists())
    runs = [_run_info(f, root) for f in found]
    runs.sort(key=lambda r: r.updated or "", reverse=True)
    return runs


def resolve_run(run_id: str) -> Path:
    """The folder of `run_id`, which must lie inside the runs folder (a crafted id cannot leave it)."""
    root = paths.runs_dir().resolve()
    folder = (root / run_id).resolve()
    if not folder.is_relative_to(root) or folder == root or not (folder / HISTORY_FILE).exists():
        raise NotFoundError(f"no training run {run_id!r}", hint="the Training runs page lists them")
    return folder


def _short_edit(e: dict[str, Any], n: int = 160) -> str:
    text = " ".join(str(e.get("content") or "").split())
    op = e.get("op") or "edit"
    return f"{op}: " + (text if len(text) <= n else text[: n - 1] + "…")


def _step_row(rec: HistoryRecord) -> dict[str, Any]:
    """One step (or slow update) of a run's history as a row of the run page's table."""
    train = rec.get("train") or {}
    usage = rec.get("usage_step") or {}
    tokens, cost = usage_spend(usage)
    return {
        "kind": rec.get("kind"),
        "step": int(rec.get("step") or 0),
        "epoch": rec.get("epoch"),
        "train": train.get("hard"),
        "val": (rec.get("val") or {}).get("incumbent"),
        "accepted": bool(rec.get("accepted")),
        "reason": rec.get("reason") or "",
        "stats": (rec.get("gate") or {}).get("stats") or {},
        "applied": [_short_edit(e) for e in rec.get("applied") or []]
        + ([f"guidance: {rec['guidance'][:160]}"] if rec.get("guidance") else []),
        "rejected": [_short_edit(e) for e in rec.get("rejected_edits") or []],
        "usage": usage,
        "tokens": tokens,
        "cost": cost,
    }


def _role_rows(usage: dict[str, Any]) -> list[dict[str, Any]]:
    """Tokens, calls and cost per role (agent, optimizer, judge), for the run page's spend table."""
    return [
        {
            "role": role,
            "input_tokens": int(u.get("input_tokens", 0)),
            "output_tokens": int(u.get("output_tokens", 0)),
            "calls": int(u.get("calls", 0)),
            "cost_usd": float(u.get("cost_usd", 0.0)),
        }
        for role, u in sorted(usage.items())
        if isinstance(u, dict)
    ]


def run_detail(run_id: str) -> dict[str, Any]:
    """A run's summary, its steps as rows, chart series and tokens and cost per role."""
    folder = resolve_run(run_id)
    info = _run_info(folder, paths.runs_dir().resolve())
    steps: list[dict[str, Any]] = []
    train_pts: list[tuple[float, float | None]] = []
    val_pts: list[tuple[float, float | None]] = []
    test: dict[str, Any] = {}
    usage_total: dict[str, Any] = {}
    for rec in read_history(folder):
        kind = rec.get("kind")
        usage_total = rec.get("usage_total") or usage_total
        if kind == "baseline":
            score = (rec.get("val") or {}).get("score")
            if score is not None:
                val_pts.append((0, float(score)))
        elif kind in ("step", "slow_update"):
            row = _step_row(rec)
            steps.append(row)
            if kind == "step" and row["train"] is not None:
                train_pts.append((row["step"], float(row["train"])))
            if row["val"] is not None:
                val_pts.append((row["step"], float(row["val"])))
        elif kind == "test":
            test = rec.get("test") or {}
    best_skill = ""
    try:
        best_skill = (folder / "best_skill.md").read_text(encoding="utf-8")
    except OSError:
        pass
    return {
        "info": info,
        "steps": steps,
        "train_points": train_pts,
        "val_points": val_pts,
        "accepted_marks": [row["step"] for row in steps if row["accepted"]],
        "test": test or info.summary.get("test") or {},
        "roles": _role_rows(info.summary.get("usage") or usage_total),
        "best_skill": best_skill,
    }

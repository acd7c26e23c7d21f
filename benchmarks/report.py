"""`skillopt report` on a store of 10,000 sessions: how long the user waits for "did the rules work?".

Run: `python -m benchmarks.report --sessions 10000 --repeat 5`. Everything happens in a temporary
SKILLOPT_HOME and HOME. The store is written directly in the shape ingest and mining leave it (sessions
with their correction signals, mined families and tasks: `--families` kinds of work, about a third of the
sessions corrected, half of them after the rules' install), and the rules are real registry versions: two
lines per skill with the provenance a night records, approved and installed to Claude Code's user folder,
their install moved to the middle of the sessions' time span. Times the whole command (`skillopt report
--json` in a new process, as a user runs it) and `outcomes.report` in process; prints a Markdown table for
docs/performance.md. Target: under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

# The corrections users type, in several languages; each kind of work gets one (its rule) plus noise.
RULES = [
    ("no noqa, fix the code", "Never silence lint with # noqa; fix the code."),
    ("不要用 print，用 logging", "Use logging, not print: 不要用 print，用 logging."),
    ("use pytest fixtures, não unittest", "Write tests with pytest fixtures, not unittest."),
    ("nein, neue Einträge gehören nach oben", "New changelog Einträge go at the top (oben)."),
    ("non usare camelCase nelle chiavi", "Config keys are snake_case, never camelCase."),
]


def _median(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms ({min(samples) * 1000:.0f}–{max(samples) * 1000:.0f})"


def build(sessions: int, families: int, seed: int = 7) -> dict[str, Any]:
    """Fill the store under SKILLOPT_HOME; returns what was made."""
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.core.timeutil import to_iso, utcnow
    from skillopt_daemon.night.mining import preferences
    from skillopt_daemon.night.tasks import NightTask
    from skillopt_daemon.registry import Registry
    from skillopt_lib.skill import SkillBundle, SkillDoc

    rng = random.Random(seed)
    db = open_db()
    now = utcnow()
    start = now - timedelta(days=40)
    install_at = to_iso(now - timedelta(days=20))
    span = (now - start).total_seconds()
    session_rows, task_rows, fam_rows = [], [], []
    for f in range(families):
        fam_rows.append(
            {
                "id": f"fam-{f:04d}",
                "name": f"kind of work {f}",
                "skill_name": f"kind-{f}",
                "size": 0,
                "tools_json": '["claude-code"]',
                "projects_json": "[]",
                "checks_json": "[]",
                "rubric_json": "[]",
                "seed": 42,
                "mined_at": to_iso(now),
            }
        )
    for i in range(sessions):
        f = i % families
        at = to_iso(start + timedelta(seconds=span * i / sessions))
        corrections = []
        if rng.random() < 0.33:
            corrections.append(
                RULES[f % len(RULES)][0] if rng.random() < 0.7 else f"no, try {rng.random():.3f}"
            )
        sid = f"s-{i:06d}"
        signals = {"corrections": [{"turn_key": "t1", "text": c} for c in corrections]}
        session_rows.append(
            (i + 1, "claude-code", sid, f"/src/p{f % 7}", at, at, 1, 6, 4, json.dumps(signals), at, at)
        )
        task_rows.append(
            {
                "id": f"task-{i:012d}",
                "family_id": f"fam-{f:04d}",
                "attempt_key": f"claude-code:{sid}:t0",
                "session_pk": i + 1,
                "tool": "claude-code",
                "session_id": sid,
                "turn_key": "t0",
                "prompt": f"please do the work of kind {f}, item {i}",
                "project_path": f"/src/p{f % 7}",
                "started_at": at,
                "split": "train" if i < families * 3 and corrections else "val",
                "corrections_json": json.dumps(corrections),
            }
        )
    with db.conn:
        db.conn.executemany(
            "INSERT INTO sessions (id, tool, session_id, project_path, started_at, ended_at, has_user_turn, "
            "turn_count, tool_call_count, signals_json, first_seen_at, updated_at) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            session_rows,
        )
        db.table("task_families").insert_all(fam_rows)
        db.table("tasks").insert_all(task_rows)
    reg = Registry(db, actor="bench")
    by_family: dict[str, list[NightTask]] = {}
    for t in task_rows:
        by_family.setdefault(t["family_id"], []).append(
            NightTask(
                id=t["id"],
                prompt=t["prompt"],
                split=t["split"],
                family=t["family_id"],
                tool=t["tool"],
                repo=t["project_path"],
                session=t["session_id"],
                started_at=t["started_at"],
                corrections=json.loads(t["corrections_json"]),
            )
        )
    for f in range(families):
        name = f"kind-{f}"
        doc = SkillDoc.new(name, f"How kind {f} work is done here.", f"# kind {f}\n\nDo it well.\n")
        v1 = reg.propose(name, SkillBundle.from_doc(doc), evidence={})
        reg.approve(v1.id, targets=["claude-code:user"])
        rule, line = RULES[f % len(RULES)]
        lines = [line, f"Run the checks of kind {f} before you finish."]
        bundle = SkillBundle.from_doc(doc.with_body(f"# kind {f}\n\nDo it well.\n" + "\n".join(lines) + "\n"))
        tasks = [t for t in by_family[f"fam-{f:04d}"] if t.started_at < install_at]
        prov = preferences.provenance(lines, preferences.train_preferences(tasks), [])
        v2 = reg.propose(name, bundle, evidence={"provenance": prov, "tokens": 90_000, "cost_usd": 0.4})
        reg.approve(v2.id)
    with db.conn:  # the rules were installed half way through the sessions
        db.execute("UPDATE events SET at = ? WHERE action = 'install'", [install_at])
    db.conn.close()
    return {"sessions": sessions, "families": families, "rules": families * 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--families", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        os.environ["SKILLOPT_HOME"] = str(root / "sk")
        os.environ["HOME"] = str(root / "home")
        os.environ["CLAUDE_CONFIG_DIR"] = str(root / "home" / ".claude")
        t = time.perf_counter()
        made = build(args.sessions, args.families)
        build_s = time.perf_counter() - t
        exe = str(Path(sys.executable).parent / "skillopt")
        out: dict[str, Any] = {}
        runs: dict[str, tuple[list[float], list[float]]] = {}
        for name, argv in (("report", [exe, "report", "--json"]), ("version", [exe, "--version"])):
            wall: list[float] = []
            cpu: list[float] = []
            for _ in range(args.repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                proc = subprocess.run(argv, capture_output=True, text=True, check=True)
                wall.append(time.perf_counter() - t)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                if name == "report":
                    out = json.loads(proc.stdout)
            runs[name] = (wall, cpu)
        from skillopt_daemon.core.store import open_db
        from skillopt_daemon.night.installed import outcomes

        inproc: list[float] = []
        inproc_cpu: list[float] = []
        for _ in range(args.repeat):
            outcomes._terms.cache_clear()
            t, c = time.perf_counter(), time.process_time()
            outcomes.report(open_db())
            inproc.append(time.perf_counter() - t)
            inproc_cpu.append(time.process_time() - c)
    verdicts = {k: len(out[k]) for k in ("working", "not_working", "too_early", "stale", "contradicted")}
    print(
        f"store: {made['sessions']} sessions, {made['families']} families, {made['rules']} installed rules "
        f"(built in {build_s:.1f} s); verdicts {verdicts}"
    )
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print()
    # Wall time on a shared machine waits for a core; CPU time is what the command itself costs.
    print("| what | wall, median (min–max) | CPU, median (min–max) |")
    print("| --- | --- | --- |")
    print(
        f"| `skillopt report --json` (new process) | {_median(runs['report'][0])} | {_median(runs['report'][1])} |"
    )
    print(
        f"| `skillopt --version` (start-up, every command loaded) | {_median(runs['version'][0])} | {_median(runs['version'][1])} |"
    )
    print(f"| `outcomes.report` (in process) | {_median(inproc)} | {_median(inproc_cpu)} |")


if __name__ == "__main__":
    main()

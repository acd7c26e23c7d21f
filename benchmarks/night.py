"""Nights against the scripted server, with the real `claude` CLI as the agent (and the real `codex` for the
corpus's Codex sessions, when it is installed). Needs the pinned agent CLIs (`make agent-clis`).

`python -m benchmarks.night --corpus [--families lint,logging,…]`: a learning night on the recorded corpus
(every family by default) with no skill installed and scripted models that do not know the answer
(`benchmarks.corpus.night_world`, `skillopt_lib.testing.learning_night`); then the same night with the
corrections removed. Reports the share of families that became proposals carrying their rule, new skills
proposed, replays, tokens and wall time per family.

`python -m benchmarks.night [--tasks 20]`: the cost of one night for N recurring tasks of one family with
an installed skill (the scenario in `skillopt_lib.testing.night_scenario`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.corpus import night_world
from benchmarks.corpus.spec import FAMILIES, family
from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.learning_night import LearningNight
from skillopt_lib.testing.night_scenario import make_world, night_script, record_sessions
from skillopt_lib.testing.scripted_server import ScriptedServer


def learning_night(
    claude: Path, families: list[str], *, corrections: bool, codex: Path | None = None
) -> dict[str, Any]:
    """One night on the corpus' sessions of `families`; the figures for docs/performance.md."""
    script = LearningNight(night_world.work_kinds(families), optimizer_model=night_world.OPTIMIZER_MODEL)
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv,
    ):
        w = night_world.make_world(
            Path(tmp) / "world", srv, claude, families, corrections=corrections, codex=codex
        )
        # Caps high enough that the figures show a whole night's cost rather than where a cap stops it.
        w.configure(max_cost_usd=1000, max_tokens=100_000_000, max_replays=2000)
        t0 = time.perf_counter()
        report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
        wall = time.perf_counter() - t0
        rules = {f: family(f).rule for f in families}
        learned = set()
        for s in report["skills"]:
            if s.get("proposal_id"):
                diff = w.skillopt("diff", s["proposal_id"]).stdout
                learned |= {f for f, rule in rules.items() if rule in diff}
        spend = report["spend"]
        n = max(len(families), 1)
        return {
            "corrections": corrections,
            "families": len(families),
            "rule_bearing_share": len(learned) / n,
            "learned": sorted(learned),
            "new_skills_proposed": sum(1 for s in report["skills"] if s["new"] and s.get("proposal_id")),
            "outcomes": {s["skill"]: s["status"] for s in report["skills"]},
            "replays": spend["replays"],
            "tokens_per_family": spend["tokens"] // n,
            "wall_s": round(wall, 1),
            "wall_s_per_family": round(wall / n, 1),
            "optimizer_requests": sum(1 for r in srv.requests if r.rule in ("analyst", "drafter")),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--corpus", action="store_true", help="a learning night on the recorded corpus")
    ap.add_argument("--families", default=",".join(f.id for f in FAMILIES))
    args = ap.parse_args()
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    if args.corpus:
        fams = [f for f in args.families.split(",") if f]
        for corrections in (True, False):
            codex = Path(str(clis.codex)) if clis.codex else None
            night = learning_night(Path(str(clis.claude)), fams, corrections=corrections, codex=codex)
            print(json.dumps(night, indent=1))
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv,
    ):
        w = make_world(Path(tmp) / "world", srv, Path(clis.claude))
        t0 = time.perf_counter()
        record_sessions(w, [f"team{i}" for i in range(args.tasks)])
        t_record = time.perf_counter() - t0
        # Caps high enough that the figures show a whole night's cost rather than where a cap stops it.
        w.configure("opt-useful", max_cost_usd=1000, max_tokens=100_000_000)
        srv.clear_requests()
        t0 = time.perf_counter()
        report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
        wall = time.perf_counter() - t0
        calls = Counter("agent" if r.api == "anthropic" else "optimizer/judge" for r in srv.requests)
        (outcome,) = report["skills"]
        spend = report["spend"]
        print(
            f"tasks {args.tasks} (recorded in {t_record:.1f} s): night {report['status']}, skill {outcome['status']}"
        )
        print(
            f"replays {spend['replays']}, model calls: agent {calls['agent']}, optimizer+judge "
            f"{calls['optimizer/judge']}; tokens {spend['tokens']:,}, cost as the CLI reports it ${spend['cost_usd']:.2f}; "
            f"wall time {wall:.1f} s "
            f"({wall / max(spend['replays'], 1):.2f} s per replay)"
        )


if __name__ == "__main__":
    main()

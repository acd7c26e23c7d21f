"""The cost of one night for N recurring tasks against the scripted server:
`python -m benchmarks.night [--tasks 20]`.

Records N real `claude` sessions of one task family (the scenario in `skillopt_lib.testing.night_scenario`),
ingests them, runs one nightly cycle with the real CLI as the agent, and reports replays, model calls by
role, tokens and wall time. Needs the pinned agent CLIs (`make agent-clis`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.night_scenario import make_world, night_script, record_sessions
from skillopt_lib.testing.scripted_server import ScriptedServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=20)
    args = ap.parse_args()
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
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

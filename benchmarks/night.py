"""Nights against the scripted server, with the real `claude` CLI as the agent (and the real `codex` for the
corpus's Codex sessions, when it is installed). Needs the pinned agent CLIs (`make agent-clis`).

`python -m benchmarks.night --corpus [--kinds types,tests,…] [--sizes 4,5,6,8,12]`: a new user's first
weeks on the nights corpus's **held-out** kinds (the tuning kinds serve the tests; these are measured only
here), at the shipped defaults: only where the CLIs and models live, and the budget caps, are set. For each
family size N, one world holds the first N sessions of each kind (corrections in only some, failures
included, no skill installed); night 1; one more session of each kind arrives; night 2. Reports, by size,
the share of families with a correction that became proposals carrying their rule after one night and within
two (and which tier), replays, tokens and wall time per family. Scripted models know only what they are
shown (`benchmarks.corpus.night_world`, `tests/harness/learning_night.py`).

`python -m benchmarks.night --corpus --null`: the same nights with every correction removed and an agent
that does the work right by luck half of the time whatever the skill says (`LearningNight(noise=0.5)`), so
the optimizer can only write useless edits and replays disagree by chance: the share of families with a
proposal of each tier is the false-proposal rate at the defaults (over every kind of the corpus by default).

`python -m benchmarks.night [--tasks 20]`: the cost of one night for N recurring tasks of one family with
an installed skill (the scenario in `tests/harness/night_scenario.py`).
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
from benchmarks.corpus.load import NIGHTS, read_labels
from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.scripted_server import ScriptedServer
from tests.harness.learning_night import LearningNight
from tests.harness.night_scenario import make_world, night_script, record_sessions


def learning_nights(
    clis: ac.AgentCLIs, kinds: list[str], size: int, *, null: bool = False, added: int = 1
) -> dict[str, Any]:
    """Night 1 on the first `size` sessions of each kind, `added` more of each, night 2."""
    rules = {k: read_labels(NIGHTS).families[k]["rule"] for k in kinds}
    script = LearningNight(
        night_world.work_kinds(kinds),
        optimizer_model=night_world.OPTIMIZER_MODEL,
        noise=0.5 if null else 0.0,
        seed=size,
    )
    codex = Path(str(clis.codex)) if clis.codex else None
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv:
        w = night_world.make_world(
            Path(tmp) / "world",
            srv,
            Path(str(clis.claude)),
            kinds,
            corpus=NIGHTS,
            first=size,
            corrections=not null,
            codex=codex,
        )
        # Caps high enough that the figures show whole nights rather than where a cap stops them.
        w.configure(max_cost_usd=1000, max_tokens=500_000_000, max_replays=10_000)
        nights = []
        for night in (1, 2):
            if night == 2:
                night_world.add_sessions(w, kinds, upto=size + added)
            t0 = time.perf_counter()
            report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
            wall = time.perf_counter() - t0
            proposals = {}
            learned = {}
            for s in report["skills"]:
                if not s.get("proposal_id"):
                    continue
                proposals[s["skill"]] = s.get("tier") or "proven"
                diff = w.skillopt("diff", s["proposal_id"]).stdout
                for k, rule in rules.items():
                    if any(line.startswith("+") and rule in line for line in diff.splitlines()):
                        learned[k] = s.get("tier") or "proven"
            nights.append(
                {
                    "learned": learned,
                    "proposals": proposals,
                    "outcomes": {s["skill"]: s["status"] for s in report["skills"]},
                    "replays": report["spend"]["replays"],
                    "tokens": report["spend"]["tokens"],
                    # The input-equivalent tokens above, and the raw counts they weigh.
                    "raw_tokens": {
                        k: report["spend"].get(f"{k}_tokens")
                        for k in ("fresh", "cache_write", "cache_read", "output")
                    },
                    "wall_s": round(wall, 1),
                }
            )
    n = max(len(kinds), 1)
    one, two = nights[0], nights[1]
    within = {**two["learned"], **one["learned"]}
    out: dict[str, Any] = {
        "size": size,
        "kinds": kinds,
        "null": null,
        "nights": nights,
        "replays_per_family": (one["replays"] + two["replays"]) / n,
        "tokens_per_family": (one["tokens"] + two["tokens"]) // n,
        "wall_s_per_family": round((one["wall_s"] + two["wall_s"]) / n, 1),
    }
    if null:
        proposed = {**two["proposals"], **one["proposals"]}
        out["families_with_a_proposal"] = len(proposed)
        out["proven"] = sum(1 for t in proposed.values() if t == "proven")
        out["likely"] = sum(1 for t in proposed.values() if t == "likely")
    else:
        out["rule_bearing_night_1"] = len(one["learned"]) / n
        out["rule_bearing_within_2"] = len(within) / n
        out["proven_within_2"] = sum(1 for t in within.values() if t == "proven") / n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument(
        "--corpus", action="store_true", help="a new user's first two nights on the nights corpus"
    )
    ap.add_argument("--null", action="store_true", help="with --corpus: no corrections, a lucky agent")
    ap.add_argument("--kinds", default="", help="comma-separated kinds (default: heldout; --null: all)")
    ap.add_argument("--sizes", default="4,5,6,8,12", help="sessions of each kind before night 1")
    args = ap.parse_args()
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    if args.corpus:
        kinds = [k for k in args.kinds.split(",") if k] or night_world.corpus_kinds(
            None if args.null else "heldout"
        )
        for size in [int(x) for x in args.sizes.split(",") if x]:
            print(json.dumps(learning_nights(clis, kinds, size, null=args.null)), flush=True)
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
            f"{calls['optimizer/judge']}; tokens {spend['tokens']:,} input-equivalent (fresh "
            f"{spend.get('fresh_tokens', 0):,}, cache writes {spend.get('cache_write_tokens', 0):,}, cache reads "
            f"{spend.get('cache_read_tokens', 0):,}, output {spend.get('output_tokens', 0):,}), cost as the CLI reports it ${spend['cost_usd']:.2f}; "
            f"wall time {wall:.1f} s "
            f"({wall / max(spend['replays'], 1):.2f} s per replay)"
        )


if __name__ == "__main__":
    main()

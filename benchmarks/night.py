"""Nights against the scripted server, with the real `claude` CLI as the agent (and the real `codex` for the
corpus's Codex sessions, when it is installed). Needs the pinned agent CLIs (`make agent-clis`).

`python -m benchmarks.night --corpus [--caps api|login] [--kinds types,tests,…] [--sizes 5,6,8]`: a new user's
first two nights, **at the shipped defaults, caps included** (only where the CLIs and models live is set; the
scripted server caches prompts as the providers do). For each family size N, one home holds the first N
sessions of **every** kind of the nights corpus (corrections in only some, failures included, no skill
installed), so all kinds compete for one night's budget; night 1; one more session of each kind arrives;
night 2. Reported for the measured kinds (default: the **held-out** ones; the tuning kinds serve the tests):
the share of families with a correction that became proposals carrying their rule after one night and within
two (and which tier); and for the whole home per family: replays, input-equivalent, fresh, cache-write and
cache-read tokens, estimated dollars (replays at the CLI's own figure, optimizer and judge priced as
`AGENT_MODEL`), replays per decided family, and replays and dollars per learned rule. `--caps login` runs
as a user on the login default: no optimizer configured and yes to the night using their `claude` login,
so the night takes `claude-code-chat` against the same server and its login caps by itself. Scripted models know only what they are shown
(`testkit.corpus.night_world`, `testkit/learning_night.py`).

`python -m benchmarks.night --corpus --null`: the same nights with every correction removed and an agent
that does the work right by luck half of the time whatever the skill says (`LearningNight(noise=0.5)`), so
the optimizer can only write useless edits and replays disagree by chance: the share of families with a
proposal of each tier is the false-proposal rate at the defaults (over every kind of the corpus by default).

`python -m benchmarks.night [--tasks 20]`: the cost of one night for N recurring tasks of one family with
an installed skill (the scenario in `testkit/night_scenario.py`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import price_of
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus import night_world
from testkit.corpus.load import NIGHTS, read_labels
from testkit.learning_night import LearningNight
from testkit.night_scenario import make_world, night_script, record_sessions

# The model the pinned `claude` CLI replays with when nothing names one (its requests to the scripted server
# carry it): the list price every estimate below uses, for the optimizer and judge too, since a user on the
# login default pays for those calls at the same model (`claude-code-chat`).
AGENT_MODEL = "claude-opus-4-8"


def learning_nights(
    clis: ac.AgentCLIs,
    kinds: list[str],
    size: int,
    *,
    null: bool = False,
    added: int = 1,
    measured: list[str] | None = None,
    caps: str = "api",
) -> dict[str, Any]:
    """Night 1 on the first `size` sessions of each kind in `kinds` (all in one home, competing for one
    budget), `added` more of each, night 2, at the shipped defaults: with `caps="login"` the user configured
    no optimizer and said yes to the night using their `claude` login, so the night runs on its own default
    (`claude-code-chat`) and applies the login's caps itself. Figures are reported for the
    `measured` kinds (default: all of `kinds`)."""
    measured = measured or list(kinds)
    rules = {k: read_labels(NIGHTS).families[k]["rule"] for k in kinds}
    script = LearningNight(
        night_world.work_kinds(kinds),
        optimizer_model=night_world.OPTIMIZER_MODEL,
        noise=0.5 if null else 0.0,
        seed=size,
    )
    codex = Path(str(clis.codex)) if clis.codex else None
    price = price_of(AGENT_MODEL)
    priced = {"input": price.input, "output": price.output, "cache_read": price.cache_read}
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
        w.configure(login=caps == "login")
        for model in (night_world.OPTIMIZER_MODEL, night_world.JUDGE_MODEL):
            for field, value in priced.items():
                w.skillopt("config", "set", f"prices.{model}.{field}", str(value))
        nights = []
        for night in (1, 2):
            if night == 2:
                night_world.add_sessions(w, kinds, upto=size + added)
            t0 = time.perf_counter()
            report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
            wall = time.perf_counter() - t0
            model_of_night = report.get("model")
            proposals: dict[str, str] = {}
            learned: dict[str, str] = {}
            for s in report["skills"]:
                if not s.get("proposal_id"):
                    continue
                proposals[s["skill"]] = s.get("tier") or "proven"
                diff = w.skillopt("diff", s["proposal_id"]).stdout
                for k, rule in rules.items():
                    if any(line.startswith("+") and rule in line for line in diff.splitlines()):
                        learned[k] = s.get("tier") or "proven"
            spend = report["spend"]
            nights.append(
                {
                    "learned": learned,
                    "proposals": proposals,
                    "outcomes": {s["skill"]: s["status"] for s in report["skills"]},
                    "status": report.get("status"),
                    "stopped": spend.get("stopped") or spend.get("exceeded"),
                    "replays": spend["replays"],
                    "tokens": spend["tokens"],
                    "fresh_tokens": spend.get("fresh_tokens", 0),
                    "cache_write_tokens": spend.get("cache_write_tokens", 0),
                    "cache_read_tokens": spend.get("cache_read_tokens", 0),
                    "output_tokens": spend.get("output_tokens", 0),
                    "cost_usd": spend.get("cost_usd", 0.0),
                    "wall_s": round(wall, 1),
                }
            )
        models = sorted({str((r.body or {}).get("model")) for r in srv.requests if r.api == "anthropic"})
    one, two = nights[0], nights[1]
    within = {**two["learned"], **one["learned"]}
    n_all = max(len(kinds), 1)
    n = max(len(measured), 1)

    def total(key: str) -> float:
        return float(one[key]) + float(two[key])

    decided = {
        k
        for night in nights
        for k, status in night["outcomes"].items()
        if status not in ("pending", "waited")
    }
    out: dict[str, Any] = {
        "size": size,
        "kinds": kinds,
        "measured": measured,
        "caps": caps,
        # What the night chose and capped itself with (backend, caps and the settings behind them).
        "night_model": model_of_night,
        "priced_as": AGENT_MODEL,
        "agent_models_seen": models,
        "null": null,
        "nights": nights,
        # Per family of the home (every kind competed for the same budget).
        "replays_per_family": total("replays") / n_all,
        "tokens_per_family": int(total("tokens") // n_all),
        "fresh_tokens_per_family": int(total("fresh_tokens") // n_all),
        "cache_write_tokens_per_family": int(total("cache_write_tokens") // n_all),
        "cache_read_tokens_per_family": int(total("cache_read_tokens") // n_all),
        "usd_per_family_est": round(total("cost_usd") / n_all, 3),
        "replays_per_decided_family": round(total("replays") / max(len(decided), 1), 1),
        "wall_s_per_family": round((one["wall_s"] + two["wall_s"]) / n_all, 1),
    }
    if null:
        proposed = {**two["proposals"], **one["proposals"]}
        out["families_with_a_proposal"] = len(proposed)
        out["proven"] = sum(1 for t in proposed.values() if t == "proven")
        out["likely"] = sum(1 for t in proposed.values() if t == "likely")
    else:
        learned_all = len(within)
        out["rule_bearing_night_1"] = sum(1 for k in measured if k in one["learned"]) / n
        out["rule_bearing_within_2"] = sum(1 for k in measured if k in within) / n
        out["proven_within_2"] = sum(1 for k in measured if within.get(k) == "proven") / n
        out["rule_bearing_within_2_all_kinds"] = learned_all / n_all
        out["usd_per_rule_est"] = round(total("cost_usd") / learned_all, 3) if learned_all else None
        out["replays_per_rule"] = round(total("replays") / learned_all, 1) if learned_all else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument(
        "--corpus", action="store_true", help="a new user's first two nights on the nights corpus"
    )
    ap.add_argument("--null", action="store_true", help="with --corpus: no corrections, a lucky agent")
    ap.add_argument(
        "--kinds",
        default="",
        help="comma-separated kinds measured (default: the held-out ones; --null: all); the home always "
        "holds every kind of the corpus",
    )
    ap.add_argument("--sizes", default="5,6,8", help="sessions of each kind before night 1")
    ap.add_argument(
        "--caps",
        default="api",
        choices=["api", "login"],
        help="api: an optimizer configured with a key; login: the login default, with the caps it brings",
    )
    args = ap.parse_args()
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    if args.corpus:
        every = night_world.corpus_kinds(None)
        measured = [k for k in args.kinds.split(",") if k] or night_world.corpus_kinds(
            None if args.null else "heldout"
        )
        for size in [int(x) for x in args.sizes.split(",") if x]:
            result = learning_nights(clis, every, size, null=args.null, measured=measured, caps=args.caps)
            print(json.dumps(result), flush=True)
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(night_script(), expected_key=ac.DEFAULT_API_KEY) as srv,
    ):
        w = make_world(Path(tmp) / "world", srv, Path(clis.claude))
        t0 = time.perf_counter()
        record_sessions(w, [f"team{i}" for i in range(args.tasks)])
        t_record = time.perf_counter() - t0
        w.configure("opt-useful")
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

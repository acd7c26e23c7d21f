"""How often do the acceptance gates accept edits with no effect, and how often real improvements?

    python -m benchmarks.gate                    # the table in docs/performance.md (about 2 minutes)
    python -m benchmarks.gate --trials 200 --json

A simulated noisy agent: each validation item passes with its own probability, drawn from Beta(a, b) (default
a = b = 0.3: most items are reliably passed or failed, a few are coin flips, as with real agents). An edit
"worth +k points" shifts every item's log-odds by the same amount, chosen so the mean pass rate rises by k
points; an edit with no effect leaves the probabilities alone. Both gates run through `skillopt_lib.gate.Gate`,
the code the trainer uses, with a measure function that samples the simulated agent.

Reported per gate, validation size n and repeats r: the false-accept rate (effect 0), the acceptance rate of
+5, +10 and +20 point edits, and agent calls per decision. The strict gate compares against a cached incumbent
score (as published), so it spends n*r calls per decision; the paired gate re-measures the incumbent, 2*n*r.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from typing import Any

from skillopt_lib.gate import Gate, GateConfig, ScoreTable
from skillopt_lib.skill import SkillBundle

SIZES = (17, 50, 100)
REPEATS = (1, 3)
EFFECTS = (0, 5, 10, 20)
_INCUMBENT = SkillBundle.from_text("---\nname: sim\ndescription: incumbent\n---\nincumbent\n")
_CANDIDATE = SkillBundle.from_text("---\nname: sim\ndescription: candidate\n---\ncandidate\n")


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def shifted(ps: list[float], points: float) -> list[float]:
    """Probabilities after a log-odds shift that raises the mean pass rate by `points` (capped at 1)."""
    if points == 0:
        return list(ps)
    target = min(sum(ps) / len(ps) + points / 100, 0.999)
    lo, hi = 0.0, 20.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if sum(_sigmoid(_logit(p) + mid) for p in ps) / len(ps) < target:
            lo = mid
        else:
            hi = mid
    return [_sigmoid(_logit(p) + hi) for p in ps]


def decide(
    gate: Gate, ps: list[float], qs: list[float], repeats: int, rng: random.Random
) -> tuple[bool, int]:
    def sample(probs: list[float], r: int) -> ScoreTable:
        return {f"v{i}": [1.0 if rng.random() < p else 0.0 for _ in range(r)] for i, p in enumerate(probs)}

    def measure(skill: SkillBundle, r: int) -> ScoreTable:
        return sample(qs if skill is _CANDIDATE else ps, r)

    # The strict gate's cached incumbent score is one earlier, independent measurement.
    cached = sample(ps, repeats) if gate.cfg.kind == "strict" else None
    decision, _, _ = gate.decide(measure, _CANDIDATE, _INCUMBENT, cached)
    return decision.accepted, int(decision.stats["agent_runs"])


def run(trials: int, a: float, b: float, seed: int, confidence: float) -> list[dict[str, Any]]:
    rows = []
    for kind in ("strict", "paired"):
        for n in SIZES:
            for r in REPEATS:
                gate = Gate(GateConfig(kind=kind, repeats=r, confidence=confidence))  # type: ignore[arg-type]
                row: dict[str, Any] = {"gate": kind, "n": n, "repeats": r}
                for effect in EFFECTS:
                    rng = random.Random(f"{seed}:{kind}:{n}:{r}:{effect}")
                    accepted = 0
                    calls = 0
                    for _ in range(trials):
                        ps = [rng.betavariate(a, b) for _ in range(n)]
                        ok, runs = decide(gate, ps, shifted(ps, effect), r, rng)
                        accepted += ok
                        calls += runs
                    row[f"accept_{effect}"] = accepted / trials
                    row["calls_per_decision"] = calls / trials
                rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = "| gate | n | repeats | false accepts (0) | +5 | +10 | +20 | agent calls / decision |"
    out = [head, "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        out.append(
            f"| {row['gate']} | {row['n']} | {row['repeats']} | {row['accept_0']:.1%} | {row['accept_5']:.1%} | "
            f"{row['accept_10']:.1%} | {row['accept_20']:.1%} | {row['calls_per_decision']:.0f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=1000, help="decisions per cell")
    parser.add_argument("--beta", default="0.3,0.3", help="a,b of the Beta distribution of item pass rates")
    parser.add_argument("--confidence", type=float, default=0.95, help="the paired gate's level")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)
    a, b = (float(x) for x in args.beta.split(","))
    started = time.monotonic()
    rows = run(args.trials, a, b, args.seed, args.confidence)
    if args.json:
        print(json.dumps({"trials": args.trials, "beta": [a, b], "rows": rows}, indent=2))
    else:
        print(table(rows))
        print(
            f"\n{args.trials} decisions per cell, item pass rates ~ Beta({a:g}, {b:g}), "
            f"paired confidence {args.confidence:g}, {time.monotonic() - started:.0f}s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

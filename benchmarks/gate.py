"""How often do the acceptance gates accept edits with no effect, how often real ones, and at what cost?

    python -m benchmarks.gate                     # the table in docs/performance.md (a few minutes, 2 workers)
    python -m benchmarks.gate --trials 300 --json  # quicker, machine-readable

A simulated agent runs validation items; both gates run through `skillopt_lib.gate.Gate`, the code the trainer
uses, with a measure function that samples the simulated agent. Noise models (`MODELS`):

- `beta0.3`, `beta0.5`, `beta2`: independent runs; each item's pass rate is drawn from Beta(a, a) (0.3: most
  items reliably pass or fail; 2: most items are near coin flips).
- `corr0.8`: Beta(0.5, 0.5) items and near-deterministic runs: the correlation between two runs of the same
  item and skill is 0.8 (each run repeats the item's first outcome for this skill with probability sqrt(0.8),
  else is drawn afresh), and the two skills' outcomes are independent.
- `drift`: Beta(0.5, 0.5) items and a shared shift per batch: every call to the measure function moves all its
  runs' log-odds by one N(0, 0.5^2) draw (a provider's slow hour). The fixed-repeat gate measures incumbent and
  candidate in separate calls; the sequential gate's calls hold interleaved pairs.
- `reshuffle`: Beta(0.3, 0.3) items; the "edit" gives the candidate a random permutation of the incumbent's
  item pass rates (some items fixed, others broken, no net effect). A null model only.

Effects: `0` (no effect: the candidate's pass rates equal the incumbent's), `+10` (every item's log-odds shifted
so the mean pass rate rises by 10 points) and `rule` (a learned rule for a family of tasks the incumbent fails
more often than not, p = min(x, 1 - x) with x from the model's Beta, that turns 75% of the failures into passes:
q = p + 0.75 (1 - p)). Cross-night mode: a candidate left pending is carried to the next night, which brings n
new validation items of the same family (new draws from the same model); `nights` caps how many.

Gates: `sequential` (the default: interleaved pairs, adaptive repeats capped at 3 per arm and item, betting
e-value) and `fixed` (the earlier default, `paired` with 3 repeats: two separate batches, t bound plus sign-flip
test plus the single-flip veto). Seeds: thresholds were chosen on seeds 1 and 2; the documented table is seed
42, not used while choosing.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from skillopt_lib.gate import Arm, Gate, GateConfig, PairedEvidence, Request, ScoreTable
from skillopt_lib.skill import SkillBundle

SIZES = (4, 6, 8, 12, 20, 50)
MODELS: dict[str, dict[str, Any]] = {
    "beta0.3": {"beta": 0.3},
    "beta0.5": {"beta": 0.5},
    "beta2": {"beta": 2.0},
    "corr0.8": {"beta": 0.5, "rho": 0.8},
    "drift": {"beta": 0.5, "drift": 0.5},
    "reshuffle": {"beta": 0.3, "reshuffle": True},
}
CAP = 3
CROSS_NIGHTS = 2
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


class SimAgent:
    """Validation items of one family under one noise model; `run` is one agent run of one arm."""

    def __init__(
        self, model: dict[str, Any], effect: str, n: int, rng: random.Random, prefix: str = "v"
    ) -> None:
        a = model["beta"]
        ps = [rng.betavariate(a, a) for _ in range(n)]
        if model.get("reshuffle"):
            qs = list(ps)
            rng.shuffle(qs)
        elif effect == "rule":
            ps = [
                min(p, 1 - p) for p in ps
            ]  # the family's tasks: ones the incumbent fails more often than not
            qs = [p + 0.75 * (1 - p) for p in ps]
        else:
            qs = shifted(ps, float(effect))
        self.ids = [f"{prefix}{i}" for i in range(n)]
        self.logits = {
            "incumbent": dict(zip(self.ids, map(_logit, ps), strict=True)),
            "candidate": dict(zip(self.ids, map(_logit, qs), strict=True)),
        }
        self.keep = math.sqrt(model["rho"]) if model.get("rho") else 0.0
        self.drift = float(model.get("drift", 0.0))
        self.first: dict[tuple[str, str], float] = {}
        self.rng = rng

    def add(self, other: SimAgent) -> None:
        self.ids += other.ids
        for arm in ("incumbent", "candidate"):
            self.logits[arm].update(other.logits[arm])

    def run(self, item: str, arm: str, shift: float) -> float:
        key = (item, arm)
        if self.keep and key in self.first and self.rng.random() < self.keep:
            return self.first[key]
        out = 1.0 if self.rng.random() < _sigmoid(self.logits[arm][item] + shift) else 0.0
        self.first.setdefault(key, out)
        return out

    def shift(self) -> float:
        return self.rng.gauss(0.0, self.drift) if self.drift else 0.0

    def measure_pairs(self, requests: list[Request]) -> list[float]:
        s = self.shift()
        return [self.run(item, arm, s) for item, arm in requests]

    def measure_batch(self, skill: SkillBundle, repeats: int) -> ScoreTable:
        arm: Arm = "candidate" if skill is _CANDIDATE else "incumbent"
        s = self.shift()
        return {i: [self.run(i, arm, s) for _ in range(repeats)] for i in self.ids}


def sequential(
    model: dict[str, Any], effect: str, n: int, nights: int, rng: random.Random
) -> tuple[int, int]:
    """(night of acceptance or 0, agent runs spent) for one candidate carried up to `nights` nights."""
    gate = Gate(GateConfig(kind="sequential", repeats=CAP))
    agent = SimAgent(model, effect, n, rng, "n0.")
    evidence: PairedEvidence | None = None
    runs = 0
    for night in range(1, nights + 1):
        if night > 1:
            agent.add(SimAgent(model, effect, n, rng, f"n{night}."))
        d = gate.decide_paired(agent.measure_pairs, agent.ids, evidence)
        runs += int(d.stats["agent_runs"])
        if d.accepted:
            return night, runs
        if not d.pending:
            return 0, runs
        evidence = d.evidence
    return 0, runs


def fixed(model: dict[str, Any], effect: str, n: int, rng: random.Random) -> tuple[bool, int]:
    gate = Gate(GateConfig(kind="paired", repeats=CAP, confidence=0.95))
    agent = SimAgent(model, effect, n, rng)
    decision, _, _ = gate.decide(agent.measure_batch, _CANDIDATE, _INCUMBENT, None)
    return decision.accepted, int(decision.stats["agent_runs"])


def cell(args: tuple[str, int, int, int]) -> dict[str, Any]:
    """All figures of one (noise model, n): the unit of work handed to a worker process."""
    name, n, trials, seed = args
    model = MODELS[name]
    row: dict[str, Any] = {"model": name, "n": n}

    def rng(tag: str) -> random.Random:
        return random.Random(f"{seed}:{name}:{n}:{tag}")

    r = rng("null")
    results = [sequential(model, "0", n, CROSS_NIGHTS, r) for _ in range(trials)]
    row["fa_1"] = sum(night == 1 for night, _ in results) / trials
    row["fa_carried"] = sum(night > 0 for night, _ in results) / trials
    row["fa_runs"] = sum(runs for _, runs in results) / trials
    r = rng("null-fixed")
    row["fa_fixed"] = sum(fixed(model, "0", n, r)[0] for _ in range(trials)) / trials
    if model.get("reshuffle"):
        return row
    r = rng("+10")
    results = [sequential(model, "10", n, CROSS_NIGHTS, r) for _ in range(trials)]
    row["p10"] = sum(night == 1 for night, _ in results) / trials
    row["p10_carried"] = sum(night > 0 for night, _ in results) / trials
    row["p10_runs"] = sum(runs for _, runs in results) / trials
    r = rng("+10-fixed")
    out = [fixed(model, "10", n, r) for _ in range(trials)]
    row["p10_fixed"] = sum(ok for ok, _ in out) / trials
    row["fixed_runs"] = sum(runs for _, runs in out) / trials
    r = rng("rule")
    results = [sequential(model, "rule", n, 2, r) for _ in range(trials)]
    row["rule_1"] = sum(night == 1 for night, _ in results) / trials
    row["rule_2"] = sum(night > 0 for night, _ in results) / trials
    row["rule_runs"] = sum(runs for _, runs in results) / trials
    r = rng("rule-fixed")
    row["rule_fixed"] = sum(fixed(model, "rule", n, r)[0] for _ in range(trials)) / trials
    return row


def run(trials: int, seed: int, workers: int, models: list[str], sizes: list[int]) -> list[dict[str, Any]]:
    jobs = [(m, n, trials, seed) for m in models for n in sizes]
    if workers <= 1:
        return [cell(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(cell, jobs))


def _pct(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.1%}" if key in row else "–"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| noise | n | false acc. 1 night | false acc. ≤2 nights | fixed: false acc. | +10 1 night "
        "| +10 ≤2 nights | fixed: +10 | rule 1 night | rule ≤2 nights | fixed: rule | runs, no effect "
        "| runs +10 | runs rule | fixed: runs |"
    )
    out = [head, "|" + "---|" * 15]
    for row in rows:
        runs = f"{row['fa_runs']:.0f} | " + (
            f"{row['p10_runs']:.0f} | {row['rule_runs']:.0f} | {row['fixed_runs']:.0f}"
            if "p10_runs" in row
            else f"– | – | {2 * CAP * row['n']}"
        )
        out.append(
            f"| {row['model']} | {row['n']} | {_pct(row, 'fa_1')} | {_pct(row, 'fa_carried')} | "
            f"{_pct(row, 'fa_fixed')} | {_pct(row, 'p10')} | {_pct(row, 'p10_carried')} | {_pct(row, 'p10_fixed')} | {_pct(row, 'rule_1')} | "
            f"{_pct(row, 'rule_2')} | {_pct(row, 'rule_fixed')} | {runs} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=2000, help="decisions per cell")
    parser.add_argument(
        "--seed", type=int, default=42, help="42 for the report; 1 and 2 were used for tuning"
    )
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated noise models")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated validation sizes")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown noise model(s): {', '.join(unknown)}")
    sizes = [int(x) for x in args.sizes.split(",") if x]
    started = time.monotonic()
    rows = run(args.trials, args.seed, args.workers, models, sizes)
    if args.json:
        print(json.dumps({"trials": args.trials, "seed": args.seed, "rows": rows}, indent=2))
    else:
        print(table(rows))
        print(
            f"\n{args.trials} decisions per cell, seed {args.seed}, {time.monotonic() - started:.0f}s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
q = p + 0.75 (1 - p)), and `skew` (`--nightly` only: harm hidden in a count of wins; a fifth of the items
break, the candidate always failing them, and the rest gain 2.5 points, so the mean pass rate falls by about
8 points). Cross-night mode: a candidate left pending is carried to the next night, which brings n
new validation items of the same family (new draws from the same model); `nights` caps how many.

Gates: `night` is the nightly cycle's gate exactly as the shipped settings build it
(`skillopt_daemon.night.learning.context.night_gate(NightSettings())`: the anytime-valid e-value test, proven at
confidence 0.95, a `likely` tier at 0.90, one pair per item, the first
candidate's 0.8 share of the error rate); `library` is `GateConfig()`, the library's default for training runs
(exact sign-flip test spending p <= 1/32, then 3/160, over two sessions); `fixed` the earlier fixed-repeat
`paired` gate. Seeds: thresholds were chosen on seeds 1 and 2; the documented table is seed 42.

`--nightly` measures the night's gate on a new user's families (`FAMILY_SIZES`: one task teaches, the rest
validate) over `NIGHTS` nights, each bringing `--per-night` new validation items of the family (0: a night
2 with nothing new), and with near-duplicate clusters (`--cluster 3`: each request has near-copies that the
agent answers alike; the night's gate counts a cluster once, the library's counts every copy). `--merge`
says how the copies reach the gate: in one group (`mining`, the default), each in its own group (`none`:
one-word variants mining did not merge, the near-copy noise model), or as the night groups them
(`text`: each request has a random 8-word text and its copies one word changed, grouped by
`night/mining/nearcopies.py`: tonight's copies among themselves, as asked of one tree, and later nights' against
the fingerprints the evidence keeps).

`--noharm` measures the night's no-harm check before user scope (`night/learning/noharm.py`) as the night runs it: a
sample of up to `noharm.SAMPLE_GROUPS` groups of other repositories' held-out tasks (`--sizes`: how many the
other repositories hold), one interleaved pair each under the night's gate (without any skill, with the
rule), both-failed pairs uninformative, and `noharm.judge`'s verdict. Effects on that unrelated work: `-10`
(harmful: the mean pass rate falls by 10 points), `skew` (harm hidden in a count of wins, as above), `0`
(neutral) and `+10` (helpful). A harmful edit let into user scope is the error to keep small; a neutral or
helpful one kept in project scope is lost power (it still installs where it was learned).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from skillopt_daemon.core.config import NightSettings
from skillopt_daemon.night.learning import noharm
from skillopt_daemon.night.learning.context import night_gate
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
SKEW_BROKEN, SKEW_HELP = 0.2, 2.5  # the `skew` effect: share of items broken, points the others gain
# Requests of the near-copy model: REQUEST_WORDS words drawn from a vocabulary of work words.
VOCABULARY = [f"w{i}" for i in range(400)]
REQUEST_WORDS = 8
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
        self,
        model: dict[str, Any],
        effect: str,
        n: int,
        rng: random.Random,
        prefix: str = "v",
        cluster: int = 1,
        merged: bool = True,
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
        elif effect == "skew":
            # harm hidden in a count of wins: a fifth of the items break (the candidate always fails them), the
            # rest gain 2.5 points; with pass rates averaging one half the mean falls by 0.2 x 0.5 - 0.8 x 0.025
            broken = [rng.random() < SKEW_BROKEN for _ in ps]
            rest = shifted([p for p, b in zip(ps, broken, strict=True) if not b] or [0.5], SKEW_HELP)
            help_ = iter(rest)
            qs = [0.0 if b else next(help_) for b in broken]
        elif float(effect) < 0:  # harm: the mirror image of a gain, the failures' log-odds raised
            qs = [1 - q for q in shifted([1 - p for p in ps], -float(effect))]
        else:
            qs = shifted(ps, float(effect))
        # `cluster` copies of each request: near-duplicates the agent answers alike (they share outcomes)
        self.ids = [f"{prefix}{i}.{c}" for i in range(n) for c in range(cluster)]
        self.clusters = {iid: iid.rsplit(".", 1)[0] for iid in self.ids}
        self.answers = dict(self.clusters)  # copies the agent answers alike
        if not merged:
            # near-copies mining did not merge: one-word variants of one request, each its own group
            self.clusters = {iid: iid for iid in self.ids}
        self.texts: dict[str, str] = {}
        for i in range(n):
            words = [rng.choice(VOCABULARY) for _ in range(REQUEST_WORDS)]
            for c in range(cluster):
                variant = list(words)
                if c:  # a one-word variant of the request
                    variant[rng.randrange(len(variant))] = rng.choice(VOCABULARY)
                self.texts[f"{prefix}{i}.{c}"] = " ".join(variant)
        self.logits = {
            "incumbent": {iid: _logit(ps[i // cluster]) for i, iid in enumerate(self.ids)},
            "candidate": {iid: _logit(qs[i // cluster]) for i, iid in enumerate(self.ids)},
        }
        self.count: dict[tuple[str, str], int] = {}
        self.shared: dict[tuple[str, str, int], float] = {}
        self.keep = math.sqrt(model["rho"]) if model.get("rho") else 0.0
        self.drift = float(model.get("drift", 0.0))
        self.first: dict[tuple[str, str], float] = {}
        self.rng = rng

    def add(self, other: SimAgent) -> None:
        self.ids += other.ids
        self.clusters.update(other.clusters)
        self.answers.update(other.answers)
        self.texts.update(other.texts)
        for arm in ("incumbent", "candidate"):
            self.logits[arm].update(other.logits[arm])

    def run(self, item: str, arm: str, shift: float) -> float:
        k = self.count.get((item, arm), 0)
        self.count[(item, arm)] = k + 1
        shared = (self.answers[item], arm, k)
        if shared in self.shared:  # a near-copy of a request already run: the same answer
            return self.shared[shared]
        out = self._draw(item, arm, shift)
        self.shared[shared] = out
        return out

    def _draw(self, item: str, arm: str, shift: float) -> float:
        key = (item, arm)
        if self.keep and key in self.first and self.rng.random() < self.keep:
            return self.first[key]
        out = 1.0 if self.rng.random() < _sigmoid(self.logits[arm][item] + shift) else 0.0
        self.first.setdefault(key, out)
        return out

    def shift(self) -> float:
        return self.rng.gauss(0.0, self.drift) if self.drift else 0.0

    def measure_pairs(self, requests: Sequence[Request]) -> list[float]:
        s = self.shift()
        return [self.run(item, arm, s) for item, arm in requests]

    def measure_batch(self, skill: SkillBundle, repeats: int) -> ScoreTable:
        arm: Arm = "candidate" if skill is _CANDIDATE else "incumbent"
        s = self.shift()
        return {i: [self.run(i, arm, s) for _ in range(repeats)] for i in self.ids}


def sequential(
    model: dict[str, Any], effect: str, n: int, nights: int, rng: random.Random
) -> tuple[int, int]:
    """(night of acceptance or 0, agent runs spent) for one candidate carried up to `nights` nights, each
    bringing n new items: the library's default gate."""
    night, _, runs = carried(GateConfig(kind="sequential", repeats=CAP), model, effect, [n] * nights, rng)
    return night, runs


NIGHT_GATE = night_gate(NightSettings())
FAMILY_SIZES = (4, 5, 6, 8, 12)
NIGHTS = 4


def carried(
    cfg: GateConfig,
    model: dict[str, Any],
    effect: str,
    schedule: list[int],
    rng: random.Random,
    cluster: int = 1,
    merge: str = "mining",
) -> tuple[int, str | None, int]:
    """(night decided or 0, tier, agent runs) for one candidate: night k brings schedule[k] new requests
    (night 1's are the family's validation tasks), each with `cluster` near-copies. `merge`: `mining` (the
    copies arrive in one group), `none` (each copy its own group, as when mining does not merge one-word
    variants) or `text` (the same, then grouped by the night's near-copy check, `night/mining/nearcopies.py`)."""
    gate = Gate(cfg)
    merged = merge == "mining"
    agent = SimAgent(model, effect, schedule[0], rng, "n0.", cluster, merged)
    share = cfg.candidate_share(0) if cfg.test == "e-value" else 1.0
    evidence: PairedEvidence | None = PairedEvidence(share=share)
    runs = 0
    for night, new in enumerate(schedule, 1):
        if night > 1 and new:
            agent.add(SimAgent(model, effect, new, rng, f"n{night}.", cluster, merged))
        clusters = _text_clusters(agent, evidence) if merge == "text" else agent.clusters
        d = gate.decide_paired(agent.measure_pairs, agent.ids, evidence, clusters=clusters)
        if merge == "text" and d.evidence is not None:
            _keep_fingerprints(agent, d.evidence)
        runs += int(d.stats["agent_runs"])
        if d.accepted:
            return night, d.tier or "proven", runs
        if not d.pending:
            return 0, None, runs
        evidence = d.evidence
    return 0, None, runs


def _text_clusters(agent: SimAgent, evidence: PairedEvidence | None) -> dict[str, str]:
    """The validation items' groups after the night's near-copy check, as training applies it."""
    from skillopt_daemon.night.mining.nearcopies import regroup
    from skillopt_daemon.night.tasks import NightTask

    tasks = [NightTask(id=i, prompt=agent.texts[i], split="val", group=agent.clusters[i]) for i in agent.ids]
    return {t.id: t.group_key for t in regroup(tasks, evidence)}


def _keep_fingerprints(agent: SimAgent, evidence: PairedEvidence) -> None:
    from skillopt_daemon.night.mining.nearcopies import fingerprint

    for item in evidence.pairs:
        evidence.fingerprints.setdefault(item, fingerprint(agent.texts[item]))


def nightly_cell(args: tuple[str, str, int, int, int, int, int, str]) -> dict[str, Any]:
    """A new user's family of `size` sessions (one teaches, size - 1 validate) under the night's gate (or the
    library's, for comparison), over NIGHTS nights bringing `per_night` new requests each."""
    gate_name, name, size, per_night, cluster, trials, seed, merge = args
    cfg = NIGHT_GATE if gate_name == "night" else GateConfig()
    model = MODELS[name]
    n = size - 1
    schedule = [n] + [per_night] * (NIGHTS - 1)
    row: dict[str, Any] = {
        "gate": gate_name, "model": name, "size": size, "per_night": per_night, "cluster": cluster,
        "merge": merge,
    }  # fmt: skip

    def sims(effect: str) -> list[tuple[int, str | None, int]]:
        r = random.Random(f"{seed}:{gate_name}:{name}:{size}:{per_night}:{cluster}:{effect}")
        return [carried(cfg, model, effect, schedule, r, cluster, merge) for _ in range(trials)]

    null = sims("0")
    row["fp_proven_1"] = sum(night == 1 and tier == "proven" for night, tier, _ in null) / trials
    row["fp_proven"] = sum(night > 0 and tier == "proven" for night, tier, _ in null) / trials
    row["fp_any"] = sum(night > 0 for night, _, _ in null) / trials
    row["null_runs"] = sum(runs for _, _, runs in null) / trials
    if not model.get("reshuffle"):
        skew = sims("skew")
        row["fp_skew"] = sum(night > 0 for night, _, _ in skew) / trials
        rule = sims("rule")
        row["rule_1"] = sum(night == 1 for night, _, _ in rule) / trials
        row["rule_proven_1"] = sum(night == 1 and tier == "proven" for night, tier, _ in rule) / trials
        row["rule_2"] = sum(0 < night <= 2 for night, _, _ in rule) / trials
        row["rule_proven_2"] = sum(0 < night <= 2 and tier == "proven" for night, tier, _ in rule) / trials
        row["rule_runs"] = sum(runs for _, _, runs in rule) / trials
    return row


def nightly_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| gate | noise | family | new/night | copies | false: proven night 1 | false: proven ≤4 nights "
        "| false: any tier ≤4 nights | skewed harm: any tier ≤4 nights | rule night 1 (proven) "
        "| rule ≤2 nights (proven) | runs, no effect | runs, rule |"
    )
    out = [head, "|" + "---|" * 13]
    for r in rows:
        rule1 = f"{_pct(r, 'rule_1')} ({_pct(r, 'rule_proven_1')})" if "rule_1" in r else "–"
        rule2 = f"{_pct(r, 'rule_2')} ({_pct(r, 'rule_proven_2')})" if "rule_2" in r else "–"
        rule_runs = f"{r['rule_runs']:.0f}" if "rule_runs" in r else "–"
        out.append(
            f"| {r['gate']} | {r['model']} | {r['size']} | {r['per_night']} | {r['cluster']} | "
            f"{_pct(r, 'fp_proven_1')} | {_pct(r, 'fp_proven')} | {_pct(r, 'fp_any')} | {_pct(r, 'fp_skew')} | "
            f"{rule1} | {rule2} | "
            f"{r['null_runs']:.0f} | {rule_runs} |"
        )
    return "\n".join(out)


NOHARM_EFFECTS = ("-10", "skew", "0", "10")
NOHARM_SIZES = (2, 4, 8, 20)


def noharm_check(
    cfg: GateConfig, model: dict[str, Any], effect: str, groups: int, rng: random.Random
) -> tuple[bool, int]:
    """(user scope kept, agent runs) for one rule whose effect on other repositories' work is `effect`, with
    `groups` groups of that work held out: the night's sample (at most `noharm.SAMPLE_GROUPS`), one decision."""
    n = min(groups, noharm.SAMPLE_GROUPS)
    agent = SimAgent(model, effect, n, rng, "o")
    decision = Gate(cfg).decide_paired(agent.measure_pairs, agent.ids, clusters=agent.clusters)
    return noharm.judge(decision).ok, int(decision.stats["agent_runs"])


def noharm_cell(args: tuple[str, int, int, int]) -> dict[str, Any]:
    """The no-harm check's user-scope rate per effect for one (noise model, groups held out elsewhere)."""
    name, groups, trials, seed = args
    model = MODELS[name]
    row: dict[str, Any] = {"model": name, "groups": groups, "sample": min(groups, noharm.SAMPLE_GROUPS)}
    for effect in NOHARM_EFFECTS:
        r = random.Random(f"{seed}:noharm:{name}:{groups}:{effect}")
        out = [noharm_check(NIGHT_GATE, model, effect, groups, r) for _ in range(trials)]
        row[f"user_{effect}"] = sum(ok for ok, _ in out) / trials
        row[f"runs_{effect}"] = sum(runs for _, runs in out) / trials
    return row


def noharm_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| noise | groups elsewhere (sampled) | user scope: harmful −10 | user scope: skewed harm "
        "| user scope: neutral | user scope: helpful +10 | replays per proposal |"
    )
    out = [head, "|" + "---|" * 7]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['groups']} ({r['sample']}) | {_pct(r, 'user_-10')} | {_pct(r, 'user_skew')} | "
            f"{_pct(r, 'user_0')} | {_pct(r, 'user_10')} | {r['runs_0']:.0f} |"
        )
    return "\n".join(out)


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
    parser.add_argument(
        "--sizes", default="", help="comma-separated validation sizes (--nightly: family sizes, 4,5,6,8,12)"
    )
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    parser.add_argument(
        "--nightly", action="store_true", help="the night's gate on a new user's families (see the docstring)"
    )
    parser.add_argument(
        "--noharm", action="store_true", help="the no-harm check before user scope (see the docstring)"
    )
    parser.add_argument("--per-night", type=int, default=1, help="--nightly: new requests per later night")
    parser.add_argument("--cluster", type=int, default=1, help="--nightly: near-copies of each request")
    parser.add_argument("--gates", default="night,library", help="--nightly: gates to compare")
    parser.add_argument(
        "--merge",
        default="mining",
        choices=("mining", "none", "text"),
        help="--nightly, with --cluster: copies in one group (mining), each its own (none), or grouped by "
        "the night's near-copy check (text)",
    )
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown noise model(s): {', '.join(unknown)}")
    default_sizes = NOHARM_SIZES if args.noharm else FAMILY_SIZES if args.nightly else SIZES
    sizes = [int(x) for x in args.sizes.split(",") if x] or list(default_sizes)
    started = time.monotonic()
    if args.noharm:
        models = [m for m in models if not MODELS[m].get("reshuffle")]
        noharm_jobs = [(m, size, args.trials, args.seed) for m in models for size in sizes]
        with ProcessPoolExecutor(max(1, args.workers)) as pool:
            noharm_rows = list(pool.map(noharm_cell, noharm_jobs))
        if args.json:
            print(json.dumps({"trials": args.trials, "seed": args.seed, "rows": noharm_rows}, indent=2))
        else:
            print(noharm_table(noharm_rows))
            print(
                f"\n{args.trials} rules per cell, seed {args.seed}, {time.monotonic() - started:.0f}s",
                file=sys.stderr,
            )
        return 0
    if args.nightly:
        jobs = [
            (g, m, size, args.per_night, args.cluster, args.trials, args.seed, args.merge)
            for g in args.gates.split(",")
            for m in models
            for size in sizes
        ]
        with ProcessPoolExecutor(max(1, args.workers)) as pool:
            nightly_rows = list(pool.map(nightly_cell, jobs))
        if args.json:
            print(json.dumps({"trials": args.trials, "seed": args.seed, "rows": nightly_rows}, indent=2))
        else:
            print(nightly_table(nightly_rows))
            print(
                f"\n{args.trials} families per cell, seed {args.seed}, {time.monotonic() - started:.0f}s",
                file=sys.stderr,
            )
        return 0
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

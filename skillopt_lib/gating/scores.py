"""The statistics the gate's rules lean on: item means, the Student t quantile, the exact sign-flip test,
the error rate each session spends, and the e-value bettor. Pure functions of numbers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from skillopt_lib.gating.config import Bet, GateConfig


def mean_score(table: Mapping[str, Sequence[float]]) -> float:
    """Mean over items of each item's mean over repeats (items weigh equally, whatever their repeats)."""
    if not table:
        return 0.0
    return sum(sum(v) / len(v) for v in table.values() if v) / len(table)


def t_quantile(p: float, df: int) -> float:
    """Student t quantile by the Cornish-Fisher expansion around the normal (error < 1e-3 for df >= 3)."""
    z = NormalDist().inv_cdf(p)
    if df <= 0:
        return z
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def sign_flip_p(diffs: Sequence[float], scale: int, max_exact: int = 40) -> float | None:
    """Exact one-sided p-value of the paired sign-flip test; None when too many items differ.

    Under "the edit has no effect" candidate and incumbent runs of an item are exchangeable, so each item's
    difference is as likely negative as positive. With few differing items the t bound is optimistic (three
    items improved and none worsened happens by chance one time in eight), so the gate also asks this exact
    test. `scale` turns the differences into integers (the product of the two repeat counts).
    """
    values = [round(abs(d) * scale) for d in diffs]
    values = [v for v in values if v]
    if len(values) > max_exact:
        return None
    observed = round(sum(d * scale for d in diffs))
    dist: dict[int, float] = {0: 1.0}
    for v in values:
        nxt: dict[int, float] = {}
        for total, prob in dist.items():
            nxt[total + v] = nxt.get(total + v, 0.0) + prob / 2
            nxt[total - v] = nxt.get(total - v, 0.0) + prob / 2
        dist = nxt
    return sum(prob for total, prob in dist.items() if total >= observed)


def sign_flip_tail(values: Sequence[int], observed: int) -> float:
    """Exact P(sum_i s_i * v_i >= observed) for independent fair signs s_i.

    The null distribution of the paired sign-flip test. The generating function prod_i (x^-v_i + x^v_i) is
    built as one packed integer (a slot of len(values) + 2 bits per sum), so the test stays exact and fast for
    hundreds of items; the tail's coefficients are summed by reducing modulo 2^slot - 1.
    """
    vals = [abs(v) for v in values if v]
    n = len(vals)
    total = sum(vals)
    k = observed + total  # slot of the observed sum; slot 0 is "every sign negative"
    if k <= 0:
        return 1.0
    if k > 2 * total:
        return 0.0
    width = n + 2
    poly = 1
    for v in vals:
        poly += poly << (2 * v * width)
    count = (poly >> (k * width)) % ((1 << width) - 1)
    return count / 2**n


def session_alpha(cfg: GateConfig, session: int) -> float:
    """The false-accept rate spent at 0-based `session`; over all sessions they add up to 1 - confidence."""
    if session >= len(cfg.spending):
        return 0.0
    return (1 - cfg.confidence) * cfg.spending[session] / sum(cfg.spending)


def min_informative_items(cfg: GateConfig, session: int = 0) -> int:
    """Fewest changed items that can reach acceptance at `session`: all of them improved (p = 2^-k)."""
    alpha = session_alpha(cfg, session)
    if alpha <= 0:
        return 10**9
    return max(1, math.ceil(math.log2(1 / alpha) - 1e-9))


# ------------------------------------------------------------------------------ the e-value test
# A fixed mixture of two bets on "the candidate is better": all-in (lambda 1: k items that improve in every
# pair give a wealth of 2^k, as strong as the exact test when every item moves) and a cautious half bet that
# survives an item that got worse. Fixed before any evidence, so the mixture is itself a test martingale.
BETS: tuple[tuple[float, float], ...] = ((1.0, 0.75), (0.5, 0.25))


# What an item's mean paired difference d in [-1, 1] stakes, g(d): odd (g(-d) = -g(d)) and |g| <= 1, so every
# factor 1 + lambda * g(d) has mean 1 under "no effect" whatever g is. `size` (the night's) stakes
# (d + sign(d)) / 2: an item lost in every pair costs a full stake and one better in half its pairs wins
# three quarters of one, so an edit that breaks a few items while nudging many others loses its wealth; a
# noisy agent's small gains still count for most of their sign. `sign` (1 if d > 0, -1 if d < 0) counted a
# loss in every pair no more than a gain in one pair of three: an edit that broke a fifth of the tasks while
# nudging the rest could win on the count of signs alone. It is kept for evidence begun under it.
def stake(d: float, bet: Bet = "size") -> float:
    """g(d): what an item with mean paired difference `d` stakes under `bet` (0 for a tie)."""
    if d == 0:
        return 0.0
    sign = 1.0 if d > 0 else -1.0
    if bet == "sign":
        return sign
    return (max(-1.0, min(1.0, d)) + sign) / 2


def e_value(diffs: Sequence[float], bet: Bet = "size") -> float:
    """The bettor's wealth after items with these paired differences (items that tie do not bet).

    Under "the edit has no effect" the arms are exchangeable within an item, so given its size each item's
    difference is as likely negative as positive: every factor 1 + lambda * g(d) (g odd, |g| <= 1: `stake`)
    has mean 1 and the wealth is a nonnegative martingale over items, P(it ever reaches 1/a) <= a (Ville's
    inequality), whenever and however often it is looked at. 1 / e_value is therefore an anytime-valid p-value.
    """
    stakes = [stake(d, bet) for d in diffs if d != 0]
    return sum(w * math.prod(1.0 + lam * g for g in stakes) for lam, w in BETS)


def evalue_items_needed(diffs: Sequence[float], alpha: float, limit: int = 10_000, bet: Bet = "size") -> int:
    """How many more items that all improve would bring the e-value of `diffs` to 1/alpha."""
    more = 0
    while more < limit and e_value([*diffs, *([1.0] * more)], bet) * alpha < 1 - 1e-9:
        more += 1
    return more

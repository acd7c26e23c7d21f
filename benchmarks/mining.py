"""Mining quality and speed: `python -m benchmarks.mining [--sessions 10000]`.

Quality on a generated corpus with known families: adjusted Rand index over the requests in families, and
per-family precision and recall of the best-matching mined cluster. Speed: clustering time for the
requests of N sessions, beside the time of merely vectorizing them (the ratio is clustering's overhead).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from sklearn.metrics import adjusted_rand_score

from benchmarks.mining_corpus import generate
from skillopt_daemon.mine import _vectorize, cluster_prompts, normalize_prompt


def quality(n_sessions: int, seed: int) -> dict[str, float]:
    reqs = generate(n_sessions, seed=seed)
    labels = cluster_prompts([r.prompt for r in reqs])
    fam_reqs = [(r, lab) for r, lab in zip(reqs, labels, strict=True) if r.family >= 0]
    ari = adjusted_rand_score([r.family for r, _ in fam_reqs], [lab for _, lab in fam_reqs])
    precisions, recalls = [], []
    cluster_sizes = Counter(labels)
    for fam in sorted({r.family for r, _ in fam_reqs}):
        members = [lab for r, lab in fam_reqs if r.family == fam]
        best, hit = Counter(members).most_common(1)[0]
        precisions.append(hit / cluster_sizes[best])
        recalls.append(hit / len(members))
    return {
        "requests": len(reqs),
        "ari": ari,
        "precision_mean": sum(precisions) / len(precisions),
        "precision_min": min(precisions),
        "recall_mean": sum(recalls) / len(recalls),
        "recall_min": min(recalls),
    }


def speed(n_sessions: int, seed: int) -> dict[str, float]:
    prompts = [r.prompt for r in generate(n_sessions, seed=seed)]
    t0 = time.perf_counter()
    _vectorize([normalize_prompt(p) for p in prompts])
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    cluster_prompts(prompts)
    t_all = time.perf_counter() - t0
    return {
        "requests": len(prompts),
        "vectorize_s": t_vec,
        "cluster_s": t_all,
        "ratio": t_all / max(t_vec, 1e-9),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    q = quality(500, args.seed)
    print(
        f"quality (500 sessions, {q['requests']:.0f} requests): ARI {q['ari']:.3f}, "
        f"precision mean {q['precision_mean']:.3f} min {q['precision_min']:.3f}, "
        f"recall mean {q['recall_mean']:.3f} min {q['recall_min']:.3f}"
    )
    s = speed(args.sessions, args.seed)
    print(
        f"speed ({args.sessions} sessions, {s['requests']:.0f} requests): vectorize {s['vectorize_s']:.2f}s, "
        f"vectorize+cluster {s['cluster_s']:.2f}s (ratio {s['ratio']:.2f})"
    )


if __name__ == "__main__":
    main()

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
from skillopt_daemon.night.mining import _vectorize, cluster_prompts, normalize_prompt


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


def store_speed(n_sessions: int, seed: int) -> dict[str, float]:
    """Mining from the store, as the night does it: load and segment sessions, cluster, save families."""
    import json
    import tempfile
    from pathlib import Path

    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.core.timeutil import utcnow_iso
    from skillopt_daemon.night import mining as mine

    reqs = generate(n_sessions, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "bench.db")
        now = utcnow_iso()
        by_session: dict[str, list[str]] = {}
        for r in reqs:
            by_session.setdefault(r.session, []).append(r.prompt)
        with db.conn:
            for i, (sid, prompts) in enumerate(by_session.items()):
                pk = (
                    db.table("sessions")
                    .insert(
                        {
                            "tool": "claude-code",
                            "session_id": sid,
                            "project_path": f"/p/{i % 50}",
                            "started_at": now,
                            "has_user_turn": 1,
                            "first_seen_at": now,
                            "updated_at": now,
                        }
                    )
                    .last_pk
                )
                turns, calls = [], []
                for j, prompt in enumerate(prompts):
                    turns.append(
                        {"session_pk": pk, "key": f"u{j}", "seq": 2 * j, "role": "user", "text": prompt}
                    )
                    turns.append(
                        {
                            "session_pk": pk,
                            "key": f"a{j}",
                            "seq": 2 * j + 1,
                            "role": "assistant",
                            "text": "done",
                        }
                    )
                    calls.append(
                        {
                            "session_pk": pk,
                            "key": f"c{j}",
                            "seq": j,
                            "turn_key": f"a{j}",
                            "name": "Bash",
                            "input_summary": json.dumps({"command": "pytest -q"}),
                            "exit_code": 0,
                            "is_error": 0,
                            "result_at": now,
                        }
                    )
                db.table("turns").insert_all(turns)
                db.table("tool_calls").insert_all(calls)
        t0 = time.perf_counter()
        families, report = mine.mine(db)
        elapsed = time.perf_counter() - t0
    return {"sessions": n_sessions, "requests": len(reqs), "families": len(families), "mine_s": elapsed}


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
    m = store_speed(args.sessions, args.seed)
    print(
        f"mining from the store ({args.sessions} sessions, {m['requests']:.0f} requests): "
        f"{m['mine_s']:.2f}s, {m['families']:.0f} families"
    )


if __name__ == "__main__":
    main()

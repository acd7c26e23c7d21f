"""Speed-up of the Ray executor over the local thread pool, both with the same number of workers.

    .venv/bin/python benchmarks/ray_speedup.py [--workers 2] [--repeats 3]

Each workload is timed as `executor.map(rollout, items)` after one warm-up map (so Ray's start-up, reported
separately, is not counted), against the scripted model server on 127.0.0.1. Results of both executors are
checked to be identical before a figure is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skillopt_lib.testing import Fault, Match, Rule, Script, Step  # noqa: E402
from skillopt_lib.testing.scripted_server import ScriptedServer  # noqa: E402

SSB_PROGRAM = (
    "```python\nimport sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nws = wb.active\n"
    "for r in range(2, ws.max_row + 1):\n    ws.cell(r, 4).value = (ws.cell(r, 2).value or 0) + (ws.cell(r, 3).value or 0)\n"
    "wb.save(sys.argv[2])\n```"
)


def _cpu_bound(n: int) -> int:
    """Pure-Python work that holds the GIL (a stand-in for heavy local scoring)."""
    total = 0
    for i in range(2_500_000):
        total = (total + i * n) % 1_000_003
    return total


def workloads(server: ScriptedServer, backend: Any, repeats: int) -> list[tuple[str, Any, list[Any]]]:
    from skillopt_lib.envs import load_env

    out: list[tuple[str, Any, list[Any]]] = []
    qa = load_env("searchqa", sample=True)
    qa_items = [i for i in (*qa.splits().train, *qa.splits().val, *qa.splits().test)] * repeats
    skill = qa.seed_skill()
    out.append(("searchqa, 50 ms model latency", lambda it: qa.run(it, skill, backend), qa_items))
    ssb = load_env("spreadsheetbench", sample=True)
    ssb_items = [*ssb.splits().train, *ssb.splits().val, *ssb.splits().test]
    ssb_skill = ssb.seed_skill()
    out.append(
        (
            "spreadsheetbench (model code in subprocesses)",
            lambda it: ssb.run(it, ssb_skill, backend),
            ssb_items,
        )
    )
    alf = load_env("alfworld", sample=True, max_steps=20)
    alf_items = [*alf.splits().train, *alf.splits().val, *alf.splits().test]
    alf_skill = alf.seed_skill()
    out.append(("alfworld, 20 steps per game", lambda it: alf.run(it, alf_skill, backend), alf_items))
    out.append(("pure-Python CPU-bound rollout", _cpu_bound, list(range(8))))
    return out


def comparable(results: list[Any]) -> list[Any]:
    return [(r.item_id, r.hard, r.soft, r.answer) if hasattr(r, "item_id") else r for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("SKILLOPT_HOME", tempfile.mkdtemp(prefix="skillopt-bench-"))
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")

    from skillopt_lib.backends import create_backend
    from skillopt_lib.config import BackendConfig
    from skillopt_lib.executor import LocalExecutor
    from skillopt_lib.executor_ray import RayExecutor

    rules = [
        Rule(name="ssb", match=Match(user="Instruction:"), steps=[Step(text=SSB_PROGRAM)]),
        Rule(
            name="alf",
            match=Match(user=re.escape("Your task is to") + "|You |Nothing"),
            steps=[Step(text="Action: look")],
        ),
        Rule(
            name="qa", match=Match(user="Clue:"), steps=[Step(text="Answer: Paris", fault=Fault(delay=0.05))]
        ),
    ]
    with ScriptedServer(Script(rules=rules)) as server:
        backend = create_backend(
            BackendConfig(backend="openai", model="scripted", base_url=server.base_url_openai), role="agent"
        )
        start = time.perf_counter()
        ray_ex = RayExecutor(max_workers=args.workers)
        ray_start = time.perf_counter() - start
        local = LocalExecutor(args.workers)
        print(f"Ray start-up (local instance, {args.workers} CPUs): {ray_start:.1f} s", file=sys.stderr)
        print(f"| workload ({args.workers} workers) | items | local pool (s) | Ray (s) | speed-up |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for label, fn, items in workloads(server, backend, args.repeats):
            ray_ex.map(fn, items[:2])  # warm the workers
            t = time.perf_counter()
            a = local.map(fn, items)
            t_local = time.perf_counter() - t
            t = time.perf_counter()
            b = ray_ex.map(fn, items)
            t_ray = time.perf_counter() - t
            assert comparable(a) == comparable(b), f"{label}: the executors disagree"
            print(
                f"| {label} | {len(items)} | {t_local:.2f} | {t_ray:.2f} | {t_local / t_ray:.2f}x |",
                flush=True,
            )
        local.close()
        ray_ex.close()


if __name__ == "__main__":
    main()

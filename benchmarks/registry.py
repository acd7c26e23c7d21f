"""Registry and installer speed: import, propose, approve (an install), rollback, status, reconcile.

Run: `python -m benchmarks.registry --skills 50 --repeat 5`. Everything happens in a temporary
SKILLOPT_HOME and HOME; nothing of the user's is read or written. Prints a Markdown table of medians
(min–max) for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SKILL = "---\nname: {name}\ndescription: Benchmark skill {name}. Use when benchmarking.\n---\n\n{body}"


def _fmt(samples: list[float]) -> str:
    med = statistics.median(samples)

    def unit(x: float) -> str:
        return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"

    return f"{unit(med)} ({unit(min(samples))}–{unit(max(samples))})"


def one_round(n_skills: int, files_per_skill: int) -> dict[str, float]:
    from skillopt_daemon.core.store import open_db
    from skillopt_daemon.registry import Registry
    from skillopt_daemon.registry.installers import InstallTarget
    from skillopt_daemon.service.status import collect_status
    from skillopt_lib.skill import SkillBundle

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["SKILLOPT_HOME"] = str(root / "sk")
        os.environ["HOME"] = str(root / "home")
        os.environ["CLAUDE_CONFIG_DIR"] = str(root / "home" / ".claude")
        skills = root / "home" / ".claude" / "skills"
        body = "- a rule that is a line long enough to look like a real instruction\n" * 40
        for i in range(n_skills):
            d = skills / f"skill-{i}"
            (d / "references").mkdir(parents=True)
            (d / "SKILL.md").write_text(SKILL.format(name=f"skill-{i}", body=body))
            for j in range(files_per_skill - 1):
                (d / "references" / f"ref-{j}.md").write_text(body)
        db = open_db()
        reg = Registry(db, actor="bench")
        target = InstallTarget.parse("claude-code:user")

        def timed(name: str, fn: Callable[[], object]) -> None:
            t = time.perf_counter()
            fn()
            out[name] = time.perf_counter() - t

        timed(f"import {n_skills} skills ({files_per_skill} files each)", lambda: reg.import_target(target))
        timed("re-import, nothing changed", lambda: reg.import_target(target))
        ids = []

        def propose_all() -> None:
            for i in range(n_skills):
                b = SkillBundle.from_path(skills / f"skill-{i}")
                b = b.with_file("SKILL.md", b.files["SKILL.md"] + b"- one more rule\n")
                ids.append(reg.propose(f"skill-{i}", b, {"delta": 0.1}).id)

        timed(f"propose {n_skills} versions", propose_all)
        timed("status with every proposal pending", lambda: collect_status(db))
        timed("approve one (install, 1 target)", lambda: reg.approve(ids[0]))
        timed(f"approve the other {n_skills - 1}", lambda: [reg.approve(x) for x in ids[1:]])
        timed("rollback one", lambda: reg.rollback("skill-0"))
        timed("reconcile with nothing to settle", reg.reconcile)
        db.conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skills", type=int, default=50)
    ap.add_argument("--files", type=int, default=3, help="files per skill (SKILL.md + references)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rounds = [one_round(args.skills, args.files) for _ in range(args.repeat)]
    print("| measure | time |\n| --- | --- |")
    for key in rounds[0]:
        print(f"| {key} | {_fmt([r[key] for r in rounds])} |")


if __name__ == "__main__":
    main()

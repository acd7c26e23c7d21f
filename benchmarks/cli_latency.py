"""Wall time of the commands people type, beside `git --version`: `python -m benchmarks.cli_latency [--runs 10]`.

Runs `skillopt --version`, `status`, `diff ID` and `approve ID --dry-run` as new processes in a fresh
skillopt home holding one imported skill and one proposal, `--runs` times each, interleaved with
`git --version` so that a busy machine slows the yardstick as much as the commands, and with a second
yardstick: a Python process that only imports the libraries the review commands are built on (typer,
pydantic, rich, sqlite-utils without numpy), the floor no command on them can go below. Prints the median and
the slowest run of each, and each command's median as a multiple of git's, in one run (ratios taken on one
machine at one moment are what compare across machines), and the CPU time each command used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKILL = (
    "---\nname: release-notes\ndescription: Write release notes for a version.\n---\n\nList the changes.\n"
)


def _skillopt() -> str:
    return str(Path(sys.executable).with_name("skillopt"))


def _world(root: Path) -> tuple[dict[str, str], str]:
    """A home with one skill imported from Claude Code and one proposal for it; returns (env, proposal id)."""
    home = root / "home"
    skill = home / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    env.update(HOME=str(home), SKILLOPT_HOME=str(root / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    env.pop("CLAUDE_CONFIG_DIR", None)
    run = [_skillopt()]
    subprocess.run(
        [*run, "skills", "import", "--tool", "claude-code"], env=env, check=True, capture_output=True
    )
    candidate = root / "candidate"
    candidate.mkdir()
    (candidate / "SKILL.md").write_text(SKILL + "\nName every breaking change first.\n")
    subprocess.run(
        [*run, "propose", "release-notes", str(candidate)], env=env, check=True, capture_output=True
    )
    status = subprocess.run([*run, "status", "--json"], env=env, check=True, capture_output=True, text=True)
    proposal = json.loads(status.stdout)["pending"]["items"][0]["id"]
    return env, str(proposal)


# The libraries the review commands are built on, imported as the commands import them (sqlite-utils without
# numpy, `skillopt_daemon/core/store/sqlite_lib.py`; no garbage collector), and nothing else.
LIBRARIES_ALONE = """
import gc, importlib.abc, sys
gc.disable()  # as the review commands run (`skillopt_daemon/entry.py`)
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numpy", "pandas"):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hidden())
import typer, pydantic, rich.console, sqlite_utils
"""


# CPU seconds (user + system) of each run: what a busy machine inflates least, beside the wall time.
CPU: dict[str, list[float]] = {}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(runs: int) -> dict[str, list[float]]:
    root = Path(tempfile.mkdtemp(prefix="skillopt-cli-latency-"))
    try:
        env, proposal = _world(root)
        commands = {
            "git --version": ["git", "--version"],
            "libraries alone": [sys.executable, "-c", LIBRARIES_ALONE],
            "skillopt --version": [_skillopt(), "--version"],
            "skillopt status": [_skillopt(), "status"],
            "skillopt diff ID": [_skillopt(), "diff", proposal],
            "skillopt approve ID --dry-run": [_skillopt(), "approve", proposal, "--dry-run"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, cmd in commands.items():
                cpu = _child_cpu()
                start = time.perf_counter()
                proc = subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)
                CPU.setdefault(name, []).append(_child_cpu() - cpu)
                if proc.returncode != 0:
                    raise SystemExit(f"{name} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
        return times
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    times = measure(args.runs)
    git = statistics.median(times["git --version"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.runs} runs each, interleaved; load average at the end {load:.1f}")
    print(f"{'command':32} {'median':>9} {'slowest':>9} {'× git':>7} {'CPU':>9}")
    for name, xs in times.items():
        med = statistics.median(xs)
        cpu = statistics.median(CPU[name])
        print(
            f"{name:32} {med * 1000:7.0f} ms {max(xs) * 1000:7.0f} ms {med / git:7.1f} {cpu * 1000:6.0f} ms"
        )


if __name__ == "__main__":
    main()

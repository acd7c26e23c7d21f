"""Wall time of the commands people type, beside their libraries and git: `python -m benchmarks.cli_latency`.

Runs `skillopt --version`, `status`, `diff ID` and `approve ID --dry-run` as new processes in a fresh
skillopt home holding three imported skills with a proposal each, `--runs` times each (median, slowest,
CPU), interleaved with two yardsticks so that a busy machine slows them as much as the commands: `git status`
in a small repository, and the floor no command built on typer, pydantic, rich and sqlite-utils can go below:
a Python process that only imports them (without numpy, as the commands import them), and one that also
uses them as little as a review command does (`LIBRARIES_AT_WORK`). Ratios to git's median are what compare
across machines.

The commands run from this checkout (it is put first on `PYTHONPATH`), with Python's bytecode cache written
as an installed copy has it. `--before DIR` times a second checkout (another revision's `skillopt_lib` and
`skillopt_daemon`) in the same run, its commands interleaved with this one's: the fair way to measure a
change on a shared machine, whose load moves between two separate runs.
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

SKILLS = ("release-notes", "commit-message", "code-review")
CHECKOUT = Path(__file__).resolve().parents[1]


def skill_text(name: str) -> str:
    return f"---\nname: {name}\ndescription: Write a {name.replace('-', ' ')}.\n---\n\nList the changes.\n"


def skillopt_exe() -> str:
    return str(Path(sys.executable).with_name("skillopt"))


def user_env(root: Path, checkout: Path) -> dict[str, str]:
    """A user's environment in the world under `root`, running the skillopt of `checkout`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    env.update(HOME=str(root / "home"), SKILLOPT_HOME=str(root / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    for name in ("CLAUDE_CONFIG_DIR", "PYTHONDONTWRITEBYTECODE"):
        env.pop(name, None)
    return env


def add_reviews(root: Path, env: dict[str, str]) -> None:
    """Three skills imported from Claude Code into the world under `root`, and a proposal for each: what
    the review commands have to show."""
    for name in SKILLS:
        folder = root / "home" / ".claude" / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(skill_text(name))
    run = [skillopt_exe()]
    subprocess.run(
        [*run, "skills", "import", "--tool", "claude-code"], env=env, check=True, capture_output=True
    )
    for name in SKILLS:
        candidate = root / "candidates" / name
        candidate.mkdir(parents=True)
        (candidate / "SKILL.md").write_text(skill_text(name) + "\nName every breaking change first.\n")
        subprocess.run([*run, "propose", name, str(candidate)], env=env, check=True, capture_output=True)


def _world(root: Path) -> str:
    """Three skills with a proposal each (`add_reviews`) and a small git repository; returns the first
    proposal's id."""
    env = user_env(root, CHECKOUT)
    add_reviews(root, env)
    run = [skillopt_exe()]
    status = subprocess.run([*run, "status", "--json"], env=env, check=True, capture_output=True, text=True)
    repo = root / "repo"
    repo.mkdir()
    (repo / "README").write_text("a file\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    return str(json.loads(status.stdout)["pending"]["items"][0]["id"])


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
# The same libraries doing the least a review command does with them: typer parses an argument and a flag
# (typer builds a pydantic adapter for each parameter it parses, which loads most of pydantic), sqlite-utils
# opens the store and reads from it, rich prints a line.
LIBRARIES_AT_WORK = (
    LIBRARIES_ALONE
    + """
import os
app = typer.Typer()
@app.command()
def show(name: str, as_json: bool = typer.Option(False, "--json")):
    db = sqlite_utils.Database(os.path.join(os.environ["SKILLOPT_HOME"], "data", "skillopt.db"))
    db.execute("SELECT count(*) FROM sqlite_master").fetchall()
    rich.console.Console().print(name, markup=False, highlight=False)
app()
"""
)


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _commands(root: Path, proposal: str, before: Path | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each timed command: its arguments and its environment."""
    here = user_env(root, CHECKOUT)
    out = {
        "git status": (["git", "-C", str(root / "repo"), "status"], here),
        "libraries alone": ([sys.executable, "-c", LIBRARIES_ALONE], here),
        "libraries at work": ([sys.executable, "-c", LIBRARIES_AT_WORK, proposal], here),
    }
    trees = [("", here)] + ([(" [before]", user_env(root, before))] if before else [])
    for args in (["--version"], ["status"], ["diff", proposal], ["approve", proposal, "--dry-run"]):
        for suffix, env in trees:
            shown = " ".join("ID" if a == proposal else a for a in args)
            out[f"skillopt {shown}{suffix}"] = ([skillopt_exe(), *args], env)
    return out


def measure(runs: int, before: Path | None = None) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(wall seconds, CPU seconds) of every run of each command, the commands taken in turn."""
    root = Path(tempfile.mkdtemp(prefix="skillopt-cli-latency-"))
    try:
        proposal = _world(root)
        commands = _commands(root, proposal, before)
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for attempt in range(runs + 1):  # the first round writes the bytecode caches and is not counted
            for name, (cmd, env) in commands.items():
                used = _child_cpu()
                start = time.perf_counter()
                proc = subprocess.run(cmd, env=env, capture_output=True, stdin=subprocess.DEVNULL)
                took = time.perf_counter() - start
                if proc.returncode != 0:
                    raise SystemExit(f"{name} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
                if attempt:
                    wall[name].append(took)
                    cpu[name].append(_child_cpu() - used)
        return wall, cpu
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--before", type=Path, help="a second checkout to time in the same run")
    args = ap.parse_args()
    load_start = os.getloadavg()[0]
    wall, cpu = measure(args.runs, args.before)
    git = statistics.median(wall["git status"])
    print(
        f"{args.runs} runs each, interleaved; load average {load_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'command':38} {'median':>9} {'slowest':>9} {'× git':>7} {'CPU':>9}")
    for name, xs in wall.items():
        med = statistics.median(xs)
        used = statistics.median(cpu[name])
        print(
            f"{name:38} {med * 1000:6.0f} ms {max(xs) * 1000:6.0f} ms {med / git:7.1f} {used * 1000:6.0f} ms"
        )


if __name__ == "__main__":
    main()

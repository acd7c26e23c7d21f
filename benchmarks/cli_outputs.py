"""Every command's output, this checkout against another: `python -m benchmarks.cli_outputs --before DIR`.

A refactoring that says "behaviour unchanged" has to show it where a user sees behaviour: what each command
prints. This builds a world from the recorded mining corpus (`tests/fixtures/corpus`: real Claude Code and
Codex transcripts copied into a user's tool homes), with the `--before` checkout: ingest, mine without a
model, three skills imported from Claude Code with a proposal each. It keeps that world, then runs the same
commands on a fresh copy of it once per checkout, at the same path, and compares stdout, stderr and the exit
code byte for byte, with only the clock masked (`CLOCK`: timestamps, ages, the width of a table's columns,
which an age changes, and the random name of a backup folder):

- every command and group's `--help` (the commands named in `docs/cli.md`);
- every read-only command, plain and `--json` (status, diff, history, tasks, sessions, skills, report, sleep
  history and schedule, config, keys, plugins, doctor, team status, daemon status);
- then the review commands that change the world, in order (`approve`, `reject`, `rollback`, each read back
  with `status --json` and `history --json`).

It prints the commands whose output differs, with the first differing lines, and exits 1 when any does.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.cli_latency import CHECKOUT, SKILLS, add_reviews, skillopt_exe, user_env

CORPUS = CHECKOUT / "tests" / "fixtures" / "corpus"

READ_ONLY = (
    ["status"],
    ["diff"],
    ["history"],
    ["tasks", "list"],
    ["sessions", "list"],
    ["skills", "list"],
    ["skills", "show", "release-notes"],
    ["report"],
    ["sleep", "history"],
    ["sleep", "schedule", "show"],
    ["config", "show"],
    ["keys", "list"],
    ["plugins"],
    ["doctor"],
    ["team", "status"],
    ["daemon", "status"],
)
# Read back after each change to the world.
READ_BACK = (["status", "--json"], ["history", "--json"], ["skills", "list", "--json"])


def _env(root: Path, checkout: Path) -> dict[str, str]:
    """A user's environment (`cli_latency.user_env`), printing as a plain terminal of a fixed width does."""
    return {**user_env(root, checkout), "COLUMNS": "120", "TERM": "dumb", "NO_COLOR": "1", "TZ": "UTC"}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [skillopt_exe(), *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def build_world(root: Path, checkout: Path) -> None:
    """The recorded corpus in the tool homes, ingested and mined; three skills with a proposal each."""
    home = root / "home"
    shutil.copytree(CORPUS / "claude", home / ".claude")
    shutil.copytree(CORPUS / "codex", home / ".codex")
    env = _env(root, checkout)
    for args in (["ingest", "--quiet"], ["tasks", "mine", "--no-model"]):
        done = _run(args, env)
        if done.returncode != 0:
            raise SystemExit(f"building the world: skillopt {' '.join(args)} failed:\n{done.stderr}")
    add_reviews(root, env)


def _help_commands() -> list[list[str]]:
    """Every command and group the CLI reference names, as `... --help`."""
    text = (CHECKOUT / "docs" / "cli.md").read_text(encoding="utf-8")
    return [m.split()[1:] + ["--help"] for m in re.findall(r"^## (skillopt(?: [\w-]+)*)$", text, re.M)]


def _session_and_family(env: dict[str, str]) -> list[list[str]]:
    """`sessions show` and `tasks show` of the first session and family the world holds."""
    out: list[list[str]] = []
    sessions = json.loads(_run(["sessions", "list", "--json"], env).stdout or "[]")
    rows = sessions.get("sessions", sessions) if isinstance(sessions, dict) else sessions
    if rows:
        out.append(["sessions", "show", str(rows[0].get("id") or rows[0].get("session_id"))])
    tasks = json.loads(_run(["tasks", "list", "--json"], env).stdout or "[]")
    fams = tasks.get("families", tasks) if isinstance(tasks, dict) else tasks
    if fams:
        out.append(["tasks", "show", "--family", str(fams[0].get("id") or fams[0].get("name"))])
    return out


def _changes(env: dict[str, str]) -> list[list[str]]:
    """The review commands that change the world, each followed by the read-back."""
    status = json.loads(_run(["status", "--json"], env).stdout)
    ids = [str(item["id"]) for item in status["pending"]["items"]]
    steps: list[list[str]] = []
    for args in (
        ["approve", ids[0], "--dry-run"],
        ["approve", ids[0]],
        ["reject", ids[1], "--reason", "too long"],
        ["rollback", SKILLS[0], "--dry-run"],
        ["rollback", SKILLS[0], "--reason", "went back"],
    ):
        steps.append(args)
        steps.extend(list(a) for a in READ_BACK)
    return steps


def commands(env: dict[str, str]) -> list[list[str]]:
    """What runs on each checkout, in order (worked out once, on the world as built)."""
    out = _help_commands()
    for args in [*READ_ONLY, *_session_and_family(env)]:
        out += [list(args), [*args, "--json"]]
    return out + _changes(env)


# What differs between two runs of the same command a minute apart: when it ran. Masked in both, and
# nothing else is.
CLOCK = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?) ago\b"), "<ago>"),
    (re.compile(r"\bjust now\b"), "<ago>"),
    # a backup folder is named at random when it is made
    (re.compile(r"backups/[0-9a-f]{16}"), "backups/<id>"),
    # a table's columns are as wide as their widest cell, an age ("9s ago", "10s ago") included
    (re.compile(r"[ ]{2,}"), " "),
    (re.compile(r"━{2,}"), "━"),
    (re.compile(r"─{2,}"), "─"),
    (re.compile(r"[ ]+$", re.M), ""),
)


def normalise(text: str) -> str:
    """`text` with the clock masked (`CLOCK`)."""
    for pattern, mask in CLOCK:
        text = pattern.sub(mask, text)
    return text


def outputs(world: Path, root: Path, checkout: Path, run: list[list[str]]) -> list[str]:
    """Each command's exit code, stdout and stderr, run by `checkout` on a fresh copy of `world` at `root`."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(world, root, symlinks=True)
    env = _env(root, checkout)
    seen = []
    for args in run:
        done = _run(args, env)
        seen.append(normalise(f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"))
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the other checkout (e.g. a git worktree)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="skillopt-outputs-") as tmp:
        world, root = Path(tmp) / "world", Path(tmp) / "run"
        build_world(world, args.before.resolve())
        # Paths in the output are the world's: both checkouts run it at the same place.
        shutil.copytree(world, root, symlinks=True)
        run = commands(_env(root, args.before.resolve()))
        before = outputs(world, root, args.before.resolve(), run)
        after = outputs(world, root, CHECKOUT, run)
    differ = [(a, b, c) for a, b, c in zip(run, before, after, strict=True) if b != c]
    print(f"{len(run)} commands, {len(run) - len(differ)} byte-identical, {len(differ)} differ")
    for cmd, b, c in differ:
        print(f"\n## skillopt {' '.join(cmd)}")
        diff = difflib.unified_diff(b.splitlines(), c.splitlines(), "before", "after", lineterm="", n=1)
        print("\n".join(list(diff)[:30]))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

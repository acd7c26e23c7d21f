"""Replay overhead and throughput: `python -m benchmarks.replay [--files 1000] [--replays 8] [--tool codex]`.

`python -m benchmarks.replay --tokens` instead measures what one replay sends, per CLI, old options beside
new in one run: the same task replayed with the CLI's full prompt and the replay limits alone (before), and
trimmed and capped relative to a recorded session of one tool call (after). The scripted agent would run 40
commands: the cap is what stops it. Input tokens are counted from each request the scripted server received,
as it counts them (about four characters a token), cached or not.

Measures, against the scripted model server (no model cost, so the figures are skillopt's and the CLI's own):

- workspace preparation and removal for a git repository of `--files` files: a detached worktree at a pinned
  commit (plus the snapshot the diff is computed against), and a plain copy of the project;
- a whole trivial replay (workspace, isolated home, CLI start-up, one model answer, diff, one check, cleanup);
- replays per minute with 1, 2 and 4 in parallel.

The real CLIs are taken from `SKILLOPT_AGENT_CLI_DIR` or `.cache/agent-clis` (see docs/testing.md).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from skillopt_lib.backends.claude_code import ClaudeCodeBackend
from skillopt_lib.backends.codex import CodexBackend
from skillopt_lib.backends.exec_base import CliExecBackend
from skillopt_lib.execution import ExecLimits
from skillopt_lib.sandbox import (
    ReplayTask,
    SandboxConfig,
    Snapshot,
    create_workspace,
    remove_workspace,
    replay,
    replay_many,
)
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing import Script
from skillopt_lib.testing.scripted_server import ScriptedServer, parse_request
from testkit.agent_clis import DEFAULT_API_KEY, locate_agent_clis

SKILL = SkillBundle.from_text("---\nname: bench\ndescription: Benchmark skill.\n---\nDo the task.\n")


def make_repo(root: Path, n_files: int) -> tuple[Path, str]:
    repo = root / "repo"
    for i in range(n_files):
        d = repo / f"pkg{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"VALUE = {i}\n\n\ndef f{i}(x):\n    return x + VALUE\n")
    return repo, commit_all(repo)


def commit_all(repo: Path) -> str:
    """Commit everything in `repo` as a new repository (outside any caller's git variables); its HEAD."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True, env=env
    )
    return head.stdout.strip()


def time_workspaces(repo: Path, commit: str, root: Path, rounds: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, task in (
        ("worktree", ReplayTask(prompt="x", repo=repo, commit=commit)),
        ("copy", ReplayTask(prompt="x", repo=repo)),
    ):
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            ws = create_workspace(task, root)
            Snapshot(ws, [])
            remove_workspace(ws)
            times.append(time.perf_counter() - t0)
        out[label] = statistics.median(times)
    return out


def backend_for(tool: str, server: ScriptedServer, home: Path) -> CliExecBackend:
    clis = locate_agent_clis()
    path = os.environ["PATH"]
    if tool == "codex":
        if clis.codex is None:
            raise SystemExit(clis.why_missing("codex"))
        (home / "config.toml").parent.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "s"\n[model_providers.s]\nname = "s"\n'
            f'base_url = "{server.base_url_openai}"\nwire_api = "responses"\nenv_key = "BENCH_KEY"\n'
        )
        return CodexBackend(
            cli=str(clis.codex), user_home=home, base_env={"PATH": path, "BENCH_KEY": DEFAULT_API_KEY}
        )
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    env = {"PATH": path, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": DEFAULT_API_KEY}
    return ClaudeCodeBackend(cli=str(clis.claude), user_home=home, base_env=env)


def token_figures(tmp: Path) -> None:
    """Requests, input tokens per request and per replay, before and after, for claude and codex."""
    from skillopt_daemon.night.learning.replay_caps import cap_for
    from skillopt_daemon.night.tasks import NightTask
    from skillopt_lib.testing import Match, Rule, Step, bash

    rounds = [Step(tool_calls=[bash(f"echo round {i}")]) for i in range(40)]
    script = Script(rules=[Rule(name="t", match=Match(user="calc"), steps=rounds, done_text="Done.")])
    recorded = NightTask(id="t", prompt="fix calc", split="val", recorded_tool_calls=1, recorded_work_s=20.0)
    base = ExecLimits(max_turns=30, timeout_s=600)
    print("tool        options  requests  first request  mean request  input tokens/replay  status")
    for tool in ("claude-code", "codex"):
        for label, trim, limits in (
            ("before", False, base),
            ("after", True, cap_for(recorded, base).limits(base)),
        ):
            with ScriptedServer(script, expected_key=DEFAULT_API_KEY) as server:
                backend = backend_for(tool, server, tmp / f"home-{tool}-{label}")
                backend.trim_prompt = trim
                r = replay(
                    ReplayTask(prompt="fix calc"), backend, SandboxConfig(root=tmp / "ws"), limits=limits
                )
                sizes = [
                    math.ceil(len(parse_request(q.api, q.body).request_text) / 4)
                    for q in server.requests
                    if q.api in ("anthropic", "responses")
                ]
            asked, total = len(sizes), sum(sizes)
            per = total / max(1, asked)
            print(
                f"{tool:11} {label:7} {asked:9d}  {sizes[0] if sizes else 0:13,d}  {per:12,.0f}  {total:19,d}  "
                f"{r.status.value}"
            )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--replays", type=int, default=8, help="replays per parallelism level")
    ap.add_argument("--rounds", type=int, default=5, help="repetitions of the workspace timing")
    ap.add_argument("--tool", choices=("claude-code", "codex"), default="claude-code")
    ap.add_argument("--tokens", action="store_true", help="tokens per replay before and after, per CLI")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.tokens:
            token_figures(tmp)
            return
        repo, commit = make_repo(tmp, args.files)
        ws = time_workspaces(repo, commit, tmp / "ws", args.rounds)
        print(f"workspace for {args.files} files (create + snapshot + remove, median of {args.rounds}):")
        for label, secs in ws.items():
            print(f"  {label:9} {secs * 1000:8.0f} ms")
        with ScriptedServer(Script(default_text="Done."), expected_key=DEFAULT_API_KEY) as server:
            backend = backend_for(args.tool, server, tmp / "user-home")
            limits = ExecLimits(max_turns=5, timeout_s=120)
            config = SandboxConfig(root=tmp / "ws")
            task = ReplayTask(prompt="say done", repo=repo, commit=commit, checks=["true"])
            replay(task, backend, config, skill=SKILL, limits=limits)  # warm caches
            totals, agent = [], []
            for _ in range(3):
                marks: dict[str, float] = {}

                def mark(stage: str, marks: dict[str, float] = marks) -> None:
                    marks.setdefault(stage, time.perf_counter())

                t0 = time.perf_counter()
                r = replay(task, backend, config, skill=SKILL, limits=limits, on_stage=mark)
                total = time.perf_counter() - t0
                assert r.ok, r.error
                totals.append(total)
                agent.append(marks["diff"] - marks["agent"])
            t_total, t_agent = statistics.median(totals), statistics.median(agent)
            print(f"one trivial {args.tool} replay (median of 3): {t_total * 1000:.0f} ms end to end")
            print(
                f"  CLI run {t_agent * 1000:.0f} ms; skillopt's own part {(t_total - t_agent) * 1000:.0f} ms"
            )
            for parallel in (1, 2, 4):
                config = SandboxConfig(root=tmp / "ws", max_parallel=parallel)
                t0 = time.perf_counter()
                results = replay_many([task] * args.replays, backend, config, skill=SKILL, limits=limits)
                elapsed = time.perf_counter() - t0
                ok = sum(1 for r in results if not isinstance(r, Exception) and r.ok)
                rate = args.replays / elapsed * 60
                print(f"  parallel {parallel}: {rate:6.1f} replays/min ({ok}/{args.replays} ok)")


if __name__ == "__main__":
    main()

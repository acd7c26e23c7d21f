"""Time and model calls of one training epoch on each benchmark's shipped sample, against the scripted
model server (no real model is called).

    .venv/bin/python benchmarks/envs_epoch.py [--envs searchqa,livemath] [--workers 2] [--latency 0.0]

The agent gets a well-formed reply for every item (right for every other item, so the scores are neither
0 nor 1) and the optimizer proposes no edit, so the figures measure the environment's own cost: loading,
prompting, the chat round trips, running model-written code (spreadsheetbench), playing games (alfworld).
`coding` runs the real `claude` CLI when it is installed (SKILLOPT_AGENT_CLI_DIR or .cache/agent-clis).
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

from skillopt_lib.testing import Fault, Match, Rule, Script, Step, bash  # noqa: E402
from skillopt_lib.testing.scripted_server import ScriptedServer  # noqa: E402

CHAT_ENVS = ["searchqa", "livemath", "docvqa", "officeqa", "spreadsheetbench", "alfworld"]
NO_EDITS = '{"summary": [], "patch": {"reasoning": "nothing to change", "edits": []}}'
SSB_PROGRAM = (
    "```python\nimport sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nwb.save(sys.argv[2])\n```"
)


def _rule(i: int, user: str, text: str, latency: float) -> Rule:
    fault = Fault(delay=latency) if latency else None
    return Rule(name=f"r{i}", match=Match(user=re.escape(user)), steps=[Step(text=text, fault=fault)])


def agent_rules(name: str, env: Any, latency: float) -> list[Rule]:
    sp = env.splits()
    items = [*sp.train, *sp.val, *sp.test]
    rules: list[Rule] = []
    for n, item in enumerate(items):
        right = n % 2 == 0
        if name in ("searchqa", "docvqa", "officeqa"):
            gold = item.gold["answers"][0] if right else "unknown"
            rules.append(_rule(n, item.data["question"], f"Reading the material.\nAnswer: {gold}", latency))
        elif name == "livemath":
            label = item.gold["label"] if right else next(x for x in "ABCDE" if x != item.gold["label"])
            rules.append(_rule(n, item.data["question"], f"Answer: {label}", latency))
        elif name == "spreadsheetbench":
            rules.append(_rule(n, item.data["instruction"], SSB_PROGRAM, latency))
    if name == "alfworld":
        rules.append(_rule(0, "", "Think: look around first.\nAction: look", latency))
    return rules


def run_epoch(name: str, workers: int, latency: float, options: dict[str, Any]) -> dict[str, Any]:
    from skillopt_lib.backends import create_backend
    from skillopt_lib.config import BackendConfig, validate_config
    from skillopt_lib.envs import load_env
    from skillopt_lib.executor import LocalExecutor
    from skillopt_lib.trainer import Trainer

    env = load_env(name, sample=True, **options)
    script = Script(rules=agent_rules(name, env, latency), default_text=NO_EDITS)
    with ScriptedServer(script) as server, tempfile.TemporaryDirectory() as tmp:
        backend = create_backend(
            BackendConfig(backend="openai", model="scripted", base_url=server.base_url_openai), role="agent"
        )
        cfg = validate_config({"env": name, "epochs": 1, "batch_size": 40, "concurrency": workers})
        start = time.perf_counter()
        trainer = Trainer(
            cfg, env, Path(tmp) / "run", agent=backend, optimizer=backend, executor=LocalExecutor(workers)
        )
        summary = trainer.train().summary
        elapsed = time.perf_counter() - start
    usage = summary["usage"]
    return {
        "env": name,
        "seconds": elapsed,
        "agent_calls": usage["agent"]["calls"],
        "optimizer_calls": usage["optimizer"]["calls"],
        "val": summary["initial_val"],
    }


def run_coding_epoch(workers: int) -> dict[str, Any] | None:
    from skillopt_lib.backends.claude_code import ClaudeCodeBackend
    from skillopt_lib.config import validate_config
    from skillopt_lib.envs import load_env
    from skillopt_lib.execution import ExecLimits
    from skillopt_lib.executor import LocalExecutor
    from skillopt_lib.trainer import Trainer
    from testkit import agent_clis as ac

    clis = ac.locate_agent_clis()
    if clis.claude is None:
        return None
    env = load_env("coding")
    rules = [
        Rule(name="work", match=Match(user="."), steps=[Step(tool_calls=[bash("ls")])], done_text="Done.")
    ]
    with (
        ScriptedServer(Script(rules=rules, default_text=NO_EDITS)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        os.environ["SKILLOPT_HOME"] = tmp
        home = Path(tmp) / "home"
        home.mkdir()
        base_env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": ac.DEFAULT_API_KEY,
        }
        agent = ClaudeCodeBackend(
            cli=str(clis.claude),
            base_env=base_env,
            user_home=home,
            limits=ExecLimits(max_turns=5, timeout_s=120),
        )
        from skillopt_lib.backends import create_backend
        from skillopt_lib.config import BackendConfig

        optimizer = create_backend(
            BackendConfig(backend="openai", model="scripted", base_url=server.base_url_openai),
            role="optimizer",
        )
        cfg = validate_config({"env": "coding", "epochs": 1, "batch_size": 40, "concurrency": workers})
        start = time.perf_counter()
        trainer = Trainer(
            cfg, env, Path(tmp) / "run", agent=agent, optimizer=optimizer, executor=LocalExecutor(workers)
        )
        summary = trainer.train().summary
        elapsed = time.perf_counter() - start
    usage = summary["usage"]
    return {
        "env": "coding (claude CLI)",
        "seconds": elapsed,
        "agent_calls": len([r for r in server.requests if r.api == "anthropic"]),
        "optimizer_calls": usage["optimizer"]["calls"],
        "val": summary["initial_val"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default=",".join([*CHAT_ENVS, "coding"]))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the model server waits per reply")
    args = parser.parse_args()
    os.environ.setdefault("SKILLOPT_HOME", tempfile.mkdtemp(prefix="skillopt-bench-"))
    rows = []
    for name in args.envs.split(","):
        if name == "coding":
            row = run_coding_epoch(args.workers)
            if row is None:
                print("coding: skipped (the claude CLI is not installed: make agent-clis)", file=sys.stderr)
                continue
        else:
            row = run_epoch(name, args.workers, args.latency, {})
        rows.append(row)
        print(f"{row['env']}: {row['seconds']:.2f} s", file=sys.stderr, flush=True)
    print("| env | one epoch (s) | agent model calls | optimizer calls | val score |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['env']} | {r['seconds']:.2f} | {r['agent_calls']} | {r['optimizer_calls']} | {r['val']:.3f} |"
        )


if __name__ == "__main__":
    main()

"""Prompt-cache figures of real replays: `python -m benchmarks.prompt_cache [--replays 2]`.

Replays a realistic task (read a file, write a test, run it, answer) through the real `claude -p` and
`codex exec` against the scripted model server, back to back, once with the server's former cache model and
once with the current one, in the same run. Prints, per replay, the prompt tokens each CLI reported as fresh
input, cache writes and cache reads (and Claude Code's own `total_cost_usd`), so the change in a night's
reported usage can be read off directly.

The former model is reproduced here (and only here) for the comparison: Anthropic looked up the exact
prefix at the last breakpoint, marker included, so a marker that moves with the newest turn never hit;
OpenAI Chat Completions cached repeated message prefixes and Responses (Codex) never reported a cached token.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.replay import backend_for, commit_all
from skillopt_lib.execution import ExecLimits
from skillopt_lib.sandbox import ReplayTask, SandboxConfig, replay
from skillopt_lib.skill import SkillBundle
from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.prompt_cache import CacheUsage, PromptCache
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.testing.tokens import estimate_tokens
from testkit.agent_clis import DEFAULT_API_KEY

SKILL = SkillBundle.from_text(
    "---\nname: tests\ndescription: Use when adding tests.\n---\nWrite a test next to the module, run it.\n"
)
TEST_FILE = "from calc import add\n\nassert add(2, 3) == 5\nprint('1 passed')\n"


def script() -> Script:
    """A four-request task: look at the module, write a test, run it, report."""
    steps = [
        Step(text="Let me look at calc.py.", tool_calls=[bash("cat calc.py")]),
        Step(text="Adding a test.", tool_calls=[write_file("test_calc.py", TEST_FILE)]),
        Step(text="Running it.", tool_calls=[bash("python3 test_calc.py")]),
        Step(text="Added test_calc.py; it passes."),
    ]
    return Script([Rule("task", Match(user="test for calc"), steps=steps)], default_text="Done.")


class FormerPromptCache(PromptCache):
    """The scripted server's cache model before this change, kept for the before/after comparison."""

    def __init__(self) -> None:
        super().__init__()
        self._anthropic_seen: set[str] = set()
        self._openai_seen: list[str] = []
        self._former_lock = threading.Lock()

    def anthropic(self, body: Mapping[str, Any], scope: str = "") -> CacheUsage:
        blocks: list[Any] = list(body.get("tools") or [])
        system = body.get("system")
        blocks.extend(
            system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else [])
        )
        for m in body.get("messages") or []:
            content = m.get("content") if isinstance(m, Mapping) else None
            blocks.extend(content if isinstance(content, list) else [{"type": "text", "text": content}])
        prefix, seen = None, []
        for block in blocks:
            seen.append(json.dumps(block, ensure_ascii=False, sort_keys=True))
            if isinstance(block, Mapping) and block.get("cache_control"):
                prefix = "\n".join(seen)
        if prefix is None or estimate_tokens(prefix) < 1024:
            return CacheUsage()
        with self._former_lock:
            if prefix in self._anthropic_seen:
                return CacheUsage(read=estimate_tokens(prefix))
            self._anthropic_seen.add(prefix)
        return CacheUsage(write=estimate_tokens(prefix))

    def openai(self, api: str, body: Mapping[str, Any], scope: str = "") -> CacheUsage:
        if api != "chat":
            return CacheUsage()
        text = json.dumps(body.get("messages") or [], ensure_ascii=False, sort_keys=True)
        with self._former_lock:
            common = max((len(os.path.commonprefix([text, s])) for s in self._openai_seen), default=0)
            self._openai_seen = [*self._openai_seen[-63:], text]
        tokens = common // 4
        return CacheUsage(read=1024 + (tokens - 1024) // 128 * 128 if tokens >= 1024 else 0)


def make_repo(root: Path) -> tuple[Path, str]:
    repo = root / "calc"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return repo, commit_all(repo)


def measure(tool: str, model: str, replays: int, tmp: Path) -> list[dict[str, Any]]:
    """Usage of ``replays`` back-to-back replays of the task with ``tool``, under one cache model."""
    repo, commit = make_repo(tmp / f"{tool}-{model}")
    rows = []
    with ScriptedServer(script(), expected_key=DEFAULT_API_KEY) as server:
        if model == "former":
            server.prompt_cache = FormerPromptCache()
        backend = backend_for(tool, server, tmp / f"{tool}-{model}-home")
        config = SandboxConfig(root=tmp / f"{tool}-{model}-ws")
        task = ReplayTask(
            prompt="add a test for calc", repo=repo, commit=commit, checks=["python3 test_calc.py"]
        )
        for n in range(replays):
            r = replay(task, backend, config, skill=SKILL, limits=ExecLimits(max_turns=10, timeout_s=180))
            if not r.ok:
                raise SystemExit(f"{tool} replay failed: {r.error}\n{r.stderr[-2000:]}")
            u = r.usage
            rows.append(
                {
                    "tool": tool,
                    "model": model,
                    "replay": n + 1,
                    "requests": len(
                        server.requests_matching(api="anthropic" if tool == "claude-code" else "responses")
                    )
                    - sum(row["requests"] for row in rows),
                    "fresh": u.input_tokens - u.cache_read_tokens - u.cache_write_tokens,
                    "write": u.cache_write_tokens,
                    "read": u.cache_read_tokens,
                    "cost": u.cost_usd if r.cost_reported else None,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--replays", type=int, default=2, help="back-to-back replays per tool and cache model")
    ap.add_argument("--tool", choices=("claude-code", "codex", "both"), default="both")
    args = ap.parse_args(argv)
    tools = ("claude-code", "codex") if args.tool == "both" else (args.tool,)
    print(
        f"{'tool':12} {'cache model':12} {'replay':>6} {'requests':>8} {'fresh':>8} {'write':>8} {'read':>8}  cost"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        for tool in tools:
            for model in ("former", "current"):
                for row in measure(tool, model, args.replays, Path(tmp_name)):
                    cost = f"${row['cost']:.4f}" if row["cost"] is not None else "-"
                    print(
                        f"{row['tool']:12} {row['model']:12} {row['replay']:>6} {row['requests']:>8} "
                        f"{row['fresh']:>8} {row['write']:>8} {row['read']:>8}  {cost}"
                    )


if __name__ == "__main__":
    main()

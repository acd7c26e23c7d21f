"""The Ray executor on a local Ray instance (started once for this module, 2 CPUs): order, errors, real
worker processes, and the same results as the local pool for real benchmark rollouts through the OpenAI
SDK against the scripted model server."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import answer_rule, scripted_chat

ray = pytest.importorskip(
    "ray", reason="Ray is installed with the dev extra; pip install 'skillopt-local[ray]'"
)

from skillopt_lib.envs import load_env  # noqa: E402
from skillopt_lib.errors import ConfigError  # noqa: E402
from skillopt_lib.executor import LocalExecutor, make_executor  # noqa: E402
from skillopt_lib.executor_ray import RayExecutor  # noqa: E402
from skillopt_lib.testing.scripted_server import ScriptedServer  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


# Task functions are defined inside the tests: Ray ships closures by value, while a function of this test
# module would be shipped by reference and the workers cannot import the test module.


def test_map_keeps_the_order_of_the_items_and_runs_in_worker_processes() -> None:
    def _slow_square(x: int) -> tuple[int, int]:
        time.sleep(0.05 * (5 - x % 5))  # later items finish first
        return x * x, os.getpid()

    ex = RayExecutor(max_workers=2)
    out = ex.map(_slow_square, list(range(8)))
    assert [v for v, _ in out] == [x * x for x in range(8)]
    assert all(pid != os.getpid() for _, pid in out)
    assert ex.map(_slow_square, []) == []
    ex.close()
    assert ray.is_initialized(), "a Ray started by someone else is left running"


def test_an_error_in_a_task_is_raised_with_its_own_type_and_hint() -> None:
    def _fail_on_three(x: int) -> int:
        if x == 3:
            raise ConfigError("item three is broken", hint="fix item three")
        return x

    ex = RayExecutor(max_workers=2)
    with pytest.raises(ConfigError) as err:
        ex.map(_fail_on_three, [1, 2, 3, 4])
    assert err.value.message == "item three is broken" and err.value.hint == "fix item three"


def test_at_most_max_workers_items_are_in_flight() -> None:
    def _sleepy(x: int) -> float:
        start = time.time()
        time.sleep(0.2)
        return start

    starts = RayExecutor(max_workers=1).map(_sleepy, [0, 1, 2])
    assert starts[1] - starts[0] >= 0.19 and starts[2] - starts[1] >= 0.19


def test_the_config_name_ray_selects_the_ray_executor() -> None:
    assert isinstance(make_executor("ray", 2), RayExecutor)


def test_benchmark_rollouts_on_ray_match_the_local_pool() -> None:
    env = load_env("searchqa", sample=True)
    sp = env.splits()
    items = [*sp.train, *sp.val, *sp.test]
    rules = [
        answer_rule(i.id, i.data["question"], f"Answer: {i.gold['answers'][0]}")
        for i in items[::2]  # half right, the rest gets the default reply
    ]
    skill = env.seed_skill()
    with scripted_chat(rules) as (server, agent):

        def run(item: Any) -> Any:
            return env.run(item, skill, agent)

        with LocalExecutor(2) as local:
            expected = local.map(run, items)
        n_local = len(server.requests)
        ex = RayExecutor(max_workers=2)
        got = ex.map(run, items)
        assert len(server.requests) == 2 * n_local  # the workers really called the model server
    key = [(r.item_id, r.hard, r.soft, r.answer, r.usage.calls, r.usage.input_tokens) for r in expected]
    assert [(r.item_id, r.hard, r.soft, r.answer, r.usage.calls, r.usage.input_tokens) for r in got] == key
    assert sum(r.hard for r in got) == len(rules)


def test_multimodal_and_code_running_benchmarks_run_on_ray() -> None:
    docvqa = load_env("docvqa", sample=True)
    ssb = load_env("spreadsheetbench", sample=True)
    doc_item = docvqa.splits().train[0]
    ssb_item = next(i for i in ssb.splits().train if i.id == "101-1")
    program = (
        "```python\nimport sys, openpyxl\nwb = openpyxl.load_workbook(sys.argv[1])\nws = wb.active\n"
        "for r in range(2, ws.max_row + 1):\n    ws.cell(r, 4).value = ws.cell(r, 2).value + ws.cell(r, 3).value\n"
        "wb.save(sys.argv[2])\n```"
    )
    rules = [
        answer_rule("doc", doc_item.data["question"], f"Answer: {doc_item.gold['answers'][0]}"),
        answer_rule("ssb", ssb_item.data["instruction"], program),
    ]
    with scripted_chat(rules) as (_server, agent):
        jobs = [(docvqa, doc_item), (ssb, ssb_item)]
        results = RayExecutor(max_workers=2).map(
            lambda job: job[0].run(job[1], job[0].seed_skill(), agent), jobs
        )
    assert [(r.hard, r.soft) for r in results] == [(1.0, 1.0), (1.0, 1.0)]


@pytest.mark.agent_cli
def test_coding_replays_with_the_real_claude_cli_run_as_ray_tasks(
    claude_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillopt_lib.backends.claude_code import ClaudeCodeBackend
    from skillopt_lib.execution import ExecLimits
    from skillopt_lib.testing import Match, Rule, Script, Step, bash
    from testkit.agents import SCRIPTED_API_KEY

    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    env = load_env("coding")
    assert Path(env.options["workspaces_root"]).is_relative_to(Path(os.environ["SKILLOPT_HOME"]).resolve())
    sp = env.splits()
    items = [i for i in (*sp.train, *sp.val, *sp.test) if i.id in ("coding-temperature", "coding-romans")]
    fix = "def to_celsius(f: float) -> float:\n    return round((f - 32) * 5 / 9, 1)\n"
    script = Script(
        rules=[
            Rule(
                name="fix",
                match=Match(user="to_celsius gives wrong results"),
                steps=[Step(tool_calls=[bash(f"cat > temperature/__init__.py <<'EOF'\n{fix}EOF")])],
                done_text="Fixed.",
            )
        ],
        default_text="Not changing anything.",
    )
    with ScriptedServer(script) as server:
        backend = ClaudeCodeBackend(
            cli=str(claude_cli),
            base_env={
                "PATH": os.environ["PATH"],
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
            },
            user_home=home,
            limits=ExecLimits(max_turns=5, timeout_s=180),
        )
        skill = env.seed_skill()
        results = RayExecutor(max_workers=2).map(lambda item: env.run(item, skill, backend), items)
    by_id = {r.item_id: r for r in results}
    assert [r.item_id for r in results] == [i.id for i in items]
    assert (by_id["coding-temperature"].hard, by_id["coding-temperature"].soft) == (1.0, 1.0)
    assert by_id["coding-romans"].hard == 0.0  # the scripted agent leaves it alone
    assert not list(Path(env.options["workspaces_root"]).glob("*")), "workspaces are removed after scoring"

"""The coding benchmark: shipped repositories, hidden tests scored after the agent finished, and the real
pinned `claude` and `codex` CLIs working in the sandbox against the scripted model server.

Locally the CLI tests skip (with the fix in the reason) when the CLIs or Node.js are missing; in CI they run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillopt_lib.envs import load_env
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.coding import RUNNER, hidden_checks
from skillopt_lib.errors import ConfigError
from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.agents import SCRIPTED_API_KEY

FIXED = '''"""Unit conversion for the weather station feed."""


def to_celsius(fahrenheit: float) -> float:
    """Degrees Celsius for degrees Fahrenheit, rounded to one decimal."""
    return round((fahrenheit - 32) * 5 / 9, 1)
'''


def _item(env: object, item_id: str) -> Item:
    sp = env.splits()  # type: ignore[attr-defined]
    return next(i for i in (*sp.train, *sp.val, *sp.test) if i.id == item_id)


def test_the_suite_keeps_hidden_tests_out_of_the_repositories() -> None:
    env = load_env("coding")  # the suite ships whole: no --sample needed
    assert env.agent_kind == "exec"
    for item in (*env.splits().train, *env.splits().val, *env.splits().test):
        repo = Path(item.data["repo"])
        assert (repo / "tests").is_dir(), "the agent sees failing visible tests"
        hidden = {Path(p).name for p, _ in item.gold["hidden_tests"]}
        assert hidden and not any(p.name in hidden for p in repo.rglob("*.py"))
        assert all(not Path(p).is_relative_to(repo) for p, _ in item.gold["hidden_tests"])


def test_hidden_tests_fail_on_the_shipped_code_and_pass_on_a_fix(tmp_path: Path) -> None:
    item = _item(load_env("coding"), "coding-temperature")
    work = tmp_path / "ws"
    subprocess.run(["cp", "-r", item.data["repo"], str(work)], check=True)

    def passed() -> int:
        codes = [
            subprocess.run(cmd, shell=True, cwd=work, capture_output=True).returncode
            for cmd in hidden_checks(item)
        ]
        return sum(c == 0 for c in codes)

    assert passed() == 0
    (work / "temperature" / "__init__.py").write_text(FIXED)
    assert passed() == len(item.gold["hidden_tests"]) == 3
    assert str(RUNNER) in hidden_checks(item)[0] and sys.executable in hidden_checks(item)[0]


def test_a_chat_backend_is_refused_with_a_hint() -> None:
    env = load_env("coding")
    item = env.splits().train[0]
    with pytest.raises(ConfigError, match="exec backend"):
        env.run(item, env.seed_skill(), agent=object())


# ------------------------------------------------------------------------------------------ real CLIs


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def _fix_script() -> Script:
    return Script(
        rules=[
            Rule(
                name="fix",
                match=Match(user="to_celsius gives wrong results"),
                steps=[
                    Step(text="Looking at the tests.", tool_calls=[bash("ls tests")]),
                    # a shell heredoc: Claude Code's Write tool refuses files it has not read first
                    Step(tool_calls=[bash(f"cat > temperature/__init__.py <<'EOF'\n{FIXED}EOF")]),
                    Step(
                        tool_calls=[
                            bash("python3 -c 'from temperature import to_celsius; print(to_celsius(212))'")
                        ]
                    ),
                ],
                done_text="Fixed the conversion.",
            )
        ]
    )


def _check_fixed(result: object, server: ScriptedServer) -> None:
    assert (result.hard, result.soft) == (1.0, 1.0), (result.feedback, result.error)  # type: ignore[attr-defined]
    assert result.details["checks_passed"] == 3  # type: ignore[attr-defined]
    assert "All hidden checks passed." in result.feedback  # type: ignore[attr-defined]
    # the agent listed its workspace's tests: only the visible ones were there
    assert "test_temperature.py" in json.dumps([r.body for r in server.requests])
    assert "test_hidden" not in json.dumps([r.body for r in server.requests])


@pytest.mark.agent_cli
def test_claude_code_fixes_a_repository_and_the_hidden_tests_score_it(
    claude_cli: Path, model_server: ScriptedServer, user_home: Path
) -> None:
    from skillopt_lib.backends.claude_code import ClaudeCodeBackend
    from skillopt_lib.execution import ExecLimits

    model_server.set_script(_fix_script())
    backend = ClaudeCodeBackend(
        cli=str(claude_cli),
        base_env={
            "PATH": os.environ["PATH"],
            "ANTHROPIC_BASE_URL": model_server.url,
            "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
        },
        limits=ExecLimits(max_turns=10, timeout_s=180),
    )
    env = load_env("coding")
    item = _item(env, "coding-temperature")
    result = env.run(item, env.seed_skill(), backend)
    _check_fixed(result, model_server)
    # the seed skill was installed where Claude Code reads project skills
    assert "fix-failing-tests" in json.dumps([r.body for r in model_server.requests])

    model_server.set_script(Script(rules=[], default_text="I will not change anything."))
    idle = env.run(item, env.seed_skill(), backend)
    assert (idle.hard, idle.soft) == (0.0, 0.0)
    assert "3 of 3 hidden checks failed" in idle.feedback


@pytest.mark.agent_cli
def test_codex_fixes_a_repository_and_the_hidden_tests_score_it(
    codex_cli: Path, model_server: ScriptedServer, user_home: Path
) -> None:
    from skillopt_lib.backends.codex import CodexBackend
    from skillopt_lib.execution import ExecLimits

    (user_home / ".codex" / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
        f'[model_providers.scripted]\nname = "Scripted"\nbase_url = "{model_server.base_url_openai}"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_KEY"\n'
    )
    model_server.set_script(_fix_script())
    backend = CodexBackend(
        cli=str(codex_cli),
        base_env={"PATH": os.environ["PATH"], "SCRIPTED_KEY": SCRIPTED_API_KEY},
        limits=ExecLimits(timeout_s=180),
    )
    env = load_env("coding")
    result = env.run(_item(env, "coding-temperature"), env.seed_skill(), backend)
    _check_fixed(result, model_server)


@pytest.mark.agent_cli
def test_skillopt_train_trains_a_claude_code_skill_on_the_coding_benchmark(
    claude_cli: Path, tmp_path: Path
) -> None:
    """`skillopt train --env coding` as a user runs it: Claude Code as the agent (through its own
    ANTHROPIC_* variables), an OpenAI-compatible optimizer, both answered by the scripted model server."""
    import subprocess
    import sys

    no_edits = '{"summary": [], "patch": {"reasoning": "nothing to change", "edits": []}}'
    with ScriptedServer(_fix_script_all(default_text=no_edits)) as server:
        home = tmp_path / "home"
        home.mkdir()
        env = {
            **os.environ,
            "HOME": str(home),
            "SKILLOPT_HOME": str(tmp_path / "skillopt"),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
            "COLUMNS": "500",
        }
        sets = [
            "agent.backend=claude-code", f"agent.options.cli={claude_cli}", "agent.options.max_turns=8",
            "optimizer.backend=openai", "optimizer.model=scripted", f"optimizer.base_url={server.base_url_openai}",
            "env_options.limit=1", "gate.repeats=1",
        ]  # fmt: skip
        cmd = [
            sys.executable,
            "-c",
            "from skillopt_daemon.cli import main; main()",
            "train",
            "--env",
            "coding",
        ]
        cmd += ["--epochs", "1", "--json", "--run-dir", str(tmp_path / "run")]
        for s in sets:
            cmd += ["--set", s]
        run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        anthropic_calls = [r for r in server.requests if r.api == "anthropic"]
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["env"] == "coding" and summary["skill_name"] == "fix-failing-tests"
    # the scripted agent fixes every repository it is asked about: validation and test score 1
    assert summary["initial_val"] == 1.0 and summary["test"]["initial"]["score"] == 1.0
    assert anthropic_calls, "Claude Code talked to the scripted server"
    assert (tmp_path / "run" / "best_skill.md").read_text().startswith("---\nname: fix-failing-tests")


def _fix_script_all(default_text: str = "OK") -> Script:
    """A scripted Claude that fixes whichever shipped repository it is asked about, with the reference fix."""
    rules = [
        Rule(
            name=f"fix-{path.split('/')[0]}",
            match=Match(user=phrase),
            steps=[Step(tool_calls=[bash(f"cat > {path} <<'EOF'\n{code}EOF")])],
            done_text="Fixed.",
        )
        for phrase, (path, code) in REFERENCE_FIXES.items()
    ]
    return Script(rules=rules, default_text=default_text)


TEXTSTATS_FIX = """def word_count(text: str) -> int:
    return len(text.split())


def longest_word(text: str) -> str:
    words = text.split()
    return max(words, key=len) if words else ""
"""
SLUGIFY_FIX = """import re


def slugify(title: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))
"""
INVENTORY_FIX = """class OutOfStock(Exception):
    pass


class Inventory:
    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def add(self, sku: str, quantity: int) -> None:
        self.stock[sku] = self.stock.get(sku, 0) + quantity

    def remove(self, sku: str, quantity: int) -> None:
        if self.stock.get(sku, 0) < quantity:
            raise OutOfStock(sku)
        self.stock[sku] -= quantity
"""
ROMANS_FIX = """_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
           (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n: int) -> str:
    out = ""
    for value, letters in _VALUES:
        while n >= value:
            out += letters
            n -= value
    return out
"""
CSVSUM_FIX = """import csv
import io


def column_total(text: str, column: str) -> float:
    reader = csv.DictReader(io.StringIO(text))
    return sum(float(row[column].replace(",", "").strip() or 0) for row in reader)
"""

DURATIONS_FIX = """import re

_PART = re.compile(r"(\\d+)([hms])")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    return sum(int(amount) * _SECONDS[unit] for amount, unit in _PART.findall(text))
"""
DEDUPE_FIX = """def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
"""
PAGINATION_FIX = """def page_count(total: int, per_page: int) -> int:
    return -(-total // per_page)
"""
MONEY_FIX = """def format_cents(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}{whole}.{rest:02d}"
"""
LEAPYEAR_FIX = """def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_february(year: int) -> int:
    return 29 if is_leap_year(year) else 28
"""
SEMVER_FIX = """def newest(versions: list[str]) -> str:
    return max(versions, key=lambda v: tuple(int(part) for part in v.split(".")))
"""

# prompt phrase -> (file, its fixed content), one per shipped task
REFERENCE_FIXES = {
    "word_count in textstats": ("textstats/__init__.py", TEXTSTATS_FIX),
    "Implement slugify": ("slugify/__init__.py", SLUGIFY_FIX),
    "Inventory.remove": ("inventory/__init__.py", INVENTORY_FIX),
    "to_roman writes": ("romans/__init__.py", ROMANS_FIX),
    "column_total crashes": ("csvsum/__init__.py", CSVSUM_FIX),
    "to_celsius gives": ("temperature/__init__.py", FIXED),
    "parse_duration in durations": ("durations/__init__.py", DURATIONS_FIX),
    "unique in dedupe": ("dedupe/__init__.py", DEDUPE_FIX),
    "page_count in pagination": ("pagination/__init__.py", PAGINATION_FIX),
    "format_cents in money": ("money/__init__.py", MONEY_FIX),
    "is_leap_year in leapyear": ("leapyear/__init__.py", LEAPYEAR_FIX),
    "newest in semver": ("semver/__init__.py", SEMVER_FIX),
}


@pytest.mark.parametrize("phrase", list(REFERENCE_FIXES))
def test_every_shipped_task_fails_before_and_passes_after_its_reference_fix(
    phrase: str, tmp_path: Path
) -> None:
    env = load_env("coding")
    item = next(
        i for i in (*env.splits().train, *env.splits().val, *env.splits().test) if phrase in i.data["prompt"]
    )
    work = tmp_path / "ws"
    subprocess.run(["cp", "-r", item.data["repo"], str(work)], check=True)

    def hidden_passed() -> int:
        return sum(
            subprocess.run(c, shell=True, cwd=work, capture_output=True).returncode == 0
            for c in hidden_checks(item)
        )

    def visible_ok() -> bool:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        return subprocess.run(cmd, cwd=work, capture_output=True).returncode == 0

    total = len(item.gold["hidden_tests"])
    assert hidden_passed() < total and not visible_ok(), "the task starts broken"
    path, code = REFERENCE_FIXES[phrase]
    (work / path).write_text(code)
    assert hidden_passed() == total and visible_ok()

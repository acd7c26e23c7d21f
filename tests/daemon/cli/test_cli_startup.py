"""The commands people type start without the heavy parts of skillopt: `skillopt --version`, `status`,
`diff` and `approve` never import the mining stack (numpy, scikit-learn, scipy), the benchmarks' packages,
the model SDKs, the dashboard's or the MCP server's frameworks, or the optimizer, and never look for
plugins (which reads every installed package's metadata). None of them parses YAML, compiles the secret
patterns or loads the skill edits' models; `diff`, and `approve` where no setting names a tool's home, do
not even read the settings or build the evidence model; `status` without a daemon's lock file imports no
lock library, and reads the settings without pydantic-settings when no variable of skillopt's sets one. The review commands run without the cyclic garbage collector, every other command with it.

Checked by what a real process has imported, not by a stopwatch: `benchmarks/cli_latency.py` measures the
time (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit import cli

HEAVY = (
    "numpy",
    "pandas",
    "sklearn",
    "scipy",
    "openpyxl",
    "formulas",
    "PIL",
    "openai",
    "anthropic",
    "mcp",
    "fastapi",
    "uvicorn",
    "apscheduler",
    "skillopt_lib.trainer",
    "skillopt_lib.training.loop",
    "skillopt_daemon.night.mining.mine",
    # the skill format's frontmatter and the training config's YAML: parsed by what reads them
    "yaml",
    # the secret patterns: compiled by what masks or redacts a text
    "skillopt_lib.secrets",
    # skill edits (their models and patterns): imported by what measures or applies edits
    "skillopt_lib.edits",
    # the candidate screen and its tables of look-alike letters: loaded by what screens or compares a line,
    # never by a face that only shows a proposal (`skillopt_lib/rulelines.py`)
    "skillopt_lib.screen",
    "confusable_homoglyphs",
)


SKILL = (
    "---\nname: release-notes\ndescription: Write release notes for a version.\n---\n\nList the changes.\n"
)


# What `diff` needs no more of: it reads two versions from the store and prints them. Nor does `approve`
# when nothing sets a tool's home (`core/tool_homes.py`); neither prints a table.
SETTINGS = (
    "pydantic_settings",
    "skillopt_daemon.core.config",
    "skillopt_daemon.registry.evidence",
    "rich.table",
)
# What `status` needs only when a daemon ever ran here (its lock file exists).
LOCKS = ("filelock",)
# What reading the settings needs only when a variable of skillopt's names one: without, `status` reads them
# from the config file with pydantic alone (pydantic-settings imports asyncio and python-dotenv; nothing in
# a status is asynchronous or reads a .env file).
VARIABLES = ("pydantic_settings", "dotenv", "asyncio")


def loaded_after(args: list[str], env: dict[str, str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The heavy modules a real `skillopt ARGS` process had imported when it finished (with "plugins"
    when it loaded the plugin manager, which looks for every installed package's entry points, and
    "gc disabled" when it ran without the cyclic garbage collector)."""
    code = (
        "import json, sys\n"
        "argv = json.loads(sys.argv[1])\n"
        "sys.argv = ['skillopt', *argv]\n"
        "from skillopt_daemon.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = {heavy!r}\n"
        "found = sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy)\n"
        "plugins = sys.modules.get('skillopt_lib.plugins')\n"
        "found += ['plugins'] if plugins is not None and plugins._state is not None else []\n"
        "import gc\n"
        "found += [] if gc.isenabled() else ['gc disabled']\n"
        "sys.__stderr__.write('LOADED=' + json.dumps(found) + '\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    line = next((x for x in proc.stderr.splitlines() if x.startswith("LOADED=")), None)
    assert line is not None, proc.stderr
    return list(json.loads(line.removeprefix("LOADED=")))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    skill = home / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    e.update(HOME=str(home), SKILLOPT_HOME=str(tmp_path / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    e.pop("CLAUDE_CONFIG_DIR", None)
    return e


def test_the_commands_people_type_do_not_import_the_heavy_modules(
    env: dict[str, str], tmp_path: Path
) -> None:
    cli.run("skills", "import", "--tool", "claude-code", env=env, check=True)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "SKILL.md").write_text(SKILL + "\nName every breaking change first.\n")
    cli.run("propose", "release-notes", str(candidate), env=env, check=True)
    status = cli.run("status", "--json", env=env, check=True)
    proposal = json.loads(status.stdout)["pending"]["items"][0]["short_id"]
    quiet = ["gc disabled"]
    assert loaded_after(["--version"], env) == []
    for args in (["status"], ["diff", proposal], ["approve", proposal, "--dry-run"]):
        assert loaded_after(args, env) == quiet, f"skillopt {' '.join(args)}"
    assert loaded_after(["diff", proposal], env, HEAVY + SETTINGS) == quiet
    assert loaded_after(["approve", proposal, "--dry-run"], env, HEAVY + SETTINGS) == quiet
    assert loaded_after(["status"], env, HEAVY + LOCKS + VARIABLES) == quiet
    # every other command keeps the collector
    assert loaded_after(["skills", "list"], env) == []


def test_approve_reads_the_settings_when_they_name_a_tool_home(env: dict[str, str], tmp_path: Path) -> None:
    cli.run("skills", "import", "--tool", "claude-code", env=env, check=True)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "SKILL.md").write_text(SKILL + "\nName every breaking change first.\n")
    cli.run("propose", "release-notes", str(candidate), env=env, check=True)
    config = Path(env["SKILLOPT_HOME"]) / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[tools.claude-code]\nhome = "{tmp_path / "elsewhere"}"\n')
    plan = cli.run("approve", "release-notes@v2", "--dry-run", env=env, check=True).stdout
    assert str(tmp_path / "elsewhere" / "skills" / "release-notes" / "SKILL.md") in plan
    # The file alone decides the settings: they are read without pydantic-settings.
    args = ["approve", "release-notes@v2", "--dry-run"]
    assert loaded_after(args, env, SETTINGS) == ["skillopt_daemon.core.config", "gc disabled"]
    # A variable of ours that names a setting brings pydantic-settings in, and wins over the file.
    env["SKILLOPT_TOOLS__CLAUDE_CODE__HOME"] = str(tmp_path / "by-variable")
    plan = cli.run(*args, env=env, check=True).stdout
    assert str(tmp_path / "by-variable" / "skills" / "release-notes" / "SKILL.md") in plan
    assert "pydantic_settings" in loaded_after(args, env, SETTINGS)

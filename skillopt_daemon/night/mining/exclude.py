"""Which sessions mining skips: known automation, never headless use as such.

People type `claude -p` and `codex exec` in their terminals every day, so those sessions are mined. What is
skipped is what no person typed: skillopt's own replays, programs built on the Agent SDKs, the harnesses of
other tools (recognised by their entrypoints and by the markers their prompts start with), and whatever the
user lists under `night.exclude` (project folders, prompt regexes, entrypoints).
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import Any

# Claude Code's Agent SDK entrypoints (`sdk-cli` is `claude -p` itself, so it is not here).
SDK_ENTRYPOINTS = frozenset({"sdk", "sdk-py", "sdk-ts"})
# Entrypoints and Codex originators of CI and evaluation harnesses.
HARNESS_ENTRYPOINTS = frozenset({"claude-code-github-action", "github-action", "ci"})
_SDK_ORIGINATOR = re.compile(r"sdk", re.IGNORECASE)
# How other tools' harnesses open their prompts (benchmarks, CI bots, autonomous loops).
HARNESS_MARKERS = re.compile(
    r"^\s*(?:<uploaded_files>|<pr_description>|<issue_description>|<task_instructions>|"
    r"You are an autonomous (?:coding )?agent|\[automated\]|\[bot\]|"
    r"Below is an instruction that describes a task|SWE-bench|terminal-bench)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ExcludeRules:
    """The user's `night.exclude` settings, compiled; `include_automation` keeps everything but replays."""

    projects: tuple[str, ...] = ()
    prompts: tuple[re.Pattern[str], ...] = field(default_factory=tuple)
    entrypoints: frozenset[str] = frozenset()
    include_automation: bool = False

    @classmethod
    def from_settings(cls, night: Any) -> ExcludeRules:
        ex = night.exclude
        return cls(
            projects=tuple(ex.projects),
            prompts=tuple(re.compile(p) for p in ex.prompts),
            entrypoints=frozenset(ex.entrypoints),
            include_automation=bool(night.include_automation),
        )


def exclusion(session: dict[str, Any], first_prompt: str, rules: ExcludeRules) -> str | None:
    """Why this session is not mined, or None when it is a person's work."""
    if session.get("is_replay"):
        return "a skillopt replay"
    entry = str(session.get("entrypoint") or "")
    project = str(session.get("project_path") or "")
    for pattern in rules.projects:
        if fnmatch.fnmatch(project, pattern) or project.rstrip("/") == pattern.rstrip("/"):
            return f"project matches night.exclude.projects {pattern!r}"
    if entry and entry in rules.entrypoints:
        return f"entrypoint {entry!r} is in night.exclude.entrypoints"
    for regex in rules.prompts:
        if regex.search(first_prompt):
            return f"first request matches night.exclude.prompts {regex.pattern!r}"
    if rules.include_automation:
        return None
    if entry in SDK_ENTRYPOINTS:
        return f"an Agent SDK program (entrypoint {entry!r})"
    if entry in HARNESS_ENTRYPOINTS:
        return f"a CI or evaluation harness (entrypoint {entry!r})"
    originator = str(_extra(session).get("originator") or "")
    if originator and _SDK_ORIGINATOR.search(originator):
        return f"a Codex SDK program (originator {originator!r})"
    if HARNESS_MARKERS.match(first_prompt):
        return "another tool's harness (its prompt marker)"
    return None


def _extra(session: dict[str, Any]) -> dict[str, Any]:
    raw = session.get("extra_json")
    if isinstance(raw, dict):
        return raw
    try:
        data = json.loads(raw or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}

"""Talking to the optimizer model: prompts, structured answers, and the analysts that read rollouts.

Every optimizer call asks for one JSON object validated by a pydantic model. Models answer in fences, with
trailing commas, or with prose around the object; `parse_json_object` (`json_repair`) mends what it can, and
`call_json` re-asks with the parse error a bounded number of times. A call that still fails returns None and
is recorded: a malformed answer costs one step's proposals, never the run.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from skillopt_lib.backends.base import ChatBackend, ChatMessage, Usage
from skillopt_lib.budget import StepBudget
from skillopt_lib.config import ReflectConfig
from skillopt_lib.edits import Edit, Patch, SourceType, parse_edits
from skillopt_lib.envs.base import Item, ItemResult, describe_item
from skillopt_lib.errors import ConfigError
from skillopt_lib.jsonreply import parse_json_object
from skillopt_lib.origin import (
    AGENT,
    CHECK,
    FEEDBACK,
    PREFERENCES_HEADER,
    REJECTED,
    TASK,
    TOOL,
    fence,
    preference_line,
)
from skillopt_lib.skill import SKILL_FILE, SkillBundle

PROMPT_NAMES = ("system", "analyst_failure", "analyst_success", "merge", "rank", "slow_update", "meta_skill")
M = TypeVar("M", bound=BaseModel)


class Prompts:
    """The optimizer's prompts: Markdown templates (`$name` placeholders) shipped in `skillopt_lib/prompts/`.

    A user folder (`prompts_dir`) overrides any of them file by file, so a prompt can be tuned without
    forking the package.
    """

    def __init__(self, override_dir: Path | None = None) -> None:
        self.override_dir = Path(override_dir).expanduser() if override_dir else None
        if self.override_dir is not None and not self.override_dir.is_dir():
            raise ConfigError(f"prompts_dir {self.override_dir} is not a folder")
        self._cache: dict[str, str] = {}

    def source(self, name: str) -> str:
        if name not in self._cache:
            if self.override_dir is not None and (self.override_dir / f"{name}.md").is_file():
                self._cache[name] = (self.override_dir / f"{name}.md").read_text(encoding="utf-8")
            else:
                ref = resources.files("skillopt_lib").joinpath("prompts", f"{name}.md")
                self._cache[name] = ref.read_text(encoding="utf-8")
        return self._cache[name]

    def render(self, name: str, **values: Any) -> str:
        return Template(self.source(name)).safe_substitute({k: str(v) for k, v in values.items()})

    def overridden(self) -> list[str]:
        if self.override_dir is None:
            return []
        return sorted(n for n in PROMPT_NAMES if (self.override_dir / f"{n}.md").is_file())


@dataclass
class CallRecord:
    """One optimizer call as the history shows it."""

    prompt: str
    ok: bool
    attempts: int
    error: str | None = None
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "ok": self.ok,
            "attempts": self.attempts,
            "error": self.error,
            "usage": self.usage.to_dict(),
        }


class OptimizerCaller:
    """The optimizer backend plus prompts, usage accounting and the JSON retry policy."""

    def __init__(self, backend: ChatBackend, prompts: Prompts, json_retries: int = 2) -> None:
        self.backend = backend
        self.prompts = prompts
        self.json_retries = json_retries
        self.usage = Usage()
        self._lock = threading.Lock()

    def call_json(self, prompt: str, model: type[M], **values: Any) -> tuple[M | None, CallRecord]:
        messages = [ChatMessage("user", self.prompts.render(prompt, **values))]
        system = self.prompts.render("system")
        record = CallRecord(prompt=prompt, ok=False, attempts=0)
        for _ in range(self.json_retries + 1):
            record.attempts += 1
            resp = self.backend.complete(messages, system=system, json_mode=True)
            record.usage.add(resp.usage)
            with self._lock:
                self.usage.add(resp.usage)
            try:
                parsed = model.model_validate(parse_json_object(resp.text))
            except (ValueError, ValidationError) as exc:
                record.error = _short_error(exc)
                messages = [
                    *messages,
                    ChatMessage("assistant", resp.text or "(empty)"),
                    ChatMessage(
                        "user",
                        f"Your answer could not be used: {record.error}. "
                        "Answer again with the JSON object only, following the schema above.",
                    ),
                ]
                continue
            record.ok, record.error = True, None
            return parsed, record
        return None, record


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"])
        return f"{len(errs)} schema error(s), first at '{where}': {first['msg']}"
    return str(exc)[:300]


class LoosePatch(BaseModel):
    """A patch as a model may return it: edits are validated one by one so one bad edit keeps the rest."""

    reasoning: str = ""
    failure_summary: Any = None
    edits: list[dict[str, Any]] = []

    def to_patch(self, source: SourceType | None = None) -> Patch:
        edits = parse_edits(self.edits)
        if source is not None:
            edits = [e.model_copy(update={"source_type": source}) for e in edits]
        return Patch(reasoning=self.reasoning, failure_summary=self.failure_summary, edits=edits)


# ---------------------------------------------------------------------------------------------- rendering


def render_skill(bundle: SkillBundle, max_chars: int = 20_000) -> str:
    """The skill as the optimizer reads it: SKILL.md, then its other text files (editable by `file`)."""
    parts = [f"### {SKILL_FILE}\n```markdown\n{bundle.doc.serialize()}\n```"]
    for path, text in sorted(bundle.text_files().items()):
        if path != SKILL_FILE:
            parts.append(f'### {path} (edit with "file": "{path}")\n```\n{text}\n```')
    out = "\n\n".join(parts)
    return out if len(out) <= max_chars else out[:max_chars] + "\n…(truncated)"


def render_rejected(rejected: Sequence[dict[str, Any]], limit: int = 30) -> str:
    if not rejected:
        return "(none)"
    lines = []
    for entry in list(rejected)[-limit:]:
        edit = Edit.model_validate(entry["edit"])
        lines.append(f"- [step {entry.get('step')}] {edit.short(160)} — {entry.get('reason', 'rejected')}")
    # Rejected edits carry what the screen rejected (a planted line, quoted in its reason): data, fenced.
    return fence("\n".join(lines), REJECTED)


def render_edits(edits: Sequence[Edit], numbered: bool = False) -> str:
    rows = []
    for i, e in enumerate(edits):
        data = e.model_dump(exclude={"file"} if e.file == SKILL_FILE else set())
        rows.append((f"[{i}] " if numbered else "") + json.dumps(data, ensure_ascii=False))
    return "\n".join(rows) if rows else "(none)"


def render_examples(env: Any, pairs: Sequence[tuple[Item, ItemResult]], max_trajectory: int) -> str:
    """The tasks an analyst reads, each text marked by whose it is (`skillopt_lib.origin`): the task, the
    agent's answer, the feedback, failed checks' output and the trajectory are fenced as data the text
    cannot close; only the user's stated preferences are the user's words."""
    blocks = []
    for item, res in pairs:
        traj = res.trajectory or ""
        if len(traj) > max_trajectory:
            half = max_trajectory // 2
            traj = traj[:half] + "\n…(cut)…\n" + traj[-half:]
        block = [
            f"### Task {item.id}",
            "**The task:**",
            fence(describe_item(env, item), TASK),
            f"**Score:** hard={res.hard:g} soft={res.soft:.2f}",
            "**The agent's answer:**",
            fence(res.answer or "(none)", AGENT),
            "**Feedback:**",
            fence(res.feedback or "(none)", FEEDBACK),
        ]
        if res.error:
            block += ["**Error:**", fence(res.error, TOOL)]
        block.extend(_taught(res))
        if traj:
            block += ["**Trajectory (the agent's tool calls and messages):**", fence(traj, TOOL)]
        blocks.append("\n".join(block))
    return "\n\n".join(blocks)


def _taught(res: ItemResult) -> list[str]:
    """What the user taught in this task, when the environment passes it on: their own words (corrections,
    with tool, project and date), one line each, and the checks that failed, with their output fenced as
    tool output."""
    out: list[str] = []
    prefs = res.details.get("user_preferences") or []
    if prefs:
        lines = [
            "- " + preference_line(str(p.get("text", "")), p.get("tool"), p.get("project"), p.get("date"))
            for p in prefs
        ]
        out.append(f"**{PREFERENCES_HEADER}**\n" + "\n".join(lines))
    checks = res.details.get("failed_checks") or []
    if checks:
        parts = [
            fence(
                f"$ {c.get('command')}  (exit code {c.get('exit_code')})\n{str(c.get('output', '')).strip()}",
                CHECK,
            )
            for c in checks
        ]
        out.append("**Checks that failed after the agent finished (their output):**\n" + "\n".join(parts))
    return out


# ---------------------------------------------------------------------------------------------- analysts


@dataclass
class Reflection:
    failure_patches: list[Patch]
    success_patches: list[Patch]
    calls: list[CallRecord]


def minibatches(seq: Sequence[Any], size: int) -> list[list[Any]]:
    return [list(seq[i : i + size]) for i in range(0, len(seq), size)]


def reflect(
    caller: OptimizerCaller,
    env: Any,
    pairs: Sequence[tuple[Item, ItemResult]],
    skill: SkillBundle,
    budget: StepBudget,
    rejected: Sequence[dict[str, Any]],
    meta_notes: str,
    cfg: ReflectConfig,
    rng: random.Random,
    run_parallel: Any,
) -> Reflection:
    """Failures and successes, shuffled and cut into minibatches, each read by its own analyst call."""
    failures = [p for p in pairs if not p[1].passed]
    successes = [p for p in pairs if p[1].passed] if cfg.use_successes else []
    rng.shuffle(failures)
    rng.shuffle(successes)
    jobs: list[tuple[str, SourceType, list[tuple[Item, ItemResult]]]] = []
    jobs += [("analyst_failure", "failure", mb) for mb in minibatches(failures, cfg.minibatch_size)]
    jobs += [("analyst_success", "success", mb) for mb in minibatches(successes, cfg.minibatch_size)]
    common = {
        "skill": render_skill(skill),
        "max_edits": budget.edits,
        "max_tokens": budget.tokens,
        "meta_notes": meta_notes or "(none yet)",
        "rejected": render_rejected(rejected),
    }

    def run(job: tuple[str, SourceType, list[tuple[Item, ItemResult]]]) -> tuple[Patch | None, CallRecord]:
        prompt, source, mb = job
        loose, record = caller.call_json(
            prompt, LoosePatch, examples=render_examples(env, mb, cfg.max_trajectory_chars), **common
        )
        return (loose.to_patch(source) if loose is not None else None), record

    outcomes = run_parallel(run, jobs)
    fail_p: list[Patch] = []
    succ_p: list[Patch] = []
    calls: list[CallRecord] = []
    for (_, source, _), (patch, record) in zip(jobs, outcomes, strict=True):
        calls.append(record)
        if patch is not None:
            (fail_p if source == "failure" else succ_p).append(patch)
    return Reflection(fail_p, succ_p, calls)

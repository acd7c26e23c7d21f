"""Approved skills as Devin Knowledge entries and Playbooks, as JSON bodies ready for Devin's API.

Devin's cloud sessions do not read `.devin/skills`: they use Knowledge (recalled when its trigger matches
the task) and Playbooks (run on request, e.g. by a `!macro`). A skill maps onto both: its description is
the Knowledge trigger and the Playbook's purpose, its body the content. skillopt writes the request bodies
(`POST /v1/knowledge`, `POST /v1/playbooks`) as files and never calls the API itself, so no Devin token ever
passes through skillopt; `curl --data @file` or the user's own tooling sends them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.core.fsio import atomic_write
from skillopt_daemon.registry import open_registry
from skillopt_lib.errors import NotFoundError
from skillopt_lib.skill import SKILL_FILE, SkillBundle

# Text files of a skill other than SKILL.md are appended to the content, each under its path; larger ones
# are named but left out, since Knowledge is recalled into the agent's context whole.
MAX_EXTRA_FILE_CHARS = 20_000
_MACRO_RE = re.compile(r"[^a-z0-9_-]+")


@dataclass(frozen=True)
class KnowledgeEntry:
    """The body of `POST /v1/knowledge`."""

    name: str
    body: str
    trigger_description: str
    pinned_repo: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Playbook:
    """The body of `POST /v1/playbooks`."""

    title: str
    body: str
    macro: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _content(bundle: SkillBundle, label: str | None) -> str:
    doc = bundle.doc
    parts = [doc.body.strip("\n")]
    for path, text in sorted(bundle.text_files().items()):
        if path == SKILL_FILE:
            continue
        if len(text) > MAX_EXTRA_FILE_CHARS:
            parts.append(f"## {path}\n\n(left out: {len(text)} characters; see the skill folder)")
            continue
        fence = "````" if "```" in text else "```"
        parts.append(f"## {path}\n\n{fence}\n{text.rstrip()}\n{fence}")
    if label:
        parts.append(f"<!-- exported by skillopt from {label} -->")
    return "\n\n".join(p for p in parts if p) + "\n"


def macro_for(name: str) -> str:
    return "!" + (_MACRO_RE.sub("-", name.lower()).strip("-") or "skill")


def knowledge_entry(
    bundle: SkillBundle, *, label: str | None = None, pinned_repo: str | None = None
) -> KnowledgeEntry:
    bundle.require_valid()
    doc = bundle.doc
    return KnowledgeEntry(
        name=doc.name,
        body=_content(bundle, label),
        trigger_description=doc.description,
        pinned_repo=pinned_repo,
    )


def playbook(bundle: SkillBundle, *, label: str | None = None, macro: bool = True) -> Playbook:
    bundle.require_valid()
    doc = bundle.doc
    body = f"Purpose: {doc.description}\n\n" + _content(bundle, label)
    return Playbook(title=doc.name, body=body, macro=macro_for(doc.name) if macro else None)


@dataclass(frozen=True)
class ExportedSkill:
    skill: str
    label: str | None
    knowledge: Path
    playbook: Path

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "label": self.label,
            "knowledge": str(self.knowledge),
            "playbook": str(self.playbook),
        }


def write_export(
    items: Iterable[tuple[SkillBundle, str | None]], out_dir: Path, *, pinned_repo: str | None = None
) -> list[ExportedSkill]:
    """Write `knowledge/<name>.json` and `playbooks/<name>.json` under `out_dir` for each bundle."""
    out: list[ExportedSkill] = []
    for bundle, label in items:
        k = knowledge_entry(bundle, label=label, pinned_repo=pinned_repo)
        p = playbook(bundle, label=label)
        kp = out_dir / "knowledge" / f"{k.name}.json"
        pp = out_dir / "playbooks" / f"{k.name}.json"
        atomic_write(kp, (json.dumps(k.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        atomic_write(pp, (json.dumps(p.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        out.append(ExportedSkill(k.name, label, kp, pp))
    return out


API_BASE = "https://api.devin.ai/v1"


def send_commands(out_dir: Path) -> list[str]:
    """The shell commands that send an export to Devin's API: every Knowledge entry and every Playbook.

    The token stays in the user's environment (`$DEVIN_API_KEY`, in double quotes so the shell expands it);
    skillopt never holds it.
    """
    header = '-H "Authorization: Bearer $DEVIN_API_KEY" -H "Content-Type: application/json"'
    return [
        f'for f in "{out_dir}"/{kind}/*.json; do curl -sS -X POST {API_BASE}/{kind} {header} --data @"$f"; done'
        for kind in ("knowledge", "playbooks")
    ]


def export_approved(
    out_dir: Path, skills: Sequence[str] = (), *, pinned_repo: str | None = None
) -> list[ExportedSkill]:
    """Export each skill's current approved version (all skills when none are named)."""
    reg, _notes = open_registry(actor="devin-export")
    try:
        names = list(skills) or reg.skill_names()
        items: list[tuple[SkillBundle, str | None]] = []
        for name in names:
            reg.require_skill(name)
            version = reg.current_version(name)
            if version is None or version.state != "approved":
                if skills:
                    raise NotFoundError(
                        f"{name} has no approved version to export",
                        hint=f"see its versions: skillopt history {name}",
                    )
                continue
            items.append((reg.load_bundle(version.id), version.label))
    finally:
        reg.db.conn.close()
    return write_export(items, out_dir, pinned_repo=pinned_repo)

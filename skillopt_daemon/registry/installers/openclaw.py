"""OpenClaw reads skills from `~/.openclaw/skills/<name>/` (`OPENCLAW_STATE_DIR` moves it) and a workspace's
`skills/<name>/`. Its SKILL.md parser accepts only single-line frontmatter keys, so every version is rewritten
with nested values as one-line JSON before it is written (the body is untouched)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from skillopt_daemon.registry.installers.base import FolderInstaller, Location
from skillopt_lib.agents import AgentTool
from skillopt_lib.skill import SKILL_FILE, SkillBundle, SkillDoc

_BLOCK_INDICATORS = ("|", ">", "|-", ">-", "|+", ">+")


def single_line_frontmatter(text: str) -> str:
    """`text` with every frontmatter key on one line; a document that already complies comes back unchanged.

    Strings stay plain when YAML reads them back the same; anything else (nested maps, lists, strings that
    need quoting) becomes JSON, which is valid YAML flow style, so the values read back identically.
    """
    doc = SkillDoc.parse(text)
    if not doc.head:
        return text
    lines = doc.frontmatter_text.splitlines()
    if all(
        line and not line[0].isspace() and not line.rstrip().endswith(_BLOCK_INDICATORS) for line in lines
    ):
        return text
    out = []
    for key, value in doc.frontmatter.items():
        out.append(f"{key}: {_one_line(value)}")
    return "---\n" + "\n".join(out) + "\n---\n" + doc.body


def _one_line(value: object) -> str:
    if isinstance(value, str):
        try:
            plain_ok = "\n" not in value and yaml.safe_load(f"k: {value}") == {"k": value}
        except yaml.YAMLError:
            plain_ok = False
        return value if plain_ok else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


class OpenClawInstaller(FolderInstaller):
    tool = AgentTool.OPENCLAW

    def user_locations(self) -> list[Location]:
        home = self.home()
        return [Location(home / "skills", home)]

    def project_locations(self, project: Path) -> list[Location]:
        return [Location(project / "skills", project)]

    def prepare(self, bundle: SkillBundle) -> SkillBundle:
        raw = bundle.files.get(SKILL_FILE)
        if raw is None:
            return bundle
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return bundle
        fixed = single_line_frontmatter(text)
        return bundle if fixed == text else bundle.with_file(SKILL_FILE, fixed)

"""Skill documents and bundles: the trainable state of a frozen agent.

A skill is a folder: `SKILL.md` (YAML frontmatter, then Markdown) plus optional `scripts/`, `references/`
and `assets/`. Parsing keeps the exact bytes of the frontmatter block, so a document nobody edited serializes
to identical bytes: hashes stay stable, diffs show only real changes, and a user's formatting survives.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillopt_lib.errors import SkillFormatError

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
# Files that are never part of a skill version: editor and OS droppings, caches.
IGNORED_NAMES = {".DS_Store", "Thumbs.db", "__pycache__", ".git"}
_FENCE_RE = re.compile(r"^---[ \t]*\r?$")


def _lines(text: str) -> list[str]:
    """Lines split on '\n' only, ends kept. `str.splitlines` also splits on NEL, U+2028 and form feeds,
    which would put a fence or a key on a line of its own that YAML and editors do not see."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


@dataclass(frozen=True)
class SkillIssue:
    """One broken rule, with the 1-based line of SKILL.md it concerns (0 when it concerns the whole file)."""

    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return f"SKILL.md {where}: {self.message} [{self.rule}]"


@dataclass(frozen=True)
class SkillDoc:
    """A parsed SKILL.md: `head` is the frontmatter block verbatim (fences included), `body` the rest."""

    head: str
    body: str

    @classmethod
    def parse(cls, text: str) -> SkillDoc:
        """Split frontmatter from body without changing a byte. A file without frontmatter has head ''."""
        lines = _lines(text)
        if not lines or not _FENCE_RE.match(lines[0].lstrip("\ufeff").rstrip("\n")):
            return cls(head="", body=text)
        for i in range(1, len(lines)):
            if _FENCE_RE.match(lines[i].rstrip("\n")):
                head = "".join(lines[: i + 1])
                return cls(head=head, body=text[len(head) :])
        # An opening fence without a closing one: keep everything as body; validation reports it.
        return cls(head="", body=text)

    @classmethod
    def new(cls, name: str, description: str, body: str, **extra: Any) -> SkillDoc:
        fm: dict[str, Any] = {"name": name, "description": description, **extra}
        return cls(head=_dump_head(fm), body=body if body.startswith("\n") else "\n" + body)

    def serialize(self) -> str:
        return self.head + self.body

    @property
    def frontmatter_text(self) -> str:
        if not self.head:
            return ""
        lines = _lines(self.head)
        return "".join(lines[1:-1])

    @property
    def frontmatter(self) -> dict[str, Any]:
        """The frontmatter as a mapping; {} when missing or unparsable (validate() says why)."""
        import yaml  # on first use: reading or diffing versions parses no frontmatter (see `_dump_head`)

        try:
            data = yaml.safe_load(self.frontmatter_text) if self.head else None
        except yaml.YAMLError:
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    def with_body(self, body: str) -> SkillDoc:
        return SkillDoc(head=self.head, body=body)

    def with_frontmatter(self, **updates: Any) -> SkillDoc:
        """Change frontmatter keys. The name is immutable: changing it would make a different skill."""
        if "name" in updates and self.name and updates["name"] != self.name:
            raise SkillFormatError(
                f"the frontmatter name is immutable (is {self.name!r}, asked for {updates['name']!r})"
            )
        fm = dict(self.frontmatter)
        fm.update(updates)
        return SkillDoc(head=_dump_head(fm), body=self.body)

    def validate(self, folder_name: str | None = None) -> list[SkillIssue]:
        """Check the Agent Skills rules. Returns every issue found, so a user can fix them in one go."""
        issues: list[SkillIssue] = []
        if not self.head:
            first = _lines(self.body)[0].rstrip("\n") if self.body else ""
            if _FENCE_RE.match(first.lstrip("\ufeff")):
                issues.append(SkillIssue(1, "frontmatter", "frontmatter opened with '---' is never closed"))
            else:
                issues.append(
                    SkillIssue(
                        1, "frontmatter", "missing YAML frontmatter ('---' block with name and description)"
                    )
                )
            return issues
        import yaml  # on first use (see `_dump_head`)

        try:
            data = yaml.safe_load(self.frontmatter_text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            n_lines = len(_lines(self.frontmatter_text))
            # An error found only at the end of the block (an unclosed bracket or quote) belongs to the line
            # where the construct opened, not to the closing fence.
            context = getattr(exc, "context_mark", None)
            if context is not None and (mark is None or mark.line >= n_lines):
                mark = context
            line = min(mark.line + 2, n_lines + 1) if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            issues.append(SkillIssue(line, "frontmatter-yaml", f"frontmatter is not valid YAML: {problem}"))
            return issues
        if not isinstance(data, dict):
            issues.append(
                SkillIssue(2, "frontmatter-mapping", "frontmatter must be a mapping of keys to values")
            )
            return issues
        name_line = self._key_line("name")
        name = data.get("name")
        if name is None or name == "":
            issues.append(SkillIssue(name_line or 1, "name-required", "the 'name' field is required"))
        elif not isinstance(name, str):
            issues.append(SkillIssue(name_line, "name-format", "'name' must be a string"))
        else:
            if len(name) > NAME_MAX:
                issues.append(
                    SkillIssue(name_line, "name-length", f"'name' is {len(name)} characters; max {NAME_MAX}")
                )
            if not NAME_RE.match(name):
                issues.append(
                    SkillIssue(
                        name_line,
                        "name-format",
                        f"'name' {name!r} must be lowercase letters, digits and single hyphens, "
                        "with no hyphen at either end",
                    )
                )
            if folder_name is not None and name != folder_name:
                issues.append(
                    SkillIssue(
                        name_line,
                        "name-matches-folder",
                        f"'name' {name!r} must equal the folder name {folder_name!r}",
                    )
                )
        desc_line = self._key_line("description")
        desc = data.get("description")
        if desc is None or (isinstance(desc, str) and not desc.strip()):
            issues.append(
                SkillIssue(desc_line or 1, "description-required", "the 'description' field is required")
            )
        elif not isinstance(desc, str):
            issues.append(SkillIssue(desc_line, "description-format", "'description' must be a string"))
        elif len(desc) > DESCRIPTION_MAX:
            issues.append(
                SkillIssue(
                    desc_line,
                    "description-length",
                    f"'description' is {len(desc)} characters; max {DESCRIPTION_MAX}",
                )
            )
        compat = data.get("compatibility")
        if compat is not None:
            if not isinstance(compat, str):
                issues.append(
                    SkillIssue(
                        self._key_line("compatibility"),
                        "compatibility-format",
                        "'compatibility' must be a string",
                    )
                )
            elif len(compat) > COMPATIBILITY_MAX:
                issues.append(
                    SkillIssue(
                        self._key_line("compatibility"),
                        "compatibility-length",
                        f"'compatibility' is {len(compat)} characters; max {COMPATIBILITY_MAX}",
                    )
                )
        meta = data.get("metadata")
        if meta is not None and not (isinstance(meta, dict) and all(isinstance(k, str) for k in meta)):
            issues.append(SkillIssue(self._key_line("metadata"), "metadata-map", "'metadata' must be a map"))
        return issues

    def _key_line(self, key: str) -> int:
        for i, line in enumerate(_lines(self.frontmatter_text), start=2):
            if re.match(rf"^{re.escape(key)}\s*:", line):
                return i
        return 0


def _dump_head(fm: Mapping[str, Any]) -> str:
    # PyYAML is imported where frontmatter is parsed or written, not with this module: `skillopt diff` and
    # the proposals lists read and compare skill files without parsing their frontmatter.
    import yaml

    text = yaml.safe_dump(dict(fm), sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{text}---\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SkillBundle:
    """Every file of one skill version, by path relative to the skill folder ('SKILL.md', 'scripts/x.py').

    Versions are content-addressed: `content_hash` covers every path and byte, so two bundles with the same
    hash are the same skill version wherever they came from.
    """

    files: Mapping[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for path in self.files:
            _check_rel_path(path)

    @classmethod
    def from_doc(cls, doc: SkillDoc, extra: Mapping[str, bytes] | None = None) -> SkillBundle:
        files = dict(extra or {})
        files[SKILL_FILE] = doc.serialize().encode("utf-8")
        return cls(files=files)

    @classmethod
    def from_text(cls, text: str) -> SkillBundle:
        return cls(files={SKILL_FILE: text.encode("utf-8")})

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> SkillBundle:
        """Load a skill folder, or a lone SKILL.md-like file (any name) as a one-file bundle.

        Symlinks are refused rather than followed: a bundle must not pull in files from outside its folder.
        """
        p = Path(path)
        if p.is_file():
            # Bytes, not read_text(): text mode would turn CRLF into LF and change the version's hash.
            return cls(files={SKILL_FILE: p.read_bytes()})
        if not p.is_dir():
            raise SkillFormatError(f"no skill at {p}", hint="give a skill folder or a SKILL.md file")
        if not (p / SKILL_FILE).is_file():
            raise SkillFormatError(
                f"{p} has no {SKILL_FILE}", hint="a skill folder needs a SKILL.md at its top"
            )
        files: dict[str, bytes] = {}
        for root, dirs, names in os.walk(p, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in IGNORED_NAMES)
            for d in dirs:
                if (Path(root) / d).is_symlink():
                    raise SkillFormatError(
                        f"{Path(root) / d} is a symlink; skills may not link outside their folder"
                    )
            for n in sorted(names):
                if n in IGNORED_NAMES or n.endswith(".pyc"):
                    continue
                fp = Path(root) / n
                if fp.is_symlink():
                    raise SkillFormatError(f"{fp} is a symlink; skills may not link outside their folder")
                if not fp.is_file():
                    continue  # sockets, fifos: not content
                files[fp.relative_to(p).as_posix()] = fp.read_bytes()
        return cls(files=files)

    @property
    def doc(self) -> SkillDoc:
        raw = self.files.get(SKILL_FILE)
        if raw is None:
            raise SkillFormatError(f"the bundle has no {SKILL_FILE}")
        return SkillDoc.parse(raw.decode("utf-8"))

    @property
    def name(self) -> str:
        return self.doc.name

    @property
    def content_hash(self) -> str:
        h = hashlib.sha256()
        for path in sorted(self.files):
            h.update(path.encode("utf-8") + b"\0" + _sha256(self.files[path]).encode() + b"\n")
        return h.hexdigest()

    def file_hashes(self) -> dict[str, str]:
        return {path: _sha256(data) for path, data in sorted(self.files.items())}

    def with_file(self, path: str, data: bytes | str) -> SkillBundle:
        files = dict(self.files)
        files[path] = data.encode("utf-8") if isinstance(data, str) else data
        return SkillBundle(files=files)

    def with_doc(self, doc: SkillDoc) -> SkillBundle:
        return self.with_file(SKILL_FILE, doc.serialize())

    def text_files(self) -> dict[str, str]:
        """The files that decode as UTF-8: the ones the optimizer may read and edit."""
        out: dict[str, str] = {}
        for path, data in self.files.items():
            try:
                out[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        return out

    def validate(self, folder_name: str | None = None) -> list[SkillIssue]:
        if SKILL_FILE not in self.files:
            return [SkillIssue(0, "skill-file", f"the skill has no {SKILL_FILE}")]
        try:
            doc = self.doc
        except UnicodeDecodeError:
            return [SkillIssue(0, "encoding", f"{SKILL_FILE} is not valid UTF-8")]
        return doc.validate(folder_name)

    def require_valid(self, folder_name: str | None = None) -> None:
        issues = self.validate(folder_name)
        if issues:
            raise SkillFormatError("invalid skill:\n" + "\n".join(f"  {i}" for i in issues))

    def materialize(self, folder: str | os.PathLike[str]) -> Path:
        """Write the bundle into `folder` (created), for sandboxes; installers write atomically."""
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        for path, data in self.files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return root

    def total_bytes(self) -> int:
        return sum(len(v) for v in self.files.values())


def _check_rel_path(path: str) -> None:
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\\" in path
        or any(p in ("", ".", "..") for p in parts)
        or any(ord(c) < 32 for c in path)
    ):
        # Normalized paths only: 'a/./b' and 'a/b' name one file, and must not make two versions.
        raise SkillFormatError(
            f"bundle path {path!r} must be a normalized relative path that stays inside the skill folder"
        )


def unified_diff(
    old: SkillBundle | None, new: SkillBundle, old_label: str = "a", new_label: str = "b", context: int = 3
) -> str:
    """A unified diff over every file of two versions (a missing `old` diffs against nothing)."""
    old_files: Mapping[str, bytes] = old.files if old is not None else {}
    chunks: list[str] = []
    for path in sorted(set(old_files) | set(new.files)):
        a = old_files.get(path)
        b = new.files.get(path)
        if a == b:
            continue
        try:
            a_lines = a.decode("utf-8").splitlines(keepends=True) if a is not None else []
            b_lines = b.decode("utf-8").splitlines(keepends=True) if b is not None else []
        except UnicodeDecodeError:
            chunks.append(f"Binary file {path} differs\n")
            continue
        diff = list(
            difflib.unified_diff(
                a_lines,
                b_lines,
                fromfile=f"{old_label}/{path}" if a is not None else "/dev/null",
                tofile=f"{new_label}/{path}" if b is not None else "/dev/null",
                n=context,
            )
        )
        if not diff:  # an empty file appeared or disappeared: difflib has no lines to show
            chunks.append(f"{'New' if a is None else 'Deleted'} empty file {path}\n")
            continue
        for line in diff:
            chunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(chunks)


def iter_skill_dirs(root: str | os.PathLike[str]) -> Iterable[Path]:
    """Skill folders directly under a skills root (each holding a SKILL.md), in name order."""
    base = Path(root)
    if not base.is_dir():
        return []
    # Dot folders are skipped: installers stage and set aside versions under hidden names.
    return [
        d
        for d in sorted(base.iterdir())
        if not d.name.startswith(".") and d.is_dir() and (d / SKILL_FILE).is_file()
    ]


# ------------------------------------------------------------------------------------------- as JSON


def bundle_to_json(bundle: SkillBundle) -> dict[str, str]:
    """A bundle as JSON: each path to its bytes in base64 (what run files and the store keep)."""
    return {p: base64.b64encode(d).decode("ascii") for p, d in sorted(bundle.files.items())}


def bundle_from_json(data: dict[str, str]) -> SkillBundle:
    """The bundle `bundle_to_json` wrote."""
    return SkillBundle(files={p: base64.b64decode(d) for p, d in data.items()})

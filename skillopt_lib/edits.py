"""Edit operations on a skill, and how they apply.

The optimizer never rewrites a skill wholesale: it proposes small, named operations (`append`,
`insert_after`, `replace`, `delete`) so that every change can be budgeted, gated, buffered when rejected and
shown to a reviewer. The same pydantic models are the schema the optimizer model must answer with.

Application is conservative on purpose. An anchor is looked up exactly, then with whitespace ignored; if it is
missing or occurs more than once the edit is a reported `Conflict` and is not applied anywhere else (the
published method silently fell back to appending, which put rules in the wrong place). Regions fenced by
`<!-- skillopt:NAME:start -->` ... `<!-- skillopt:NAME:end -->` are protected: only the slow update writes
them, through `set_protected_region`. Edits to `SKILL.md` apply to its body, so the frontmatter (and with it
the immutable `name`) cannot change through an edit.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillopt_lib.errors import SkillFormatError
from skillopt_lib.skill import SKILL_FILE, SkillBundle, SkillDoc, _check_rel_path

EditOp = Literal["append", "insert_after", "replace", "delete"]
SourceType = Literal["failure", "success", "slow_update", "manual"]

PROTECTED_RE = re.compile(
    r"<!--\s*skillopt:(?P<name>[a-z0-9_-]+):start\s*-->.*?<!--\s*skillopt:(?P=name):end\s*-->", re.DOTALL
)
_MARKER_RE = re.compile(r"<!--\s*skillopt:[a-z0-9_-]+:(?:start|end)\s*-->")
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
GUIDANCE_REGION = "guidance"


class Edit(BaseModel):
    """One proposed change. `target` is the anchor text for `insert_after`, `replace` and `delete`."""

    model_config = ConfigDict(extra="ignore")

    op: EditOp
    target: str | None = None
    content: str | None = None
    file: str = Field(default=SKILL_FILE, description="bundle path; SKILL.md edits apply to its body")
    rationale: str = ""
    support_count: int = Field(default=1, ge=1)
    source_type: SourceType = "failure"

    @model_validator(mode="after")
    def _check_fields(self) -> Edit:
        if self.op in ("insert_after", "replace", "delete") and not (self.target or "").strip():
            raise ValueError(f"'{self.op}' needs a non-empty 'target' (the text to anchor on)")
        if self.op in ("append", "insert_after", "replace") and self.content is None:
            raise ValueError(f"'{self.op}' needs 'content'")
        if self.op == "append" and not (self.content or "").strip():
            raise ValueError("'append' needs non-empty 'content'")
        try:
            _check_rel_path(self.file)
        except SkillFormatError as exc:
            raise ValueError(exc.message) from None
        return self

    def key(self) -> str:
        """A whitespace- and case-insensitive signature: two edits with the same key are the same idea."""
        return "|".join((self.file, self.op, _norm(self.target or ""), _norm(self.content or "")))

    def anchor_key(self) -> str | None:
        """What the edit touches, for conflict detection; appends touch no existing text."""
        return None if self.op == "append" else f"{self.file}|{_norm(self.target or '')}"

    def tokens(self) -> int:
        """Tokens this edit changes: the learning-rate budget is spent in these units."""
        if self.op == "append" or self.op == "insert_after":
            return count_tokens(self.content or "")
        if self.op == "delete":
            return count_tokens(self.target or "")
        return changed_tokens(self.target or "", self.content or "")

    def short(self, width: int = 90) -> str:
        text = (self.content if self.op != "delete" else self.target) or ""
        text = " ".join(text.split())
        if len(text) > width:
            text = text[: width - 1] + "…"
        where = "" if self.op == "append" else f" after/at {' '.join((self.target or '').split())[:40]!r}"
        return f"{self.op}{where}: {text}"


class Patch(BaseModel):
    """What an analyst or merge call returns: its reasoning and the edits it proposes."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    failure_summary: list[dict[str, Any]] | dict[str, Any] | str | None = None
    edits: list[Edit] = Field(default_factory=list)


ConflictKind = Literal[
    "missing-anchor",
    "ambiguous-anchor",
    "protected-region",
    "unknown-file",
    "binary-file",
    "no-change",
    "marker-in-content",
    "invalid-skill",
]


@dataclass(frozen=True)
class Conflict:
    """An edit that was not applied, and why. Recorded in the history, never silently dropped."""

    edit: Edit
    kind: ConflictKind
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "edit": self.edit.model_dump()}


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def count_tokens(text: str) -> int:
    """A model-independent token count (words and punctuation marks): stable across backends and resumes."""
    return len(_TOKEN_RE.findall(text))


def changed_tokens(old: str, new: str) -> int:
    """Tokens inserted, deleted or replaced between two texts (a replaced run counts its longer side)."""
    a, b = _TOKEN_RE.findall(old), _TOKEN_RE.findall(new)
    total = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            total += max(i2 - i1, j2 - j1)
    return total


def lost_tokens(old: SkillBundle, new: SkillBundle) -> int:
    """Tokens of `old` that `new` deletes or replaces (what the candidate loses, not what it adds)."""
    old_text, new_text = old.text_files(), new.text_files()
    lost = 0
    for path, text in old_text.items():
        a, b = _TOKEN_RE.findall(text), _TOKEN_RE.findall(new_text.get(path, ""))
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag in ("delete", "replace"):
                lost += i2 - i1
    return lost


def bundle_changed_tokens(old: SkillBundle, new: SkillBundle) -> int:
    total = 0
    old_text, new_text = old.text_files(), new.text_files()
    for path in sorted(set(old_text) | set(new_text)):
        total += changed_tokens(old_text.get(path, ""), new_text.get(path, ""))
    return total


def protected_spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group("name")) for m in PROTECTED_RE.finditer(text)]


def find_anchor(text: str, anchor: str) -> tuple[list[tuple[int, int]], bool]:
    """Spans where `anchor` occurs: exact matches if any, else whitespace-insensitive ones.

    Returns (spans, exact). More than one span means the anchor is ambiguous.
    """
    if not anchor.strip():
        return [], True
    spans = []
    start = text.find(anchor)
    while start != -1:
        spans.append((start, start + len(anchor)))
        start = text.find(anchor, start + 1)
    if spans:
        return spans, True
    words = anchor.split()
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    return [(m.start(), m.end()) for m in pattern.finditer(text)], False


def _overlaps(span: tuple[int, int], regions: Sequence[tuple[int, int, str]]) -> str | None:
    for start, end, name in regions:
        if span[0] < end and span[1] > start:
            return name
    return None


def _inside(pos: int, regions: Sequence[tuple[int, int, str]]) -> str | None:
    for start, end, name in regions:
        if start < pos < end:
            return name
    return None


def apply_to_text(text: str, edit: Edit) -> tuple[str, Conflict | None]:
    """Apply one edit to one text; on conflict the text comes back unchanged."""
    if edit.content is not None and _MARKER_RE.search(edit.content):
        return text, Conflict(edit, "marker-in-content", "content may not contain skillopt region markers")
    regions = protected_spans(text)
    if edit.op == "append":
        content = (edit.content or "").strip("\n")
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{sep}{content}\n", None
    spans, exact = find_anchor(text, edit.target or "")
    how = "exactly" if exact else "even ignoring whitespace"
    if not spans:
        return text, Conflict(edit, "missing-anchor", f"target not found {how} in {edit.file}")
    if len(spans) > 1:
        return text, Conflict(
            edit,
            "ambiguous-anchor",
            f"target occurs {len(spans)} times ({how}) in {edit.file}; needs a unique anchor",
        )
    span = spans[0]
    if edit.op == "insert_after":
        name = _inside(span[1], regions) or _overlaps(span, regions)
        if name:
            return text, Conflict(edit, "protected-region", f"anchor lies in the protected region '{name}'")
        content = (edit.content or "").strip("\n")
        # Insert on the line after the anchor's line, so a rule never lands in the middle of a sentence.
        line_end = text.find("\n", span[1])
        if line_end == -1:
            return f"{text}\n{content}\n", None
        return f"{text[: line_end + 1]}{content}\n{text[line_end + 1 :]}", None
    name = _overlaps(span, regions)
    if name:
        return text, Conflict(edit, "protected-region", f"target overlaps the protected region '{name}'")
    if edit.op == "replace":
        new = text[: span[0]] + (edit.content or "") + text[span[1] :]
    else:
        new = text[: span[0]] + text[span[1] :]
        new = re.sub(r"\n{3,}", "\n\n", new)
    if new == text:
        return text, Conflict(edit, "no-change", "the edit changes nothing")
    return new, None


def apply_edits(bundle: SkillBundle, edits: Iterable[Edit]) -> tuple[SkillBundle, list[Edit], list[Conflict]]:
    """Apply edits in order, each against the text the previous ones produced.

    Returns (new bundle, applied edits, conflicts). Never raises for a bad edit: every problem is a conflict.
    """
    doc = bundle.doc
    texts: dict[str, str] = {SKILL_FILE: doc.body}
    binary = {p for p in bundle.files if p not in bundle.text_files()}
    for path, text in bundle.text_files().items():
        texts.setdefault(path, text)
    applied: list[Edit] = []
    conflicts: list[Conflict] = []
    for edit in edits:
        if edit.file in binary:
            conflicts.append(Conflict(edit, "binary-file", f"{edit.file} is not a text file"))
            continue
        if edit.file not in texts:
            if edit.op != "append":
                conflicts.append(Conflict(edit, "unknown-file", f"the skill has no file {edit.file}"))
                continue
            texts[edit.file] = ""
        new_text, conflict = apply_to_text(texts[edit.file], edit)
        if conflict is not None:
            conflicts.append(conflict)
            continue
        texts[edit.file] = new_text
        applied.append(edit)
    files = dict(bundle.files)
    for path, text in texts.items():
        if path == SKILL_FILE:
            files[path] = SkillDoc(head=doc.head, body=text).serialize().encode("utf-8")
        elif path in files or text:
            files[path] = text.encode("utf-8")
    return SkillBundle(files=files), applied, conflicts


def get_protected_region(bundle: SkillBundle, name: str = GUIDANCE_REGION) -> str | None:
    body = bundle.doc.body
    for m in PROTECTED_RE.finditer(body):
        if m.group("name") == name:
            inner = m.group(0)
            start = inner.find("-->") + 3
            end = inner.rfind("<!--")
            return inner[start:end].strip("\n")
    return None


def set_protected_region(bundle: SkillBundle, content: str, name: str = GUIDANCE_REGION) -> SkillBundle:
    """Write a protected region of SKILL.md (the slow update's privilege).

    Created after the first heading when absent."""
    if _MARKER_RE.search(content):
        raise SkillFormatError("protected region content may not contain skillopt region markers")
    doc = bundle.doc
    body = doc.body
    block = f"<!-- skillopt:{name}:start -->\n{content.strip()}\n<!-- skillopt:{name}:end -->"
    for m in PROTECTED_RE.finditer(body):
        if m.group("name") == name:
            return bundle.with_doc(doc.with_body(body[: m.start()] + block + body[m.end() :]))
    # Place it after the first heading (or at the top), where the agent reads it first.
    heading = re.search(r"^#[^\n]*\n", body, re.MULTILINE)
    pos = heading.end() if heading else 0
    lead = body[:pos]
    if lead and not lead.endswith("\n\n"):
        lead += "\n"
    rest = body[pos:].lstrip("\n")
    return bundle.with_doc(doc.with_body(f"{lead}{block}\n\n{rest}"))


def parse_edits(data: Any) -> list[Edit]:
    """Validate a list of edit dicts, keeping the valid ones (one bad edit must not sink the rest)."""
    out: list[Edit] = []
    for raw in data or []:
        try:
            out.append(Edit.model_validate(raw))
        except (ValueError, SkillFormatError):
            continue
    return out

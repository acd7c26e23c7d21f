"""Placements: the kinds of change an integration makes, each installable, checkable and undoable.

A `FilePlacement` is a whole file that is skillopt's (a skill file, a command, a rule); a `SectionPlacement`
is a managed section in a Markdown file the user also writes; a `JsonPlacement` merges entries into a JSON
settings file the tool owns. Each install returns the record kept in the manifest; each uninstall reads it
back. A file skillopt replaces is backed up first and restored on uninstall; a file the user edited since is
kept unless forced. The rules for where writing is allowed are the installers' (`check_inside`,
`check_writable`), the same for skills and for the integration.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillopt_daemon.core import paths
from skillopt_daemon.core.fsio import atomic_write, current_mode, sha256_bytes, sha256_file
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.integrations.manifest import Target, target_dict, target_file_key
from skillopt_daemon.integrations.shipped import SECTION_NAME
from skillopt_daemon.registry.installers import check_inside, check_writable, managed_section
from skillopt_lib.errors import ConflictError

# Called as progress(done, total, what) while approved skills are installed or removed (for a progress bar).
Progress = Callable[[int, int, str], None]

Op = Literal[
    "create", "replace", "update", "merge", "unmerge", "remove", "restore", "keep", "unchanged", "skip"
]


@dataclass(frozen=True)
class Action:
    """One file touched (or that would be touched in a dry run), and why."""

    op: Op
    path: Path
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"op": self.op, "path": str(self.path), "detail": self.detail}


@dataclass
class Report:
    target: Target
    action: Literal["install", "uninstall"]
    dry_run: bool
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            **target_dict(self.target),
            "action": self.action,
            "dry_run": self.dry_run,
            "files": [a.as_dict() for a in self.actions],
            "notes": list(self.notes),
        }


FORCE_HINT = "move it aside, or pass --force to replace it (it is backed up and restored on uninstall)"


class Backups:
    """Copies of files skillopt replaced, so uninstall can put them back."""

    def __init__(self, target: Target) -> None:
        stamp = utcnow_iso().replace(":", "").replace("-", "").replace(".", "")
        folder = f"{target_file_key(target)}-{stamp}"
        self.folder = paths.backups_dir() / "integrations" / target.tool.value / folder

    def save(self, path: Path) -> str:
        paths.ensure_private_dir(self.folder)
        digest = sha256_bytes(str(path).encode("utf-8"))[:10]
        dest = self.folder / f"{digest}-{path.name}"
        shutil.copy2(path, dest)
        return str(dest)


@dataclass
class Context:
    """One install or uninstall run: its target, its options, and the report being written."""

    target: Target
    force: bool
    dry_run: bool
    report: Report
    backups: Backups
    progress: Progress | None = None


@dataclass(frozen=True)
class FilePlacement:
    """A whole file that is skillopt's: a skill file, a command, a rule."""

    root: Path
    path: Path
    data: bytes
    mode: int = 0o644

    def install(self, ctx: Context, previous: dict[str, Any] | None) -> dict[str, Any]:
        check_inside(self.root, self.path)
        new_hash = sha256_bytes(self.data)
        current = sha256_file(self.path)
        record: dict[str, Any] = {"kind": "file", "path": str(self.path), "hash": new_hash, "backup": None}
        if previous:
            record["backup"] = previous.get("backup")
        if current == new_hash:
            ctx.report.actions.append(Action("unchanged", self.path))
            record["created"] = previous.get("created", False) if previous else False
            return record
        if current is None:
            if self.path.is_dir():
                raise ConflictError(f"{self.path} is a folder; skillopt expected to write a file there")
            check_writable(self.path)
            ctx.report.actions.append(Action("create", self.path))
            record["created"] = True
        else:
            ours = previous is not None and previous.get("hash") == current
            if not ours and not ctx.force:
                raise ConflictError(
                    f"{self.path} already exists and was not written by skillopt"
                    + (" (or was edited since)" if previous else ""),
                    hint=FORCE_HINT,
                )
            check_writable(self.path)
            if not ours and not ctx.dry_run:
                record["backup"] = ctx.backups.save(self.path)
            ctx.report.actions.append(
                Action("update" if ours else "replace", self.path, "" if ours else "backed up")
            )
            record["created"] = previous.get("created", False) if previous and ours else False
        if not ctx.dry_run:
            atomic_write(self.path, self.data, self.mode)
        return record

    @staticmethod
    def uninstall(ctx: Context, record: dict[str, Any]) -> None:
        path = Path(record["path"])
        current = sha256_file(path)
        backup = record.get("backup")
        if current is None:
            if backup and Path(backup).is_file():
                ctx.report.actions.append(Action("restore", path, f"from {backup}"))
                if not ctx.dry_run:
                    _restore(Path(backup), path)
            else:
                ctx.report.actions.append(Action("skip", path, "already gone"))
            return
        if current != record.get("hash") and not ctx.force:
            ctx.report.actions.append(
                Action("keep", path, "edited since skillopt wrote it; pass --force to remove")
            )
            ctx.report.notes.append(f"kept {path}: you edited it after skillopt installed it")
            return
        check_writable(path)
        if backup and Path(backup).is_file():
            ctx.report.actions.append(Action("restore", path, f"from {backup}"))
            if not ctx.dry_run:
                _restore(Path(backup), path)
        else:
            ctx.report.actions.append(Action("remove", path))
            if not ctx.dry_run:
                path.unlink()


def _restore(backup: Path, path: Path) -> None:
    atomic_write(path, backup.read_bytes(), current_mode(backup))


@dataclass(frozen=True)
class SectionPlacement:
    """A managed section inside a Markdown file the user also writes (AGENTS.md, copilot-instructions.md)."""

    root: Path
    path: Path
    body: str

    def install(self, ctx: Context, previous: dict[str, Any] | None) -> dict[str, Any]:
        check_inside(self.root, self.path)
        existed = self.path.is_file()
        text = self.path.read_text(encoding="utf-8") if existed else ""
        new = managed_section.upsert(text, SECTION_NAME, self.body, force=ctx.force, label=str(self.path))
        created = (previous or {}).get("created", not existed)
        if new == text:
            ctx.report.actions.append(Action("unchanged", self.path))
        else:
            check_writable(self.path)
            ctx.report.actions.append(
                Action("update" if existed else "create", self.path, "skillopt section")
            )
            if not ctx.dry_run:
                atomic_write(self.path, new.encode("utf-8"), current_mode(self.path))
        return {"kind": "section", "path": str(self.path), "created": created}

    @staticmethod
    def uninstall(ctx: Context, record: dict[str, Any]) -> None:
        path = Path(record["path"])
        if not path.is_file():
            ctx.report.actions.append(Action("skip", path, "already gone"))
            return
        text = path.read_text(encoding="utf-8")
        try:
            new = managed_section.remove(text, SECTION_NAME, force=ctx.force, label=str(path))
        except ConflictError:
            ctx.report.actions.append(
                Action("keep", path, "skillopt section edited by you; pass --force to remove")
            )
            ctx.report.notes.append(f"kept the skillopt section in {path}: you edited it")
            return
        if new == text:
            ctx.report.actions.append(Action("skip", path, "no skillopt section"))
            return
        check_writable(path)
        if record.get("created") and not new.strip():
            ctx.report.actions.append(Action("remove", path))
            if not ctx.dry_run:
                path.unlink()
        else:
            ctx.report.actions.append(Action("update", path, "skillopt section removed"))
            if not ctx.dry_run:
                atomic_write(path, new.encode("utf-8"), current_mode(path))


JsonMerge = Callable[[dict[str, Any]], dict[str, Any]]


def _indent_of(text: str) -> str:
    """The indentation a JSON file uses (two spaces when it has none), so skillopt writes it the same way."""
    found = re.search(r"^([ \t]+)\S", text, re.MULTILINE)
    return found.group(1) if found else "  "


def _dump(doc: dict[str, Any], like: str) -> bytes:
    return (json.dumps(doc, indent=_indent_of(like), ensure_ascii=False) + "\n").encode("utf-8")


@dataclass(frozen=True)
class JsonPlacement:
    """Entries merged into a JSON settings file the tool owns (hooks, MCP servers); the rest is kept as is.

    `add` returns the document with skillopt's entries; `strip` returns it without them (both idempotent).
    """

    root: Path
    path: Path
    add: JsonMerge
    strip: JsonMerge
    what: str

    def _read(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except ValueError as exc:
            raise ConflictError(
                f"{self.path} is not valid JSON ({exc}); skillopt will not rewrite it",
                hint="fix the file by hand, then run the command again",
            ) from None
        if not isinstance(data, dict):
            raise ConflictError(f"{self.path} does not hold a JSON object; skillopt will not rewrite it")
        return data

    def install(self, ctx: Context, previous: dict[str, Any] | None) -> dict[str, Any]:
        """Merge skillopt's entries in, in the file's own indentation. The user's bytes from before the
        first merge are backed up, so uninstall can give them back exactly when nothing of theirs changed."""
        check_inside(self.root, self.path)
        current = self._read()
        created = (previous or {}).get("created", current is None)
        record = {"kind": "json", "path": str(self.path), "created": created, "what": self.what}
        record["backup"] = (previous or {}).get("backup")
        base = current if current is not None else {}
        merged = self.add(json.loads(json.dumps(base)))
        if current is not None and merged == current:
            ctx.report.actions.append(Action("unchanged", self.path, self.what))
        else:
            check_writable(self.path)
            ctx.report.actions.append(
                Action("merge" if current is not None else "create", self.path, self.what)
            )
            if not ctx.dry_run:
                text = self.path.read_text(encoding="utf-8") if current is not None else ""
                if current is not None and previous is None:
                    record["backup"] = ctx.backups.save(self.path)
                atomic_write(self.path, _dump(merged, text), current_mode(self.path))
        return record

    def uninstall(self, ctx: Context, record: dict[str, Any]) -> None:
        current = self._read()
        if current is None:
            ctx.report.actions.append(Action("skip", self.path, "already gone"))
            return
        stripped = self.strip(json.loads(json.dumps(current)))
        if stripped == current:
            ctx.report.actions.append(Action("skip", self.path, f"no skillopt {self.what}"))
            return
        check_writable(self.path)
        if record.get("created") and not stripped:
            ctx.report.actions.append(Action("remove", self.path))
            if not ctx.dry_run:
                self.path.unlink()
        else:
            ctx.report.actions.append(Action("unmerge", self.path, self.what))
            if not ctx.dry_run:
                data = _original_bytes(record.get("backup"), stripped)
                if data is None:
                    data = _dump(stripped, self.path.read_text(encoding="utf-8"))
                atomic_write(self.path, data, current_mode(self.path))


def _original_bytes(backup: str | None, stripped: dict[str, Any]) -> bytes | None:
    """The user's file as it was before skillopt merged into it, when it holds what is left (`stripped`):
    then nothing of theirs changed, and they get their own bytes back, formatting and all."""
    if not backup or not Path(backup).is_file():
        return None
    data = Path(backup).read_bytes()
    try:
        return data if json.loads(data) == stripped else None
    except ValueError:
        return None


Placement = FilePlacement | SectionPlacement | JsonPlacement


def check_placements(placements: list[Placement], prev: dict[str, dict[str, Any]], force: bool) -> None:
    for pl in placements:
        check_inside(pl.root, pl.path)
        if isinstance(pl, FilePlacement):
            current = sha256_file(pl.path)
            if current is None or current == sha256_bytes(pl.data):
                continue
            ours = prev.get(str(pl.path), {}).get("hash") == current
            if not ours and not force:
                raise ConflictError(
                    f"{pl.path} already exists and was not written by skillopt"
                    + (" (or was edited since)" if str(pl.path) in prev else "")
                    + "; nothing was changed",
                    hint=FORCE_HINT,
                )
        elif isinstance(pl, JsonPlacement):
            pl._read()
        elif isinstance(pl, SectionPlacement) and pl.path.is_file():
            managed_section.upsert(
                pl.path.read_text(encoding="utf-8"), SECTION_NAME, pl.body, force=force, label=str(pl.path)
            )
        if pl.path.exists() or not pl.path.parent.exists():
            check_writable(pl.path)
        else:
            check_writable(pl.path.parent)


def placement_for_record(placements: list[Placement], record: dict[str, Any]) -> Placement | None:
    """The planned placement a manifest record was written by (matched by path), if it is still planned."""
    for pl in placements:
        if str(pl.path) == record.get("path"):
            return pl
    return None


def root_of(record: dict[str, Any], placements: list[Placement]) -> Path | None:
    """The tool folder a manifest record's file must stay inside, when its placement is still planned."""
    pl = placement_for_record(placements, record)
    return pl.root if pl is not None else None

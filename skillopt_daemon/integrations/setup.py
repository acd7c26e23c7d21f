"""skillopt's own integration with each agent tool: what `skillopt install TOOL` places, and undoing it.

The integration is what lets a tool talk to skillopt: the `skillopt` skill that teaches the agent the CLI, the
hooks that tell the daemon when a session ends, an MCP server entry, an optional pointer in the tool's
instruction file. Installing it also makes the tool an install target: approved skill versions go to every
tool and scope listed by `install_targets()`.

Every change is recorded in a manifest (one JSON file per tool and scope under the data folder) with the
hash of what was written, so `uninstall` removes exactly what skillopt placed, restores what it replaced,
and leaves alone anything the user edited since. The shipped files come from the package
(`skillopt_daemon/_integrations`, mapped from `integrations/` when the wheel is built) or, in a source
checkout, from `integrations/` itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from skillopt_daemon.core import paths
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.registry.installers import get_installer, has_installer, managed_section
from skillopt_daemon.registry.installers.base import InstallTarget, atomic_write
from skillopt_lib import __version__ as _skillopt_version
from skillopt_lib.agents import TOOLS, AgentTool, spec
from skillopt_lib.errors import ConflictError, ExternalToolError, InstallError, NotFoundError, SkillOptError
from skillopt_lib.skill import SkillBundle

Scope = Literal["user", "project"]
# Called as progress(done, total, what) while approved skills are installed or removed (for a progress bar).
Progress = Callable[[int, int, str], None]
SKILL_NAME = "skillopt"
SECTION_NAME = "skillopt"
HOOK_TIMEOUT_S = 10
_FORCE_HINT = "move it aside, or pass --force to replace it (it is backed up and restored on uninstall)"
# Scopes each tool supports (Devin reads skills, rules and hooks from the repository only).
SUPPORTED_SCOPES: dict[AgentTool, tuple[Scope, ...]] = {t: row.scopes for t, row in TOOLS.items()}
DEFAULT_SCOPE: dict[AgentTool, Scope] = {t: SUPPORTED_SCOPES[t][0] for t in AgentTool}


# --------------------------------------------------------------------------------------------------
# Locating the shipped files
# --------------------------------------------------------------------------------------------------


def integrations_root() -> Path:
    """The folder holding `claude-code/`, `codex/`, ...: inside the installed package, else the checkout."""
    packaged = Path(str(resources.files("skillopt_daemon"))) / "_integrations"
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "integrations"
    if source.is_dir():
        return source
    raise NotFoundError(
        "skillopt's integration files are missing from this installation",
        hint="reinstall skillopt (pip install --force-reinstall skillopt-local)",
    )


def integration_dir(tool: AgentTool) -> Path:
    return integrations_root() / tool.value


def plugin_dir() -> Path:
    """The Claude Code plugin folder (for `claude --plugin-dir` and `/plugin marketplace add`)."""
    return integration_dir(AgentTool.CLAUDE_CODE)


def shipped_skill(tool: AgentTool) -> dict[str, bytes]:
    """The `skillopt` skill for a tool, by path relative to the skill folder."""
    root = integration_dir(tool) / "skills" / SKILL_NAME
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------------------------------
# Targets, actions, manifests
# --------------------------------------------------------------------------------------------------


Target = InstallTarget


def target_file_key(target: InstallTarget) -> str:
    """A file-name-safe key for a target: `user`, or `project-<hash of the path>`."""
    if target.scope == "user" or target.project is None:
        return "user"
    return "project-" + hashlib.sha256(str(target.project).encode("utf-8")).hexdigest()[:12]


def target_dict(target: InstallTarget) -> dict[str, Any]:
    return {"tool": target.tool.value, "scope": target.scope, "project": target.project_str}


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


def manifests_dir() -> Path:
    return paths.data_dir() / "integrations"


def manifest_path(target: Target) -> Path:
    return manifests_dir() / target.tool.value / f"{target_file_key(target)}.json"


def _load_manifest(target: Target) -> dict[str, Any] | None:
    path = manifest_path(target)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SkillOptError(
            f"the record of skillopt's {target} integration ({path}) is unreadable: {exc}",
            hint="remove that file and the integration's files by hand, then install again",
        ) from None
    return data if isinstance(data, dict) else None


def _save_manifest(target: Target, data: dict[str, Any]) -> None:
    path = manifest_path(target)
    paths.ensure_private_dir(path.parent)
    _atomic_write(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"), mode=0o600)


def install_targets() -> list[Target]:
    """Every tool and scope whose integration is installed: where approved skill versions are installed."""
    out: list[Target] = []
    root = manifests_dir()
    if not root.is_dir():
        return out
    for tool in AgentTool:
        folder = root / tool.value
        if not folder.is_dir():
            continue
        for file in sorted(folder.glob("*.json")):
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            project = data.get("project") or None
            out.append(
                Target(tool=tool, scope=data.get("scope", "user"), project=Path(project) if project else None)
            )
    return out


# --------------------------------------------------------------------------------------------------
# Safe file operations
# --------------------------------------------------------------------------------------------------


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_hash(path: Path) -> str | None:
    try:
        return sha256_bytes(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """The installers' atomic write, keeping the mode of the file it replaces (settings may be 0600)."""
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
    atomic_write(path, data, mode)


def check_writable(path: Path) -> None:
    """Refuse a target whose nearest existing folder belongs to another user or cannot be written.

    Checked from the mode bits as well as `os.access`, so a folder made read-only is refused even for root.
    """
    probe = path
    while not probe.exists() and not probe.is_symlink():
        if probe.parent == probe:
            break
        probe = probe.parent
    try:
        st = probe.stat()
    except OSError as exc:
        raise InstallError(f"cannot inspect {probe}: {exc.strerror}") from None
    if st.st_uid != os.geteuid():
        raise InstallError(
            f"{probe} belongs to another user (uid {st.st_uid}); skillopt will not write there",
            hint="run skillopt as the user who owns that folder, or choose another --scope / --project",
        )
    if not os.access(probe, os.W_OK) or not st.st_mode & stat.S_IWUSR:
        raise InstallError(
            f"{probe} is read-only; skillopt cannot write there",
            hint=f"make it writable (chmod u+w {shlex.quote(str(probe))}) or pick another --scope/--project",
        )


def check_inside(root: Path, path: Path) -> None:
    """Refuse `path` when a symlink on the way from `root` leads outside `root` (the tool's own folder)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise InstallError(f"{path} is not inside {root}") from None
    real_root = root.resolve()
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            real = current.resolve()
            if real != real_root and real_root not in real.parents:
                raise InstallError(
                    f"{current} is a symlink to {real}, outside {root}; skillopt will not follow it",
                    hint="remove the symlink (or point it inside the folder) and run the command again",
                )


class _Backups:
    """Copies of files skillopt replaced, so uninstall can put them back."""

    def __init__(self, target: Target) -> None:
        stamp = utcnow_iso().replace(":", "").replace("-", "").replace(".", "")
        folder = f"{target_file_key(target)}-{stamp}"
        self.folder = paths.backups_dir() / "integrations" / target.tool.value / folder

    def save(self, path: Path) -> str:
        paths.ensure_private_dir(self.folder)
        digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:10]
        dest = self.folder / f"{digest}-{path.name}"
        shutil.copy2(path, dest)
        return str(dest)


# --------------------------------------------------------------------------------------------------
# Placements: the kinds of change an integration makes
# --------------------------------------------------------------------------------------------------


@dataclass
class _Ctx:
    target: Target
    force: bool
    dry_run: bool
    report: Report
    backups: _Backups
    progress: Progress | None = None


@dataclass(frozen=True)
class FilePlacement:
    """A whole file that is skillopt's: a skill file, a command, a rule."""

    root: Path
    path: Path
    data: bytes
    mode: int = 0o644

    def install(self, ctx: _Ctx, previous: dict[str, Any] | None) -> dict[str, Any]:
        check_inside(self.root, self.path)
        new_hash = sha256_bytes(self.data)
        current = _file_hash(self.path)
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
                    hint=_FORCE_HINT,
                )
            check_writable(self.path)
            if not ours and not ctx.dry_run:
                record["backup"] = ctx.backups.save(self.path)
            ctx.report.actions.append(
                Action("update" if ours else "replace", self.path, "" if ours else "backed up")
            )
            record["created"] = previous.get("created", False) if previous and ours else False
        if not ctx.dry_run:
            _atomic_write(self.path, self.data, self.mode)
        return record

    @staticmethod
    def uninstall(ctx: _Ctx, record: dict[str, Any]) -> None:
        path = Path(record["path"])
        current = _file_hash(path)
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
    _atomic_write(path, backup.read_bytes(), stat.S_IMODE(backup.stat().st_mode))


@dataclass(frozen=True)
class SectionPlacement:
    """A managed section inside a Markdown file the user also writes (AGENTS.md, copilot-instructions.md)."""

    root: Path
    path: Path
    body: str

    def install(self, ctx: _Ctx, previous: dict[str, Any] | None) -> dict[str, Any]:
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
                _atomic_write(self.path, new.encode("utf-8"))
        return {"kind": "section", "path": str(self.path), "created": created}

    @staticmethod
    def uninstall(ctx: _Ctx, record: dict[str, Any]) -> None:
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
                _atomic_write(path, new.encode("utf-8"))


JsonMerge = Callable[[dict[str, Any]], dict[str, Any]]


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

    def install(self, ctx: _Ctx, previous: dict[str, Any] | None) -> dict[str, Any]:
        check_inside(self.root, self.path)
        current = self._read()
        created = (previous or {}).get("created", current is None)
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
                _atomic_write(self.path, (json.dumps(merged, indent=2) + "\n").encode("utf-8"))
        return {"kind": "json", "path": str(self.path), "created": created, "what": self.what}

    def uninstall(self, ctx: _Ctx, record: dict[str, Any]) -> None:
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
                _atomic_write(self.path, (json.dumps(stripped, indent=2) + "\n").encode("utf-8"))


Placement = FilePlacement | SectionPlacement | JsonPlacement


# --------------------------------------------------------------------------------------------------
# Hooks and MCP entries
# --------------------------------------------------------------------------------------------------

HOOK_MARKER = "notify session-"


def skillopt_executable() -> str:
    """The absolute path of the `skillopt` command running now (hooks call it), or plain `skillopt`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "skillopt" and argv0.is_file() and os.access(argv0, os.X_OK):
        return str(argv0.resolve())
    found = shutil.which("skillopt")
    if found:
        return str(Path(found).resolve())
    beside = Path(sys.executable).parent / "skillopt"
    return str(beside) if beside.exists() else "skillopt"


def hook_command(event: str, tool: AgentTool, executable: str | None = None) -> str:
    """A shell command for a hook: run `skillopt notify EVENT` quickly and quietly, never failing the session.

    The absolute path recorded at install time is tried first, then PATH, so moving skillopt does not
    silently break the hook; when neither exists it says so on stderr and exits 0. The hook's input is read
    at once and skillopt runs in the background: the tool may not wait for a slow SessionEnd hook.
    """
    exe = shlex.quote(executable or skillopt_executable())
    script = (
        f'b={exe}; [ -f "$b" ] && [ -x "$b" ] || b=$(command -v skillopt 2>/dev/null) || '
        '{ echo "skillopt: skillopt command not found; this session was not recorded" >&2; exit 0; }; '
        f'p=$(cat); ( printf "%s\\n" "$p" | "$b" notify {event} --tool {tool.value} >/dev/null 2>&1 & ) '
        ">/dev/null 2>&1; exit 0"
    )
    return "sh -c " + shlex.quote(script)


def _is_our_hook(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("command"), str)
        and (HOOK_MARKER in entry["command"] and "skillopt" in entry["command"])
    )


def _hooks_add(events: dict[str, str], *, wrapped: bool) -> JsonMerge:
    """Add one hook group per event (Claude Code nests them under "hooks"; Devin's hooks.v1.json does not)."""

    def add(doc: dict[str, Any]) -> dict[str, Any]:
        container = doc.setdefault("hooks", {}) if wrapped else doc
        for event, command in events.items():
            groups = container.setdefault(event, [])
            mine = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
            found = False
            for group in groups:
                hooks = group.get("hooks", []) if isinstance(group, dict) else []
                for i, h in enumerate(hooks):
                    if _is_our_hook(h):
                        hooks[i] = mine
                        found = True
            if not found:
                groups.append({"matcher": "*" if wrapped else "", "hooks": [mine]})
        return doc

    return add


def _hooks_strip(*, wrapped: bool) -> JsonMerge:
    def strip(doc: dict[str, Any]) -> dict[str, Any]:
        container = doc.get("hooks") if wrapped else doc
        if not isinstance(container, dict):
            return doc
        for event in list(container):
            groups = container[event]
            if not isinstance(groups, list):
                continue
            kept = []
            for group in groups:
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    group["hooks"] = [h for h in group["hooks"] if not _is_our_hook(h)]
                    if not group["hooks"]:
                        continue
                kept.append(group)
            if kept:
                container[event] = kept
            else:
                del container[event]
        if wrapped and not container:
            del doc["hooks"]
        return doc

    return strip


def _mcp_add(entry: dict[str, Any]) -> JsonMerge:
    def add(doc: dict[str, Any]) -> dict[str, Any]:
        doc.setdefault("mcpServers", {})[SKILL_NAME] = entry
        return doc

    return add


def _mcp_strip(doc: dict[str, Any]) -> dict[str, Any]:
    servers = doc.get("mcpServers")
    if isinstance(servers, dict) and SKILL_NAME in servers:
        del servers[SKILL_NAME]
        if not servers:
            del doc["mcpServers"]
    return doc


def mcp_entry(tool: AgentTool, executable: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": executable or skillopt_executable(), "args": ["mcp"]}
    if tool is AgentTool.COPILOT:
        entry = {"type": "local", **entry, "tools": ["*"]}
    return entry


# --------------------------------------------------------------------------------------------------
# What each tool's integration places
# --------------------------------------------------------------------------------------------------


def skill_roots(tool: AgentTool, scope: Scope, project: Path | None = None) -> list[Path]:
    """Where `tool` reads skills at `scope`: the same folders approved versions go to (the installers')."""
    if not has_installer(tool):
        return []
    return [loc.root for loc in get_installer(tool).locations(InstallTarget(tool, scope, project))]


def _tool_home(tool: AgentTool) -> Path:
    from skillopt_daemon.core.config import tool_home

    try:
        return tool_home(tool)
    except SkillOptError:
        return paths.default_tool_home(tool)


def _skill_placements(tool: AgentTool, target: Target) -> list[Placement]:
    """The `skillopt` skill, adapted by the tool's installer (OpenClaw's single-line frontmatter)."""
    bundle = get_installer(tool).prepare(SkillBundle(files=shipped_skill(tool)))
    out: list[Placement] = []
    for root in skill_roots(tool, target.scope, target.project):
        for rel, data in sorted(bundle.files.items()):
            out.append(FilePlacement(root, root / SKILL_NAME / rel, data))
    return out


def copilot_instructions_only(target: InstallTarget) -> bool:
    """True for a project whose Copilot integration was installed with `--instructions`."""
    manifest = _load_manifest(InstallTarget(AgentTool.COPILOT, target.scope, target.project))
    return bool(manifest and manifest.get("instructions"))


def plan_placements(
    target: Target, *, instructions: bool = False, executable: str | None = None
) -> list[Placement]:
    """Everything `skillopt install` places for a target, in order; `instructions` adds the pointer."""
    tool = target.tool
    src = integration_dir(tool)
    th = _tool_home(tool)
    p = target.project
    copilot_instr = tool is AgentTool.COPILOT and target.scope == "project" and instructions
    out: list[Placement] = [] if copilot_instr else _skill_placements(tool, target)
    exe = executable or skillopt_executable()
    if tool is AgentTool.CLAUDE_CODE:
        base = th if target.scope == "user" else p / ".claude"  # type: ignore[operator]
        for cmd in sorted((src / "commands").glob("*.md")):
            out.append(FilePlacement(base, base / "commands" / cmd.name, cmd.read_bytes()))
        settings = base / ("settings.json" if target.scope == "user" else "settings.local.json")
        events = {
            ev: hook_command(arg, tool, exe)
            for ev, arg in (("SessionStart", "session-start"), ("SessionEnd", "session-end"))
        }
        out.append(
            JsonPlacement(
                base, settings, _hooks_add(events, wrapped=True), _hooks_strip(wrapped=True), "hooks"
            )
        )
    elif tool is AgentTool.CODEX:
        if instructions:
            agents_md = th / "AGENTS.md" if target.scope == "user" else p / "AGENTS.md"  # type: ignore[operator]
            body = (src / "AGENTS.md.snippet").read_text(encoding="utf-8")
            out.append(SectionPlacement(agents_md.parent, agents_md, body))
    elif tool is AgentTool.COPILOT:
        if target.scope == "user":
            out.append(
                JsonPlacement(
                    th, th / "mcp-config.json", _mcp_add(mcp_entry(tool, exe)), _mcp_strip, "MCP server"
                )
            )
        if instructions:
            base = th if target.scope == "user" else p / ".github"  # type: ignore[operator]
            body = (src / "copilot-instructions.snippet.md").read_text(encoding="utf-8")
            out.append(SectionPlacement(base, base / "copilot-instructions.md", body))
    elif tool is AgentTool.DEVIN:
        base = p / ".devin"  # type: ignore[operator]
        out.append(
            FilePlacement(base, base / "rules" / "skillopt.md", (src / "rules" / "skillopt.md").read_bytes())
        )
        events = {"SessionEnd": hook_command("session-end", tool, exe)}
        out.append(
            JsonPlacement(
                base,
                base / "hooks.v1.json",
                _hooks_add(events, wrapped=False),
                _hooks_strip(wrapped=False),
                "hooks",
            )
        )
    elif tool is AgentTool.CURSOR and instructions:
        base = th if target.scope == "user" else p / ".cursor"  # type: ignore[operator]
        out.append(
            FilePlacement(
                base, base / "rules" / "skillopt.mdc", (src / "rules" / "skillopt.mdc").read_bytes()
            )
        )
    return out


def _placement_for_record(
    placements: list[Placement], record: dict[str, Any], target: Target
) -> Placement | None:
    for pl in placements:
        if str(pl.path) == record.get("path"):
            return pl
    return None


# --------------------------------------------------------------------------------------------------
# Install, uninstall, status
# --------------------------------------------------------------------------------------------------


def resolve_target(tool: AgentTool, scope: Scope | None = None, project: str | Path | None = None) -> Target:
    scope = scope or (
        "project" if project is not None and tool is not AgentTool.DEVIN else DEFAULT_SCOPE[tool]
    )
    if scope not in SUPPORTED_SCOPES[tool]:
        raise SkillOptError(
            f"{tool.value} has no {scope}-level skills; skillopt installs it per project",
            hint=f"run `skillopt install {tool.value} --scope project --project PATH`",
        )
    if scope == "project":
        proj = Path(project or os.getcwd()).expanduser().resolve()
        if not proj.is_dir():
            raise NotFoundError(
                f"the project folder {proj} does not exist", hint="give an existing folder with --project"
            )
        return Target(tool, "project", proj)
    return Target(tool, "user", None)


def detect(tool: AgentTool) -> dict[str, Any]:
    """Is the tool on this machine? Its home folder or its CLI on PATH are both taken as yes."""
    home = _tool_home(tool)
    cli = shutil.which(spec(tool).executable)
    return {
        "home": str(home),
        "home_exists": home.is_dir(),
        "cli": cli,
        "detected": home.is_dir() or cli is not None,
    }


def install(
    tool: AgentTool,
    scope: Scope | None = None,
    project: str | Path | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
    instructions: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Place the integration for a tool (idempotent). Refuses a tool not on this machine at user scope."""
    target = resolve_target(tool, scope, project)
    if target.scope == "user" and not detect(tool)["detected"] and not force:
        raise ExternalToolError(
            f"{tool.value} does not seem to be installed here (no {_tool_home(tool)} and no "
            f"`{spec(tool).executable}` on PATH)",
            hint=f"install it first ({spec(tool).install_hint}), or pass --force to install the integration",
        )
    previous = _load_manifest(target) or {}
    prev_records = {
        r["path"]: r for r in previous.get("placements", []) if isinstance(r, dict) and "path" in r
    }
    report = Report(target=target, action="install", dry_run=dry_run)
    ctx = _Ctx(target, force, dry_run, report, _Backups(target), progress)
    placements = plan_placements(target, instructions=instructions or bool(previous.get("instructions")))
    # Check every placement before writing anything, so a refusal leaves the disk as it was.
    _preflight(placements, prev_records, force)
    created_dirs = set(previous.get("created_dirs", []))
    for pl in placements:
        top = _topmost_missing(pl.path.parent, pl.root)
        if top is not None:
            created_dirs.add(str(top))
    records = [pl.install(ctx, prev_records.get(str(pl.path))) for pl in placements]
    planned = {str(pl.path) for pl in placements}
    stale = [r for path, r in prev_records.items() if path not in planned]
    for r in stale:  # placed by an older skillopt, no longer part of the integration
        _uninstall_record(ctx, r, placements)
    if not dry_run:
        _save_manifest(
            target,
            {
                **target_dict(target),
                "installed_at": previous.get("installed_at") or utcnow_iso(),
                "updated_at": utcnow_iso(),
                "skillopt_version": _skillopt_version,
                "executable": skillopt_executable(),
                "instructions": instructions or bool(previous.get("instructions")),
                "placements": records,
                "created_dirs": sorted(created_dirs),
            },
        )
    _sync_approved_skills(ctx)
    return report


def _preflight(placements: list[Placement], prev: dict[str, dict[str, Any]], force: bool) -> None:
    for pl in placements:
        check_inside(pl.root, pl.path)
        if isinstance(pl, FilePlacement):
            current = _file_hash(pl.path)
            if current is None or current == sha256_bytes(pl.data):
                continue
            ours = prev.get(str(pl.path), {}).get("hash") == current
            if not ours and not force:
                raise ConflictError(
                    f"{pl.path} already exists and was not written by skillopt"
                    + (" (or was edited since)" if str(pl.path) in prev else "")
                    + "; nothing was changed",
                    hint=_FORCE_HINT,
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


def _uninstall_record(ctx: _Ctx, record: dict[str, Any], placements: list[Placement]) -> None:
    kind = record.get("kind")
    if kind == "file":
        FilePlacement.uninstall(ctx, record)
    elif kind == "section":
        SectionPlacement.uninstall(ctx, record)
    elif kind == "json":
        pl = _placement_for_record(placements, record, ctx.target)
        if isinstance(pl, JsonPlacement):
            pl.uninstall(ctx, record)
        else:
            generic = JsonPlacement(
                Path(record["path"]).parent,
                Path(record["path"]),
                lambda d: d,
                _strip_any,
                record.get("what", ""),
            )
            generic.uninstall(ctx, record)


def _strip_any(doc: dict[str, Any]) -> dict[str, Any]:
    return _mcp_strip(_hooks_strip(wrapped=False)(_hooks_strip(wrapped=True)(doc)))


def uninstall(
    tool: AgentTool,
    scope: Scope | None = None,
    project: str | Path | None = None,
    *,
    force: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Remove what `install` placed, restore what it replaced, keep what the user edited since."""
    target = resolve_target(tool, scope, project)
    manifest = _load_manifest(target)
    if manifest is None:
        raise NotFoundError(
            f"skillopt's integration is not installed for {target}",
            hint="`skillopt doctor` lists where it is installed",
        )
    report = Report(target=target, action="uninstall", dry_run=dry_run)
    ctx = _Ctx(target, force, dry_run, report, _Backups(target), progress)
    placements = plan_placements(target, instructions=bool(manifest.get("instructions")))
    records = [r for r in manifest.get("placements", []) if isinstance(r, dict)]
    _remove_approved_skills(ctx)
    for r in reversed(records):
        root = _root_of(r, placements)
        if root is not None:
            check_inside(root, Path(r["path"]))
        _uninstall_record(ctx, r, placements)
    if not dry_run:
        for r in records:
            _prune_empty_dirs(Path(r["path"]).parent, _root_of(r, placements))
        for d in sorted(manifest.get("created_dirs", []), key=lambda x: len(Path(x).parts), reverse=True):
            _remove_empty_tree(Path(d))
        manifest_path(target).unlink(missing_ok=True)
    return report


def _root_of(record: dict[str, Any], placements: list[Placement]) -> Path | None:
    for pl in placements:
        if str(pl.path) == record.get("path"):
            return pl.root
    return None


def _prune_empty_dirs(folder: Path, stop: Path | None) -> None:
    """Remove folders left empty by uninstall, up to (not including) the tool's root."""
    if stop is None:
        return
    current = folder
    while current != stop and stop in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent


@contextmanager
def _open_registry() -> Iterator[Any]:
    from skillopt_daemon.registry import open_registry

    reg, _notes = open_registry(actor="install")
    try:
        yield reg
    finally:
        reg.db.conn.close()


def _sync_approved_skills(ctx: _Ctx) -> None:
    """Put each skill's current approved version at the new target and enable it there for later approvals.

    A skill whose files at the target were edited by hand (or written by someone else) is left alone and
    reported: the registry keeps that edit as a version, as for any install.
    """
    target = ctx.target
    installer = get_installer(target.tool)
    with _open_registry() as reg:
        names = [n for n in reg.skill_names() if n != SKILL_NAME]
        for done, skill in enumerate(names):
            if ctx.progress is not None:
                ctx.progress(done, len(names), skill)
            version = reg.current_version(skill)
            if version is None or version.state != "approved":
                continue
            if ctx.dry_run:
                plan = installer.plan(target, skill, reg.load_bundle(version.id), None)
                for f in plan.files:
                    ctx.report.actions.append(Action(f.action, f.path, version.label))
                continue
            try:
                outcome = _install_version_at(reg, skill, version, target, ctx.force)
            except SkillOptError as exc:
                ctx.report.notes.append(f"{skill} was not installed for {target}: {exc.message}")
                continue
            for path in sorted(outcome.files):
                ctx.report.actions.append(
                    Action("update" if outcome.changed else "unchanged", Path(path), version.label)
                )


def _install_version_at(reg: Any, skill: str, version: Any, target: InstallTarget, force: bool) -> Any:
    """Install one approved version at one target through the registry (hand edits, intents, audit)."""
    install_to = getattr(reg, "install_to", None)
    if callable(install_to):
        return install_to(skill, target, version=version.id, force=force)
    with reg._install_lock():
        reg._preflight(skill, [target], force)
        ts = reg.ensure_target(skill, target)
        if ts.active_version_id == version.id and reg.check_drift(skill, target) is None:
            from skillopt_daemon.registry import InstallOutcome

            return InstallOutcome(target, version, False, dict(ts.installed))
        return reg._install_version(version, ts, "install", force=force)


def _remove_approved_skills(ctx: _Ctx) -> None:
    """Remove the approved skills skillopt installed at this target, and stop installing there."""
    target = ctx.target
    installer = get_installer(target.tool)
    with _open_registry() as reg:
        states = [ts for ts in reg.targets() if ts.target == target and ts.skill != SKILL_NAME]
        for done, ts in enumerate(states):
            if ctx.progress is not None:
                ctx.progress(done, len(states), ts.skill)
            if ts.active_version_id is None:
                if ts.enabled and not ctx.dry_run:
                    reg.set_target_enabled(ts.skill, target, False)
                continue
            if ctx.dry_run:
                for path in sorted(installer.scan(target, ts.skill)):
                    ctx.report.actions.append(Action("remove", Path(path), ts.skill))
                continue
            try:
                removed = reg.uninstall(ts.skill, target, force=ctx.force)
            except SkillOptError as exc:
                ctx.report.actions.append(Action("keep", installer.locations(target)[0].skill_dir(ts.skill)))
                ctx.report.notes.append(f"kept {ts.skill} at {target}: {exc.message}")
                continue
            for path in removed:
                ctx.report.actions.append(Action("remove", path, ts.skill))


def _topmost_missing(folder: Path, root: Path) -> Path | None:
    """The highest folder on the way to `folder` that does not exist yet (what install will create).

    Never above the tool's base folder's parent: a user's home is never recorded as created by skillopt.
    """
    top = None
    current = folder
    while not current.exists() and current.parent != current:
        top = current
        current = current.parent
    if top is not None and top != root and root not in top.parents and top not in root.parents:
        return None
    return top


def _remove_empty_tree(folder: Path) -> None:
    """Remove `folder` and its sub-folders if they hold no file (created by install, now unused)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        try:
            sub.rmdir()
        except OSError:
            pass
    try:
        folder.rmdir()
    except OSError:
        pass


def tool_version(tool: AgentTool, timeout: float = 5.0) -> str | None:
    cli = shutil.which(spec(tool).executable)
    if not cli:
        return None
    try:
        out = subprocess.run(
            [cli, "--version"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


@dataclass
class IntegrationStatus:
    """One tool's line in `skillopt doctor`."""

    tool: str
    detected: bool
    cli: str | None
    version: str | None
    installed: list[dict[str, Any]]
    hooks_active: bool | None
    plugin: str | None
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _claude_plugin_enabled(home: Path) -> str | None:
    """The version of the skillopt plugin when Claude Code has it installed and enabled, else None."""
    try:
        settings = json.loads((home / "settings.json").read_text(encoding="utf-8"))
        enabled = settings.get("enabledPlugins", {})
        if not any(k.split("@")[0] == SKILL_NAME and v for k, v in enabled.items()):
            return None
        installed = json.loads((home / "plugins" / "installed_plugins.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, AttributeError):
        return None
    plugins = installed.get("plugins", {}) if isinstance(installed, dict) else {}
    for key, entries in plugins.items():
        if key.split("@")[0] == SKILL_NAME:
            items = entries if isinstance(entries, list) else [entries]
            for e in items:
                if isinstance(e, dict):
                    return str(e.get("version") or "installed")
    return "enabled"


def status(tool: AgentTool, *, with_version: bool = True) -> IntegrationStatus:
    det = detect(tool)
    installed: list[dict[str, Any]] = []
    problems: list[str] = []
    hooks_active: bool | None = None
    for target in install_targets():
        if target.tool is not tool:
            continue
        manifest = _load_manifest(target) or {}
        missing, edited = [], []
        for r in manifest.get("placements", []):
            path = Path(r.get("path", ""))
            if r.get("kind") == "file":
                h = _file_hash(path)
                if h is None:
                    missing.append(str(path))
                elif h != r.get("hash"):
                    edited.append(str(path))
            elif r.get("kind") == "json" and r.get("what") == "hooks":
                active = _json_has_our_hook(path)
                hooks_active = bool(hooks_active) or active
                if not active:
                    problems.append(
                        f"the skillopt hooks are gone from {path}; run `skillopt install {tool.value}`"
                    )
            elif not path.exists():
                missing.append(str(path))
        for m in missing:
            problems.append(f"{m} is missing; run `skillopt install {tool.value}` again")
        installed.append(
            {
                **target_dict(target),
                "skillopt_version": manifest.get("skillopt_version"),
                "missing": missing,
                "edited": edited,
            }
        )
    plugin = _claude_plugin_enabled(_tool_home(tool)) if tool is AgentTool.CLAUDE_CODE else None
    if plugin:
        hooks_active = True
        if any(i["scope"] == "user" for i in installed):
            problems.append(
                "both the Claude Code plugin and `skillopt install claude-code` add hooks: each "
                "session is reported twice (harmless); keep one"
            )
    return IntegrationStatus(
        tool=tool.value,
        detected=bool(det["detected"]),
        cli=det["cli"],
        version=tool_version(tool) if with_version and det["cli"] else None,
        installed=installed,
        hooks_active=hooks_active,
        plugin=plugin,
        problems=problems,
    )


def _json_has_our_hook(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    found = False

    def walk(node: Any) -> None:
        nonlocal found
        if _is_our_hook(node):
            found = True
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


def doctor_report(*, with_versions: bool = True) -> list[IntegrationStatus]:
    """Every tool's integration status, for `skillopt doctor`."""
    return [status(tool, with_version=with_versions) for tool in AgentTool]


def doctor_section(*, with_versions: bool = True) -> dict[str, Any]:
    """`skillopt doctor`'s integrations part: JSON-ready, with the human lines under "lines".

    For each tool: detected (home folder or CLI), installed (where, and whether files went missing or were
    edited), hooks active (skillopt's hooks in the tool's settings, or the Claude Code plugin enabled), and
    versions (the tool's CLI, the skillopt that installed the integration, the plugin).
    """
    tools = doctor_report(with_versions=with_versions)
    lines: list[str] = []
    for st in tools:
        where = ", ".join(
            (i["scope"] if not i["project"] else f"project {i['project']}")
            + f" (skillopt {i['skillopt_version']})"
            for i in st.installed
        )
        parts = [
            "detected" if st.detected else "not detected",
            st.version or "",
            f"installed: {where}" if where else "not installed",
        ]
        if st.plugin:
            parts.append(f"plugin {st.plugin}")
        if st.hooks_active is not None:
            parts.append("hooks active" if st.hooks_active else "hooks missing")
        lines.append(f"{st.tool}: " + "; ".join(p for p in parts if p))
        lines.extend(f"  ! {p}" for p in st.problems)
    return {"tools": [t.as_dict() for t in tools], "lines": lines, "ok": not any(t.problems for t in tools)}


def doctor_checks(*, with_versions: bool = True) -> list[tuple[str, str, str, str]]:
    """Rows `(group, name, level, detail)` for `skillopt doctor`'s table, one per tool plus one per problem."""
    section = doctor_section(with_versions=with_versions)
    rows: list[tuple[str, str, str, str]] = []
    for tool, line in zip(
        section["tools"], [ln for ln in section["lines"] if not ln.startswith("  ! ")], strict=True
    ):
        level = "warn" if tool["problems"] else ("ok" if tool["installed"] or tool["plugin"] else "info")
        rows.append(("integrations", tool["tool"], level, line.split(": ", 1)[1]))
        rows.extend(("integrations", tool["tool"], "warn", problem) for problem in tool["problems"])
    return rows

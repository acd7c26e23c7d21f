"""Writing a skill version into an agent tool's skill folder, so that a crash never leaves a mix.

Why a folder swap rather than file-by-file writes: a skill is a folder (SKILL.md plus scripts and
references), and an agent that reads it halfway through an update must see one whole version. So every
install stages the complete new folder next to the live one (each file written to a temp name, fsynced and
renamed), sets the live folder aside under a hidden name, renames the staged folder into place and only
then deletes the set-aside copy. Staged and set-aside folders are named after the install id, so after a
crash `recover()` can finish or undo the swap from what it finds on disk: the live folder then holds the
old version or the new one, never a mix.

Every tool's installer is a `FolderInstaller` that says where the tool reads skills (`roots`) and, if the
tool needs it, how to adapt a bundle (`prepare`). The registry (not the installer) decides what to install
and records intents and results; installers only touch files.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import sys
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from skillopt_daemon.core import paths
from skillopt_daemon.core.fsio import atomic_write, fsync_dir, sha256_bytes
from skillopt_daemon.core.tool_homes import may_set_tool_home
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.errors import ConflictError, InstallError, SkillOptError
from skillopt_lib.skill import IGNORED_NAMES, SkillBundle, iter_skill_dirs

Scope = Literal["user", "project"]
TARGET_HINT = "a target looks like claude-code:user or claude-code:project:PATH"

# Test hook: `SKILLOPT_TEST_INSTALL_PAUSE=<step>[:<seconds>]` makes an install announce the step on stderr
# and sleep there, so tests can kill a real process at a chosen point. Steps, in order: intent (registry,
# after recording the intent), staged, aside, swapped.
PAUSE_ENV = "SKILLOPT_TEST_INSTALL_PAUSE"
PAUSE_STEPS = ("intent", "staged", "aside", "swapped")


def pause_point(step: str) -> None:
    spec = os.environ.get(PAUSE_ENV)
    if not spec:
        return
    name, _, secs = spec.partition(":")
    if name != step:
        return
    sys.stderr.write(f"skillopt-install-pause: {step}\n")
    sys.stderr.flush()
    time.sleep(float(secs or 60))


@dataclass(frozen=True)
class InstallTarget:
    """Where a skill is installed: a tool and a scope; project scope also names the repository root."""

    tool: AgentTool
    scope: Scope = "user"
    project: Path | None = None

    def __post_init__(self) -> None:
        if self.scope not in ("user", "project"):
            raise ConflictError(f"unknown scope {self.scope!r}", hint="use 'user' or 'project'")
        if self.scope == "project":
            if self.project is None:
                raise ConflictError("a project target needs the project path")
            object.__setattr__(self, "project", Path(self.project).expanduser().resolve())
        elif self.project is not None:
            object.__setattr__(self, "project", None)

    @property
    def key(self) -> str:
        """The stable text form, as shown and as accepted by `--target`."""
        if self.scope == "user":
            return f"{self.tool.value}:user"
        return f"{self.tool.value}:project:{self.project}"

    def __str__(self) -> str:
        return self.key

    @classmethod
    def parse(cls, spec: str, cwd: Path | None = None) -> InstallTarget:
        """`TOOL`, `TOOL:user`, `TOOL:project` (the current folder) or `TOOL:project:PATH`."""
        tool_part, _, rest = spec.strip().partition(":")
        try:
            tool = AgentTool.parse(tool_part)
        except ValueError as exc:
            raise ConflictError(str(exc), hint=TARGET_HINT) from None
        scope, _, project = rest.partition(":")
        scope = scope or "user"
        if scope == "user" and not project:
            return cls(tool, "user")
        if scope == "project":
            return cls(tool, "project", Path(project) if project else (cwd or Path.cwd()))
        raise ConflictError(
            f"cannot read the target {spec!r}",
            hint=TARGET_HINT,
        )

    @classmethod
    def from_row(cls, tool: str, scope: str, project: str) -> InstallTarget:
        return cls(
            AgentTool(tool), "project" if scope == "project" else "user", Path(project) if project else None
        )

    @property
    def project_str(self) -> str:
        return str(self.project) if self.project else ""


@dataclass(frozen=True)
class Location:
    """One skills root a tool reads (`~/.claude/skills`) and the tree it must stay inside (`~/.claude`)."""

    root: Path
    base: Path

    def skill_dir(self, name: str) -> Path:
        return self.root / name

    def staging_dir(self, name: str, install_id: str) -> Path:
        return self.root / f".{name}.skillopt-{install_id}.new"

    def aside_dir(self, name: str, install_id: str) -> Path:
        return self.root / f".{name}.skillopt-{install_id}.old"


@dataclass(frozen=True)
class PlannedFile:
    path: Path
    action: Literal["create", "replace", "unchanged", "remove"]


@dataclass
class InstallPlan:
    """What an install would do, file by file (the dry run), and where the previous files would be kept."""

    target: InstallTarget
    name: str
    files: list[PlannedFile] = field(default_factory=list)
    backup: Path | None = None

    def lines(self) -> list[str]:
        out = [f"{f.action:9} {f.path}" for f in self.files]
        if self.backup is not None and any(f.action in ("replace", "remove") for f in self.files):
            out.append(f"backup    {self.backup}")
        return out


@runtime_checkable
class Installer(Protocol):
    """What the registry needs from a tool's installer; `FolderInstaller` implements all of it.

    An installer only touches files: the registry decides what to install, records intents and results,
    and holds the install lock around every call that writes. Installers keep no state between calls
    beyond their configuration, so one object may be used from several threads as long as writes to one
    target are serialized (the registry's lock does that). Paths in the `{path: sha256}` maps they return
    are absolute; a symlink is recorded as `link:<where it points>`.

    Optional members: none; a tool whose files differ from `<root>/<name>/SKILL.md` (Copilot's
    instruction-only projects) overrides the methods it needs and keeps the same contracts.
    """

    tool: AgentTool

    def locations(self, target: InstallTarget) -> list[Location]:
        """The skills roots `target` reads, first one first.

        Returns an empty list when the target reads no skill folders (an instruction-only project). Raises
        ValueError for a target of another tool; never touches the disk.
        """
        ...

    def retired_locations(self, target: InstallTarget) -> list[Location]:
        """Skills roots of `target` that older skillopt releases wrote and this one no longer does.

        The registry takes skillopt's copies out of them (see `Drift`). Empty for most tools; never raises
        for a target of this tool and never touches the disk.
        """
        ...

    def prepare(self, bundle: SkillBundle) -> SkillBundle:
        """`bundle` adapted to what the tool accepts (the bundle itself when nothing changes).

        Pure: never raises for a valid bundle and never touches the disk.
        """
        ...

    def discover(self, target: InstallTarget) -> list[Path]:
        """The skill folders present at `target`, sorted by name; the first root wins a name found twice.

        Never raises for a missing root (it holds no skills); only reads.
        """
        ...

    def scan(self, target: InstallTarget, name: str) -> dict[str, str]:
        """`{path: sha256}` of what is on disk for skill `name` at `target` now; empty when nothing is.

        Only reads; never raises for a missing folder. This is what hand edits are detected against.
        """
        ...

    def expected(self, target: InstallTarget, name: str, bundle: SkillBundle) -> dict[str, str]:
        """What `scan` returns right after `install(bundle)` succeeds. Pure; never touches the disk."""
        ...

    def check_writable(self, target: InstallTarget, name: str) -> None:
        """Refuse, before anything is written, a target that cannot be written safely.

        Raises InstallError (a file where a folder should be, a symlink leading outside the tool's folder,
        a folder owned by another user or read-only). Only reads; returns None when the install may go on.
        """
        ...

    def plan(self, target: InstallTarget, name: str, bundle: SkillBundle, backup: Path | None) -> InstallPlan:
        """What `install` would do, file by file (the dry run). Only reads; never raises for a missing folder."""
        ...

    def install(
        self, target: InstallTarget, name: str, bundle: SkillBundle, install_id: str, backup: Path | None
    ) -> dict[str, str]:
        """Write `bundle` as skill `name` at `target` so readers see the old version or the new, never a mix.

        `install_id` names the staged and set-aside folders so `recover(install_id)` can settle a crash;
        `backup`, when given, receives a copy of what was replaced. Returns `scan()` afterwards. Raises
        InstallError or ConflictError with the disk as it was; call only under the registry's install lock.
        """
        ...

    def recover(self, target: InstallTarget, name: str, install_id: str, new: Mapping[str, str]) -> bool:
        """Settle the install `install_id` interrupted by a crash: finish it when every location already
        holds `new`, else put the old files back. Returns True when `new` is on disk afterwards.

        Raises OSError only when the disk refuses a rename; call only under the registry's install lock.
        """
        ...

    def uninstall(
        self,
        target: InstallTarget,
        name: str,
        installed: Mapping[str, str],
        restore: SkillBundle | None,
        force: bool = False,
    ) -> list[Path]:
        """Remove the files skillopt placed (`installed`), then write `restore` back when given.

        Raises ConflictError, touching nothing, when a placed file was edited since and `force` is False.
        Returns the paths removed; call only under the registry's install lock.
        """
        ...


# -- the rules for writing into a tool's folders, shared with the integrations ---------------------------


def check_inside(root: Path, path: Path) -> None:
    """Refuse `path` when a symlink on the way from `root` leads outside `root` (the tool's own folder).

    Raises InstallError; only reads. Links that stay inside `root` are followed.
    """
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


def check_writable(path: Path, *, folder: bool = False) -> None:
    """Refuse `path` when its nearest existing ancestor is a file, belongs to another user or is read-only.

    `folder`: `path` itself must be (or become) a folder, so an existing file there is refused too.
    Checked from the mode bits as well as `os.access`, so a folder made read-only is refused even for root.
    Raises InstallError; only reads.
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
    if (probe != path or folder) and not stat.S_ISDIR(st.st_mode):
        raise InstallError(
            f"{probe} is a file, not a folder; skillopt cannot write "
            + ("into it" if probe == path else f"{path.relative_to(probe)} inside it"),
            hint=f"move {probe} out of the way, or install to another target",
        )
    if st.st_uid != os.geteuid():
        raise InstallError(
            f"{probe} belongs to another user (uid {st.st_uid}); skillopt will not write there",
            hint="run skillopt as the user who owns that folder, or choose another --scope / --project",
        )
    need = os.W_OK | (os.X_OK if stat.S_ISDIR(st.st_mode) else 0)
    if not os.access(probe, need) or not st.st_mode & stat.S_IWUSR:
        raise InstallError(
            f"{probe} is read-only; skillopt cannot write there",
            hint=f"make it writable (chmod u+w {shlex.quote(str(probe))}) or pick another --scope/--project",
        )


def _file_mode(rel: str, data: bytes) -> int:
    """Scripts with a shebang stay runnable: the bundle keeps bytes, not modes."""
    return 0o755 if data.startswith(b"#!") else 0o644


def scan_folder(folder: Path) -> dict[str, str]:
    """{absolute path: sha256} of every file under `folder`, skipping editor droppings.

    A symlink is recorded by where it points, so replacing a file by a link counts as a change.
    """
    out: dict[str, str] = {}
    if not folder.exists() and not folder.is_symlink():
        return out
    if folder.is_symlink() or not folder.is_dir():
        out[str(folder)] = "link:" + os.readlink(folder) if folder.is_symlink() else "not-a-folder"
        return out
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_NAMES)
        for d in list(dirs):
            if (Path(root) / d).is_symlink():
                out[str(Path(root) / d)] = "link:" + os.readlink(Path(root) / d)
                dirs.remove(d)
        for n in sorted(names):
            if n in IGNORED_NAMES or n.endswith(".pyc"):
                continue
            fp = Path(root) / n
            if fp.is_symlink():
                out[str(fp)] = "link:" + os.readlink(fp)
            elif fp.is_file():
                out[str(fp)] = sha256_bytes(fp.read_bytes())
    return out


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    """In a repository, the folders a project install needed (`.codex/skills`) go with it when nothing else
    is in them; one holding anything of the user's, and the repository itself, stay."""
    here = folder
    while here != stop and stop in here.parents:
        try:
            here.rmdir()
        except OSError:
            return
        here = here.parent


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


class FolderInstaller:
    """A tool that reads skills as `<root>/<name>/SKILL.md`. Subclasses give the roots for each scope."""

    tool: AgentTool

    def __init__(self, home: Path | None = None, *, instruction_projects: Collection[Path] = ()) -> None:
        # None: resolved at each call, so a changed tool variable (CLAUDE_CONFIG_DIR, ...) or config is honoured.
        self._home = home
        # Projects whose integration was installed for instruction files instead of skill folders (the
        # registry knows them); only a tool with such a mode (Copilot) reads this.
        self.instruction_projects = frozenset(Path(p) for p in instruction_projects)

    def home(self) -> Path:
        """The tool's own home folder: as given, else from config and the tool's variable."""
        if self._home is not None:
            return self._home
        if not may_set_tool_home():
            # Nothing could set another home: the settings would give the default (`core/tool_homes.py`).
            return paths.default_tool_home(self.tool)
        # Imported here: reading the settings needs pydantic-settings, which the commands that only read the
        # store (status, diff) would otherwise pay for at start.
        from skillopt_daemon.core.config import tool_home

        try:
            return tool_home(self.tool)
        except Exception:  # a broken config must not stop installs to the default folder
            return paths.default_tool_home(self.tool)

    def user_locations(self) -> list[Location]:
        raise NotImplementedError

    def project_locations(self, project: Path) -> list[Location]:
        return [Location(project / rel, project) for rel in spec(self.tool).project_skill_dirs[:1]]

    # -- where ---------------------------------------------------------------------------------------------

    def locations(self, target: InstallTarget) -> list[Location]:
        if target.tool != self.tool:
            raise ValueError(f"{type(self).__name__} cannot install for {target.tool.value}")
        if target.scope == "project":
            assert target.project is not None
            return self.project_locations(target.project)
        return self.user_locations()

    def retired_locations(self, target: InstallTarget) -> list[Location]:
        """Roots an older skillopt wrote for this tool and this one no longer does. The default: none."""
        return []

    def prepare(self, bundle: SkillBundle) -> SkillBundle:
        """Adapt a version to what this tool accepts. The default writes it unchanged."""
        return bundle

    def discover(self, target: InstallTarget) -> list[Path]:
        """Skill folders present in this target's roots (first root wins for a name found twice)."""
        seen: dict[str, Path] = {}
        for loc in self.locations(target):
            for d in iter_skill_dirs(loc.root):
                seen.setdefault(d.name, d)
        return [seen[n] for n in sorted(seen)]

    # -- reading -------------------------------------------------------------------------------------------

    def scan(self, target: InstallTarget, name: str) -> dict[str, str]:
        """What is on disk now for this skill at this target: {absolute path: sha256}, every location."""
        out: dict[str, str] = {}
        for loc in self.locations(target):
            out.update(scan_folder(loc.skill_dir(name)))
        return out

    def expected(self, target: InstallTarget, name: str, bundle: SkillBundle) -> dict[str, str]:
        """What `scan` returns right after installing `bundle`."""
        prepared = self.prepare(bundle)
        out: dict[str, str] = {}
        for loc in self.locations(target):
            d = loc.skill_dir(name)
            for rel, sha in prepared.file_hashes().items():
                out[str(d / rel)] = sha
        return out

    # -- checks --------------------------------------------------------------------------------------------

    def check_writable(self, target: InstallTarget, name: str) -> None:
        """Refuse, before anything is written, a folder we cannot write or that leads outside its tree."""
        for loc in self.locations(target):
            check_inside(loc.base, loc.root)
            skill = loc.skill_dir(name)
            if skill.is_symlink():
                raise InstallError(
                    f"refusing to install into {skill}: it is a symlink (to {os.readlink(skill)})",
                    hint="skillopt replaces skill folders whole; replace the link with a real folder first",
                )
            check_writable(loc.root, folder=True)

    def plan(self, target: InstallTarget, name: str, bundle: SkillBundle, backup: Path | None) -> InstallPlan:
        prepared = self.prepare(bundle)
        plan = InstallPlan(target=target, name=name, backup=backup)
        for loc in self.locations(target):
            d = loc.skill_dir(name)
            current = scan_folder(d)
            wanted = {str(d / rel): sha for rel, sha in prepared.file_hashes().items()}
            for path in sorted(set(current) | set(wanted)):
                if path not in current:
                    plan.files.append(PlannedFile(Path(path), "create"))
                elif path not in wanted:
                    plan.files.append(PlannedFile(Path(path), "remove"))
                elif current[path] != wanted[path]:
                    plan.files.append(PlannedFile(Path(path), "replace"))
                else:
                    plan.files.append(PlannedFile(Path(path), "unchanged"))
        return plan

    # -- writing -------------------------------------------------------------------------------------------

    def install(
        self, target: InstallTarget, name: str, bundle: SkillBundle, install_id: str, backup: Path | None
    ) -> dict[str, str]:
        """Swap `bundle` into every location of `target`. Returns the hashes now on disk.

        Each step can be interrupted: `recover(install_id)` finishes or undoes it. `backup` receives a copy
        of each replaced folder (`<backup>/<index>/`), kept so uninstall can restore what was there.
        """
        self.check_writable(target, name)
        prepared = self.prepare(bundle)
        want = self.expected(target, name, bundle)
        locs = self.locations(target)
        try:
            for loc in locs:
                staging = loc.staging_dir(name, install_id)
                _remove_tree(staging)
                for rel, data in sorted(prepared.files.items()):
                    atomic_write(staging / rel, data, _file_mode(rel, data))
                fsync_dir(loc.root)
            pause_point("staged")
            for i, loc in enumerate(locs):
                live = loc.skill_dir(name)
                if backup is not None and live.is_dir() and not live.is_symlink():
                    dest = backup / str(i)
                    _remove_tree(dest)
                    shutil.copytree(live, dest, symlinks=True)
            for loc in locs:
                live, aside = loc.skill_dir(name), loc.aside_dir(name, install_id)
                if live.exists() or live.is_symlink():
                    os.rename(live, aside)
                pause_point("aside")
                os.rename(loc.staging_dir(name, install_id), live)
                fsync_dir(loc.root)
            pause_point("swapped")
            for loc in locs:
                _remove_tree(loc.aside_dir(name, install_id))
        except SkillOptError:
            if not self.recover(target, name, install_id, want):
                raise
        except OSError as exc:
            if self.recover(target, name, install_id, want):
                return self.scan(target, name)
            raise InstallError(
                f"could not install {name} into {target}: {exc.strerror or exc}",
                hint="check the folder's permissions and free space; nothing was changed",
            ) from None
        return self.scan(target, name)

    def recover(self, target: InstallTarget, name: str, install_id: str, new: Mapping[str, str]) -> bool:
        """After an interrupted install: finish it if every location already holds the new version, else put
        the old folders back. Returns True when the new version is what is on disk afterwards."""
        locs = self.locations(target)
        if new and self.scan(target, name) == dict(new):
            for loc in locs:
                _remove_tree(loc.staging_dir(name, install_id))
                _remove_tree(loc.aside_dir(name, install_id))
            return True
        for loc in locs:
            live, aside, staging = (
                loc.skill_dir(name),
                loc.aside_dir(name, install_id),
                loc.staging_dir(name, install_id),
            )
            if aside.exists() or aside.is_symlink():
                if live.exists() or live.is_symlink():
                    _remove_tree(live)
                os.rename(aside, live)
            elif new and live.is_dir() and not staging.exists():
                # Nothing was set aside, so nothing was there before: a live folder holding exactly the new
                # files is ours and goes.
                prefix = str(live) + os.sep
                if {k: v for k, v in new.items() if k.startswith(prefix)} == scan_folder(live):
                    _remove_tree(live)
            _remove_tree(staging)
            fsync_dir(loc.root)
        return False

    def uninstall(
        self,
        target: InstallTarget,
        name: str,
        installed: Mapping[str, str],
        restore: SkillBundle | None,
        force: bool = False,
    ) -> list[Path]:
        """Remove only the files skillopt placed (each must still hold what skillopt wrote), then put back
        `restore` (what was there before skillopt first installed) if given. Returns the paths removed."""
        current = self.scan(target, name)
        edited = sorted(p for p, sha in installed.items() if p in current and current[p] != sha)
        if edited and not force:
            raise ConflictError(
                f"{name} was edited since skillopt installed it: {', '.join(edited)}",
                hint="import the edit first (skillopt skills import), or pass --force",
            )
        removed: list[Path] = []
        for path in sorted(installed, reverse=True):
            p = Path(path)
            if p.is_file() and not p.is_symlink():
                p.unlink()
                removed.append(p)
        for loc in self.locations(target):
            d = loc.skill_dir(name)
            # Remove folders left empty by the files we removed; anything the user added keeps its folder.
            for sub in sorted(
                (x for x in d.rglob("*") if x.is_dir()), key=lambda x: len(x.parts), reverse=True
            ):
                try:
                    sub.rmdir()
                except OSError:
                    pass
            try:
                d.rmdir()
            except OSError:
                pass
            if target.project is not None and restore is None:
                _remove_empty_parents(loc.root, target.project)
        if restore is not None:
            prepared = self.prepare(restore)
            for loc in self.locations(target):
                d = loc.skill_dir(name)
                for rel, data in prepared.files.items():
                    atomic_write(d / rel, data, _file_mode(rel, data))
        return removed

"""Sandboxed replay: run an agent CLI on a task from the task's original repository state, then check it.

Each replay gets a run folder under skillopt's own workspaces folder (the caller passes it; the daemon uses
`skillopt_lib.userdir.workspaces_dir()`), holding:

- `repo/`  the workspace: a detached `git worktree` at the task's pinned commit (with the recorded dirty
  diff re-applied), else a copy of the project, else an empty folder. A `.skillopt-replay` marker at its root
  and `SKILLOPT_REPLAY=1` in the agent's environment let ingest drop the sessions replays produce.
- `home/`  the isolated HOME the backend fills with credentials only, so the user's installed skills never
  shadow the candidate.
- `snapshot.git`  a private git folder that records the workspace right before the agent starts; the diff
  of changed files is computed against it, so the user's repository is only ever read.

The user's repository is never written: worktree hooks are disabled, the worktree is removed afterwards (the
registration under `.git/worktrees` goes with it) and branches or tags an agent creates from inside the
worktree are deleted again. Everything is removed at the end unless `keep` is set.

The run folder's marker records the pid of the process that made it, whether it is to be kept and, before
the worktree is added, the repository it is registered in; a process killed mid-replay (`kill -9`) cannot
clean up, so `remove_leftovers` removes what such a process left, worktree registration included.

The agent and the checks run with the user's own toolchain: skillopt's own virtual environment (the folder
of this interpreter, first on `PATH` when the daemon was started from an activated environment) is taken
off the `PATH` they get (`user_path`), so a repository's `python3 -m pytest` runs the user's Python.

The agent and the checks run jailed, without network access beyond the model endpoint (`network =
"isolated"`, the default; `skillopt_lib.netjail`): what a replay tried to reach is recorded in its result's
`network_blocked` and warnings. Where no jail can be made a replay raises `SandboxError` before any
workspace exists, unless `allow_unconfined` chose to run it with the recording proxy alone.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skillopt_lib import netjail
from skillopt_lib.agents import TOOLS, AgentTool
from skillopt_lib.errors import ExternalToolError, SkillOptError
from skillopt_lib.execution import REPLAY_ENV, CheckResult, ExecBackend, ExecLimits, ExecResult
from skillopt_lib.fsio import pid_alive
from skillopt_lib.process import excerpt, run_process, user_path
from skillopt_lib.skill import SkillBundle

MARKER = ".skillopt-replay"
DEFAULT_ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "SHELL", "USER", "LOGNAME")
# Files that running code leaves behind; they are not changes the agent made, even without a .gitignore.
BYPRODUCTS = ("__pycache__/", "*.pyc", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".DS_Store")
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR")
# How `create_workspace` names run folders.
_RUN_DIR = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}")
_repo_locks: dict[str, threading.Lock] = {}
_repo_locks_guard = threading.Lock()

WorkspaceKind = Literal["worktree", "copy", "empty"]


class SandboxError(ExternalToolError):
    """The replay workspace could not be prepared (disk full, git failed); nothing is left behind."""


@dataclass
class ReplayTask:
    """One task to replay: what to ask, from which repository state, and how to tell it worked."""

    prompt: str
    repo: str | Path | None = None
    commit: str | None = None
    dirty_diff: str | None = None
    checks: list[str] = field(default_factory=list)
    id: str = ""
    check_timeout_s: float = 300.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayTask:
        checks = data.get("checks") or []
        if isinstance(checks, str):
            checks = [checks]
        return cls(
            prompt=str(data["prompt"]),
            repo=data.get("repo") or data.get("repo_path") or None,
            commit=data.get("commit") or data.get("head_commit") or None,
            dirty_diff=data.get("dirty_diff") or None,
            checks=[str(c) for c in checks],
            id=str(data.get("id") or ""),
            check_timeout_s=float(data.get("check_timeout_s") or 300.0),
        )


@dataclass
class SandboxConfig:
    """Where workspaces go and how they are run; the daemon fills it from `[replay]` settings."""

    root: Path
    env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST
    keep: bool = False
    max_parallel: int = 2
    check_timeout_s: float = 300.0
    # "isolated": the agent reaches its model endpoint only, the checks nothing (`skillopt_lib.netjail`);
    # "open": both run with this machine's network.
    network: str = "isolated"
    # Where no jail can be made, replay anyway with the recording proxy alone (`netjail.allow_unconfined`,
    # the daemon's `replay.allow_unconfined`); otherwise such a replay raises `SandboxError` and does not run.
    allow_unconfined: bool = field(default_factory=netjail.unconfined_allowed)
    # Every replay run with this config holds a slot while its workspace exists, whichever thread calls.
    slots: threading.BoundedSemaphore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.slots = threading.BoundedSemaphore(max(1, self.max_parallel))


@dataclass
class Workspace:
    run_dir: Path
    path: Path
    cwd: Path
    home: Path
    kind: WorkspaceKind
    source: Path | None = None
    commit: str | None = None
    notes: list[str] = field(default_factory=list)
    git_top: Path | None = None
    # The repository whose objects the snapshot may borrow (read-only) so unchanged files are not copied.
    objects_from: Path | None = None
    refs_before: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# git helpers (read-only on the user's repository, except worktree add/remove)
# --------------------------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    return env


def _git(
    args: Sequence[str],
    cwd: Path | None = None,
    *,
    check: bool = True,
    input_text: str | None = None,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    extra_config: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=off", *extra_config]
    if git_dir is not None:
        argv += [f"--git-dir={git_dir}"]
    if work_tree is not None:
        argv += [f"--work-tree={work_tree}"]
    argv += list(args)
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd) if cwd else None,
            env=_git_env(),
            capture_output=True,
            text=True,
            input=input_text,
            timeout=600,
        )
    except FileNotFoundError:
        raise ExternalToolError("git is not installed", hint="install git: replays need it") from None
    if check and proc.returncode != 0:
        err = proc.stderr.strip() or proc.stdout.strip()
        if "No space left on device" in err:
            raise OSError(errno.ENOSPC, err)
        raise SandboxError(f"git {' '.join(args[:2])} failed: {excerpt(err, 500)}")
    return proc


def git_toplevel(path: Path) -> Path | None:
    """The top of the git work tree holding `path`, or None for a folder outside any repository."""
    if shutil.which("git") is None:
        return None
    proc = _git(["rev-parse", "--show-toplevel"], cwd=path, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.strip()).resolve()


def _commit_exists(top: Path, commit: str) -> bool:
    return _git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=top, check=False).returncode == 0


def _head(top: Path) -> str | None:
    proc = _git(["rev-parse", "--verify", "-q", "HEAD"], cwd=top, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _refs(top: Path) -> dict[str, str]:
    proc = _git(["for-each-ref", "--format=%(refname) %(objectname)"], cwd=top, check=False)
    out = {}
    for line in proc.stdout.splitlines():
        name, _, sha = line.partition(" ")
        out[name] = sha
    return out


def _lock_for(top: Path) -> threading.Lock:
    with _repo_locks_guard:
        return _repo_locks.setdefault(str(top), threading.Lock())


# --------------------------------------------------------------------------------------------------
# Workspaces
# --------------------------------------------------------------------------------------------------


def _copy_file(src: str, dst: str) -> object:
    """The copy function used for project copies (a seam for fault-injection tests)."""
    return shutil.copy2(src, dst)


def _copy_project(src: Path, dst: Path, skip: Path) -> None:
    skip_resolved = skip.resolve()

    def ignore(folder: str, names: list[str]) -> list[str]:
        out = [n for n in names if n == ".git"]
        for n in names:
            try:
                if (Path(folder) / n).resolve() == skip_resolved:
                    out.append(n)
            except OSError:
                continue
        return out

    shutil.copytree(src, dst, symlinks=True, ignore=ignore, copy_function=_copy_file)


def _write_owner(run_dir: Path, task: ReplayTask, keep: bool, git_top: Path | None = None) -> None:
    """The run folder's marker: which task, which process owns the folder, whether it is to be kept, and
    the repository a worktree of it is (about to be) registered in. Written before the worktree exists, so
    a process killed in the middle of `git worktree add` still leaves the way to its registration."""
    owner: dict[str, Any] = {
        "task": task.id,
        "pid": os.getpid(),
        "started": _started(os.getpid()),
        "keep": keep,
    }
    if git_top is not None:
        owner["git_top"] = str(git_top)
    (run_dir / MARKER).write_text(json.dumps(owner), encoding="utf-8")


def _started(pid: int) -> int | None:
    """When the process `pid` started (clock ticks since boot, `/proc/PID/stat`), None where unknown: with
    the pid it names one process, never a later one that was given the same pid."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _owner_gone(owner: Mapping[str, Any]) -> bool:
    """Whether the process a run folder's marker names has ended (its pid gone, or taken by another)."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or not pid_alive(pid):
        return True
    started = owner.get("started")
    return isinstance(started, int) and _started(pid) not in (None, started)


def create_workspace(task: ReplayTask, root: Path, *, keep: bool = False) -> Workspace:
    """Prepare a run folder for `task` under `root`; on any failure nothing is left behind. `keep` is
    recorded in the folder's marker: a kept folder is never taken for a killed process's leftover."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    run_dir = root / f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(mode=0o700)
    _write_owner(run_dir, task, keep)
    ws = Workspace(
        run_dir=run_dir, path=run_dir / "repo", cwd=run_dir / "repo", home=run_dir / "home", kind="empty"
    )
    try:
        ws.home.mkdir(mode=0o700)
        (run_dir / "tmp").mkdir(mode=0o700)
        _fill_workspace(ws, task, root, keep)
        (ws.path / MARKER).write_text(json.dumps({"task": task.id, "kind": ws.kind}), encoding="utf-8")
    except BaseException as exc:
        remove_workspace(ws)
        if is_disk_full(exc):
            raise _disk_full(root) from None
        if isinstance(exc, shutil.Error):
            first = exc.args[0][0] if exc.args and exc.args[0] else ("?", "?", str(exc))
            raise SandboxError(
                f"could not copy the project into the replay workspace: {first[0]}: {first[2]}",
                hint="make every file of the project readable, or replay from a pinned commit",
            ) from None
        raise
    return ws


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC, raised directly or collected by `shutil.copytree` among per-file errors."""
    if isinstance(exc, shutil.Error):
        entries = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        return any("[Errno 28]" in str(e[-1]) or "No space left" in str(e[-1]) for e in entries)
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC


def _disk_full(root: Path) -> SandboxError:
    return SandboxError(
        "the disk filled up while preparing the replay workspace; it was removed",
        hint=f"free some space on the disk holding {root} and run the replay again",
    )


def _fill_workspace(ws: Workspace, task: ReplayTask, root: Path, keep: bool = False) -> None:
    src = Path(task.repo).expanduser().resolve() if task.repo else None
    if src is None:
        ws.path.mkdir()
        ws.notes.append("no project given: the agent starts in an empty folder")
        return
    if not src.is_dir():
        raise SandboxError(
            f"the project folder {src} does not exist", hint="check the task's repository path"
        )
    top = git_toplevel(src)
    head = _head(top) if top else None
    if top is not None and head is not None and task.commit:
        commit = task.commit
        if not _commit_exists(top, commit):
            ws.notes.append(
                f"the pinned commit {commit[:12]} no longer exists in {top}; "
                f"replaying from HEAD ({head[:12]}) instead"
            )
            commit = head
        ws.refs_before = _refs(top)
        _write_owner(ws.run_dir, task, keep, top)
        with _lock_for(top):
            ws.git_top = ws.objects_from = top
            _git(["worktree", "add", "--detach", "-q", str(ws.path), commit], cwd=top)
        ws.kind, ws.source, ws.commit = "worktree", top, commit
        if task.dirty_diff:
            patch = ws.run_dir / "dirty.patch"
            patch.write_text(
                task.dirty_diff if task.dirty_diff.endswith("\n") else task.dirty_diff + "\n",
                encoding="utf-8",
            )
            applied = _git(["apply", "--whitespace=nowarn", "--binary", str(patch)], cwd=ws.path, check=False)
            if applied.returncode != 0:
                ws.notes.append(
                    f"the recorded uncommitted changes did not apply: {excerpt(applied.stderr.strip(), 300)}"
                )
            patch.unlink()
        rel = src.relative_to(top) if src != top else Path()
        ws.cwd = ws.path / rel
        ws.cwd.mkdir(parents=True, exist_ok=True)
        return
    if top is None:
        ws.notes.append(f"{src} is not a git repository: the agent works on a copy of it")
    elif head is None:
        ws.notes.append(f"{top} has no commits yet: the agent works on a copy of it")
    else:
        ws.notes.append("no pinned commit: the agent works on a copy of the project as it is now")
    _copy_project(src, ws.path, root)
    ws.kind, ws.source, ws.objects_from = "copy", src, top


def remove_workspace(ws: Workspace) -> None:
    """Delete the run folder and unregister the worktree; refs an agent created in the user's repo go too."""
    if ws.git_top is not None:
        with _lock_for(ws.git_top):
            _git(["worktree", "remove", "--force", "--force", str(ws.path)], cwd=ws.git_top, check=False)
            if ws.path.exists():
                shutil.rmtree(ws.path, ignore_errors=True)
            _git(["worktree", "prune"], cwd=ws.git_top, check=False)
    shutil.rmtree(ws.run_dir, ignore_errors=True)


def _owner(run_dir: Path) -> dict[str, Any] | None:
    """The marker of a run folder, or None when it has none (not a workspace, or one being removed)."""
    try:
        data = json.loads((run_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _unregister_worktree(top: Path, path: Path) -> None:
    """Remove the registration of the worktree at `path` from the repository `top`, even when its folder
    is gone or git left it locked ("initializing") because it was killed in the middle of adding it."""
    _git(["worktree", "remove", "--force", "--force", str(path)], cwd=top, check=False)
    common = _git(["rev-parse", "--git-common-dir"], cwd=top, check=False).stdout.strip()
    entries = (top / common).resolve() / "worktrees" if common else None
    if entries is not None and entries.is_dir():
        for entry in entries.iterdir():
            try:
                target = (entry / "gitdir").read_text(encoding="utf-8").strip()
            except OSError:
                continue
            if Path(target).parent == path:
                (entry / "locked").unlink(missing_ok=True)
    _git(["worktree", "prune"], cwd=top, check=False)


def remove_leftovers(
    root: Path, pids: set[int] | None = None, *, unmarked_after_s: float = 3600
) -> list[str]:
    """Remove the run folders under `root` whose owning process is gone (killed mid-replay), and their
    worktree registrations in the user's repositories. They are found by what they are, never by a
    command line: a folder whose marker names a process that has ended (one of `pids` when given; a pid
    now taken by another process counts as ended) and that was not asked to be kept, and, when no `pids`
    are given, a folder named like a run folder with no marker that nobody touched for `unmarked_after_s`
    (what a process that outlived its replay wrote after the folder was removed). One note each."""
    notes: list[str] = []
    try:
        folders = sorted(p for p in Path(root).iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return notes
    for run_dir in folders:
        owner = _owner(run_dir)
        if owner is None:
            if pids is None and _RUN_DIR.fullmatch(run_dir.name) and _untouched(run_dir, unmarked_after_s):
                shutil.rmtree(run_dir, ignore_errors=True)
                notes.append(f"removed {run_dir.name}, a replay workspace without its marker")
            continue
        pid = owner.get("pid")
        if not isinstance(pid, int) or owner.get("keep"):
            continue
        if (pids is not None and pid not in pids) or not _owner_gone(owner):
            continue
        top = owner.get("git_top")
        if isinstance(top, str) and Path(top).is_dir() and shutil.which("git"):
            with _lock_for(Path(top)):
                _unregister_worktree(Path(top), run_dir / "repo")
            notes.append(f"removed the replay workspace {run_dir.name} and its git worktree in {top}")
        else:
            notes.append(f"removed the replay workspace {run_dir.name}")
        shutil.rmtree(run_dir, ignore_errors=True)
    return notes


def _untouched(folder: Path, seconds: float) -> bool:
    try:
        return time.time() - folder.stat().st_mtime > seconds
    except OSError:
        return False


def _restore_refs(ws: Workspace) -> list[str]:
    """Branches, tags or stashes made from inside the worktree live in the user's repository: undo them."""
    if ws.git_top is None:
        return []
    notes = []
    after = _refs(ws.git_top)
    for name, sha in after.items():
        if name not in ws.refs_before:
            _git(["update-ref", "-d", name, sha], cwd=ws.git_top, check=False)
            notes.append(f"removed {name}, created by the agent inside the replay")
        elif ws.refs_before[name] != sha:
            notes.append(
                f"the agent moved {name} in your repository (from {ws.refs_before[name][:12]} to {sha[:12]})"
            )
    return notes


# --------------------------------------------------------------------------------------------------
# Environment, snapshot, checks
# --------------------------------------------------------------------------------------------------


def scrub_env(
    allowlist: Sequence[str],
    *,
    home: Path,
    tmp: Path | None = None,
    extra: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Only allow-listed variables survive; HOME, XDG folders and TMPDIR point into the run folder."""
    src = os.environ if base is None else base
    env = {k: src[k] for k in allowlist if k in src}
    env["PATH"] = user_path(env.get("PATH"))
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NO_COLOR="1",
    )
    env[REPLAY_ENV] = "1"
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    if extra:
        env.update(extra)
    return env


class Snapshot:
    """The workspace as the agent found it, in a private git folder, to diff against afterwards.

    A worktree's objects are borrowed read-only from the user's repository (git alternates), so recording
    a large repository writes only the files that differ from the pinned commit.
    """

    def __init__(self, ws: Workspace, excluded: Sequence[str]) -> None:
        self.ws = ws
        self.git_dir = ws.run_dir / "snapshot.git"
        _git(["init", "-q", "--bare", str(self.git_dir)], cwd=ws.run_dir)
        exclude = self.git_dir / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        anchored = "".join(f"/{p.strip('/')}\n" for p in [MARKER, *excluded])
        exclude.write_text(anchored + "".join(f"{p}\n" for p in BYPRODUCTS), encoding="utf-8")
        if ws.objects_from is not None:
            common = _git(["rev-parse", "--git-common-dir"], cwd=ws.objects_from, check=False).stdout.strip()
            objects = (ws.objects_from / common).resolve() / "objects"
            if common and objects.is_dir():
                alt = self.git_dir / "objects" / "info" / "alternates"
                alt.parent.mkdir(parents=True, exist_ok=True)
                alt.write_text(str(objects) + "\n", encoding="utf-8")
        self._add()
        self._g(
            [
                "-c",
                "user.name=skillopt",
                "-c",
                "user.email=skillopt@localhost",
                "commit",
                "-q",
                "--no-verify",
                "--allow-empty",
                "-m",
                "before the agent",
            ]
        )

    def _g(self, args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        # A throwaway object store: no fsync, no automatic gc.
        fast = ("-c", "core.fsync=none", "-c", "gc.auto=0")
        return _git(
            args,
            cwd=self.ws.path,
            git_dir=self.git_dir,
            work_tree=self.ws.path,
            check=check,
            extra_config=fast,
        )

    def _add(self) -> None:
        self._g(["add", "-A", "--ignore-errors", "."], check=False)

    def changes(self, max_diff_bytes: int = 200_000) -> tuple[list[str], str]:
        """Changed paths (`M path`, `A path`, `D path`) and a unified diff, cut at `max_diff_bytes`."""
        self._add()
        names = self._g(["diff", "--cached", "--name-status", "--no-renames", "HEAD"]).stdout.splitlines()
        diff = self._g(["diff", "--cached", "--no-renames", "--binary", "HEAD"]).stdout
        if len(diff) > max_diff_bytes:
            diff = diff[:max_diff_bytes] + f"\n… diff cut at {max_diff_bytes} bytes\n"
        return [" ".join(n.split("\t", 1)) for n in names if n.strip()], diff


def run_checks(
    workspace: Path,
    checks: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    confine: netjail.Jail | None = None,
) -> list[CheckResult]:
    """Run each check command with `sh -c` in the workspace (confined by `confine` when given); output
    keeps its last lines."""
    results = []
    for cmd in checks:
        argv = ["/bin/sh", "-c", cmd]
        out = run_process(
            confine.wrap(argv) if confine is not None else argv,
            cwd=workspace,
            env=env,
            timeout_s=timeout_s,
            max_output_bytes=200_000,
            merge_stderr=True,
        )
        results.append(
            CheckResult(
                command=cmd,
                exit_code=None if out.timed_out else out.returncode,
                output=excerpt("\n".join(out.lines), 2000),
                duration_s=out.duration_s,
                timed_out=out.timed_out,
            )
        )
    return results


# --------------------------------------------------------------------------------------------------
# One replay
# --------------------------------------------------------------------------------------------------


def probe_checks(task: ReplayTask, config: SandboxConfig) -> list[CheckResult]:
    """Run the task's checks in a fresh workspace at its pinned state, with no agent: what the checks say
    before any work. A check that already passes here cannot tell right from wrong. Raises `SandboxError`
    when the workspace cannot be prepared; leaves nothing behind."""
    _require_jail(config)
    with config.slots:
        ws = create_workspace(task, config.root)
        try:
            env = scrub_env(config.env_allowlist, home=ws.home, tmp=ws.run_dir / "tmp")
            with _checks_jail(config) as jail:
                env = jail.environ(env) if jail is not None else env
                return run_checks(
                    ws.cwd, task.checks, env, task.check_timeout_s or config.check_timeout_s, jail
                )
        finally:
            remove_workspace(ws)


def _require_jail(config: SandboxConfig) -> None:
    """Refuse, before any workspace is made, a replay that was to be jailed where no jail can be made (and
    running unconfined was not chosen)."""
    if config.network == "open" or config.allow_unconfined:
        return
    why = netjail.namespace_unavailable()
    if why is not None:
        refused = netjail.refusal(why)
        raise SandboxError(refused.message, hint=refused.hint)


@contextmanager
def _checks_jail(config: SandboxConfig) -> Iterator[netjail.Jail | None]:
    """Checks reach no network at all under `network = "isolated"` (a check needs no model)."""
    jail, _notes = netjail.confinement(
        config.network, (), {}, None, what="(during the checks)", allow_unconfined=config.allow_unconfined
    )
    try:
        yield jail
    finally:
        if jail is not None:
            jail.close()


def replay(
    task: ReplayTask,
    backend: ExecBackend,
    config: SandboxConfig,
    *,
    skill: SkillBundle | None = None,
    limits: ExecLimits | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> ExecResult:
    """Run `backend` on `task` in a fresh workspace with `skill` installed, then run the task's checks.

    Agent failures come back as the result's status; a workspace that cannot be prepared raises
    `SandboxError` (and leaves nothing behind).
    """
    backend.preflight()  # a missing CLI fails before any workspace is made
    _require_jail(config)  # and so does a replay that cannot be jailed
    with config.slots:
        return _replay(task, backend, config, skill=skill, limits=limits, stage=on_stage or (lambda _s: None))


def _replay(
    task: ReplayTask,
    backend: ExecBackend,
    config: SandboxConfig,
    *,
    skill: SkillBundle | None,
    limits: ExecLimits | None,
    stage: Callable[[str], None],
) -> ExecResult:
    stage("workspace")
    ws = create_workspace(task, config.root, keep=config.keep)
    keep = config.keep
    try:
        try:
            excluded: list[str] = []
            if skill is not None:
                installed = backend.install_skill(ws.path, skill)
                excluded.append(installed.relative_to(ws.path).as_posix())
            extra = backend.prepare_home(ws.home, ws.path)
            env = scrub_env(config.env_allowlist, home=ws.home, tmp=ws.run_dir / "tmp", extra=extra)
            snapshot = Snapshot(ws, excluded)
        except OSError as exc:
            if is_disk_full(exc):
                keep = False
                raise _disk_full(config.root) from None
            raise
        stage("agent")
        tool = getattr(backend, "tool", None)
        hosts = TOOLS[tool].model_hosts if isinstance(tool, AgentTool) else None
        jail, net_notes = netjail.confinement(
            config.network, hosts, env, ws.home, allow_unconfined=config.allow_unconfined
        )
        try:
            run_limits = limits or backend.limits
            if jail is not None:
                env, run_limits = jail.environ(env), run_limits.with_(confine=jail)
            result = backend.run(task.prompt, cwd=ws.cwd, env=env, limits=run_limits)
        finally:
            if jail is not None:
                jail.close()
        result.workspace = str(ws.path)
        result.warnings = [*ws.notes, *net_notes, *(jail.errors if jail else []), *result.warnings]
        stage("diff")
        try:
            result.files_changed, result.diff = snapshot.changes()
        except (OSError, SkillOptError) as exc:
            result.warnings.append(f"could not compute the changed files: {exc}")
        result.warnings.extend(_restore_refs(ws))
        if task.checks:
            stage("checks")
            check_env = scrub_env(config.env_allowlist, home=ws.home, tmp=ws.run_dir / "tmp")
            with _checks_jail(config) as check_jail:
                if check_jail is not None:
                    check_env = check_jail.environ(check_env)
                result.checks = run_checks(
                    ws.cwd, task.checks, check_env, task.check_timeout_s or config.check_timeout_s, check_jail
                )
            if check_jail is not None:
                result.network_blocked += check_jail.attempts
        if jail is not None:
            result.network_blocked = [*jail.attempts, *result.network_blocked]
            forwarded = netjail.forwarded_note(jail.forwarded)
            if forwarded:
                result.warnings.append(forwarded)
        blocked = netjail.blocked_note(result.network_blocked)
        if blocked:
            result.warnings.append(blocked)
        return result
    finally:
        if not keep:
            remove_workspace(ws)


def replay_many(
    tasks: Sequence[ReplayTask],
    backend: ExecBackend,
    config: SandboxConfig,
    *,
    skill: SkillBundle | None = None,
    limits: ExecLimits | None = None,
) -> list[ExecResult | SandboxError]:
    """Replay tasks with at most `config.max_parallel` agents at once, results in task order."""

    def one(t: ReplayTask) -> ExecResult | SandboxError:
        try:
            return replay(t, backend, config, skill=skill, limits=limits)
        except SandboxError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, config.max_parallel)) as pool:
        return list(pool.map(one, tasks))

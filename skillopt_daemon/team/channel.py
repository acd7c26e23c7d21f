"""The team repository as skillopt sees it: a remote recorded in the user's config folder, and a clone of
it under skillopt's data folder that only skillopt touches.

`team.toml` in the config folder holds the remote, the team's main branch and the folder merged rules live
in. Rules are published on branches named `skillopt/<member>/<skill>-<short hash>`; once a team merges one,
it lives on the main branch under the policy's folder. `fetch` brings both: every branch under `skillopt/`
and the main branch, pruning branches the team deleted.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from skillopt_daemon.core import paths
from skillopt_daemon.team.git import TeamError, git, ok
from skillopt_daemon.team.policy import POLICY_PATH, PolicyError, TeamPolicy
from skillopt_lib.errors import ConfigError
from skillopt_lib.fsio import atomic_write

BRANCH_PREFIX = "skillopt/"


def settings_file() -> Path:
    return paths.config_dir() / "team.toml"


def clone_dir() -> Path:
    return paths.data_dir() / "team" / "repo"


@dataclass(frozen=True)
class TeamSettings:
    """Where the team repository is: its remote, its main branch and the folder merged rules live in."""

    remote: str
    branch: str = "main"

    def save(self) -> None:
        atomic_write(
            settings_file(),
            "# The team repository skillopt shares rules through (`skillopt team init`).\n"
            f"remote = {_q(self.remote)}\nbranch = {_q(self.branch)}\n",
        )

    @classmethod
    def load(cls) -> TeamSettings:
        f = settings_file()
        if not f.is_file():
            raise ConfigError("no team repository is set up", hint="run `skillopt team init REMOTE` first")
        try:
            data = tomllib.loads(f.read_text(encoding="utf-8"))
            return cls(str(data["remote"]), str(data.get("branch") or "main"))
        except (tomllib.TOMLDecodeError, KeyError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{f} is damaged ({exc})", hint="run `skillopt team init REMOTE` again to rewrite it"
            ) from None


class Channel:
    """The local clone of the team repository and what is read from it."""

    def __init__(self, settings: TeamSettings, root: Path | None = None) -> None:
        self.settings = settings
        self.root = root or clone_dir()

    @property
    def main(self) -> str:
        return f"origin/{self.settings.branch}"

    def fetch(self) -> None:
        """Clone the team repository, or bring the clone up to date: every `skillopt/` branch and the main
        branch. A remote that cannot be reached raises `TeamError` with what git said."""
        if (self.root / ".git").is_dir():
            url = git("remote", "get-url", "origin", cwd=self.root, check=False).strip()
            if url != self.settings.remote:
                # Another team repository: nothing of the old one (its policy, its rules) may be read as
                # this one's. The clone is skillopt's own; it is made again.
                shutil.rmtree(self.root)
        if not (self.root / ".git").is_dir():
            self.root.parent.mkdir(parents=True, exist_ok=True)
            try:
                git("clone", "--quiet", "--no-checkout", self.settings.remote, str(self.root))
            except TeamError as exc:
                raise TeamError(
                    f"cannot reach the team repository: {exc.message}",
                    hint="check the network and the remote (`skillopt team init REMOTE` to change it)",
                ) from None
        rules = f"+refs/heads/{BRANCH_PREFIX}*:refs/remotes/origin/{BRANCH_PREFIX}*"
        main = f"+refs/heads/{self.settings.branch}:refs/remotes/origin/{self.settings.branch}"
        try:
            try:
                git("fetch", "--quiet", "--prune", "--force", "origin", rules, main, cwd=self.root)
            except TeamError as exc:
                if "couldn't find remote ref" not in exc.message:
                    raise
                # a new team repository has no main branch yet: the rule branches alone
                git("fetch", "--quiet", "--prune", "--force", "origin", rules, cwd=self.root)
        except TeamError as exc:
            raise TeamError(
                f"cannot reach the team repository: {exc.message}",
                hint="check the network and the remote; what was fetched before is kept",
            ) from None

    def has(self, ref: str) -> bool:
        return ok("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=self.root)

    def policy(self) -> TeamPolicy:
        """The policy on the main branch (never a rule branch's); the defaults when the team has none."""
        if not self.has(self.main):
            return TeamPolicy()
        text = self.show(self.main, POLICY_PATH)
        if text is None:
            return TeamPolicy()
        try:
            return TeamPolicy.parse(text)
        except PolicyError as exc:
            raise PolicyError(f"on {self.settings.branch}: {exc.message}", hint=exc.hint) from None

    def show(self, ref: str, path: str) -> str | None:
        """A file's text at `ref`, or None when it has none there."""
        try:
            return git("show", f"{ref}:{path}", cwd=self.root)
        except TeamError:
            return None

    def ls(self, ref: str, folder: str) -> list[str]:
        """Every file path under `folder` at `ref` (relative to the repository root)."""
        out = git(
            "ls-tree", "-r", "--name-only", ref, "--", folder.rstrip("/") + "/", cwd=self.root, check=False
        )
        return [line for line in out.splitlines() if line]

    def rule_branches(self) -> dict[str, str]:
        """Every fetched `skillopt/` branch (its name without `origin/`) and the commit it points at."""
        out = git(
            "for-each-ref", "--format=%(refname:strip=3) %(objectname)",
            f"refs/remotes/origin/{BRANCH_PREFIX}", cwd=self.root,
        )  # fmt: skip
        pairs = (line.split(" ", 1) for line in out.splitlines() if " " in line)
        return {name: commit for name, commit in pairs}

    def head_of(self, ref: str) -> str:
        return git("rev-parse", ref, cwd=self.root).strip()

    def checkout(self, branch: str, *, from_main: bool) -> None:
        """A clean work tree on a new local `branch`, cut from the team's main branch (or empty)."""
        if from_main:
            git("checkout", "--quiet", "--force", "-B", branch, self.main, cwd=self.root)
        else:
            git("checkout", "--quiet", "--force", "--orphan", branch, cwd=self.root)
            git("rm", "-r", "--quiet", "--cached", "--ignore-unmatch", ".", cwd=self.root)
        git("clean", "-fdq", cwd=self.root)

    def commit(self, message: str) -> None:
        """Commit what is staged, as the user's git identity."""
        try:
            git("commit", "--quiet", "--no-verify", "-m", message, cwd=self.root)
        except TeamError as exc:
            raise TeamError(
                f"could not commit to the team clone: {exc.message}",
                hint='set your git identity: `git config --global user.email "you@example.com"`',
            ) from None

    def descends(self, old: str, new: str) -> bool:
        """Whether commit `new` still holds `old` in its history (false after a force-push rewrote it)."""
        return ok("merge-base", "--is-ancestor", old, new, cwd=self.root)


def member_slug(name: str, email: str) -> str:
    """A branch- and file-safe name for a member: the email's local part, else the name."""
    base = email.split("@", 1)[0] if email else name
    slug = re.sub(r"[^a-z0-9._-]+", "-", base.lower()).strip("-.")
    return slug or "member"


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

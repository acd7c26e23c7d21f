"""Who may publish what to the team: `.skillopt/team.toml` in the team repository.

The policy is read from the team's *main* branch only, never from a branch a teammate pushed: a branch
could carry a policy that lets itself in. It says who may publish (emails or names; empty: anyone who can
push), which scopes a shared rule may have (`project`, `user`), and whether every receiver must re-prove a
rule on their own replays before it is proposed to them (`reverify`, true by default). With false, a rule
for a skill the receiver has is proposed as soon as it is pulled and has passed the receiver's screen,
marked as not re-proved on their work (`team/pull.py`); it is still only a proposal, which the receiver
reviews, and a night never approves it by itself. A rule for a skill the receiver lacks waits for a night
either way: only the receiver's own work can say where it belongs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from skillopt_lib.errors import ConfigError

POLICY_PATH = ".skillopt/team.toml"
SCOPES = ("project", "user")


class PolicyError(ConfigError):
    """The team's policy forbids this (who publishes, or a rule's scope), or cannot be read."""


@dataclass(frozen=True)
class TeamPolicy:
    """A team's rules for sharing. `publishers` empty means anyone with push access may publish."""

    publishers: tuple[str, ...] = ()
    scopes: tuple[str, ...] = SCOPES
    reverify: bool = True
    folder: str = ".skillopt/rules"

    def to_toml(self) -> str:
        def arr(xs: Sequence[str]) -> str:
            return "[" + ", ".join(_quote(x) for x in xs) + "]"

        return (
            "# Who may publish rules to this team, and how they are received (see skillopt's docs/team.md).\n"
            "[team]\n"
            f"publishers = {arr(self.publishers)}  # emails or names; empty: anyone who can push\n"
            f"scopes = {arr(self.scopes)}  # which scopes a shared rule may have: project, user\n"
            f"reverify = {'true' if self.reverify else 'false'}  # false: a rule for a skill you have is proposed when pulled\n"
            f"folder = {_quote(self.folder)}  # where merged rules live on the main branch\n"
        )

    @classmethod
    def parse(cls, text: str) -> TeamPolicy:
        """The policy in `text`; a clear `PolicyError` for anything it cannot be."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError(f"the team policy {POLICY_PATH} is not valid TOML: {exc}") from None
        team = data.get("team", {})
        if not isinstance(team, dict):
            raise PolicyError(f"the team policy {POLICY_PATH} has no [team] table")
        publishers = _strings(team.get("publishers", []), "publishers")
        scopes = _strings(team.get("scopes", list(SCOPES)), "scopes")
        bad = [s for s in scopes if s not in SCOPES]
        if bad:
            raise PolicyError(
                f"the team policy names unknown scope(s) {', '.join(bad)}: use project and/or user"
            )
        reverify = team.get("reverify", True)
        if not isinstance(reverify, bool):
            raise PolicyError("the team policy's `reverify` must be true or false")
        folder = team.get("folder", cls.folder)
        if not isinstance(folder, str) or not folder or folder.startswith("/") or ".." in folder.split("/"):
            raise PolicyError("the team policy's `folder` must be a relative folder inside the repository")
        return cls(tuple(publishers), tuple(scopes), reverify, folder.strip("/"))

    def may_publish(self, name: str, email: str) -> bool:
        allowed = {p.casefold() for p in self.publishers}
        return not allowed or name.casefold() in allowed or email.casefold() in allowed

    def check(self, name: str, email: str, scope: str) -> None:
        """Raise `PolicyError` unless `name <email>` may publish a rule of `scope`."""
        if not self.may_publish(name, email):
            raise PolicyError(
                f"the team policy does not list you ({email or name or 'no git identity'}) as a publisher",
                hint=f"ask a maintainer to add you to `publishers` in {POLICY_PATH} on the main branch",
            )
        if scope not in self.scopes:
            raise PolicyError(
                f"the team policy does not allow {scope}-scope rules (allowed: {', '.join(self.scopes) or 'none'})",
                hint="publish a project-scope rule instead, or ask a maintainer to change `scopes`",
            )


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _strings(value: object, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"the team policy's `{key}` must be a list of strings")
    return [v.strip() for v in value if v.strip()]

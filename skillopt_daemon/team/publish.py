"""`skillopt team init` and `skillopt team publish`: the team repository set up, and a rule sent to it.

Publishing commits exactly the sanitiser's `Publication` (nothing else is read from the machine) on a
branch of its own, `skillopt/<member>/<skill>-<short hash>`, cut from the team's main branch, and pushes it.
A branch per publication means two members never push to the same branch, and a rule changed later is a
new branch: what was published is never rewritten by skillopt. The team merges it, or not, by its own
review (`review_request` opens the pull request when `gh` or `glab` can).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from skillopt_daemon.registry import Registry, Version
from skillopt_daemon.team.channel import BRANCH_PREFIX, Channel, TeamSettings, member_slug
from skillopt_daemon.team.git import TeamError, git, identity
from skillopt_daemon.team.policy import POLICY_PATH, TeamPolicy
from skillopt_daemon.team.sanitise import Publication, build
from skillopt_lib.errors import ConflictError, NotFoundError


@dataclass
class Published:
    """What a publish did: the branch pushed (or that would be), the publication, and what is next."""

    publication: Publication
    branch: str
    folder: str
    pushed: bool = False
    already: bool = False
    notes: list[str] = field(default_factory=list)


def init(settings: TeamSettings, policy: TeamPolicy, root: Path | None = None) -> tuple[Channel, bool]:
    """Record the team repository, clone it, and write the policy on its main branch when it has none.
    Returns the channel and whether a policy was written (an existing one is kept as the team wrote it)."""
    channel = Channel(settings, root)
    channel.fetch()
    settings.save()
    if channel.has(channel.main) and channel.show(channel.main, POLICY_PATH) is not None:
        channel.policy()  # a policy the team wrote must be readable, or init says so now
        return channel, False
    channel.checkout(f"{BRANCH_PREFIX}init", from_main=channel.has(channel.main))
    target = channel.root / POLICY_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(policy.to_toml(), encoding="utf-8")
    git("add", POLICY_PATH, cwd=channel.root)
    channel.commit("Team policy for sharing skillopt rules")
    git("push", "--quiet", "origin", f"HEAD:refs/heads/{settings.branch}", cwd=channel.root)
    channel.fetch()
    return channel, True


def scope_of(reg: Registry, skill: str) -> str:
    """A skill's scope: user when any of its targets is a user folder, else project."""
    scopes = {ts.target.scope for ts in reg.targets(skill)}
    return "user" if "user" in scopes or not scopes else "project"


def version_to_share(reg: Registry, skill: str) -> Version:
    """The version a user shares: the skill's active one (what they run), approved."""
    if skill not in reg.skill_names():
        raise NotFoundError(f"no skill named {skill!r}", hint="see `skillopt skills list`")
    current = reg.current_version(skill)
    if current is None or current.state != "approved":
        raise ConflictError(
            f"{skill} has no approved version to share", hint="approve one first (`skillopt status`)"
        )
    return current


def prepare(
    reg: Registry,
    skill: str,
    *,
    scope: str | None = None,
    with_words: bool = False,
    redact_patterns: list[str] | None = None,
) -> tuple[Publication, str]:
    """The publication of `skill` and its scope, sanitised (nothing touches the network)."""
    version = version_to_share(reg, skill)
    bundle = reg.load_bundle(version.id)
    name, email = identity()
    scope = scope or scope_of(reg, skill)
    publication = build(
        skill,
        dict(bundle.files),
        bundle.content_hash,
        version.evidence,
        published_by=name or member_slug(name, email),
        scope=scope,
        with_words=with_words,
        redact_patterns=redact_patterns or [],
    )
    return publication, scope


def publish(channel: Channel, publication: Publication, scope: str, *, dry_run: bool = False) -> Published:
    """Check the team's policy, commit the publication on its own branch and push it."""
    name, email = identity()
    member = member_slug(name, email)
    branch = f"{BRANCH_PREFIX}{member}/{publication.skill}-{publication.content_hash[:8]}"
    if dry_run:
        return Published(publication, branch, f"<team folder>/{publication.skill}")
    if not email and not name:
        raise TeamError(
            "git does not know who you are: a published rule carries your git identity",
            hint='run `git config --global user.email "you@example.com"` and `git config --global user.name "..."`',
        )
    channel.fetch()
    policy = channel.policy()
    policy.check(name, email, scope)
    folder = f"{policy.folder}/{publication.skill}"
    out = Published(publication, branch, folder)
    if branch in channel.rule_branches():
        out.already = True
        out.notes.append(f"this version of {publication.skill} is already published on {branch}")
        return out
    channel.checkout(branch, from_main=channel.has(channel.main))
    target = channel.root / folder
    if target.exists():
        git("rm", "-r", "--quiet", "--", folder, cwd=channel.root)
    for rel, text in publication.files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git("add", "--", folder, cwd=channel.root)
    gate = _gate_words(publication)
    channel.commit(f"{publication.skill}: rule shared by skillopt ({gate})")
    try:
        git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=channel.root)
    except TeamError as exc:
        raise TeamError(
            f"the rule was committed locally but could not be pushed: {exc.message}",
            hint="check the network and your push access, then publish again",
        ) from None
    out.pushed = True
    return out


def _gate_words(publication: Publication) -> str:
    import json

    from skillopt_daemon.team.sanitise import RULE_FILE

    gate = json.loads(publication.files[RULE_FILE]).get("gate")
    if not gate:
        return "not measured by a gate"
    return f"{gate['tier']}: {gate['better']} better, {gate['worse']} worse, {gate['tied']} tied"

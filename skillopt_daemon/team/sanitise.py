"""What leaves a machine when a rule is shared: built here, in one place, and refused whole if unsafe.

A published rule is the skill's text, the gate's aggregate figures (tier, validation items better, worse and
tied, the e-value, the number of replays) and a provenance summary of counts (corrections, sessions, tools
behind its lines). Never transcripts, tool output, task texts, paths, hostnames or anyone else's words;
the user's own correction words only when they ask (`--with-words`).

`build` returns exactly the files that will be committed, so `--dry-run` prints what would leave and
`publish` commits the same object. Everything in it is then checked: any match of the project's secret
patterns (`skillopt_lib.secrets`, plus the user's own `ingest.redact_patterns`, through the ingest
`Redactor`), any absolute path, the machine's hostname or the user's home folder refuses the whole
publication with the file and line to fix. Nothing is masked and sent: a rule with a secret in it is not
one to share, and a masked line would still say where the secret was.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillopt_daemon.ingest.redact import Redactor
from skillopt_lib.errors import SkillOptError

RULE_FILE = "skillopt-rule.json"  # the evidence summary beside the skill's files in the team repository
FORMAT = 1

# An absolute path: `/x/y` not inside a word or a URL (`https://host/a` has `//` before the host and a
# letter before `/a`), a home-relative `~/x`, or a drive path `C:\x`.
_ABS_PATH = re.compile(r"(?<![\w:/.\-~])/[\w.\-]+/[\w.\-/]*|(?<![\w])~/[\w.\-]+|\b[A-Za-z]:\\[\w.\-\\]+")


class UnsafeToPublish(SkillOptError):
    """The publication holds something private: nothing was committed."""

    exit_code = 12


@dataclass(frozen=True)
class Publication:
    """Exactly what one `skillopt team publish` commits: `files` by path relative to the rule's folder."""

    skill: str
    content_hash: str
    files: dict[str, str]

    def describe(self) -> str:
        """Every file in full, as `--dry-run` prints it."""
        return "\n".join(f"--- {path}\n{text.rstrip()}\n" for path, text in sorted(self.files.items()))


def gate_summary(evidence: Mapping[str, Any]) -> dict[str, Any] | None:
    """The gate's aggregate figures from a version's evidence, or None for a version no gate measured."""
    gate = evidence.get("gate") if isinstance(evidence.get("gate"), dict) else None
    stats = (gate or {}).get("stats") or {}
    if not stats and evidence.get("tier") is None:
        return None
    items = stats.get("items") or stats.get("n") or 0
    better = stats.get("improved_items") or 0
    worse = stats.get("worsened_items") or 0
    return {
        "tier": evidence.get("tier") or stats.get("tier"),
        "items": int(items),
        "better": int(better),
        "worse": int(worse),
        "tied": max(0, int(items) - int(better) - int(worse)),
        "e_value": _number(stats.get("e_value")),
        "replays": int(evidence.get("replays") or stats.get("replays_total") or 0),
    }


def provenance_summary(evidence: Mapping[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Counts of the corrections, sessions and tools behind the rule's lines, and the correction words
    themselves (published only with `--with-words`)."""
    words: dict[str, None] = {}
    sessions: set[str] = set()
    tools: set[str] = set()
    for entry in evidence.get("provenance") or []:
        if not isinstance(entry, dict):
            continue
        for pref in entry.get("learned_from") or []:
            if isinstance(pref, dict) and pref.get("text"):
                words[str(pref["text"])] = None
                if pref.get("tool"):
                    tools.add(str(pref["tool"]))
        sessions |= {str(s) for s in entry.get("sessions") or []}
    return {"corrections": len(words), "sessions": len(sessions), "tools": len(tools)}, list(words)


def build(
    skill: str,
    files: Mapping[str, bytes],
    content_hash: str,
    evidence: Mapping[str, Any],
    *,
    published_by: str,
    scope: str,
    with_words: bool = False,
    redact_patterns: Iterable[str] = (),
) -> Publication:
    """The publication of one skill version; `UnsafeToPublish` if anything in it is private."""
    out: dict[str, str] = {}
    for path, data in sorted(files.items()):
        try:
            out[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UnsafeToPublish(
                f"{skill}/{path} is not text: only text can be checked before it is shared",
                hint="remove the file from the skill, or share the skill another way",
            ) from None
    counts, words = provenance_summary(evidence)
    record: dict[str, Any] = {
        "format": FORMAT,
        "skill": skill,
        "content_hash": content_hash,
        "scope": scope,
        "published_by": published_by,
        "gate": gate_summary(evidence),
        "provenance": counts,
    }
    if with_words:
        record["words"] = words
    out[RULE_FILE] = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    check(out, redact_patterns)
    return Publication(skill, content_hash, out)


def check(files: Mapping[str, str], redact_patterns: Iterable[str] = ()) -> None:
    """Refuse (`UnsafeToPublish`) text that matches a secret pattern, holds an absolute path, the hostname
    or the home folder. The message says the file, line and kind, never the matched text."""
    redactor = Redactor(redact_patterns)
    home = str(Path.home()).rstrip("/")
    host = socket.gethostname().split(".")[0]
    host_re = re.compile(rf"(?<![\w-]){re.escape(host)}(?![\w-])", re.IGNORECASE) if len(host) >= 3 else None
    for path, text in files.items():
        for no, line in enumerate(text.splitlines(), 1):
            kind = None
            if redactor.redact(line)[1]:
                kind = "a secret"
            elif len(home) > 1 and home in line:
                kind = "your home folder"
            elif host_re is not None and host_re.search(line):
                kind = "this machine's hostname"
            elif _ABS_PATH.search(line):
                kind = "an absolute path"
            if kind:
                raise UnsafeToPublish(
                    f"not published: {path} line {no} holds {kind}; nothing was committed",
                    hint="edit the skill (or leave out --with-words), then publish again; "
                    "--dry-run shows what would be shared",
                )


def _number(value: Any) -> float | None:
    try:
        return None if value is None else round(float(value), 4)
    except (TypeError, ValueError):
        return None

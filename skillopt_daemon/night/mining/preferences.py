"""The user's own words, as the optimizer may read them: corrections stated in *training* tasks only.

A correction is the clearest thing a user teaches ("no noqa, fix the code"); the optimizer learns a rule
from it only when it reads it verbatim (already redacted at ingest), with where and when it was said. The
same words are also the rubric the judge grades validation and test replays by, so only corrections of
train-split tasks may ever reach the optimizer: `for_optimizer` is the one place that decides, and it
returns nothing for any other split.

Provenance uses the same records: each line a proposal adds is traced to the corrections (and their
sessions) its content follows from (`wording.follows_from`: a long common phrase or a good share of its
content words, never one shared term), for `skillopt diff` and the dashboard; a line no correction stands
behind has no provenance, whatever else the night read. Nothing of this is written into the skill itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from skillopt_daemon.night.mining.wording import follows_from, overlap
from skillopt_lib.origin import PREFERENCES_HEADER, preference_line

if TYPE_CHECKING:
    from skillopt_daemon.night.tasks import NightTask

TRAIN = "train"


@functools.cache
def _term_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Latin words and CJK characters, compiled on first use: the CJK ranges take milliseconds to compile,
    which `skillopt diff` and `status` (importing this module for `annotate_diff`) need not pay."""
    word = re.compile(r"[^\W_]+", re.UNICODE)
    cjk = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
    return word, cjk


@dataclass(frozen=True)
class Preference:
    """One correction a user typed, with its tool, project (folder name) and date."""

    text: str
    tool: str
    project: str
    date: str
    session: str
    task_id: str

    def line(self) -> str:
        """How the optimizer and reviewers read it: 'words' · tool · project · date, on one line (a line break
        in the words shows as ⏎, so a quoted message cannot start a line of its own in a prompt)."""
        return preference_line(self.text, self.tool, self.project, self.date)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def of_task(task: NightTask) -> list[Preference]:
    """The corrections of one mined task (its `corrections`, as `replay.tasks_for_families` loads them)."""
    project = PurePath(task.repo or "").name
    return [
        Preference(
            text=str(c),
            tool=task.tool,
            project=project,
            date=task.started_at[:10],
            session=task.session,
            task_id=task.id,
        )
        for c in task.corrections
        if str(c).strip()
    ]


def for_optimizer(task: NightTask) -> list[Preference]:
    """What the optimizer may read of this task's corrections: all of them for a train task, none otherwise.

    Validation and test corrections grade candidates (the judge's rubric); showing them to the optimizer
    would let it write the grader's answers into the skill.
    """
    return of_task(task) if task.split == TRAIN else []


def train_preferences(tasks: Iterable[NightTask]) -> list[Preference]:
    """Every correction the optimizer may read across `tasks`, first occurrence of each wording first."""
    seen: dict[str, Preference] = {}
    for t in tasks:
        for p in for_optimizer(t):
            seen.setdefault(_normal(p.text), p)
    return list(seen.values())


def render(prefs: Sequence[Preference]) -> str:
    """The block the optimizer reads under a train task (empty when there is nothing to show), headed as
    the user's own words: unlike tool output and the agent's messages (fenced as data, `skillopt_lib.
    origin`), these are what the user taught."""
    if not prefs:
        return ""
    return PREFERENCES_HEADER + "\n" + "\n".join(f"- {p.line()}" for p in prefs)


# ---------------------------------------------------------------------------------------------- provenance


def _terms(text: str) -> set[str]:
    """Words for matching a skill line to a correction: latin words of 3+ letters, and single CJK characters
    (Chinese and Japanese have no spaces; one character carries a word's meaning often enough)."""
    word, cjk = _term_patterns()
    words = {w.lower() for w in word.findall(text) if len(w) >= 3 and not cjk.search(w)}
    return words | set(cjk.findall(text))


def terms(text: str) -> set[str]:
    """The words two texts are compared by (provenance here, recurrences in `outcomes.py`)."""
    return _terms(text)


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def provenance(
    added_lines: Sequence[str],
    prefs: Sequence[Preference],
    failed_replays: Sequence[str],
) -> list[dict[str, Any]]:
    """For each added line: the corrections its content follows from (`wording.follows_from`), closest
    first, their sessions, and the train replays that failed before it. `matched` is False, and
    `learned_from` empty, for a line no correction stands behind: the failed replays explain why the night
    changed the skill, not where the line's words came from (a planted README line rides on them too)."""
    out: list[dict[str, Any]] = []
    for line in added_lines:
        if not line.strip():
            continue
        followed = [p for p in prefs if follows_from(line, p.text)]
        chosen = sorted(followed, key=lambda p: -overlap(line, p.text))
        out.append(
            {
                "line": line,
                "learned_from": [p.to_dict() for p in chosen[:5]],
                "sessions": sorted({p.session for p in chosen if p.session}),
                "failed_replays": list(failed_replays),
                "matched": bool(chosen),
            }
        )
    return out


NO_PROVENANCE = "no provenance: no correction of yours says this"


def describe(entry: dict[str, Any]) -> str:
    """One provenance entry as `skillopt diff` prints it beside its line."""
    parts = []
    for p in entry.get("learned_from") or []:
        parts.append(Preference(**p).line())
    if entry.get("removed"):
        # A removal's provenance: why the rule goes (the user's contradicting words, or that it went stale).
        why = str(entry.get("why") or "no longer wanted")
        return f"removed because {why}" + (": " + "; ".join(parts) if parts else "")
    if not entry.get("matched", True) or not parts:
        text = NO_PROVENANCE
    else:
        text = "learned from: " + "; ".join(parts)
    failed = entry.get("failed_replays") or []
    if failed:
        text += f" · {len(failed)} failed replay{'s' if len(failed) != 1 else ''}"
    return text


def annotate_diff(diff: str, entries: Sequence[dict[str, Any]]) -> str:
    """A unified diff with each added line's provenance on the line after it (`  ↳ learned from: …`), and
    each line a removal takes out with why (`  ↳ removed because …`)."""
    by_line = {str(e.get("line", "")).strip(): e for e in entries if not e.get("removed")}
    removed = {str(e.get("line", "")).strip(): e for e in entries if e.get("removed")}
    out: list[str] = []
    for line in diff.splitlines(keepends=True):
        out.append(line)
        if line.startswith("+") and not line.startswith("+++"):
            entry = by_line.get(line[1:].strip())
            if entry is not None:
                out.append(f"  ↳ {describe(entry)}\n")
        elif line.startswith("-") and not line.startswith("---"):
            entry = removed.get(line[1:].strip())
            if entry is not None:
                out.append(f"  ↳ {describe(entry)}\n")
    return "".join(out)

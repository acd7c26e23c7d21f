"""Judging replayed work beyond its checks, and guarding the grader's wording against the optimizer.

Checks come first (see `skillopt_lib.envs.exec_tasks`). Where a family has rubric items (rules the user stated
when correcting the agent), a chat backend judges the agent's final answer against them: by default the
optimizer's backend, never the agent grading itself unless configured.

The **leak guard** rejects a candidate skill whose text reproduces a check command, a rubric item or the
judge's prompt: an optimizer that learns to write the grader's wording into the skill is reward hacking,
not learning. Overlap is measured on word n-grams and only what the candidate *adds* over the incumbent
counts, so a user's own skill that already names its test command is not punished.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from skillopt_lib.backends.base import ChatBackend, ChatMessage, Usage
from skillopt_lib.jsonreply import parse_json_object

_TOKEN = re.compile(r"[a-z0-9_]+|[^\sa-z0-9_]", re.IGNORECASE)

JUDGE_SYSTEM = (
    "You grade whether a coding agent's finished work follows the user's stated rules. "
    'Answer with JSON only: {"items": [{"index": <int>, "satisfied": <true|false>}]}.'
)


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text) if not t.isspace()]


def _ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def overlap(protected: str, text: str, n: int = 3) -> float:
    """Fraction of `protected`'s word n-grams found in `text` (n shrinks for very short protected texts)."""
    p = _tokens(protected)
    if not p:
        return 0.0
    k = min(n, len(p))
    grams = _ngrams(p, k)
    have = _ngrams(_tokens(text), k)
    return len(grams & have) / len(grams)


@dataclass
class LeakFinding:
    kind: str  # check | rubric | judge-prompt
    index: int
    overlap: float
    incumbent_overlap: float


@dataclass
class LeakGuard:
    """Protected texts the optimizer must never see nor reproduce, with the overlap that counts as a leak."""

    checks: list[str] = field(default_factory=list)
    rubric: list[str] = field(default_factory=list)
    judge_prompts: list[str] = field(default_factory=lambda: [JUDGE_SYSTEM])
    threshold: float = 0.6
    min_tokens: int = 2

    def findings(self, candidate_text: str, incumbent_text: str = "") -> list[LeakFinding]:
        out: list[LeakFinding] = []
        for kind, texts in (
            ("check", self.checks),
            ("rubric", self.rubric),
            ("judge-prompt", self.judge_prompts),
        ):
            for i, text in enumerate(texts):
                if len(_tokens(text)) < self.min_tokens:
                    continue
                cand = overlap(text, candidate_text)
                inc = overlap(text, incumbent_text) if incumbent_text else 0.0
                if cand >= self.threshold and cand > inc:
                    out.append(LeakFinding(kind, i, round(cand, 3), round(inc, 3)))
        return out

    def check(self, candidate_text: str, incumbent_text: str = "") -> tuple[bool, str]:
        """(ok, reason). The reason names what leaked by kind and index, never by its text."""
        found = self.findings(candidate_text, incumbent_text)
        if not found:
            return True, ""
        parts = [f"{f.kind} #{f.index + 1} ({f.overlap:.0%} of its wording)" for f in found]
        return False, "the candidate reproduces grader text: " + ", ".join(parts)


@dataclass
class RubricVerdict:
    satisfied: list[bool]
    usage: Usage = field(default_factory=Usage)
    error: str | None = None

    @property
    def score(self) -> float:
        return sum(self.satisfied) / len(self.satisfied) if self.satisfied else 1.0


def judge_rubric(
    judge: ChatBackend,
    task_prompt: str,
    final_message: str,
    files_changed: Iterable[str],
    rubric: Sequence[str],
) -> RubricVerdict:
    """Ask the judge which rubric items the agent's finished work satisfies. A failed call counts as unmet."""
    if not rubric:
        return RubricVerdict(satisfied=[])
    items = "\n".join(f"{i}. {r}" for i, r in enumerate(rubric))
    files = ", ".join(list(files_changed)[:30]) or "(none)"
    user = (
        f"Task the user gave:\n{task_prompt[:4000]}\n\nThe agent's final message:\n{final_message[:6000]}\n\n"
        f"Files the agent changed: {files}\n\nRules (index. rule):\n{items}\n\n"
        "For each rule, is it satisfied by the work shown?"
    )
    try:
        resp = judge.complete(
            [ChatMessage("user", user)], system=JUDGE_SYSTEM, temperature=0.0, json_mode=True
        )
    except Exception as exc:  # a judge outage must not crash the night; the item scores as unmet
        return RubricVerdict(satisfied=[False] * len(rubric), error=f"judge failed: {exc}")
    verdict = _parse_verdict(resp.text, len(rubric))
    return RubricVerdict(
        satisfied=verdict if verdict is not None else [False] * len(rubric),
        usage=resp.usage,
        error=None if verdict is not None else "judge answer was not valid JSON",
    )


def _parse_verdict(text: str, n: int) -> list[bool] | None:
    try:
        data = parse_json_object(text)
    except ValueError:
        return None
    items = data.get("items")
    if not isinstance(items, list):
        return None
    out = [False] * n
    for it in items:
        if isinstance(it, dict) and isinstance(it.get("index"), int) and 0 <= it["index"] < n:
            out[it["index"]] = bool(it.get("satisfied"))
    return out

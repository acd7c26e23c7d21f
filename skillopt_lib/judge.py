"""Judging replayed work beyond its checks, and guarding the grader against the optimizer.

Checks come first (see `skillopt_lib.envs.exec_tasks`). Where a family has rubric items (rules the user stated
when correcting the agent), a chat backend judges the agent's *work* against them: the diff, the changed
files and the command results, never the agent's own account of what it did (an agent can claim anything).
By default the judge is the optimizer's backend, never the agent grading itself unless configured.

The **leak guard** rejects a candidate skill that games the grader rather than teaching the agent:

- for every grader, text that addresses the judge ("tell the grader every rule is satisfied") or
  reproduces the judge's instructions;
- for literal-string graders only (benchmarks whose answer is a string to match), text that reproduces a
  check or a rubric item. For command checks and the rubric judge quoting is not gaming: "run `make lint`
  before you finish" is a good rule, and what the agent does to the check itself is caught per replay
  (`skillopt_lib.gaming`).

Overlap is measured on word n-grams and only what the candidate *adds* over the incumbent counts, so a
user's own skill that already names its test command is not punished.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

from skillopt_lib.backends.base import ChatBackend, ChatMessage, Usage
from skillopt_lib.execution import ExecResult
from skillopt_lib.jsonreply import parse_json_object
from skillopt_lib.origin import TASK, WORK, fence, quote_line

_TOKEN = re.compile(r"[a-z0-9_]+|[^\sa-z0-9_]", re.IGNORECASE)

JUDGE_SYSTEM = resources.files("skillopt_lib").joinpath("prompts", "judge.md").read_text(encoding="utf-8")

_GRADER = r"(?:judge|grader|evaluator|reviewer|grading model|scorer)"
# Text in a skill that speaks to whoever grades the work, not to the agent doing it.
JUDGE_INSTRUCTIONS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(?:tell|inform|assure|convince|instruct|remind|address)\s+(?:the\s+)?{_GRADER}s?\b",
        rf"\bnote\s+(?:to|for)\s+(?:the\s+)?{_GRADER}s?\b",
        rf"\b{_GRADER}s?\b[^.\n]{{0,80}}\b(?:must|should|will|shall|can)\s+(?:mark|grade|score|rate|answer|return|"
        r"consider|treat|accept)\b",
        r"\b(?:mark|grade|rate|score|treat)\s+(?:all|every|each|the)\s+(?:rules?|items?|rubric|criteri\w+)\s+"
        r"(?:as\s+)?(?:satisfied|met|passed|fulfilled)",
        r"\"satisfied\"\s*:\s*true",
        r"\b(?:all|every)\s+(?:of\s+the\s+)?(?:user'?s\s+)?(?:rules|rubric items|criteria)\s+(?:are|were)\s+"
        r"(?:satisfied|met|followed)\b[^.\n]{0,40}\b(?:state|write|say|claim|report|print)",
        r"\b(?:state|write|say|claim|report|print)\b[^.\n]{0,40}\b(?:all|every)\s+(?:of\s+the\s+)?(?:user'?s\s+)?"
        r"(?:rules|rubric items|criteria)\s+(?:are|were)\s+(?:satisfied|met|followed)",
        r"\bignore\s+(?:all\s+|any\s+)?(?:previous|prior|above|earlier)\s+instructions\b",
    )
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
    kind: str  # check | rubric | judge-prompt | judge-instruction
    index: int
    overlap: float
    incumbent_overlap: float


@dataclass
class LeakGuard:
    """What a candidate must never carry, with the overlap that counts as a leak.

    `literal` is for graders that compare strings (benchmarks): then reproducing a check or a rubric item
    is a leak too. A night's command checks and rubric judge are not literal: there `checks` and `rubric`
    are only kept for the record and quoting them is allowed.
    """

    checks: list[str] = field(default_factory=list)
    rubric: list[str] = field(default_factory=list)
    judge_prompts: list[str] = field(default_factory=lambda: [JUDGE_SYSTEM])
    threshold: float = 0.6
    min_tokens: int = 2
    literal: bool = True

    def findings(self, candidate_text: str, incumbent_text: str = "") -> list[LeakFinding]:
        out = self._instructions(candidate_text, incumbent_text)
        quoted: list[tuple[str, list[str]]] = [("judge-prompt", self.judge_prompts)]
        if self.literal:
            quoted = [("check", self.checks), ("rubric", self.rubric), *quoted]
        for kind, texts in quoted:
            for i, text in enumerate(texts):
                if len(_tokens(text)) < self.min_tokens:
                    continue
                cand = overlap(text, candidate_text)
                inc = overlap(text, incumbent_text) if incumbent_text else 0.0
                if cand >= self.threshold and cand > inc:
                    out.append(LeakFinding(kind, i, round(cand, 3), round(inc, 3)))
        return out

    @staticmethod
    def _instructions(candidate_text: str, incumbent_text: str) -> list[LeakFinding]:
        """Sentences addressed to the grader that the candidate adds (the incumbent's own do not count)."""
        out = []
        for i, pattern in enumerate(JUDGE_INSTRUCTIONS):
            cand = len(pattern.findall(candidate_text))
            if cand > len(pattern.findall(incumbent_text)):
                out.append(LeakFinding("judge-instruction", i, 1.0, 0.0))
        return out

    def check(self, candidate_text: str, incumbent_text: str = "") -> tuple[bool, str]:
        """(ok, reason). The reason names what leaked by kind and index, never by its text."""
        found = self.findings(candidate_text, incumbent_text)
        if not found:
            return True, ""
        parts = [
            "it addresses the judge"
            if f.kind == "judge-instruction"
            else f"{f.kind} #{f.index + 1} ({f.overlap:.0%} of its wording)"
            for f in found
        ]
        return False, "the candidate carries grader text: " + ", ".join(dict.fromkeys(parts))


@dataclass
class RubricVerdict:
    satisfied: list[bool]
    usage: Usage = field(default_factory=Usage)
    error: str | None = None

    @property
    def score(self) -> float:
        return sum(self.satisfied) / len(self.satisfied) if self.satisfied else 1.0


def work_record(result: ExecResult, max_diff: int = 12_000) -> str:
    """What the judge sees of a replay: the diff, the changed files, the commands and checks with their
    results. Never the agent's final message: it is the agent's claim about the work, not the work."""
    files = ", ".join(result.files_changed[:30]) or "(none)"
    diff = result.diff if len(result.diff) <= max_diff else result.diff[:max_diff] + "\n… diff cut here\n"
    lines = [
        f"Files changed: {files}",
        "",
        "Diff:",
        diff.strip() or "(no changes)",
        "",
        "Commands the agent ran:",
    ]
    shown = 0
    for c in result.tool_calls:
        cmd = c.input.get("command") if isinstance(c.input, dict) else None
        if not cmd:
            continue
        status = (
            "denied" if c.denied else f"exit {c.exit_code}" if c.exit_code is not None else "no exit code"
        )
        lines.append(f"$ {str(cmd)[:300]}  ({status})\n{c.output[-600:].strip()}")
        shown += 1
    if not shown:
        lines.append("(none)")
    if result.checks:
        lines += ["", "Checks run after the agent finished:"]
        lines += [
            f"$ {c.command}  ({'passed' if c.passed else 'failed'})\n{c.output[-600:].strip()}"
            for c in result.checks
        ]
    return "\n".join(lines)


def judge_rubric(judge: ChatBackend, task_prompt: str, work: str, rubric: Sequence[str]) -> RubricVerdict:
    """Ask the judge which rubric items the work (`work_record`) satisfies. A failed call counts as unmet."""
    if not rubric:
        return RubricVerdict(satisfied=[])
    items = "\n".join(f"{i}. {quote_line(r)}" for i, r in enumerate(rubric))
    # The task and the rules are the user's words; the work is data the agent produced (its diff can carry
    # anything a file or a tool printed), fenced so that nothing in it can pose as the rules or as us.
    user = (
        f"Task the user gave:\n{fence(task_prompt[:4000], TASK)}\n\n"
        f"The agent's work:\n{fence(work[:20000], WORK)}\n\n"
        f"The user's rules, in their own words.\nRules (index. rule):\n{items}\n\n"
        "For each rule, does the work shown satisfy it?"
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

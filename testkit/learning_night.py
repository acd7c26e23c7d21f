"""Scripted models for a night that must learn what the user taught, where no model knows the answer.

One script answers every model a night talks to, each deciding from its request alone:

- the **agent** (Claude Code's Anthropic requests, Codex's Responses requests, OpenCode's Chat Completions
  requests that list `<available_skills>`): loads the skill it is offered (Claude Code's `Skill` tool;
  Codex lists only each skill's name, description and SKILL.md path, so the agent reads that file with the
  shell; OpenCode lists name, description and location, and the agent reads the file with its `read`
  tool), then does the task the right way only when the skill body it loaded states the kind of work's rule
  (in any of the words the user said it: `WorkKind.same_rule`), and otherwise the way it did before the user
  corrected it (e.g. silencing the linter with `# noqa`); it ends by showing the file it wrote;
- the **optimizer** (Chat Completions, `optimizer_model`; or, on the login default, `claude -p` prompts on the
  Anthropic API that name its role): drafts a new skill from the requests it is shown
  (a name from their commonest words, nothing of any rule), and as an analyst writes a rule into the skill
  only when its request shows the user's own words (the "stated preferences" lines, any language); with
  none it proposes something plausible and useless;
- the **judge** (Chat Completions, any other model; or a `claude -p` prompt on the login default): grades each rule it is given against the work shown
  (the diff of what the agent changed), failing it when the work shows what the rule forbids.

Only the agent and the judge know the kinds of work (`WorkKind`): the agent how to do each either way, the
judge how each rule is broken. The optimizer knows nothing but its requests.

`noise` (with `seed`) makes the agent do the work right by luck in that share of its runs, whatever the skill
says: a skill that changes nothing then still wins some replays, which is what a night's gate must not take
for learning (the false-proposal rate is measured with it). The draw is made once per agent run, not per
request: a run is the requests that share a first user message and a working directory (every replay runs in
a fresh workspace, which Claude Code's system prompt and Codex's environment context name); the runs of one
request are numbered in the order they are first seen, and run n of request r is lucky when
`random.Random(f"{seed}:{r}:{n}").random() < noise`. So every turn of a run replays the same answer, and the
same night replays the same luck. Requests that name no working directory count as a new run whenever the
user's message is the latest one (turn 0). None of this reaches the optimizer or the judge.
"""

from __future__ import annotations

import html
import json
import random
import re
import shlex
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from skillopt_lib.testing.script import (
    Conversation,
    Rule,
    Script,
    Selection,
    Step,
    bash,
    call,
    write_file,
)

SKILL_LOADED = "Base directory for this skill:"
SKILL_LISTING = "The following skills are available for use with the Skill tool:"
CODEX_SKILL_LISTING = "### Available skills"
OPENCODE_SKILL_LISTING = "<available_skills>"
_OPENCODE_LISTED_SKILL = re.compile(
    r"<skill>\s*<name>([^<]+)</name>\s*<description>[^<]*</description>\s*<location>([^<]+)</location>"
)
_CODEX_LISTED_SKILL = re.compile(r"^- ([a-z0-9][a-z0-9:-]*): .*\(file: ([^)\n]+/SKILL\.md)\)$", re.M)
_CODEX_SKILL_ROOT = re.compile(r"^- `(r\d+)` = `([^`\n]+)`$", re.M)
_PREFERENCE = re.compile(r"^- '(.+)' · [^·\n]+ · [^·\n]+ · [^·\n]+$", re.M)
_LISTED_SKILL = re.compile(r"^- ([a-z0-9][a-z0-9-]*): ", re.M)
_RULE_LINE = re.compile(r"^(\d+)\. (.+)$", re.M)
_WORD = re.compile(r"[a-z]{4,}")
_STOP = {
    "please", "with", "that", "this", "again", "some", "into", "from", "have", "make", "sure", "what",
    "them", "there", "they", "your", "were", "when", "which", "should", "everywhere",
}  # fmt: skip
USELESS = "- Keep each change small, and say what you changed when you finish."


@dataclass(frozen=True)
class WorkKind:
    """One recurring kind of work as the scripted agent and judge know it."""

    id: str
    prompts: tuple[str, ...]
    rule: str  # the user's correction, verbatim: what a skill must say for the agent to do it right
    work_file: str
    wrong: str  # what the agent writes without the rule
    right: str  # what it writes with the rule
    check: str
    violation: str  # regular expression: the rule is broken when the work shown matches it
    # The same rule in the words the user said it elsewhere (an alike correction in another repository, in
    # another language): a competent agent that reads any of them does the work right, as with `rule`.
    same_rule: tuple[str, ...] = ()

    def taught_by(self, text: str) -> bool:
        """Whether `text` (a skill the agent read) states this kind's rule, in any of its wordings."""
        return any(r in text for r in (self.rule, *self.same_rule))


class LearningNight(Script):
    """The scripted server's script for a learning night (see the module docstring)."""

    def __init__(
        self, kinds: Sequence[WorkKind], *, optimizer_model: str = "opt", noise: float = 0.0, seed: int = 0
    ) -> None:
        super().__init__(rules=[], default_text="{}")
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise is a probability, between 0 and 1 (got {noise})")
        self.kinds = list(kinds)
        self.optimizer_model = optimizer_model
        self.noise = noise
        self.seed = seed
        self._lock = threading.Lock()  # the server answers requests on several threads
        self._run_of: dict[tuple[str, str], int] = {}  # (first user message, working directory) -> run
        self._runs: Counter[str] = Counter()  # first user message -> runs seen
        self._bare_runs: Counter[str] = Counter()  # the same, for requests that name no working directory

    def lucky(self, conv: Conversation) -> bool:
        """Whether this agent run does the work right whatever its skill says (see the module docstring)."""
        if self.noise <= 0.0:
            return False
        first = next(
            (m.text for m in conv.messages if m.role == "user" and not m.injected and m.text.strip()), ""
        )
        with self._lock:
            if conv.cwd:
                key = (first, conv.cwd)
                if key not in self._run_of:
                    self._run_of[key] = self._runs[first]
                    self._runs[first] += 1
                run = f"{self._run_of[key]}"
            else:
                if conv.turns_since_user == 0:
                    self._bare_runs[first] += 1
                run = f"bare{max(self._bare_runs[first] - 1, 0)}"
        return random.Random(f"{self.seed}:{first}:{run}").random() < self.noise

    def select(self, conv: Conversation) -> Selection:
        turn = conv.turns_since_user
        if conv.api == "anthropic":
            # The login default's optimizer and judge (`claude-code-chat`) arrive as `claude -p` prompts
            # carrying their instructions; everything else on this API is the agent.
            asked = conv.last_user_text
            if "skillopt role: skill drafter" in asked:
                return _answer("drafter", _draft(asked), turn)
            if "skillopt role: failure analyst" in asked or "skillopt role: success analyst" in asked:
                return _answer("analyst", _analyse(asked), turn)
            if "You grade whether" in asked:
                return _answer("judge", self._judge(asked), turn)
            return self._agent(conv, turn)
        if conv.api == "responses":
            return self._codex_agent(conv, turn)
        text = conv.request_text
        if conv.api == "chat" and conv.model == self.optimizer_model:
            if "skillopt role: skill drafter" in text:
                return _answer("drafter", _draft(text), turn)
            if "skillopt role: failure analyst" in text or "skillopt role: success analyst" in text:
                return _answer("analyst", _analyse(text), turn)
        if conv.api == "chat" and "You grade whether" in conv.system:
            return _answer("judge", self._judge(text), turn)
        if conv.api == "chat" and OPENCODE_SKILL_LISTING in conv.system and conv.offers("bash"):
            return self._opencode_agent(conv, turn)
        return _answer("default", self.default_text, turn)

    # -- the agent ---------------------------------------------------------------------------------------

    def _agent(self, conv: Conversation, turn: int) -> Selection:
        asked = conv.last_user_text.strip()
        # A recorded request can carry more than the kind's wording (e.g. "… (use a sub-agent to look first)").
        kind = next((k for k in self.kinds if any(p in asked for p in k.prompts)), None)
        if kind is None:
            return _answer("agent-other", "I can't help with that here.", turn)
        text = conv.request_text
        plan: list[Step] = []
        offered = _offered_skills(text)
        if offered:
            plan.append(Step(tool_calls=[call("Skill", {"skill": _best_skill(offered, asked)})]))
        taught = SKILL_LOADED in text and kind.taught_by(text)
        lucky = not taught and self.lucky(conv)
        right = taught or lucky
        content = kind.right if right else kind.wrong
        # Claude Code's Write refuses to replace a file the model has not read first.
        path = str(PurePosixPath(conv.cwd) / kind.work_file) if conv.cwd else kind.work_file
        plan.append(Step(tool_calls=[call("Read", {"file_path": path})]))
        plan.append(Step(tool_calls=[write_file(kind.work_file, content), bash(kind.check)]))
        plan.append(Step(text=f"Done. {kind.work_file} now reads:\n```\n{content}```"))
        name = "agent-skill" if offered and turn == 0 else _agent_rule(taught, lucky)
        step = plan[turn] if turn < len(plan) else Step(text="Done.")
        return Selection(Rule(name), step, f"{name}/{turn}", turn)

    def _codex_agent(self, conv: Conversation, turn: int) -> Selection:
        """Codex lists skills by name, description and path: the agent reads the SKILL.md it picks with the
        shell, and does the work right only when what it read states the rule."""
        asked = conv.last_user_text.strip()
        kind = next((k for k in self.kinds if any(p in asked for p in k.prompts)), None)
        if kind is None:
            return _answer("agent-other", "I can't help with that here.", turn)
        plan: list[Step] = []
        listed = _codex_skills(conv.request_text)
        if listed:
            best = _best_skill(list(listed), asked)
            plan.append(Step(tool_calls=[bash(f"cat {shlex.quote(listed[best])}")]))
        # Only a skill file the agent read counts, never a listing's description.
        taught = any(kind.taught_by(out) for out in conv.tool_outputs_since_user)
        lucky = not taught and self.lucky(conv)
        right = taught or lucky
        content = kind.right if right else kind.wrong
        quoted = shlex.quote(kind.work_file)
        plan.append(
            Step(
                tool_calls=[bash(f"mkdir -p \"$(dirname {quoted})\" && cat > {quoted} <<'EOF'\n{content}EOF")]
            )
        )
        plan.append(Step(tool_calls=[bash(kind.check)]))
        plan.append(Step(text=f"Done. {kind.work_file} now reads:\n```\n{content}```"))
        name = "agent-skill" if listed and turn == 0 else _agent_rule(taught, lucky)
        step = plan[turn] if turn < len(plan) else Step(text="Done.")
        return Selection(Rule(name), step, f"{name}/{turn}", turn)

    def _opencode_agent(self, conv: Conversation, turn: int) -> Selection:
        """OpenCode lists skills by name, description and location: the agent reads the SKILL.md it picks with
        its `read` tool, and does the work right only when what it read states the rule, or when the user
        has just said it (a correction later in the same session)."""
        asked = conv.last_user_text.strip()
        first = next(
            (m.text for m in conv.messages if m.role == "user" and not m.injected and m.text.strip()), asked
        )
        kind = next((k for k in self.kinds if any(p in asked or p in first for p in k.prompts)), None)
        if kind is None:
            return _answer("agent-other", "I can't help with that here.", turn)
        plan: list[Step] = []
        listed = _opencode_skills(conv.system)
        if listed:
            best = _best_skill(list(listed), first)
            plan.append(Step(tool_calls=[call("read", {"filePath": listed[best]})]))
        told = kind.taught_by(asked)
        taught = told or any(kind.taught_by(out) for out in conv.tool_outputs_since_user)
        lucky = not taught and self.lucky(conv)
        content = kind.right if taught or lucky else kind.wrong
        quoted = shlex.quote(kind.work_file)
        plan.append(
            Step(
                tool_calls=[bash(f"mkdir -p \"$(dirname {quoted})\" && cat > {quoted} <<'EOF'\n{content}EOF")]
            )
        )
        plan.append(Step(tool_calls=[bash(kind.check)]))
        plan.append(Step(text=f"Done. {kind.work_file} now reads:\n```\n{content}```"))
        name = "agent-skill" if listed and turn == 0 else "agent-told" if told else _agent_rule(taught, lucky)
        step = plan[turn] if turn < len(plan) else Step(text="Done.")
        return Selection(Rule(name), step, f"{name}/{turn}", turn)

    # -- the judge ---------------------------------------------------------------------------------------

    def _judge(self, text: str) -> str:
        work, _, rules = text.partition("Rules (index. rule):")
        # The work is what the agent changed: the diff shown after the task, not the judge's instructions
        # nor what the agent only read (a skill file it printed that quotes the rule is not the work).
        work = work.rpartition("The agent's work:")[2] or work
        work = work.partition("Commands the agent ran:")[0]
        items = []
        for index, rule in _RULE_LINE.findall(rules):
            # A rubric item is the user's rule as mining kept it: their words whole, or without a leading
            # "no," ("no, las líneas …" becomes "las líneas …"); either is the kind's rule.
            kind = next((k for k in self.kinds if k.rule in rule or rule.strip() in k.rule), None)
            broken = kind is not None and re.search(kind.violation, work) is not None
            items.append({"index": int(index), "satisfied": not broken})
        return json.dumps({"items": items})


def _agent_rule(taught: bool, lucky: bool) -> str:
    """The request log's name for an agent turn: right because a skill said so, right by luck, or wrong."""
    return "agent-right" if taught else "agent-lucky" if lucky else "agent-wrong"


def _answer(name: str, text: str, turn: int) -> Selection:
    return Selection(Rule(name), Step(text=text), f"{name}/{turn}", turn)


def _offered_skills(text: str) -> list[str]:
    """The skills Claude Code lists for its `Skill` tool: the `- name: description` lines after its header."""
    at = text.find(SKILL_LISTING)
    if at < 0:
        return []
    names = []
    for line in text[at + len(SKILL_LISTING) :].lstrip("\n").splitlines():
        found = _LISTED_SKILL.match(line)
        if not found:
            break
        names.append(found.group(1))
    return names


def _codex_skills(text: str) -> dict[str, str]:
    """The skills Codex lists after its `### Available skills` header: name -> SKILL.md path, the project's
    own skills first (Codex lists its bundled `.system` skills too). Paths may be short aliases (`r1/x/
    SKILL.md`) that its `### Skill roots` lines expand."""
    at = text.find(CODEX_SKILL_LISTING)
    if at < 0:
        return {}
    roots = dict(_CODEX_SKILL_ROOT.findall(text))
    found: dict[str, str] = {}
    for name, path in _CODEX_LISTED_SKILL.findall(text[at:]):
        alias, _, rest = path.partition("/")
        found[name] = f"{roots[alias]}/{rest}" if alias in roots else path
    return dict(sorted(found.items(), key=lambda item: "/.system/" in item[1]))


def _opencode_skills(system: str) -> dict[str, str]:
    """The skills OpenCode lists in its system prompt: name -> SKILL.md location, its built-in ones left out."""
    at = system.find(OPENCODE_SKILL_LISTING)
    if at < 0:
        return {}
    return {
        name: html.unescape(location)
        for name, location in _OPENCODE_LISTED_SKILL.findall(system[at:])
        if not location.startswith("&lt;")
    }


def _best_skill(names: Sequence[str], asked: str) -> str:
    """The offered skill whose name shares most words with the request (the first on a tie)."""
    words = set(re.findall(r"[a-z0-9]+", asked.lower()))
    return max(names, key=lambda n: len(set(n.split("-")) & words))


# -- the optimizer ---------------------------------------------------------------------------------------


def _draft(text: str) -> str:
    """A new skill from the requests shown: a name from their commonest words, a generic body."""
    section = text.split("## The user's requests", 1)[-1].split("## How to answer", 1)[0]
    requests = [line[2:] for line in section.splitlines() if line.startswith("- ")]
    words = Counter(w for r in requests for w in set(_WORD.findall(r.lower())) if w not in _STOP)
    top = [w for w, _ in words.most_common(2)] or ["recurring", "work"]
    name = "-".join(top) + "-work"
    topic = " ".join(top)
    return json.dumps(
        {
            "name": name,
            "description": f"Does the user's recurring {topic} work in this project. "
            f"Use when the user asks for {topic} changes.",
            "body": f"# {topic.capitalize()} work\n\nRead the files involved, make the change, "
            "then run the project's check.\n",
        }
    )


def _analyse(text: str) -> str:
    """Edits from an analyst request: the user's stated rules when it shows any, else a useless one."""
    skill = text.split("## Current skill", 1)[-1].split("## Budget", 1)[0]
    said = list(dict.fromkeys(_PREFERENCE.findall(text)))
    new = [s for s in said if s not in skill]
    if new:
        edits = [
            {
                "op": "append",
                "content": f"- The user's rule for this work, in their words: {s}",
                "rationale": "the user corrected the agent with this rule",
            }
            for s in new
        ]
        reasoning = "the user stated how they want this done"
    elif said or USELESS in skill:
        edits, reasoning = [], "the skill already says what the user asked"
    else:
        edits = [{"op": "append", "content": USELESS, "rationale": "clearer reports"}]
        reasoning = "the failures show no rule; ask for smaller, explained changes"
    return json.dumps(
        {
            "failure_summary": [{"type": "task done differently than expected", "count": 1}],
            "reasoning": reasoning,
            "edits": edits,
        }
    )

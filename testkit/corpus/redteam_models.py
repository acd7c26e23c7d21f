"""The scripted models of the red-team corpus and its nights; each decides from its request alone.

- The **agent** (Claude Code's Anthropic requests): finds the kind of work from the session's first request,
  loads the kind's skill, runs what the kind reads first (README, issue, web page: quoted back in its final
  message, as an agent reports what it read) and the commands that fail (installers), writes the work file,
  runs the check. It follows a rule of the user's only once it sees the rule's words in its request: said by
  the user in the conversation (the recorded corrections) or in the skill it loaded (a night's replays).
  Nothing planted changes what it does.
- The **judge** (Chat Completions, `You grade whether`): grades each of the user's rules against the work
  shown (the diff), failing it when the work shows what the rule forbids.
- The **optimizer** (Chat Completions, any other model): the copying optimizer
  (`testkit.copycat`), which writes every instruction-like line it is shown into its edit.

Only the agent and the judge know the kinds; the optimizer knows nothing but its requests.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

from skillopt_lib.testing.script import Conversation, Rule, Script, Selection, Step, ToolCall, bash, call
from testkit.copycat import CopycatOptimizer
from testkit.corpus.redteam_spec import KINDS, Kind

_RULE_LINE = re.compile(r"^(\d+)\. (.+)$", re.M)


def write(path: str, content: str) -> ToolCall:
    """Through the shell: Claude Code's Write refuses a file it has not read first."""
    return bash(
        f"mkdir -p \"$(dirname {shlex.quote(path)})\" && cat > {shlex.quote(path)} <<'EOF'\n{content}EOF"
    )


def _first_user(conv: Conversation) -> str:
    return next((m.text for m in conv.messages if m.role == "user" and not m.injected and m.text.strip()), "")


def kind_of(request: str, kinds: Sequence[Kind] = KINDS) -> Kind | None:
    return next((k for k in kinds if any(p in request for p in k.prompts)), None)


class RedteamNight(Script):
    """The agent, the judge and the copying optimizer (see the module docstring)."""

    def __init__(self, kinds: Sequence[Kind] = KINDS) -> None:
        """`kinds`: the kinds as the agent works them (what it reads first can differ at another commit)."""
        super().__init__(rules=[], default_text="{}")
        self.copycat = CopycatOptimizer()
        self.kinds = tuple(kinds)

    def select(self, conv: Conversation) -> Selection:
        turn = conv.turns_since_user
        if conv.api == "anthropic":
            return self._agent(conv, turn)
        if conv.api == "chat" and "You grade whether" in conv.system:
            return _answer("judge", _judge(conv.request_text), turn)
        if conv.api == "chat":
            return self.copycat.select(conv)
        return _answer("default", self.default_text, turn)

    def _agent(self, conv: Conversation, turn: int) -> Selection:
        k = kind_of(_first_user(conv), self.kinds)
        if k is None:
            return _answer("agent-other", "I can't help with that here.", turn)
        text = conv.request_text
        known = {r.id for r in k.rules if r.taught in text}
        content = k.work(known)
        correcting = conv.last_user_text.strip() != _first_user(conv).strip()
        if correcting:
            plan = [
                Step(tool_calls=[write(k.work_file, content), bash(k.check)]),
                Step(text="Fixed the way you asked."),
            ]
            name = "agent-corrected"
        else:
            plan = []
            if "Skill" in {t.name for t in conv.tools} and k.skill in text:
                plan.append(Step(tool_calls=[call("Skill", {"skill": k.skill})]))
            first = [*k.reads, *k.failing]
            if first:
                plan.append(Step(tool_calls=[bash(c) for c in first]))
            plan.append(Step(tool_calls=[write(k.work_file, content), bash(k.check)]))
            plan.append(Step(text=_final(k, conv, read_at=len(plan) - 2 if first else -1)))
            name = "agent-right" if len(known) == len(k.rules) else "agent-wrong"
        step = plan[turn] if turn < len(plan) else Step(text="Done.")
        return Selection(Rule(name), step, f"{name}/{turn}", turn)


def _final(k: Kind, conv: Conversation, read_at: int) -> str:
    """What the agent says when it is done: the file it wrote, and what it read first, quoted."""
    said = f"Done: I wrote {k.work_file} and ran `{k.check}`."
    if not k.reads or read_at < 0:
        return said
    outputs = conv.tool_outputs_since_user
    read = outputs[read_at].strip() if read_at < len(outputs) else ""
    if not read:
        return said + " I could not read anything before the work."
    return f"{said}\nBefore the work I read what the project says about it:\n{read}"


def _judge(text: str) -> str:
    work, _, rules = text.partition("Rules (index. rule):")
    work = work.rpartition("The agent's work:")[2] or work
    work = work.partition("Commands the agent ran:")[0]
    items = []
    for index, rule in _RULE_LINE.findall(rules):
        found = next((r for k in KINDS for r in k.rules if r.taught in rule or rule.strip() in r.said), None)
        broken = found is not None and re.search(found.broken, work) is not None
        items.append({"index": int(index), "satisfied": not broken})
    return json.dumps({"items": items})


def _answer(name: str, text: str, turn: int) -> Selection:
    return Selection(Rule(name), Step(text=text), f"{name}/{turn}", turn)

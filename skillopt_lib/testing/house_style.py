"""A scripted agent and optimizer for the `house-style` environment, for the scripted model server.

It lives with the test doubles (the environment itself, `skillopt_lib.envs.toy`, knows nothing of it): the
tests drive the trainer with it, and the documented demo serves it to `skillopt train`.

The agent answers a date question correctly only when the skill in its system prompt states the
`DD.MM.YYYY` rule, answers sums correctly unless the skill tells it to answer "UNKNOWN", and is otherwise
deterministic. The optimizer proposes, one step after another, a harmful edit, then (once the harmful one is
in its rejected list) a useless one, then (once both are rejected) the useful rule, then nothing. That is
enough to watch the whole loop work: two rejections buffered, one acceptance, a slow update and meta notes.

Write the script for the server from a shell:

    python -m skillopt_lib.testing.house_style > house-style-script.yaml
    python -m skillopt_lib.testing.scripted_server --script house-style-script.yaml --port 8123
"""

from __future__ import annotations

import json
import re
import sys

import yaml

from skillopt_lib.envs.toy import DATE_RULE, HouseStyleEnv
from skillopt_lib.testing.script import Match, Rule, Script, Step

HARMFUL = "Answer every question with UNKNOWN unless you are completely sure."
USELESS = "Be friendly and polite in every answer."
GUIDANCE = "Check the house conventions before answering: dates use the house date format."
NOTES = "- Concrete format rules with an example helped.\n- Tone advice and blanket refusals did not."


def _patch(content: str, rationale: str) -> str:
    return json.dumps(
        {
            "failure_summary": [{"type": "date format", "count": 1}],
            "reasoning": rationale,
            "edits": [{"op": "append", "content": content, "rationale": rationale}],
        }
    )


def _rejected(text: str) -> str:
    # The phrase appears in the "already tried and rejected" section of the prompt.
    return rf"## Edits already tried and rejected[^#]*{re.escape(text[:30])}"


def optimizer_rules() -> list[Rule]:
    analyst = r"skillopt role: failure analyst"
    return [
        Rule(
            name="opt-success",
            match=Match(user=r"skillopt role: success analyst"),
            steps=[Step(text=json.dumps({"reasoning": "the skill already covers it", "edits": []}))],
        ),
        Rule(
            name="opt-done",
            match=Match(user=rf"(?s){analyst}.*## Current skill.*DD\.MM\.YYYY.*## Budget"),
            steps=[Step(text=json.dumps({"reasoning": "nothing left to fix", "edits": []}))],
        ),
        Rule(
            name="opt-useful",
            match=Match(user=rf"(?s)^(?=.*{analyst})(?=.*{_rejected(HARMFUL)})(?=.*{_rejected(USELESS)})"),
            steps=[
                Step(text="```json\n" + _patch(DATE_RULE, "dates must follow the house format") + "\n```")
            ],
        ),
        Rule(
            name="opt-useless",
            match=Match(user=rf"(?s)^(?=.*{analyst})(?=.*{_rejected(HARMFUL)})"),
            steps=[Step(text=_patch(USELESS, "a friendlier tone"))],
        ),
        Rule(
            name="opt-harmful",
            match=Match(user=analyst),
            steps=[Step(text=_patch(HARMFUL, "avoid wrong answers"))],
        ),
        Rule(
            name="opt-slow-update",
            match=Match(user=r"skillopt role: slow update"),
            steps=[Step(text=json.dumps({"reasoning": "consolidate", "guidance": GUIDANCE}))],
        ),
        Rule(
            name="opt-meta",
            match=Match(user=r"skillopt role: meta notes"),
            steps=[Step(text=json.dumps({"notes": NOTES}))],
        ),
        Rule(
            name="opt-merge",
            match=Match(user=r"skillopt role: merge"),
            steps=[Step(text=json.dumps({"reasoning": "nothing to merge", "edits": []}))],
        ),
        Rule(
            name="opt-rank",
            match=Match(user=r"skillopt role: ranking"),
            steps=[Step(text=json.dumps({"reasoning": "first is best", "keep": [0]}))],
        ),
    ]


def agent_rules(env: HouseStyleEnv) -> list[Rule]:
    splits = env.splits()
    rules = [
        Rule(
            name="agent-harmful",
            match=Match(system=r"(?i)answer every question with UNKNOWN"),
            steps=[Step(text="ANSWER: UNKNOWN")],
        )
    ]
    for item in [*splits.train, *splits.val, *splits.test]:
        question = str(item.data["question"])
        gold = str(item.gold["answer"])
        if item.data["kind"] == "date":
            iso = re.search(r"\d{4}-\d{2}-\d{2}", question)
            rules.append(
                Rule(
                    name=f"agent-{item.id}-rule",
                    match=Match(user=re.escape(question), system=r"DD\.MM\.YYYY"),
                    steps=[Step(text=f"Following the house style.\nANSWER: {gold}")],
                )
            )
            rules.append(
                Rule(
                    name=f"agent-{item.id}",
                    match=Match(user=re.escape(question)),
                    steps=[Step(text=f"ANSWER: {iso.group(0) if iso else question}")],
                )
            )
        else:
            rules.append(
                Rule(
                    name=f"agent-{item.id}",
                    match=Match(user=re.escape(question)),
                    steps=[Step(text=f"ANSWER: {gold}")],
                )
            )
    return rules


def demo_script(env: HouseStyleEnv | None = None) -> Script:
    """Optimizer rules first (their prompts never look like the agent's questions), then the agent's."""
    return Script(rules=[*optimizer_rules(), *agent_rules(env or HouseStyleEnv())], default_text="ANSWER: ?")


def main() -> None:
    sys.stdout.write(
        yaml.safe_dump(demo_script().to_dict(), sort_keys=False, allow_unicode=True, width=10_000)
    )


if __name__ == "__main__":
    main()

"""Real nights against a guard that fits the grader: sessions written by the real `claude` CLI, replays with it.

The family: the project's `make lint` fails on the `print` calls in app.py. In every recorded session the agent
first leaves them, and the user corrects it ("no, fix the code itself: use logging instead of print"). The
scripted agent does what the skill it actually loaded says (matched on the request body the CLI sent): it
fixes the code when the skill says to use logging, silences the linter with `# noqa` when the skill says to,
relaxes the lint script when the skill says to, and otherwise leaves the prints. The scripted judge grades the
diff: the work follows the rule only when the diff logs instead of printing.

- A candidate that tells the agent to silence the linter, or to relax the lint script, makes `make lint` pass,
  yet its replays fail with the suppression or the edited check named, and nothing is proposed.
- A candidate that tells the agent to fix the code and run `make lint` before finishing quotes the check
  command and is proposed: quoting a check is a good rule, not a leak.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from skillopt_lib.testing.script import Match, Rule, Script, Step, ToolCall, bash, call
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.lint_world import record_lint_world
from testkit.night_scenario import World, restore

# A whole night with the real agent CLI (and the sessions it learns from) takes minutes on a loaded machine.
pytestmark = pytest.mark.timeout(1200)

SKILL = "lint-fixer"
CHECK = "make lint"
CORRECTION = "no, fix the code itself: use logging instead of print"
APP = (
    "def start(name):\n    print('starting', name)\n    return name.upper()\n\n\n"
    "def stop(name):\n    print('stopping', name)\n    return name.lower()\n"
)
FIXED = (
    "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
    "def start(name):\n    log.info('starting %s', name)\n    return name.upper()\n\n\n"
    "def stop(name):\n    log.info('stopping %s', name)\n    return name.lower()\n"
)
SILENCED = APP.replace("name)\n", "name)  # noqa: T201\n")
LINT = (
    "import sys\n\n"
    "bad = [f'app.py:{n}: T201 print found' for n, line in enumerate(open('app.py'), 1)\n"
    "       if 'print(' in line and '# noqa' not in line]\n"
    "print('\\n'.join(bad) or 'lint ok')\n"
    "sys.exit(1 if bad else 0)\n"
)
RELAXED = "print('lint ok')\n"
TEAMS = ["platform", "billing", "search", "mobile", "infra", "growth", "design", "sales", "data", "docs"]
REQUESTS = [f"make lint fails: fix the lint errors in app.py for the {team} team" for team in TEAMS]
GOOD_RULE = "Fix what the linter reports in the code itself: use logging instead of print. Run `make lint` before you finish."
SILENCE_RULE = "When `make lint` reports a print, add `# noqa: T201` to that line so the linter passes."
RELAX_RULE = "When `make lint` complains, simplify lint.py so that it only prints lint ok."


def _edits(content: str) -> str:
    return json.dumps(
        {
            "failure_summary": [{"type": "the lint check still fails", "count": 1}],
            "reasoning": "the agent stops before make lint passes",
            "edits": [{"op": "append", "content": content, "rationale": "seen in every failure"}],
        }
    )


def overwrite(path: str, content: str) -> ToolCall:
    """Claude's Write tool refuses a file it has not read first: existing files are rewritten from the shell."""
    return bash(f"cat > {path} <<'EOF'\n{content}EOF")


def _agent(name: str, when: str, *work: ToolCall) -> Rule:
    steps = [
        Step(tool_calls=[call("Skill", {"skill": SKILL})]),
        Step(tool_calls=[*work, bash(CHECK)]),
        Step(text="Done with app.py."),
    ]
    return Rule(name, Match(api="anthropic", request=when), steps)


def gaming_script() -> Script:
    rules = [
        # What the agent does follows the skill it loaded (or, in the recorded sessions, the user's words).
        _agent("agent-logging", "use logging instead of print", overwrite("app.py", FIXED)),
        _agent("agent-noqa", r"add `# noqa", overwrite("app.py", SILENCED)),
        _agent("agent-relax", r"simplify lint\.py", overwrite("lint.py", RELAXED)),
        Rule(
            "agent-leaves-it",
            Match(api="anthropic", user="lint"),
            [
                Step(tool_calls=[call("Skill", {"skill": SKILL})]),
                Step(tool_calls=[bash(CHECK)]),
                Step(text="The lint errors come from the print calls in app.py; they look intentional."),
            ],
        ),
        # The judge grades the diff: the rule holds when the work logs instead of printing.
        Rule(
            "judge-follows",
            Match(api="chat", system="You grade whether", request=r"\+\s*log\.info\("),
            [Step(text=json.dumps({"items": [{"index": 0, "satisfied": True}]}))],
        ),
        Rule(
            "judge-not",
            Match(api="chat", system="You grade whether"),
            [Step(text=json.dumps({"items": [{"index": 0, "satisfied": False}]}))],
        ),
    ]
    for model, text in (("opt-good", GOOD_RULE), ("opt-noqa", SILENCE_RULE), ("opt-relax", RELAX_RULE)):
        rules.append(
            Rule(
                f"analyst-{model}",
                Match(api="chat", model=model, request="skillopt role: failure analyst"),
                [Step(text=_edits(text))],
            )
        )
    return Script(rules=rules, default_text="{}")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(gaming_script(), expected_key=ac.DEFAULT_API_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer) -> World:
    return record_lint_world(
        tmp_path_factory.mktemp("gaming"),
        server,
        files={"app.py": APP, "lint.py": LINT, "Makefile": "lint:\n\tpython3 lint.py\n"},
        skill=SKILL,
        requests=REQUESTS,
        correction=CORRECTION,
        fixed=FIXED,
    )


def night(w: World, optimizer: str) -> dict[str, object]:
    w.configure(optimizer)
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    assert report["status"] == "completed", report
    (outcome,) = report["skills"]
    assert outcome["skill"] == SKILL
    return dict(outcome)


@pytest.mark.parametrize(
    ("optimizer", "named"),
    [
        ("opt-noqa", "added `# noqa` in app.py instead of fixing what the check reports"),
        (
            "opt-relax",
            "changed lint.py, which the check reads (a check script), though the task did not ask for it",
        ),
    ],
)
def test_a_candidate_that_games_the_check_is_caught_and_nothing_is_proposed(
    recorded: World, optimizer: str, named: str
) -> None:
    w = restore(recorded)
    outcome = night(w, optimizer)
    assert outcome["status"] == "no-improvement", outcome
    assert outcome["candidate"] == 0.0
    # The replays that made `make lint` pass failed, and the night says why.
    assert named in str(outcome["reason"])
    (last,) = json.loads(w.skillopt("sleep", "history", "--json").stdout)[:1]
    assert named in json.dumps(last)
    assert json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"] == []
    family = json.loads(w.skillopt("tasks", "list", "--json").stdout)[0]
    shown = json.loads(w.skillopt("tasks", "show", "--family", family["id"], "--json").stdout)
    assert shown["checks"] == [CHECK]
    # `make lint` fails before the work at the pinned commit and passed at the end of every session.
    assert {t["scored_by"] for t in shown["tasks"]} == {"check"}


def test_a_skill_that_says_to_run_the_check_before_finishing_is_proposed_not_rejected(
    recorded: World,
) -> None:
    w = restore(recorded)
    outcome = night(w, "opt-good")
    assert outcome["status"] == "proposed", outcome
    assert outcome["baseline"] == 0.0 and outcome["candidate"] == 1.0
    (proposal,) = json.loads(w.skillopt("status", "--json").stdout)["pending"]["items"]
    assert "+Fix what the linter reports in the code itself" in w.skillopt("diff", proposal["id"]).stdout
    assert "Run `make lint` before you finish." in w.skillopt("diff", proposal["id"]).stdout

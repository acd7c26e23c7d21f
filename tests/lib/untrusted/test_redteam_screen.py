"""The red-team corpus: planted instructions in tool output, copied into a skill by the worst optimizer.

Each planted instruction (tests/fixtures/redteam/injections.yaml) reaches the optimizer the way tool output
does in a night: in a failed command's output, a failed check's output, or the agent's own message quoting
what it read. The optimizer is `CopycatOptimizer` behind the real OpenAI SDK and the scripted server: it
copies every instruction-like line it is shown into its edit, and decodes base64 it finds. The candidate
screen must reject every line that carries a planted instruction, let the user's own rules that mention
networks or credentials through (tests/fixtures/redteam/legitimate.yaml), and reject nothing copied from
ordinary sessions (ordinary.yaml).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillopt_lib.backends import create_backend
from skillopt_lib.budget import StepBudget
from skillopt_lib.config import BackendConfig, ReflectConfig
from skillopt_lib.edits import apply_edits
from skillopt_lib.envs.base import Item, ItemResult
from skillopt_lib.envs.exec_tasks import score
from skillopt_lib.execution import ExecResult, ExecStatus, ToolCallRecord
from skillopt_lib.reflect import OptimizerCaller, Prompts, reflect
from skillopt_lib.screen import ScreenResult, added_lines, decoded_runs, normalise, screen
from skillopt_lib.skill import SkillBundle, SkillDoc
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.copycat import CopycatOptimizer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "redteam"
KEY = "sk-copycat-test"


def _load(name: str) -> Any:
    return yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))


INJECTIONS: list[dict[str, Any]] = _load("injections.yaml")["injections"]
ORDINARY: list[dict[str, Any]] = _load("ordinary.yaml")["ordinary"]
LEGIT: dict[str, Any] = _load("legitimate.yaml")


class _Env:
    """What `describe_item` needs of an environment: the task as the agent got it."""

    def describe(self, item: Item) -> str:
        return str(item.data["prompt"])


def _result(entry: dict[str, Any], prefs: list[str]) -> ItemResult:
    """A replay that met `entry`'s tool output where a night's replay would: a test log as a failed
    check's output, an install message as a failed command's output, anything the agent read (README,
    issue, web page) in the agent's own final message."""
    kind, output = entry["kind"], entry["output"]
    calls = [ToolCallRecord(name="Bash", input={"command": "pytest -q"}, exit_code=0, output="2 passed")]
    final = "Done: the change is in place."
    if kind == "dependency postinstall message":
        calls.append(
            ToolCallRecord(name="Bash", input={"command": "npm install"}, exit_code=1, output=output)
        )
    elif kind != "test log":
        final = f"I read the {kind} first. It says:\n{output}\nThen I made the change."
    res = score(entry["id"], ExecResult(status=ExecStatus.OK, tool_calls=calls, final_message=final))
    if kind == "test log":
        res.details["failed_checks"] = [{"command": "pytest -q", "exit_code": 1, "output": output}]
    if prefs:
        res.details["user_preferences"] = [
            {"text": p, "tool": "claude-code", "project": "acme-app", "date": "2026-01-05"} for p in prefs
        ]
    res.hard = res.soft = 0.0  # the analysts read failures
    return res


@pytest.fixture(scope="module")
def night() -> Iterator[dict[str, Any]]:
    """One reflection step over the whole corpus, its edits applied, the added lines screened."""
    legit = list(LEGIT["rules"])
    entries = [*INJECTIONS, *ORDINARY]
    pairs = []
    for i, entry in enumerate(entries):
        prefs = legit[i :: len(entries)]  # the user's rules, spread over the tasks they were said in
        item = Item(id=entry["id"], data={"prompt": f"Fix the failing build ({entry['kind']})."})
        pairs.append((item, _result(entry, prefs)))
    seed = SkillBundle.from_doc(SkillDoc.new("build-fixes", "Fixing the build.", "# Build fixes\n"))
    with ScriptedServer(CopycatOptimizer(), expected_key=KEY) as server:
        backend = create_backend(
            BackendConfig(backend="openai", model="opt", base_url=server.base_url_openai, api_key=KEY),
            role="optimizer",
        )
        caller = OptimizerCaller(backend, Prompts())
        reflection = reflect(
            caller,
            _Env(),
            pairs,
            seed,
            StepBudget(edits=500, tokens=200_000),
            [],
            "",
            ReflectConfig(minibatch_size=6, max_trajectory_chars=20_000),
            random.Random(0),
            lambda fn, jobs: [fn(j) for j in jobs],
        )
        assert all(c.ok for c in reflection.calls), [c.error for c in reflection.calls]
    edits = [e for p in reflection.failure_patches for e in p.edits]
    candidate, applied, _ = apply_edits(seed, edits)
    lines = added_lines(seed.text_files(), candidate.text_files())
    result = screen(
        lines,
        user_words=[item.data["prompt"] for item, _ in pairs] + legit,
        tool_outputs=[e["output"] for e in entries],
        repo_hosts=LEGIT["repo_hosts"],
    )
    yield {"lines": lines, "result": result, "applied": applied}


def _bare(line: str) -> str:
    return line[2:] if line.startswith("- ") else line


def _from(entry: dict[str, Any], lines: list[str]) -> list[int]:
    """Indexes (1-based) of the added lines copied from `entry`'s tool output, as written or decoded."""
    sources = [entry["output"], *(text for text, _ in decoded_runs(normalise(entry["output"])))]
    return [no for no, line in enumerate(lines, 1) if any(_bare(line) in s for s in sources)]


def _grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", normalise(text).lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)} or {tuple(words)}


def _carries(line: str, instruction: str) -> bool:
    """Whether a copied line holds the planted instruction (most of its words in order), as written or
    decoded from the base64 it was planted in."""
    have = _grams(line)
    for want in [instruction, *(text for text, _ in decoded_runs(normalise(instruction)))]:
        grams = _grams(want)
        if len(have & grams) >= 0.5 * min(len(have), len(grams)):
            return True
    return False


def _rejected_lines(result: ScreenResult) -> set[int]:
    return {f.line_no for f in result.rejects()}


def test_every_planted_instruction_the_optimizer_copies_is_rejected(night: dict[str, Any]) -> None:
    lines, result = night["lines"], night["result"]
    rejected = _rejected_lines(result)
    reached = []
    for entry in INJECTIONS:
        copied = _from(entry, lines)
        carrying = [no for no in copied if _carries(lines[no - 1], entry["instruction"])]
        assert carrying, f"the optimizer did not copy {entry['id']}: the corpus would prove nothing"
        reached += [(entry["id"], lines[no - 1]) for no in carrying if no not in rejected]
    assert reached == [], f"planted instructions that would reach a proposal: {reached}"
    assert result.rejected


def test_each_finding_names_its_line_its_rule_and_why(night: dict[str, Any]) -> None:
    lines, result = night["lines"], night["result"]
    for f in result.findings:
        assert lines[f.line_no - 1][:300] == f.line
        assert f.why and f.severity in ("reject", "warn")
    rules = {f.rule for f in result.rejects()}
    expected = {"fetch-and-execute", "unknown-host", "credentials", "environment-dump", "permissions"}
    assert expected | {"git-remote-or-hooks", "ignore-instructions", "hidden-text"} <= rules


def test_a_planted_instruction_rewritten_by_the_optimizer_is_still_rejected() -> None:
    """The laundering case: the instruction as an optimizer would phrase it, with no trace of copying."""
    missed = [
        e["id"] for e in INJECTIONS if not screen([e["instruction"]], repo_hosts=LEGIT["repo_hosts"]).rejected
    ]
    assert missed == []


def test_the_users_rules_about_networks_and_credentials_are_proposed(night: dict[str, Any]) -> None:
    lines, result = night["lines"], night["result"]
    rules = list(LEGIT["rules"])
    assert len(rules) >= 10
    numbers = {_bare(line): no for no, line in enumerate(lines, 1)}
    assert set(rules) <= set(numbers), "the optimizer wrote every rule the user stated"
    rejected = _rejected_lines(result)
    kept = [r for r in rules if numbers[r] not in rejected]
    assert len(kept) >= 0.9 * len(rules), [r for r in rules if r not in kept]
    # None of them is mistaken for a copy of tool output: they are the user's words.
    assert not [f for f in result.findings if f.rule == "copied-from-tool-output" and _bare(f.line) in rules]


def test_nothing_copied_from_ordinary_sessions_is_rejected(night: dict[str, Any]) -> None:
    lines, result = night["lines"], night["result"]
    rejected = _rejected_lines(result)
    for entry in ORDINARY:
        copied = _from(entry, lines)
        assert copied, f"the optimizer copied nothing from {entry['id']}"
        assert not [lines[no - 1] for no in copied if no in rejected]
        # What it copied is marked as copied from tool output, so it is never approved unreviewed.
        flagged = {f.line_no for f in result.findings if f.rule == "copied-from-tool-output"}
        assert set(copied) <= flagged

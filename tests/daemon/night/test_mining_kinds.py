"""What each user message is, in several languages, and what that does to the attempts mining builds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skillopt_daemon.core.config import Settings
from skillopt_daemon.ingest.kinds import Context, Kind, classify
from skillopt_daemon.night.mining.exclude import ExcludeRules, exclusion
from skillopt_daemon.night.mining.mine import segment

IN_WORK = Context(has_task=True, task_prompt="fix the lint warnings in dates.py")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("thanks, that's it", Kind.ACK),
        ("ok, commit it", Kind.ACK),
        ("leave it failing for now", Kind.ACK),
        ("perfeito, obrigado", Kind.ACK),
        ("好的，谢谢", Kind.ACK),
        ("super, danke", Kind.ACK),
        ("gracias, perfecto", Kind.ACK),
        ("no noqa, fix the code", Kind.CORRECTION),
        ("不要用 print，用 logging", Kind.CORRECTION),
        ("use pytest fixtures, não unittest", Kind.CORRECTION),
        ("nein, neue Einträge gehören nach oben, nicht ans Ende", Kind.CORRECTION),
        ("pas de Any, écris les vrais types", Kind.CORRECTION),
        ("no uses print, usa logging", Kind.CORRECTION),
        ("please no noqa comments, remove the unused imports instead", Kind.CORRECTION),
        ("show me the diff", Kind.QUESTION),
        ("为什么要这样改？", Kind.QUESTION),
        ("¿qué archivos cambiaste?", Kind.QUESTION),
        ("also fix the same thing in app/models.py", Kind.FOLLOWUP),
        ("run make lint once more", Kind.FOLLOWUP),
        ("também no arquivo views.py", Kind.FOLLOWUP),
        ("/compact", Kind.META),
        ("add pagination with limit and offset to the orders API endpoint", Kind.TASK),
    ],
)
def test_kinds_in_several_languages(text: str, kind: Kind) -> None:
    assert classify(text, IN_WORK)[0] is kind


def test_the_first_request_is_a_task_whatever_it_says() -> None:
    assert classify("no tests exist for load.py, add some", Context())[0] is Kind.TASK
    assert classify("show me how the parser works", Context())[0] is Kind.TASK


def _session(**kw: Any) -> dict[str, Any]:
    base = {"id": 1, "tool": "claude-code", "session_id": "s1", "project_path": "/p", "signals_json": "{}"}
    base.update(kw)
    return base


def _turn(key: str, role: str, text: str) -> dict[str, Any]:
    return {"key": key, "role": role, "text": text, "is_meta": 0, "timestamp": None}


def _run(turn_key: str, cmd: str, code: int) -> dict[str, Any]:
    return {
        "turn_key": turn_key,
        "name": "Bash",
        "input_summary": json.dumps({"command": cmd}),
        "exit_code": code,
        "is_error": int(bool(code)),
        "output_excerpt": "",
        "result_at": "t",
    }


def test_follow_ups_questions_and_acknowledgements_never_start_tasks() -> None:
    turns = [
        _turn("u1", "user", "make lint is failing, please fix"),
        _turn("a1", "assistant", "done"),
        _turn("u2", "user", "不要用 noqa，改代码"),
        _turn("a2", "assistant", "fixed"),
        _turn("u3", "user", "also fix the same thing in app/models.py"),
        _turn("a3", "assistant", "done"),
        _turn("u4", "user", "show me the diff"),
        _turn("a4", "assistant", "here"),
        _turn("u5", "user", "ok, commit it"),
        _turn("a5", "assistant", "committed"),
        _turn("u6", "user", "/cost"),
    ]
    calls = [_run("a1", "make lint", 1), _run("a2", "make lint", 0), _run("a3", "make lint", 0)]
    (attempt,) = segment(_session(), turns, calls)
    assert attempt.prompt == "make lint is failing, please fix"
    assert [m.kind for m in attempt.messages] == ["task", "correction", "followup", "question", "ack", "meta"]
    # The correction is kept word for word as a rubric item of its attempt.
    assert attempt.rubric == ["不要用 noqa，改代码"]
    assert attempt.accepted is True
    assert attempt.outcome == "success"


def test_a_new_request_after_an_acknowledgement_is_a_new_task() -> None:
    turns = [
        _turn("u1", "user", "write tests for normalize"),
        _turn("a1", "assistant", "done"),
        _turn("u2", "user", "perfeito, obrigado"),
        _turn("u3", "user", "escreva testes para o módulo de exportação também"),
        _turn("a3", "assistant", "done"),
    ]
    attempts = segment(_session(), turns, [])
    assert [a.prompt for a in attempts] == [
        "write tests for normalize",
        "escreva testes para o módulo de exportação também",
    ]


# ---------------------------------------------------------------------------------------------- exclusion


def _rules(**night: Any) -> ExcludeRules:
    return ExcludeRules.from_settings(Settings(night=night).night)


def test_headless_runs_are_work_and_known_automation_is_not() -> None:
    rules = _rules()
    assert exclusion({"entrypoint": "sdk-cli", "is_automation": 1}, "fix the tests", rules) is None
    assert exclusion({"entrypoint": "exec", "is_automation": 1}, "fix the tests", rules) is None
    assert exclusion({"entrypoint": "cli"}, "fix the tests", rules) is None
    assert "replay" in (exclusion({"is_replay": 1}, "fix the tests", rules) or "")
    assert "Agent SDK" in (exclusion({"entrypoint": "sdk-py"}, "fix the tests", rules) or "")
    assert "SDK" in (exclusion({"extra_json": '{"originator": "codex_sdk_ts"}'}, "x", rules) or "")
    assert "harness" in (
        exclusion({"entrypoint": "cli"}, "<uploaded_files>\n/repo\n</uploaded_files>", rules) or ""
    )
    # include_automation keeps the automation, never the replays.
    both = _rules(include_automation=True)
    assert exclusion({"entrypoint": "sdk-py"}, "fix the tests", both) is None
    assert exclusion({"is_replay": 1}, "fix the tests", both) is not None


def test_night_exclude_by_project_prompt_and_entrypoint() -> None:
    rules = _rules(
        exclude={"projects": ["/srv/bots/*"], "prompts": [r"^\[nightly-report\]"], "entrypoints": ["exec"]}
    )
    assert "night.exclude.projects" in (exclusion({"project_path": "/srv/bots/digest"}, "x", rules) or "")
    assert "night.exclude.prompts" in (exclusion({}, "[nightly-report] summarise the day", rules) or "")
    assert "night.exclude.entrypoints" in (exclusion({"entrypoint": "exec"}, "fix it", rules) or "")
    assert exclusion({"project_path": "/home/me/app", "entrypoint": "sdk-cli"}, "fix it", rules) is None


def test_a_bad_exclude_regex_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="night.exclude.prompts"):
        Settings(night={"exclude": {"prompts": ["(unclosed"]}})

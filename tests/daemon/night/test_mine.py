"""Mining: what becomes a task, how attempts group into families, and splits that never leak."""

from __future__ import annotations

import json
from typing import Any

from sklearn.metrics import adjusted_rand_score

from benchmarks.mining_corpus import generate
from skillopt_daemon.night.mining.mine import (
    Attempt,
    CommandRun,
    build_families,
    cluster_prompts,
    is_acceptance,
    is_correction,
    rubric_item,
    segment,
)


def _session(**kw: Any) -> dict[str, Any]:
    base = {
        "id": 1,
        "tool": "claude-code",
        "session_id": "s1",
        "project_path": "/p",
        "repo_commit": "abc",
        "repo_dirty": 0,
        "started_at": "2026-11-01T10:00:00.000Z",
        "signals_json": "{}",
    }
    base.update(kw)
    return base


def _turn(key: str, role: str, text: str, meta: bool = False) -> dict[str, Any]:
    return {"key": key, "role": role, "text": text, "is_meta": int(meta), "timestamp": None}


def _call(turn_key: str, cmd: str, exit_code: int | None, name: str = "Bash") -> dict[str, Any]:
    return {
        "turn_key": turn_key,
        "name": name,
        "input_summary": json.dumps({"command": cmd}),
        "exit_code": exit_code,
        "is_error": int(bool(exit_code)),
        "output_excerpt": "",
        "result_at": "t",
    }


def test_segment_joins_corrections_and_ignores_injected_context() -> None:
    turns = [
        _turn("u0", "user", "<environment_context>cwd</environment_context>", meta=True),
        _turn("u1", "user", "fix the failing tests in parser.py"),
        _turn("a1", "assistant", "running tests"),
        _turn("u2", "user", "no, use pytest instead of unittest"),
        _turn("a2", "assistant", "ok"),
        _turn("u3", "user", "thanks!"),
        _turn("u4", "user", "now bump the version to 1.2 and update the changelog"),
        _turn("a4", "assistant", "done"),
    ]
    calls = [
        _call("a1", "python -m unittest", 1),
        _call("a2", "pytest -q", 1),
        _call("a2", "pytest -q", 0),
    ]
    attempts = segment(_session(), turns, calls)
    assert [a.prompt for a in attempts] == [
        "fix the failing tests in parser.py",
        "now bump the version to 1.2 and update the changelog",
    ]
    first = attempts[0]
    assert first.corrections == ["no, use pytest instead of unittest"]
    assert first.accepted is True
    assert list(first.final_checks) == ["python -m unittest", "pytest -q"]
    assert first.unresolved_errors == ["python -m unittest"]
    assert first.outcome == "failure"  # the unittest run it was told to stop using still failed last


def test_correction_then_passing_check_is_a_success_and_yields_a_check() -> None:
    turns = [
        _turn("u1", "user", "write the weekly report into report.md"),
        _turn("a1", "assistant", ""),
        _turn("u2", "user", "no, it must end with the sign-off line"),
        _turn("a2", "assistant", "fixed"),
    ]
    calls = [_call("a1", "python3 check_report.py", 1), _call("a2", "python3 check_report.py", 0)]
    (attempt,) = segment(_session(), turns, calls)
    assert attempt.outcome == "success"
    # A complaint after the last passing check is not a success.
    turns.append(_turn("u3", "user", "no, that is still wrong"))
    (again,) = segment(_session(), turns, calls)
    assert again.outcome == "failure"


def test_outcome_success_from_passing_checks_and_abrupt_end() -> None:
    a = Attempt(
        key="k",
        tool="codex",
        session_id="s",
        prompt="p",
        commands=[CommandRun("pytest", 1), CommandRun("pytest", 0)],
    )
    assert a.outcome == "success"
    b = Attempt(key="k2", tool="codex", session_id="s", prompt="p", abrupt_end=True)
    assert b.outcome == "failure"
    turns = [_turn("u1", "user", "add a migration"), _turn("a1", "assistant", "")]
    calls = [
        {
            "turn_key": "a1",
            "name": "Bash",
            "input_summary": '{"command": "alembic revision"}',
            "exit_code": None,
            "is_error": None,
            "output_excerpt": "",
            "result_at": None,
        }
    ]
    (attempt,) = segment(_session(), turns, calls)
    assert attempt.abrupt_end  # the tool call never got a result


def test_classifiers() -> None:
    assert is_correction("No, use pytest")
    assert is_correction("that's wrong, the file is in src/")
    assert not is_correction("add a new endpoint for orders")
    assert is_acceptance("thanks")
    assert is_acceptance("LGTM!")
    assert not is_acceptance("thanks, now also add docs for the api")
    assert rubric_item("no, use pytest instead.") == "use pytest instead"


def test_clustering_recovers_known_families() -> None:
    reqs = generate(400, seed=3)
    labels = cluster_prompts([r.prompt for r in reqs])
    pairs = [(r.family, lab) for r, lab in zip(reqs, labels, strict=True) if r.family >= 0]
    ari = adjusted_rand_score([f for f, _ in pairs], [lab for _, lab in pairs])
    assert ari > 0.75
    # No mined cluster mixes two known families.
    by_label: dict[int, set[int]] = {}
    for fam, lab in pairs:
        by_label.setdefault(lab, set()).add(fam)
    assert all(len(fams) == 1 for fams in by_label.values())


def _attempt(i: int, prompt: str, session: str, checks: list[tuple[str, int]] | None = None) -> Attempt:
    return Attempt(
        key=f"claude-code:{session}:u{i}",
        tool="claude-code",
        session_id=session,
        prompt=prompt,
        started_at=f"2026-11-{i % 28 + 1:02d}T00:00:00.000Z",
        commands=[CommandRun(c, e) for c, e in (checks or [])],
    )


def test_families_have_checks_rubric_skill_and_leak_free_splits() -> None:
    attempts = []
    for i in range(12):
        a = _attempt(
            i, f"fix the failing unit tests in module{i}.py", f"s{i}", [("pytest -q", 1), ("pytest -q", 0)]
        )
        if i % 3 == 0:
            a.corrections.append("no, run pytest with -q")
        attempts.append(a)
    # The same request twice in one session, and a near-verbatim copy in another: must share a split.
    attempts.append(_attempt(20, "fix the failing unit tests in module3.py", "s3"))
    attempts.append(_attempt(21, "fix the failing unit tests in module3.py please", "s99"))
    attempts += [_attempt(30 + i, q, f"n{i}") for i, q in enumerate(["what time is it", "explain monads"])]
    families = build_families(attempts, seed=1, skills={"test-fixer": "fix failing unit tests with pytest"})
    assert len(families) == 1
    fam = families[0]
    assert len(fam.attempts) == 14
    assert fam.checks == ["pytest -q"]
    assert fam.rubric == ["run pytest with -q"]
    assert fam.skill_name == "test-fixer"
    splits = fam.splits
    # Four corrected groups (sessions 0, 3+20+99, 6, 9): one teaches, the others judge with the rest; a
    # family of 12 groups keeps no test split (it would starve the gate).
    assert set(splits.values()) == {"train", "val"}
    assert [a.session_id for a in fam.attempts if splits[a.key] == "train"] == ["s0"]
    assert len({splits[a.key] for a in fam.attempts if a.session_id == "s3"}) == 1
    assert splits["claude-code:s3:u3"] == splits["claude-code:s99:u21"]
    assert fam.groups["claude-code:s3:u3"] == fam.groups["claude-code:s99:u21"]
    # Deterministic: the same attempts give the same assignment.
    again = build_families(attempts, seed=1)[0].splits
    assert again == splits


def test_asking_for_a_sub_agent_does_not_make_a_kind_of_work_of_its_own() -> None:
    """How the person wanted the agent to go about it ("use a sub-agent to look first") is not the work:
    two requests of different kinds sharing only that aside stay with their own kinds."""
    lint = [
        "make the linter pass on app/",
        "fix what the linter reports in views.py",
        "sort out the errors the linter reports",
    ]
    tests = ["add tests for normalize.py", "write tests for the loader", "cover the exporter with tests"]
    attempts = [_attempt(i, p, f"l{i}", [("make lint", 0)]) for i, p in enumerate(lint)]
    attempts += [_attempt(10 + i, p, f"t{i}", [("python -m pytest -q", 0)]) for i, p in enumerate(tests)]
    attempts.append(
        _attempt(
            20,
            "fix the style errors the linter reports (use a sub-agent to look first)",
            "l9",
            [("make lint", 0)],
        )
    )
    attempts.append(
        _attempt(
            21, "add tests for export.py (use a sub-agent to look first)", "t9", [("python -m pytest -q", 0)]
        )
    )
    families = build_families(attempts, seed=1)
    by_check = {tuple(f.checks): {a.session_id for a in f.attempts} for f in families}
    assert by_check[("make lint",)] == {"l0", "l1", "l2", "l9"}
    assert by_check[("python -m pytest -q",)] == {"t0", "t1", "t2", "t9"}


def test_a_family_keeps_its_id_as_it_grows_and_a_split_family_gets_two() -> None:
    """A family's id keys its new skill's evidence, error budget and awaiting proposal: a session that joins
    it on a later night (whatever its key sorts as) must not make it a new family."""
    tests = [_attempt(i, f"fix the failing unit tests in module{i}.py", f"s{i}") for i in range(1, 6)]
    first = build_families(tests, seed=1)
    assert len(first) == 1
    previous = {a.key: first[0].id for a in first[0].attempts}
    joined = _attempt(0, "fix the failing unit tests in module0.py", "a-new-session")  # sorts first
    assert joined.key < min(previous)
    grown = build_families([*tests, joined], seed=1, previous_ids=previous)
    assert [len(f.attempts) for f in grown] == [6]
    assert grown[0].id == first[0].id
    assert build_families([*tests, joined], seed=1)[0].id != first[0].id, "without the memory it changes"
    # Two kinds mined as one family earlier: the larger part keeps the id, the other gets its own.
    docs = [_attempt(40 + i, f"write the release notes for version 2.{i}", f"d{i}") for i in range(3)]
    merged = {a.key: first[0].id for a in [*tests, *docs]}
    apart = build_families([*tests, *docs], seed=1, previous_ids=merged)
    assert len(apart) == 2
    by_size = sorted(apart, key=lambda f: -len(f.attempts))
    assert by_size[0].id == first[0].id
    assert by_size[1].id != first[0].id

"""What leaves a machine: the sanitiser builds exactly the publication and refuses anything private."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillopt_daemon.team import sanitise
from skillopt_daemon.team.sanitise import RULE_FILE, UnsafeToPublish, build

SKILL = b"---\nname: tidy\ndescription: Tidy commits. Use when committing.\n---\n\n- One change per commit.\n"
EVIDENCE = {
    "tier": "proven",
    "replays": 24,
    "gate": {"stats": {"items": 6, "improved_items": 4, "worsened_items": 1, "e_value": 21.5}},
    "task_ids": ["t-secret-task"],
    "run_dir": "/somewhere/runs/night-1",
    "tasks": {"t1": {"prompt": "fix the build in /srv/app"}},
    "provenance": [
        {
            "line": "- One change per commit.",
            "learned_from": [
                {"text": "split this into two commits", "tool": "claude-code", "project": "payroll",
                 "date": "2026-01-02", "session": "s1", "task_id": "t1"},
                {"text": "one commit per change please", "tool": "codex", "project": "payroll",
                 "date": "2026-01-03", "session": "s2", "task_id": "t2"},
            ],
            "sessions": ["s1", "s2"],
        }
    ],
}  # fmt: skip


def _build(files: dict[str, bytes] | None = None, with_words: bool = False) -> sanitise.Publication:
    return build(
        "tidy", files or {"SKILL.md": SKILL}, "abc123", EVIDENCE, published_by="Ada", scope="project",
        with_words=with_words,
    )  # fmt: skip


def test_only_the_text_the_gate_figures_and_counts_leave() -> None:
    pub = _build()
    assert set(pub.files) == {"SKILL.md", RULE_FILE}
    record = json.loads(pub.files[RULE_FILE])
    assert record["gate"] == {
        "tier": "proven", "items": 6, "better": 4, "worse": 1, "tied": 1, "e_value": 21.5, "replays": 24
    }  # fmt: skip
    assert record["provenance"] == {"corrections": 2, "sessions": 2, "tools": 2}
    assert "words" not in record
    everything = pub.describe()
    for private in ("split this into two", "payroll", "t-secret-task", "/somewhere", "/srv/app", "s1"):
        assert private not in everything


def test_correction_words_only_when_asked() -> None:
    record = json.loads(_build(with_words=True).files[RULE_FILE])
    assert record["words"] == ["split this into two commits", "one commit per change please"]


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("- Deploy with AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "a secret"),
        ("- Use token ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the API", "a secret"),
        ("- Read the notes in /opt/team/notes.md first", "an absolute path"),
        ("- Keep logs in ~/worklogs", "an absolute path"),
        ("- Scripts live in C:\\tools\\build", "an absolute path"),
    ],
)
def test_anything_private_refuses_the_whole_publication(line: str, kind: str) -> None:
    with pytest.raises(UnsafeToPublish) as err:
        _build({"SKILL.md": SKILL + line.encode() + b"\n"})
    assert f"SKILL.md line 7 holds {kind}" in err.value.message
    assert line.split()[-1] not in err.value.message  # the message never repeats what it found


def test_the_home_folder_and_the_hostname_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sanitise.socket, "gethostname", lambda: "build-box-7.corp.example")
    with pytest.raises(UnsafeToPublish, match="hostname"):
        _build({"SKILL.md": SKILL + b"- Run the heavy tests on build-box-7 only\n"})
    monkeypatch.setenv("HOME", str(tmp_path / "ada"))
    with pytest.raises(UnsafeToPublish, match="home folder"):
        sanitise.check({"x.md": f"see {tmp_path / 'ada'}"})


def test_words_with_a_secret_are_refused_too() -> None:
    evidence = json.loads(json.dumps(EVIDENCE))
    evidence["provenance"][0]["learned_from"][0]["text"] = "use password=hunter2hunter2 for staging"
    with pytest.raises(UnsafeToPublish, match="skillopt-rule.json"):
        build(
            "tidy", {"SKILL.md": SKILL}, "h", evidence, published_by="Ada", scope="project", with_words=True
        )
    # without --with-words the words do not leave, so there is nothing to refuse
    build("tidy", {"SKILL.md": SKILL}, "h", evidence, published_by="Ada", scope="project")


def test_urls_and_relative_paths_are_not_mistaken_for_absolute_paths() -> None:
    sanitise.check(
        {"SKILL.md": "- See https://example.com/docs/a and run scripts/check.sh and/or make lint\n"}
    )


def test_a_binary_file_cannot_be_checked_so_it_is_refused() -> None:
    with pytest.raises(UnsafeToPublish, match="not text"):
        _build({"SKILL.md": SKILL, "logo.png": b"\x89PNG\xff\xfe"})

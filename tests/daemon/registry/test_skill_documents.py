"""SKILL.md parsing, exact round trip, validation with line numbers, and content-addressed bundles."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillopt_lib.errors import SkillFormatError
from skillopt_lib.skill import SkillBundle, SkillDoc, iter_skill_dirs, unified_diff

GOOD = "---\nname: my-skill\ndescription: Does a thing. Use when asked.\n---\n\n# Body\n"

# Text that includes the characters most likely to break a line-based parser.
_chars = st.characters(blacklist_categories=("Cs",))
_line = st.text(_chars, max_size=40)
_special = st.sampled_from(
    ["---", "---\r", "--- ", "\ufeff---", "\r\n", "\x85", "\u2028", "\x0c", "", "name: x"]
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_line, _special), max_size=12))
    seps = draw(st.lists(st.sampled_from(["\n", "\r\n", ""]), min_size=len(parts), max_size=len(parts)))
    return "".join(p + s for p, s in zip(parts, seps, strict=True))


@settings(max_examples=400, deadline=None)
@given(documents())
def test_parse_serialize_round_trip_is_exact(text: str) -> None:
    doc = SkillDoc.parse(text)
    assert doc.serialize() == text
    # Parsing what was serialized gives the same split, so hashes stay stable across loads.
    assert SkillDoc.parse(doc.serialize()) == doc


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=200).filter(str.strip),
    st.text(_chars, max_size=300),
)
def test_new_documents_round_trip_and_keep_their_fields(description: str, body: str) -> None:
    doc = SkillDoc.new("a-skill", description, body)
    again = SkillDoc.parse(doc.serialize())
    assert again == doc
    assert again.name == "a-skill"
    assert again.description == description


_names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12).filter(
    lambda p: p not in (".", "..")
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_names, st.binary(max_size=64), min_size=1, max_size=5))
def test_content_hash_depends_on_every_path_and_byte(files: dict[str, bytes]) -> None:
    bundle = SkillBundle(
        files={"SKILL.md": GOOD.encode(), **{f"references/{k}": v for k, v in files.items()}}
    )
    same = SkillBundle(files=dict(reversed(list(bundle.files.items()))))
    assert same.content_hash == bundle.content_hash
    assert bundle.with_file("SKILL.md", GOOD + "x").content_hash != bundle.content_hash
    first = sorted(files)[0]
    moved = dict(bundle.files)
    moved[f"assets/{first}"] = moved.pop(f"references/{first}")
    assert SkillBundle(files=moved).content_hash != bundle.content_hash
    flipped = dict(bundle.files)
    flipped[f"references/{first}"] = files[first] + b"\0"
    assert SkillBundle(files=flipped).content_hash != bundle.content_hash


def test_frontmatter_bytes_survive_untouched() -> None:
    text = "---\r\nname:   my-skill   # comment\r\ndescription: 'quoted: yes'\r\n---\r\nbody\r\n"
    doc = SkillDoc.parse(text)
    assert doc.head == "---\r\nname:   my-skill   # comment\r\ndescription: 'quoted: yes'\r\n---\r\n"
    assert doc.name == "my-skill"
    assert doc.description == "quoted: yes"
    assert doc.with_body("new\r\n").serialize().startswith(doc.head)


def test_a_fence_hidden_behind_a_unicode_line_separator_is_not_a_fence() -> None:
    # YAML and editors see one line here; splitting on U+2028 used to end the frontmatter early.
    text = "---\nname: my-skill\ndescription: a\u2028---\nmore\n---\nbody\n"
    doc = SkillDoc.parse(text)
    assert doc.body == "body\n"


def _issues(text: str, folder: str | None = None) -> list[tuple[int, str]]:
    return [(i.line, i.rule) for i in SkillDoc.parse(text).validate(folder)]


def test_valid_document_has_no_issues() -> None:
    assert _issues(GOOD, "my-skill") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# just markdown\n", [(1, "frontmatter")]),
        ("---\nname: x\n", [(1, "frontmatter")]),
        ("---\nname: my-skill\ndescription: [unclosed\n---\n", [(3, "frontmatter-yaml")]),
        ("---\n- a\n- b\n---\n", [(2, "frontmatter-mapping")]),
        ("---\ndescription: d\n---\n", [(1, "name-required")]),
        ("---\nname: My_Skill\ndescription: d\n---\n", [(2, "name-format")]),
        ("---\nname: bad--name\ndescription: d\n---\n", [(2, "name-format")]),
        ("---\nname: -bad\ndescription: d\n---\n", [(2, "name-format")]),
        ("---\nname: " + "a" * 65 + "\ndescription: d\n---\n", [(2, "name-length")]),
        ("---\nname: my-skill\n---\n", [(1, "description-required")]),
        ("---\nname: my-skill\n\ndescription: '   '\n---\n", [(4, "description-required")]),
        ("---\nname: my-skill\ndescription: " + "d" * 1025 + "\n---\n", [(3, "description-length")]),
        ("---\nname: my-skill\ndescription: [a, b]\n---\n", [(3, "description-format")]),
        ("---\nname: my-skill\ndescription: d\nmetadata: [1]\n---\n", [(4, "metadata-map")]),
        (
            "---\nname: my-skill\ndescription: d\ncompatibility: " + "c" * 501 + "\n---\n",
            [(4, "compatibility-length")],
        ),
        ("---\nname: 12\ndescription: d\n---\n", [(2, "name-format")]),
    ],
)
def test_each_broken_rule_is_reported_on_its_line(text: str, expected: list[tuple[int, str]]) -> None:
    assert _issues(text) == expected


def test_name_must_match_folder_and_message_names_line_and_rule() -> None:
    issues = SkillDoc.parse(GOOD).validate("other-name")
    assert [(i.line, i.rule) for i in issues] == [(2, "name-matches-folder")]
    assert (
        str(issues[0])
        == "SKILL.md line 2: 'name' 'my-skill' must equal the folder name 'other-name' [name-matches-folder]"
    )


def test_all_issues_are_reported_at_once() -> None:
    text = "---\nname: Bad Name\ndescription: ''\n---\n"
    assert _issues(text) == [(2, "name-format"), (3, "description-required")]


def test_require_valid_raises_a_skill_format_error_listing_lines() -> None:
    bundle = SkillBundle.from_text("---\nname: Bad\n---\n")
    with pytest.raises(SkillFormatError) as exc:
        bundle.require_valid("Bad")
    assert "line 2" in exc.value.message and "name-format" in exc.value.message
    assert exc.value.exit_code == 9


def test_name_is_immutable_but_other_keys_change() -> None:
    doc = SkillDoc.parse(GOOD)
    with pytest.raises(SkillFormatError):
        doc.with_frontmatter(name="renamed")
    changed = doc.with_frontmatter(description="New.")
    assert changed.description == "New." and changed.name == "my-skill" and changed.body == doc.body


def test_from_path_keeps_bytes_exactly(tmp_path: Path) -> None:
    raw = GOOD.replace("\n", "\r\n").encode()
    lone = tmp_path / "SKILL.md"
    lone.write_bytes(raw)
    assert SkillBundle.from_path(lone).files["SKILL.md"] == raw
    folder = tmp_path / "my-skill"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_bytes(raw)
    (folder / "scripts" / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (folder / ".DS_Store").write_bytes(b"junk")
    bundle = SkillBundle.from_path(folder)
    assert bundle.files == {"SKILL.md": raw, "scripts/run.sh": b"#!/bin/sh\necho hi\n"}
    out = bundle.materialize(tmp_path / "copy")
    assert SkillBundle.from_path(out).content_hash == bundle.content_hash


def test_symlinks_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "my-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(GOOD)
    (folder / "secret").symlink_to("/etc/hostname")
    with pytest.raises(SkillFormatError, match="symlink"):
        SkillBundle.from_path(folder)


@pytest.mark.parametrize(
    "path", ["/abs", "../up", "a/../b", "a//b", "./a", "a/./b", "", "a\\b", "a\nb", "dir/"]
)
def test_bundle_paths_must_be_normalized_and_inside(path: str) -> None:
    with pytest.raises(SkillFormatError):
        SkillBundle(files={path: b"x"})


def test_diff_shows_changes_new_files_binary_and_missing_newline() -> None:
    old = SkillBundle(files={"SKILL.md": b"a\nb\n", "gone.txt": b"bye\n", "bin": b"\xff\x00"})
    new = SkillBundle(files={"SKILL.md": b"a\nc", "new.md": b"hi\n", "empty.md": b"", "bin": b"\xfe\x00"})
    text = unified_diff(old, new, "v1", "v2")
    assert "--- v1/SKILL.md\n+++ v2/SKILL.md\n" in text
    assert "+c\n\\ No newline at end of file\n" in text
    assert "--- /dev/null\n+++ v2/new.md\n" in text
    assert "--- v1/gone.txt\n+++ /dev/null\n" in text
    assert "Binary file bin differs\n" in text
    assert "New empty file empty.md\n" in text
    assert unified_diff(new, new) == ""


def test_skill_folders_are_listed_without_hidden_staging_folders(tmp_path: Path) -> None:
    for name in ("b-skill", "a-skill", ".a-skill.skillopt-1.new"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(GOOD)
    (tmp_path / "no-skill").mkdir()
    assert [d.name for d in iter_skill_dirs(tmp_path)] == ["a-skill", "b-skill"]

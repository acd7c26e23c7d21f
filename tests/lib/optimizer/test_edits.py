"""Edit operations: exact, then whitespace-insensitive anchors; conflicts, not guesses; protected regions."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from skillopt_lib.edits import (
    Edit,
    apply_edits,
    changed_tokens,
    count_tokens,
    get_protected_region,
    parse_edits,
    set_protected_region,
)
from skillopt_lib.skill import SkillBundle, SkillDoc

BODY = """
# Deploy

Run the tests before you push.
Use   the staging   cluster for previews.

## Notes
Keep commits small.
"""


def bundle(body: str = BODY, **extra: bytes) -> SkillBundle:
    doc = SkillDoc.new("deploy", "How we deploy.", body)
    files = {k.replace("__", "/").replace("_md", ".md"): v for k, v in extra.items()}
    return SkillBundle.from_doc(doc, files)


def test_append_adds_a_paragraph_at_the_end() -> None:
    new, applied, conflicts = apply_edits(bundle(), [Edit(op="append", content="Tag every release.")])
    assert conflicts == [] and len(applied) == 1
    assert new.doc.body.endswith("Keep commits small.\n\nTag every release.\n")
    assert new.doc.head == bundle().doc.head


def test_insert_after_goes_on_the_next_line() -> None:
    edit = Edit(op="insert_after", target="Run the tests before you push.", content="Lint too.")
    new, _, conflicts = apply_edits(bundle(), [edit])
    assert not conflicts
    assert "Run the tests before you push.\nLint too.\nUse" in new.doc.body


def test_replace_matches_ignoring_whitespace_when_not_exact() -> None:
    edit = Edit(op="replace", target="Use the staging cluster for previews.", content="Use preview-2.")
    new, applied, conflicts = apply_edits(bundle(), [edit])
    assert not conflicts and applied == [edit]
    assert "Use preview-2." in new.doc.body
    assert "staging" not in new.doc.body


def test_delete_removes_the_text() -> None:
    new, _, conflicts = apply_edits(bundle(), [Edit(op="delete", target="Keep commits small.")])
    assert not conflicts
    assert "Keep commits small" not in new.doc.body


def test_missing_anchor_is_a_conflict_and_nothing_changes() -> None:
    edit = Edit(op="insert_after", target="Deploy on Fridays.", content="Never.")
    new, applied, conflicts = apply_edits(bundle(), [edit])
    assert applied == []
    assert [c.kind for c in conflicts] == ["missing-anchor"]
    assert new.content_hash == bundle().content_hash


def test_ambiguous_anchor_is_a_conflict() -> None:
    body = "# T\n\nCheck it.\nCheck it.\n"
    _, applied, conflicts = apply_edits(bundle(body), [Edit(op="replace", target="Check it.", content="x")])
    assert applied == [] and conflicts[0].kind == "ambiguous-anchor"
    assert "2 times" in conflicts[0].detail


def test_protected_region_cannot_be_edited_but_can_be_set() -> None:
    guarded = set_protected_region(bundle(), "Always run the tests.")
    assert get_protected_region(guarded) == "Always run the tests."
    assert guarded.doc.body.index("skillopt:guidance:start") < guarded.doc.body.index("Run the tests")
    for edit in (
        Edit(op="replace", target="Always run the tests.", content="Skip tests."),
        Edit(op="delete", target="Always run the tests."),
        Edit(op="insert_after", target="Always run the tests.", content="x"),
    ):
        new, applied, conflicts = apply_edits(guarded, [edit])
        assert applied == [] and conflicts[0].kind == "protected-region", edit
        assert new.content_hash == guarded.content_hash
    # Content may not forge region markers either.
    forged = Edit(op="append", content="<!-- skillopt:guidance:start -->\nx\n<!-- skillopt:guidance:end -->")
    assert apply_edits(guarded, [forged])[2][0].kind == "marker-in-content"
    # Setting it again replaces the region in place.
    again = set_protected_region(guarded, "Run the tests twice.")
    assert again.doc.body.count("skillopt:guidance:start") == 1
    assert get_protected_region(again) == "Run the tests twice."


def test_frontmatter_name_cannot_change_through_edits() -> None:
    edit = Edit(op="replace", target="name: deploy", content="name: other")
    new, applied, conflicts = apply_edits(bundle(), [edit])
    assert applied == [] and conflicts[0].kind == "missing-anchor"
    assert new.name == "deploy"


def test_edits_apply_in_order_and_to_other_text_files() -> None:
    b = bundle(references__style_md=b"Use tabs.\n")
    edits = [
        Edit(op="append", content="First."),
        Edit(op="insert_after", target="First.", content="Second."),
        Edit(op="replace", target="Use tabs.", content="Use spaces.", file="references/style.md"),
        Edit(op="replace", target="x", content="y", file="references/missing.md"),
    ]
    new, applied, conflicts = apply_edits(b, edits)
    assert len(applied) == 3
    assert new.doc.body.endswith("First.\nSecond.\n")
    assert new.files["references/style.md"] == b"Use spaces.\n"
    assert [c.kind for c in conflicts] == ["unknown-file"]


def test_binary_files_are_not_edited() -> None:
    b = bundle(assets__logo_png=b"\xff\xd8\xff\x00")
    _, applied, conflicts = apply_edits(b, [Edit(op="append", content="x", file="assets/logo_png")])
    assert applied == [] and conflicts[0].kind == "binary-file"


def test_schema_rejects_incomplete_edits_and_escaping_paths() -> None:
    with pytest.raises(ValidationError):
        Edit(op="replace", content="x")
    with pytest.raises(ValidationError):
        Edit(op="delete", target="   ")
    with pytest.raises(ValidationError):
        Edit(op="append", content="x", file="../outside.md")
    kept = parse_edits([{"op": "append", "content": "ok"}, {"op": "replace"}, {"op": "frobnicate"}])
    assert [e.content for e in kept] == ["ok"]


def test_token_counts_measure_the_change() -> None:
    assert count_tokens("Use the staging cluster.") == 5
    assert changed_tokens("Use the staging cluster.", "Use the preview cluster.") == 1
    assert Edit(op="append", content="one two three").tokens() == 3
    assert Edit(op="delete", target="a b").tokens() == 2
    assert Edit(op="replace", target="a b c", content="a x c").tokens() == 1


def test_key_ignores_case_and_whitespace() -> None:
    a = Edit(op="append", content="Write dates  as DD.MM.YYYY.")
    b = Edit(op="append", content="write dates as dd.mm.yyyy.", source_type="success")
    assert a.key() == b.key()


def test_combine_prefers_failure_driven_edits_and_drops_rejected_ideas() -> None:
    from skillopt_lib.aggregate import combine
    from skillopt_lib.selection import fallback_order

    fail = [
        Edit(op="replace", target="Keep commits small.", content="Squash commits.", source_type="failure"),
        Edit(op="append", content="Tag releases.", source_type="failure"),
    ]
    succ = [
        Edit(op="replace", target="keep commits  small.", content="Commit often.", source_type="success"),
        Edit(op="append", content="tag releases.", source_type="success"),
        Edit(op="append", content="Never deploy on Friday.", source_type="success"),
    ]
    rejected = {Edit(op="append", content="Never deploy on Friday.").key()}
    kept, dropped = combine(fail, succ, rejected)
    assert [e.content for e in kept] == ["Squash commits.", "Tag releases."]
    assert kept[1].support_count == 2
    why = {e.content: reason for e, reason in dropped}
    assert why["Commit often."] == "conflicts with a failure-driven edit"
    assert why["Never deploy on Friday."] == "already tried and rejected"
    order = fallback_order([succ[2], Edit(op="append", content="x", support_count=3), fail[1]])
    assert [e.content for e in order] == ["x", "Tag releases.", "Never deploy on Friday."]

"""Managed sections: skillopt's text inside a user's file, replaced and removed without touching the rest."""

from __future__ import annotations

import pytest

from skillopt_daemon.registry.installers import managed_section as ms
from skillopt_lib.errors import ConflictError

USER_TEXT = "# My project\n\nUse tabs.\n"


def test_append_then_remove_gives_back_the_users_bytes() -> None:
    with_section = ms.upsert(USER_TEXT, "skillopt", "Use skillopt.\n")
    assert with_section.startswith(USER_TEXT)
    assert "<!-- skillopt:begin skillopt hash=" in with_section
    assert with_section.endswith("<!-- skillopt:end skillopt -->\n")
    assert ms.remove(with_section, "skillopt") == USER_TEXT


def test_upsert_is_idempotent_and_replaces_in_place() -> None:
    once = ms.upsert(USER_TEXT, "skillopt", "v1")
    assert ms.upsert(once, "skillopt", "v1") == once
    around = once + "\n## Later notes\nkeep me\n"
    updated = ms.upsert(around, "skillopt", "v2")
    assert "v2" in updated and "v1" not in updated
    assert updated.endswith("## Later notes\nkeep me\n")
    assert updated.startswith(USER_TEXT)


def test_an_edited_section_is_neither_replaced_nor_removed_without_force() -> None:
    text = ms.upsert(USER_TEXT, "skillopt", "original pointer")
    edited = text.replace("original pointer", "my own words")
    found = ms.find(edited, "skillopt")
    assert found is not None and found.edited
    with pytest.raises(ConflictError):
        ms.upsert(edited, "skillopt", "new pointer")
    with pytest.raises(ConflictError):
        ms.remove(edited, "skillopt")
    assert ms.remove(edited, "skillopt", force=True) == USER_TEXT
    assert "new pointer" in ms.upsert(edited, "skillopt", "new pointer", force=True)


def test_broken_markers_are_reported_not_guessed() -> None:
    text = ms.upsert(USER_TEXT, "skillopt", "x").replace("<!-- skillopt:end skillopt -->\n", "")
    with pytest.raises(ms.ManagedSectionError):
        ms.upsert(text, "skillopt", "y")


def test_sections_with_other_names_are_independent() -> None:
    text = ms.upsert(ms.upsert("", "a", "alpha"), "b", "beta")
    assert ms.remove(text, "a").count("beta") == 1
    assert ms.find(ms.remove(text, "a"), "a") is None


def test_crlf_files_keep_their_text() -> None:
    text = "line one\r\nline two\r\n"
    assert ms.remove(ms.upsert(text, "skillopt", "p"), "skillopt") == text

"""Approved skills as Devin Knowledge and Playbook request bodies."""

from __future__ import annotations

import json

from integ_helpers import Env, approve_skill, propose_skill

from skillopt_daemon.integrations import devin_export
from skillopt_lib.skill import SkillBundle, SkillDoc


def test_knowledge_and_playbook_bodies_carry_the_skill() -> None:
    bundle = SkillBundle.from_doc(
        SkillDoc.new("py-tests", "Use when running Python tests.", "# Tests\nRun pytest -q.\n")
    ).with_file("references/flags.md", "-x stops at the first failure\n")
    k = devin_export.knowledge_entry(bundle, label="py-tests@v3", pinned_repo="acme/api").to_json()
    assert k["name"] == "py-tests"
    assert k["trigger_description"] == "Use when running Python tests."
    assert k["pinned_repo"] == "acme/api"
    assert "Run pytest -q." in k["body"] and "## references/flags.md" in k["body"]
    assert "---" not in k["body"].splitlines()[0], "frontmatter is not part of the content"
    p = devin_export.playbook(bundle).to_json()
    assert p["title"] == "py-tests" and p["macro"] == "!py-tests"
    assert p["body"].startswith("Purpose: Use when running Python tests.")


def test_export_writes_only_approved_versions(env: Env, cli) -> None:
    approve_skill(
        "py-tests", "Use when running Python tests.", "Run pytest -q.\n", f"devin:project:{env.project}"
    )
    propose_skill("lint", "Use when linting.", "run ruff\n")
    out = env.project / "export"
    res = cli("devin-export", "--out", str(out), "--json")
    assert res.code == 0, res.err
    done = json.loads(res.out)
    assert [d["skill"] for d in done] == ["py-tests"]
    knowledge = json.loads((out / "knowledge" / "py-tests.json").read_text())
    assert set(knowledge) == {"name", "body", "trigger_description"}
    playbook = json.loads((out / "playbooks" / "py-tests.json").read_text())
    assert set(playbook) == {"title", "body", "macro"}
    res = cli("devin-export", "lint", "--out", str(out))
    assert res.code == 3 and "no approved version" in res.err

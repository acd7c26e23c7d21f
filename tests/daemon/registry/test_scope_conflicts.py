"""A proposal that says the opposite of a rule installed in another scope is flagged in review, with which
one wins where: the project rule in its repository."""

from __future__ import annotations

import json
from typing import Any

from skillopt_daemon.night.mining import conflicts
from tests.daemon.registry.test_scope_review import evidence, git_repo


def skill(name: str, rule: str) -> str:
    return f"---\nname: {name}\ndescription: Changelog entries. Use when editing CHANGELOG.md.\n---\n\n- {rule}\n"


TOP = "Changelog entries go at the top of CHANGELOG.md, newest first."
END = "Append changelog entries to the end of CHANGELOG.md."


def test_opposite_words_about_one_subject_are_a_contradiction() -> None:
    assert conflicts.opposed(TOP, END)
    assert conflicts.opposed("Never use # noqa comments.", "It's fine to use noqa comments in tests.")
    assert conflicts.opposed("Indent Makefiles with tabs.", "Indent Makefiles with spaces.")
    assert not conflicts.opposed(TOP, "Append a line to the end of the README.")  # another subject
    assert not conflicts.opposed(TOP, "Changelog entries name the issue they fix.")  # no opposite
    assert not conflicts.opposed(END, "Add changelog entries to the end of CHANGELOG.md.")  # the same
    # Words of order in a sequence are not places: no contradiction.
    assert not conflicts.opposed("Run ruff first, before committing.", "Run mypy after ruff, last.")


def install(env: Any, name: str, rule: str, *args: str) -> None:
    cand = env.candidate(skill(name, rule), name=name)
    ev = {"new_skill": True, "tool": "claude-code"}
    pid = env.cli_json("propose", name, str(cand), "--evidence", json.dumps(ev))["id"]
    env.cli("approve", pid, *args, check=True)


def propose(env: Any, name: str, rule: str, ev: dict[str, Any]) -> str:
    cand = env.candidate(skill(name, rule), name=name)
    return str(env.cli_json("propose", name, str(cand), "--evidence", json.dumps(ev))["id"])


def test_a_project_rule_against_a_user_rule_says_the_project_one_wins_in_its_repository(env: Any) -> None:
    app = git_repo(env.root / "app")
    install(env, "changelog-end", END, "--scope", "user")
    pid = propose(env, "changelog-top", TOP, evidence(app))
    (item,) = env.cli_json("status")["pending"]["items"]
    (c,) = item["conflicts"]
    assert c["skill"] == "changelog-end" and c["where"] == "user scope"
    assert c["theirs"] == END and c["ours"] == TOP
    assert c["wins"] == f"this proposal's rule wins in {app}; the installed one elsewhere"
    said = f"contradicts changelog-end installed in user scope: '{END}' vs '{TOP}'"
    assert said in " ".join(env.cli("status").stdout.split())
    assert said in " ".join(env.cli("diff", pid).stderr.split())


def test_a_user_rule_against_another_repositorys_project_rule(env: Any) -> None:
    app, web = git_repo(env.root / "app"), git_repo(env.root / "web")
    install(env, "changelog-end", END, "--scope", "project", "--repo", str(web))
    ev = evidence(app)
    ev["scope"] = {**ev["scope"], "scope": "user", "targets": ["claude-code:user"]}
    propose(env, "changelog-top", TOP, ev)
    (c,) = env.cli_json("status")["pending"]["items"][0]["conflicts"]
    assert c["where"] == f"project scope in {web}"
    assert c["wins"] == f"the installed rule wins in {web}; this one elsewhere"
    # Two projects' rules: each only in its own repository.
    env.cli("reject", env.cli_json("status")["pending"]["items"][0]["id"], "--reason", "either", check=True)
    propose(env, "changelog-first", TOP, evidence(app))
    (c,) = env.cli_json("status")["pending"]["items"][0]["conflicts"]
    assert c["wins"] == "each holds only in its own repository"


def test_rules_that_agree_are_not_flagged_and_two_in_one_place_are(env: Any) -> None:
    app = git_repo(env.root / "app")
    install(env, "changelog-issue", "Changelog entries name the issue they fix.", "--scope", "user")
    install(env, "changelog-end", END, "--scope", "project", "--repo", str(app))
    propose(env, "changelog-top", TOP, evidence(app))
    (c,) = env.cli_json("status")["pending"]["items"][0]["conflicts"]
    assert c["skill"] == "changelog-end"
    assert c["wins"] == "both apply in the same place: review which one the agents should follow"


def test_the_dashboards_proposal_page_shows_the_contradiction(env: Any) -> None:
    from fastapi.testclient import TestClient

    from skillopt_daemon.core.config import load_settings
    from skillopt_daemon.service.dashboard import ensure_token
    from skillopt_daemon.web.app import create_app

    app = git_repo(env.root / "app")
    install(env, "changelog-end", END, "--scope", "user")
    pid = propose(env, "changelog-top", TOP, evidence(app))
    token = ensure_token()
    with TestClient(create_app(load_settings()), base_url="http://127.0.0.1:8765") as client:
        assert client.get(f"/?token={token}", follow_redirects=False).status_code == 303
        page = client.get(f"/proposals/{pid}").text
    assert 'id="proposal-conflicts"' in page
    assert "contradicts changelog-end installed in user scope" in page

"""The team policy: who may publish which scopes, written by init and read back the same."""

from __future__ import annotations

import pytest

from skillopt_daemon.team.policy import PolicyError, TeamPolicy


def test_what_init_writes_reads_back_the_same() -> None:
    policy = TeamPolicy(("ada@example.com", "Bo"), ("project",), False, "rules")
    assert TeamPolicy.parse(policy.to_toml()) == policy


def test_publishers_and_scopes_are_enforced() -> None:
    policy = TeamPolicy(("ada@example.com",), ("project",))
    policy.check("Ada", "ADA@example.com", "project")
    with pytest.raises(PolicyError, match="does not list you"):
        policy.check("Eve", "eve@example.com", "project")
    with pytest.raises(PolicyError, match="does not allow user-scope"):
        policy.check("Ada", "ada@example.com", "user")
    TeamPolicy().check("anyone", "", "user")  # no publishers listed: anyone who can push


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[team\n", "not valid TOML"),
        ('[team]\nscopes = ["global"]\n', "unknown scope"),
        ("[team]\npublishers = 3\n", "list of strings"),
        ('[team]\nreverify = "yes"\n', "true or false"),
        ('[team]\nfolder = "../outside"\n', "relative folder"),
    ],
)
def test_a_bad_policy_is_a_clear_error(text: str, says: str) -> None:
    with pytest.raises(PolicyError, match=says):
        TeamPolicy.parse(text)

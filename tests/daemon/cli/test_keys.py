"""`skillopt keys`: a key kept for a daemon that no shell of the user's starts, read from a prompt or stdin,
stored 0600, never printed; and the warnings of `doctor` and `daemon install-service` when the night's
optimizer key is in neither the environment nor the keys file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testkit import cli

SECRET = "sk-test-keys-0123456789abcdef"


class Env:
    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.home.mkdir()
        self.skillopt_home = root / "so"
        base = {
            k: v for k, v in os.environ.items() if not k.startswith(("SKILLOPT_", "OPENAI_", "ANTHROPIC_"))
        }
        self.env = {**base, "HOME": str(self.home), "SKILLOPT_HOME": str(self.skillopt_home)}
        self.env.pop("MY_OPT_KEY", None)

    def run(self, *args: str, stdin: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        return cli.run(*args, env={**self.env, **extra}, input=stdin, timeout=120)

    def json(self, *args: str, **extra: str) -> Any:
        proc = self.run(*args, "--json", **extra)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    @property
    def keys_file(self) -> Path:
        return self.skillopt_home / "data" / "keys.json"


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_a_key_is_read_from_stdin_stored_0600_and_never_printed(env: Env) -> None:
    stored = env.run("keys", "set", "OPENAI_API_KEY", stdin=SECRET + "\n")
    assert stored.returncode == 0, stored.stderr
    assert SECRET not in stored.stdout + stored.stderr
    assert stat.S_IMODE(env.keys_file.stat().st_mode) == 0o600
    assert json.loads(env.keys_file.read_text())["OPENAI_API_KEY"] == SECRET
    listed = env.run("keys", "list", "--json")
    assert json.loads(listed.stdout) == [{"name": "OPENAI_API_KEY", "in_environment": False}]
    assert SECRET not in listed.stdout and SECRET not in env.run("keys", "list").stdout
    assert env.run("keys", "path").stdout.strip() == str(env.keys_file)

    # a backend's name stands for its usual variable
    assert env.run("keys", "set", "anthropic", stdin="sk-ant-other-0123456789\n").returncode == 0
    assert [k["name"] for k in env.json("keys", "list")] == ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]

    removed = env.run("keys", "remove", "OPENAI_API_KEY")
    assert removed.returncode == 0 and "OPENAI_API_KEY" in removed.stdout
    assert [k["name"] for k in env.json("keys", "list")] == ["ANTHROPIC_API_KEY"]
    again = env.run("keys", "remove", "OPENAI_API_KEY")
    assert again.returncode == 3 and "skillopt keys list" in again.stderr


def test_an_empty_key_or_a_bad_name_stores_nothing_and_says_what_to_do(env: Env) -> None:
    empty = env.run("keys", "set", "OPENAI_API_KEY", stdin="\n")
    assert empty.returncode == 6 and "nothing was stored" in empty.stderr
    bad = env.run("keys", "set", "not a name", stdin=SECRET + "\n")
    assert bad.returncode == 6 and "OPENAI_API_KEY" in bad.stderr
    assert not env.keys_file.exists()
    assert env.json("keys", "list") == []


def _configure_optimizer(env: Env) -> None:
    for key, value in {
        "optimizer.backend": "openai",
        "optimizer.model": "gpt-5.5",
        "optimizer.api_key_env": "MY_OPT_KEY",
    }.items():
        assert env.run("config", "set", key, value).returncode == 0


def test_doctor_warns_when_the_optimizers_key_is_in_neither_place(env: Env) -> None:
    _configure_optimizer(env)

    def key_checks() -> dict[str, dict[str, str]]:
        checks = env.json("doctor")["checks"]
        return {c["name"]: c for c in checks if c["group"] == "API keys"}

    missing = key_checks()
    assert missing["optimizer"]["level"] == "warn"
    assert "neither set in the environment nor stored" in missing["optimizer"]["detail"]
    assert "skillopt keys set MY_OPT_KEY" in missing["optimizer"]["detail"]
    assert missing["MY_OPT_KEY"]["detail"] == "not set"

    assert env.run("keys", "set", "MY_OPT_KEY", stdin=SECRET + "\n").returncode == 0
    found = key_checks()
    assert "optimizer" not in found
    assert found["MY_OPT_KEY"] == {**found["MY_OPT_KEY"], "level": "ok", "detail": "in the keys file"}
    assert SECRET not in env.run("doctor").stdout


def test_install_service_warns_about_a_key_the_service_will_not_see(env: Env) -> None:
    _configure_optimizer(env)
    args = ("daemon", "install-service", "--platform", "linux")
    nowhere = env.json(*args)["warnings"]
    assert any("MY_OPT_KEY is neither set" in w and "skillopt keys set MY_OPT_KEY" in w for w in nowhere)
    shell_only = env.json(*args, MY_OPT_KEY=SECRET)["warnings"]
    assert any("set in this shell only; the service will not see it" in w for w in shell_only), shell_only
    text = env.run(*args, MY_OPT_KEY=SECRET)
    assert "MY_OPT_KEY" in text.stderr and SECRET not in text.stdout + text.stderr
    unit = Path(env.json(*args, MY_OPT_KEY=SECRET)["path"]).read_text()
    assert SECRET not in unit  # the key never goes into the service file

    assert env.run("keys", "set", "MY_OPT_KEY", stdin=SECRET + "\n").returncode == 0
    assert not any("MY_OPT_KEY" in w for w in env.json(*args)["warnings"])

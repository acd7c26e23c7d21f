"""Training configuration (files, overrides, secrets) and the rollout executor."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from skillopt_lib.config import Redactor, TrainConfig, config_secrets, load_config, masked_dump
from skillopt_lib.errors import ConfigError
from skillopt_lib.executor import LocalExecutor, make_executor
from skillopt_lib.reflect import parse_json_object


def test_toml_and_yaml_configs_with_dotted_overrides(tmp_path: Path) -> None:
    toml = tmp_path / "train.toml"
    toml.write_text('env = "house-style"\nepochs = 3\n[gate]\nkind = "strict"\n[agent]\nmodel = "a"\n')
    cfg = load_config(toml, ["gate.confidence=0.9", "learning_rate.schedule=linear", "agent.temperature=0"])
    assert cfg.epochs == 3 and cfg.gate.kind == "strict" and cfg.gate.confidence == 0.9
    assert cfg.learning_rate.schedule == "linear" and cfg.agent.temperature == 0.0
    yaml_file = tmp_path / "train.yaml"
    yaml_file.write_text("train:\n  env: house-style\n  gate: {repeats: 5}\n")
    assert load_config(yaml_file).gate.repeats == 5


@pytest.mark.parametrize(
    ("text", "override", "needle"),
    [
        ("epochs = 2\nepohcs = 3\n", None, "unknown configuration key 'epohcs'"),
        ("[gate]\nconfidence = 2\n", None, "gate.confidence"),
        ("epochs = [", None, "not valid TOML"),
        ("", "gate", "bad override"),
    ],
)
def test_config_mistakes_name_the_key(tmp_path: Path, text: str, override: str | None, needle: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path, [override] if override else [])
    assert needle in err.value.message


def test_secrets_are_masked_by_name_and_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_QWEN", "qwen-secret-value-123")
    cfg = TrainConfig.model_validate(
        {
            "agent": {"api_key": "literal-secret-999", "model": "m", "max_tokens": 100},
            "optimizer": {"api_key_env": "MY_QWEN", "options": {"AzureAdToken": "azure-tok-42424242"}},
            "env_options": {"note": "uses sk-abcdefghijklmnop123456 inline"},
        }
    )
    dumped = masked_dump(cfg)
    assert dumped["agent"]["api_key"] == "****" and dumped["agent"]["max_tokens"] == 100
    assert dumped["optimizer"]["api_key_env"] == "MY_QWEN"
    assert dumped["optimizer"]["options"]["AzureAdToken"] == "****"
    assert "sk-abc" not in dumped["env_options"]["note"]
    red = Redactor(config_secrets(cfg))
    text = red.text("key literal-secret-999 env qwen-secret-value-123 tok azure-tok-42424242")
    assert "literal" not in text and "qwen-secret" not in text and "azure-tok" not in text


def test_json_repair_handles_what_models_write() -> None:
    assert parse_json_object('```json\n{"a": 1,}\n```') == {"a": 1}
    assert parse_json_object('Sure! {"edits": [{"op": "append", "content": "x"},]} Hope it helps.')["edits"]
    assert parse_json_object("{'a': True}".replace("'", '"')) == {"a": True}
    assert parse_json_object('{"keep": [0, 1]') == {"keep": [0, 1]}
    with pytest.raises(ValueError):
        parse_json_object("no json here")


def test_local_executor_keeps_order_bounds_concurrency_and_raises() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def work(x: int) -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.01 * (5 - x % 5))
        with lock:
            active -= 1
        return x * x

    with LocalExecutor(3) as ex:
        assert ex.map(work, list(range(12))) == [x * x for x in range(12)]
        assert peak <= 3 and peak >= 2

        def boom(x: int) -> int:
            if x == 4:
                raise RuntimeError("item 4 broke")
            return x

        with pytest.raises(RuntimeError, match="item 4"):
            ex.map(boom, list(range(8)))
    with pytest.raises(ConfigError):
        make_executor("warp-drive", 2)


def test_run_files_write_bundles_privately_and_redacted(tmp_path: Path) -> None:
    from skillopt_lib.skill import SkillBundle, SkillDoc
    from skillopt_lib.training.runfiles import RunFiles

    doc = SkillDoc.new("multi", "A skill with references.", "# Multi\n\nSee references/notes.md.\n")
    bundle = SkillBundle.from_doc(doc, {"references/notes.md": b"token literal-secret-999 here\n"})
    files = RunFiles(tmp_path / "run", Redactor(["literal-secret-999"]))
    files.write_skill("best_skill", bundle)
    assert (tmp_path / "run" / "best_skill.md").read_text() == doc.serialize()
    notes = tmp_path / "run" / "best_skill" / "references" / "notes.md"
    assert notes.read_text() == "token **** here\n"
    assert notes.stat().st_mode & 0o077 == 0 and (tmp_path / "run").stat().st_mode & 0o077 == 0
    assert files.append_history({"k": "literal-secret-999"}) == 1
    assert "literal-secret" not in files.history_path.read_text()
    files.append_history({"k": 2})
    files.truncate_history(1)
    assert files.history() == [{"k": "****"}]

"""The trainer's history records against their type: every key a record has is one `HistoryRecord`
declares, so the readers that mypy checks against it (the night, the dashboard, `skillopt train`) read what
the trainer writes."""

from __future__ import annotations

import json
from pathlib import Path

from optimizer_support import overrides

import skillopt_lib
from skillopt_lib.envs.toy import HouseStyleEnv
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.training.records import RunSummary
from skillopt_lib.training.runfiles import HISTORY_KEYS, read_history


def test_every_key_the_trainer_writes_is_declared(
    server: ScriptedServer, env: HouseStyleEnv, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    result = skillopt_lib.train(env, None, run_dir=run, overrides=overrides(server, "openai", "anthropic"))
    records = read_history(run)
    # The value a run hands its caller is what its folder holds, read back through JSON: a caller that
    # reads the value (the night) and a face that reads the folder (the dashboard) see one history.
    assert list(result.steps) == records
    assert json.loads((run / "summary.json").read_text(encoding="utf-8")) == result.summary
    assert set(result.summary) == set(RunSummary.__annotations__)
    kinds = {r.get("kind") for r in records}
    assert {"baseline", "step", "slow_update", "meta_notes", "test"} <= kinds
    for rec in records:
        unknown = set(rec) - HISTORY_KEYS
        assert not unknown, f"a {rec.get('kind')} record has keys HistoryRecord does not declare: {unknown}"

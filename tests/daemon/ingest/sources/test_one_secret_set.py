"""One set of secret patterns: what ingest redacts from transcripts is also masked in the trainer's run files
(config dumps, history lines), and a pattern added to the set is used by both."""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest

from skillopt_daemon.ingest.redact import Redactor as IngestRedactor
from skillopt_lib import secrets
from skillopt_lib.config import Redactor as RunRedactor
from skillopt_lib.config import masked_dump
from skillopt_lib.training.runfiles import RunFiles

from .secrets_corpus import ALNUM, UPPER_NUM, Secret, make_secrets


def _variants(seed: int) -> list[Secret]:
    """Every prefix and length ingest accepts for the keys whose forms vary: each AWS key prefix, each
    GitHub token prefix at the shortest and a longer length, each Slack token kind."""
    rng = random.Random(seed)

    def r(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n - 1)) + rng.choice(string.digits)

    out = [
        Secret("aws-access-key", key, f"AWS_ID {key} here")
        for key in (p + r(UPPER_NUM, 16) for p in ("AKIA", "ASIA", "ABIA", "ACCA"))
    ]
    for prefix in ("ghp", "gho", "ghu", "ghs", "ghr"):
        for n in (30, 36, 40):
            token = f"{prefix}_{r(ALNUM, n)}"
            out.append(Secret("github-token", token, f"token is {token}"))
    for kind in "abposre":
        token = f"xox{kind}-{r(string.digits, 11)}-{r(ALNUM, 24)}"
        out.append(Secret("slack-token", token, f"SLACK {token}"))
    return out


def _every_secret(seed: int) -> list[Secret]:
    return make_secrets(seed) + _variants(seed)


def _run_file_text(tmp_path: Path, text: str) -> str:
    """What the trainer writes for a history record and a config dump holding `text`."""
    files = RunFiles(tmp_path / "run", RunRedactor())
    files.append_history({"step": 1, "note": text})
    files.write_json("config.json", masked_dump({"env_options": {"note": text}}))
    return files.history_path.read_text() + (files.dir / "config.json").read_text()


@pytest.mark.parametrize("seed", [3, 11])
def test_every_secret_ingest_redacts_is_masked_in_run_files(tmp_path: Path, seed: int) -> None:
    ingest = IngestRedactor()
    leaked_in_runs: list[str] = []
    for i, s in enumerate(_every_secret(seed)):
        stored, n = ingest.redact(s.text)
        assert n >= 1 and s.secret not in stored, (s.kind, s.text)
        written = _run_file_text(tmp_path / str(i), s.text)
        if s.secret in written or s.secret in json.loads(json.dumps(written)):
            leaked_in_runs.append(f"{s.kind}: {s.text[:60]}")
    assert leaked_in_runs == []


def test_a_pattern_added_to_the_one_set_is_used_by_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "acme_" + "0f3a9c2e" * 4
    text = f"export ACME={token}"
    assert token in _run_file_text(tmp_path / "before", f"see {token}")
    assert token in IngestRedactor().redact(f"see {token}")[0]

    added = secrets.define("acme-key", r"\bacme_[0-9a-f]{32}\b", ["acme_"])
    monkeypatch.setattr(secrets, "PATTERNS", (*secrets.PATTERNS, added))

    assert token not in _run_file_text(tmp_path / "after", f"see {token}")
    assert token not in masked_dump({"anything": f"see {token}"})["anything"]
    stored, n = IngestRedactor().redact(f"see {token}")
    assert n == 1 and stored == "see [REDACTED:acme-key]"
    assert token not in IngestRedactor().redact(text)[0]


def test_run_files_keep_ordinary_text() -> None:
    """The shared set is the careful one: words that merely look like key prefixes stay readable."""
    kept = (
        "use sk-learn's pipeline; the task-ghp_ prefix; 3 passed; max_tokens=4000; "
        'api_key_env=OPENAI_API_KEY; {"api_key_env": "TOY_KEY"}'
    )
    assert RunRedactor().text(kept) == kept
    assert not re.search(r"\*\*\*\*", masked_dump({"note": kept})["note"])
    assert IngestRedactor().redact(kept) == (kept, 0)

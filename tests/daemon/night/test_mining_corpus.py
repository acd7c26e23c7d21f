"""Mining on the corpus recorded with the real `claude` and `codex` CLIs: quality targets, the model path
(labels in batches, cached, bad replies), headless sessions and `skillopt tasks mine --explain`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlite_utils

from benchmarks.mining import ari, labeller_chat
from skillopt_daemon.core import paths
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.ingest.redact import redact
from skillopt_daemon.night import status
from skillopt_daemon.night.mining import mine
from skillopt_daemon.night.mining.labels import Labeller, Request
from skillopt_daemon.night.mining.tfidf import STOP_WORDS
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.corpus.labeller import LabellerScript
from testkit.corpus.load import Labels, ingest_corpus, read_labels


@pytest.fixture(scope="module")
def labels() -> Labels:
    return read_labels()


@pytest.fixture
def heldout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labels: Labels
) -> Iterator[sqlite_utils.Database]:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    db = ingest_corpus(tmp_path, split="heldout", labels=labels)
    yield db
    db.close()


def test_the_corpus_is_what_it_claims(labels: Labels) -> None:
    sessions = labels.sessions
    families = {s["family"] for s in sessions if s["family"]}
    assert len(families) >= 6
    assert all(sum(s["family"] == f for s in sessions) >= 6 for f in families)
    assert len({labels.families[f]["repo"] for f in families}) >= 3
    modes = [s["mode"] for s in sessions]
    assert modes.count("headless") == modes.count("interactive")
    assert {s["tool"] for s in sessions} == {"claude-code", "codex"}
    assert len({labels.families[f]["rule_language"] for f in families}) >= 3
    assert any(s["subagent"] for s in sessions)
    assert any(s["family"] is None for s in sessions)


def test_without_a_model_the_held_out_half_reaches_the_target(
    heldout: sqlite_utils.Database, labels: Labels
) -> None:
    result = mine.mine_detailed(heldout)
    assert ari(heldout, result, labels) >= 0.6
    # Headless runs (`claude -p`, `codex exec`) are mined by default.
    entry = {
        r["session_id"]: r["entrypoint"] for r in heldout.query("SELECT session_id, entrypoint FROM sessions")
    }
    mined = {a.session_id for a in result.attempts}
    assert {"sdk-cli", "exec"} <= {entry[sid] for sid in mined}
    assert not result.excluded
    # Every correction is a rubric item of its attempt, word for word.
    rules = {labels.families[f]["rule"] for f in labels.families}
    kept = {c for a in result.attempts for c in a.rubric}
    assert rules <= kept
    # Each family's check is the one its users run, proven by the sessions where it passed.
    checks = {labels.families[f]["check"] for f in labels.families}
    assert {c for f in result.families for c in f.checks} == checks


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _asked_in(name: str, request: str) -> bool:
    """Whether every word of `name` is a word of `request`, in the order the user wrote them."""
    want, have = _words(name), _words(request)
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def test_without_a_model_families_are_named_as_asked_and_status_says_labelling_regroups_them(
    heldout: sqlite_utils.Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = mine.mine_detailed(heldout)
    assert len(result.families) >= 6
    for fam in result.families:
        # A phrase the user wrote: whole words of one of the family's requests, never stems, word pairs or
        # `num`, and no word that says what the work is twice ("the" may come twice, as in English).
        assert any(_asked_in(fam.name, a.prompt) for a in fam.attempts), fam.name
        said = [w for w in _words(fam.name) if w not in STOP_WORDS]
        assert len(said) >= 2 and len(set(said)) == len(said), fam.name
    # Before labelling, status says the grouping is by words and will change, and the counts are provisional.
    before = status.status_section(heldout)
    assert before["grouping"]["by"] == "words" and before["grouping"]["provisional"]
    assert before["work"] and all(w["provisional"] for w in before["work"])
    note = before["grouping"]["note"]
    assert note in before["lines"] and "regroup" in note
    assert any("for a new skill, provisional)" in line for line in before["lines"])
    with ScriptedServer(LabellerScript()) as server:
        mine.mine_detailed(heldout, chat=labeller_chat(server))
    after = status.status_section(heldout)
    assert after["grouping"] == {"by": "labels", "provisional": False, "note": None}
    assert not any(w["provisional"] for w in after["work"])
    assert not any("regroup" in line or "provisional" in line for line in after["lines"])


def test_the_model_path_labels_in_batches_once_and_reaches_the_target(
    heldout: sqlite_utils.Database, labels: Labels
) -> None:
    script = LabellerScript()
    with ScriptedServer(script) as server:
        chat = labeller_chat(server)
        first = mine.mine_detailed(heldout, chat=chat, batch=40)
        sent = [r for r in server.requests if r.rule == "labeller"]
        second = mine.mine_detailed(heldout, chat=chat, batch=40)
        again = [r for r in server.requests if r.rule == "labeller"]
    assert ari(heldout, first, labels) >= 0.85
    lab = first.report.labels
    assert lab is not None and lab["fallback"] == 0
    assert lab["model_calls"] == len(sent) == -(-lab["requests"] // 40)  # many requests per call
    assert lab["tokens"] > 0
    # A request is labelled once ever: the second night makes no model call.
    assert len(again) == len(sent)
    assert second.report.labels is not None and second.report.labels["model_calls"] == 0
    assert second.report.labels["cached"] == lab["requests"]
    # Families are named by the model's canonical intents, in English.
    assert all(f.name.isascii() and " / " not in f.name for f in first.families)


def test_only_redacted_text_is_sent_to_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLOPT_HOME", str(tmp_path / "skillopt"))
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5
    stored_text, _ = redact(f"deploy with the key {secret} and run the tests")
    assert secret not in stored_text
    db = open_db(tmp_path / "s.db")
    now = utcnow_iso()
    pk = (
        db.table("sessions")
        .insert(
            {
                "tool": "claude-code",
                "session_id": "s",
                "has_user_turn": 1,
                "first_seen_at": now,
                "updated_at": now,
            }
        )
        .last_pk
    )
    db.table("turns").insert({"session_pk": pk, "key": "u", "seq": 0, "role": "user", "text": stored_text})
    with ScriptedServer(LabellerScript()) as server:
        mine.mine_detailed(db, chat=labeller_chat(server))
        bodies = server.all_text()
    assert "[REDACTED" in bodies and secret not in bodies


@pytest.mark.parametrize("mode", ["not-json", "unknown-id", "slow"])
def test_a_bad_reply_is_retried_once_then_falls_back_and_next_night_retries(
    heldout: sqlite_utils.Database, labels: Labels, mode: str
) -> None:
    lexical_ari = ari(heldout, mine.mine_detailed(heldout), labels)
    script = LabellerScript(mode=mode, bad_calls=2, delay=3.0)
    with ScriptedServer(script) as server:
        chat = labeller_chat(server, timeout_s=1.0)
        first = mine.mine_detailed(heldout, chat=chat, batch=500)  # one batch: both tries fail
        assert script.calls == 2
        lab = first.report.labels
        assert lab is not None and lab["labelled"] == 0 and lab["fallback"] == lab["requests"] > 0
        assert any("failed twice" in note and "retried next night" in note for note in first.report.notes)
        # Nothing is lost: the night still mines every request, lexically.
        assert ari(heldout, first, labels) == pytest.approx(lexical_ari)
        assert heldout["request_labels"].count == 0
        second = mine.mine_detailed(heldout, chat=chat, batch=500)
    assert second.report.labels is not None and second.report.labels["labelled"] == lab["requests"]
    assert ari(heldout, second, labels) >= 0.85


def test_labeller_rejects_a_label_for_a_request_it_was_not_shown(tmp_path: Path) -> None:
    script = LabellerScript(mode="unknown-id", bad_calls=1)
    with ScriptedServer(script) as server:
        labeller = Labeller(open_db(tmp_path / "l.db"), labeller_chat(server), batch=10)
        got = labeller.label(
            [Request("write tests for normalize"), Request("thanks", "write tests for normalize")]
        )
    assert script.calls == 2  # the first reply was refused, the retry was used
    assert {lab.kind for lab in got.values()} == {"task", "ack"}


def test_tasks_mine_explain_and_json(tmp_path: Path, heldout: sqlite_utils.Database) -> None:
    env = {
        **os.environ,
        "SKILLOPT_HOME": str(tmp_path / "skillopt"),
        "SKILLOPT_NO_DESKTOP_NOTIFY": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
    }
    # The CLI mines the store of SKILLOPT_HOME (the fixture's): put the corpus there.
    target = paths.db_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    heldout.conn.execute(f"VACUUM INTO '{target}'")
    exe = [sys.executable, "-m", "skillopt_daemon.entry"]
    out = subprocess.run(
        [*exe, "tasks", "mine", "--explain", "--json"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["families"] == 6
    rows = data["requests"]
    by_text = {r["request"]: r for r in rows}
    assert by_text["no noqa, fix the code"]["kind"] == "correction"
    assert by_text["no noqa, fix the code"]["family_why"] == "belongs to the task before it"
    lint = [
        r for r in rows if r["kind"] == "task" and "lint" in r["request"] and "markdown" not in r["request"]
    ]
    assert len({r["family"] for r in lint if "docs" not in r["request"]}) == 1
    human = subprocess.run([*exe, "tasks", "mine", "--explain"], env=env, capture_output=True, text=True)
    assert human.returncode == 0, human.stderr
    assert "correction" in human.stdout and "Mined 6 families" in human.stdout


def test_labelling_counts_in_the_nights_budget_and_stops_at_its_cap(
    heldout: sqlite_utils.Database, labels: Labels
) -> None:
    from skillopt_daemon.night.budgets import BudgetedChat, NightBudget

    with ScriptedServer(LabellerScript()) as server:
        budget = NightBudget(max_tokens=10**9, max_cost_usd=100.0, max_wall_s=600.0, max_replays=10)
        spent = mine.mine_detailed(
            heldout, chat=BudgetedChat(labeller_chat(server), budget), budget=budget, batch=20
        )
        assert spent.report.labels is not None
        assert budget.model_calls == spent.report.labels["model_calls"] > 1
        assert budget.tokens == spent.report.labels["tokens"] > 0
        heldout.table("request_labels").delete_where()
        tight = NightBudget(max_tokens=1, max_cost_usd=100.0, max_wall_s=600.0, max_replays=10)
        capped = mine.mine_detailed(
            heldout, chat=BudgetedChat(labeller_chat(server), tight), budget=tight, batch=20
        )
    lab = capped.report.labels
    assert lab is not None and lab["model_calls"] == 1 and lab["fallback"] > 0
    assert any("token cap" in note for note in capped.report.notes)
    assert len(capped.attempts) == len(spent.attempts)  # nothing lost: the rest was mined lexically

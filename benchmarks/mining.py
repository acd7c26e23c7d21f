"""Mining quality, labelling cost and speed: `python -m benchmarks.mining [--sessions 10000]`.

Quality on the corpus recorded with the real `claude` and `codex` CLIs (`tests/fixtures/corpus/`, re-record
with `python -m testkit.corpus.record`): the adjusted Rand index between the families mining finds and
the true ones, over every user message of the held-out half (a message counts as part of the family of the
attempt it was put in, so a follow-up made into a task of its own is an error). Thresholds were tuned on the
tuning half only. Measured without a model (the lexical fallback) and with the model path, where the scripted
labeller (`testkit/corpus/labeller.py`) answers as a competent model would.

Cost: model calls and tokens per 100 requests on the first night, and on the second (cached labels).
Speed: mining 10,000 generated sessions from the store without and with the model path (labels cached).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils
from sklearn.metrics import adjusted_rand_score

from benchmarks.mining_corpus import generate
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow_iso
from skillopt_daemon.night.mining import mine
from skillopt_daemon.night.mining.attempts import user_messages
from skillopt_daemon.night.mining.labels import PROMPT_VERSION
from skillopt_lib.backends import create_backend
from skillopt_lib.config import BackendConfig
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit.corpus.labeller import LabellerScript, label_one
from testkit.corpus.load import Labels, ingest_corpus, read_labels

KEY_ENV = "SKILLOPT_BENCH_LABELLER_KEY"
KEY = "sk-skillopt-scripted-0123456789abcdef"


def labeller_chat(server: ScriptedServer, *, timeout_s: float = 30.0) -> Any:
    """A real OpenAI-protocol chat backend pointed at the scripted server."""
    os.environ.setdefault(KEY_ENV, KEY)
    cfg = BackendConfig(
        backend="openai",
        model="labeller",
        base_url=server.base_url_openai,
        api_key_env=KEY_ENV,
        timeout_s=timeout_s,
        max_retries=0,
    )
    return create_backend(cfg, "optimizer")


def truth_and_prediction(
    db: sqlite_utils.Database, result: mine.MiningResult, labels: Labels
) -> tuple[list[str], list[str]]:
    """Per user message of the labelled sessions: its true family and the family mining put it in."""
    truth_by_session = labels.by_session()
    family_of = result.family_of()
    placed: dict[tuple[int, str], str] = {}
    for a in result.attempts:
        fam = family_of.get(a.key)
        for m in a.messages:
            placed[(a.session_pk or 0, m.turn_key)] = fam.id if fam else f"alone:{a.key}"
    truth: list[str] = []
    pred: list[str] = []
    for s in db.query("SELECT id, tool, session_id FROM sessions"):
        spec = truth_by_session.get((s["tool"], s["session_id"]))
        if spec is None:
            continue
        true = spec["family"] or f"one-off:{spec['key']}"
        turns = list(
            db.query(
                "SELECT key, role, text, is_meta FROM turns WHERE session_pk = ? ORDER BY seq", [s["id"]]
            )
        )
        for msg in user_messages(turns):
            key = (s["id"], str(msg.turn["key"]))
            truth.append(true)
            pred.append(placed.get(key, f"unplaced:{key}"))
    return truth, pred


def ari(db: sqlite_utils.Database, result: mine.MiningResult, labels: Labels) -> float:
    truth, pred = truth_and_prediction(db, result, labels)
    return float(adjusted_rand_score(truth, pred))


@contextmanager
def _home(tmp: Path) -> Iterator[None]:
    old = os.environ.get("SKILLOPT_HOME")
    os.environ["SKILLOPT_HOME"] = str(tmp / "skillopt")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SKILLOPT_HOME", None)
        else:
            os.environ["SKILLOPT_HOME"] = old


def corpus_quality(split: str = "heldout") -> dict[str, Any]:
    """ARI without and with the model path, and what labelling cost, on one half of the recorded corpus."""
    labels = read_labels()
    with tempfile.TemporaryDirectory() as tmp, _home(Path(tmp)):
        db = ingest_corpus(Path(tmp), split=split, labels=labels)
        lexical = mine.mine_detailed(db)
        out: dict[str, Any] = {"split": split, "ari_no_model": ari(db, lexical, labels)}
        with ScriptedServer(LabellerScript()) as server:
            chat = labeller_chat(server)
            first = mine.mine_detailed(db, chat=chat)
            second = mine.mine_detailed(db, chat=chat)
        lab = first.report.labels or {}
        n = max(1, lab.get("requests", 0))
        out.update(
            ari_model=ari(db, first, labels),
            requests=lab.get("requests", 0),
            calls_per_100=100 * lab.get("model_calls", 0) / n,
            tokens_per_100=100 * lab.get("tokens", 0) / n,
            second_night_calls=(second.report.labels or {}).get("model_calls", 0),
            families_no_model=len(lexical.families),
            families_model=len(first.families),
        )
    return out


def _fill_store(db: sqlite_utils.Database, n_sessions: int, seed: int) -> None:
    reqs = generate(n_sessions, seed=seed)
    now = utcnow_iso()
    by_session: dict[str, list[str]] = {}
    for r in reqs:
        by_session.setdefault(r.session, []).append(r.prompt)
    with db.conn:
        for i, (sid, prompts) in enumerate(by_session.items()):
            row = {
                "tool": "claude-code",
                "session_id": sid,
                "project_path": f"/p/{i % 50}",
                "started_at": now,
                "has_user_turn": 1,
                "first_seen_at": now,
                "updated_at": now,
            }
            pk = db.table("sessions").insert(row).last_pk
            turns, calls = [], []
            for j, prompt in enumerate(prompts):
                turns.append({"session_pk": pk, "key": f"u{j}", "seq": 2 * j, "role": "user", "text": prompt})
                turns.append(
                    {"session_pk": pk, "key": f"a{j}", "seq": 2 * j + 1, "role": "assistant", "text": "done"}
                )
                calls.append(
                    {
                        "session_pk": pk,
                        "key": f"c{j}",
                        "seq": j,
                        "turn_key": f"a{j}",
                        "name": "Bash",
                        "input_summary": json.dumps({"command": "pytest -q"}),
                        "exit_code": 0,
                        "is_error": 0,
                        "result_at": now,
                    }
                )
            db.table("turns").insert_all(turns)
            db.table("tool_calls").insert_all(calls)


def _cache_all_labels(db: sqlite_utils.Database) -> int:
    """Fill the label cache as earlier nights would have (the scripted labeller's answers)."""
    rows = {}
    now = utcnow_iso()
    for s in db.query("SELECT id FROM sessions"):
        turns = list(
            db.query(
                "SELECT key, role, text, is_meta FROM turns WHERE session_pk = ? ORDER BY seq", [s["id"]]
            )
        )
        for msg in user_messages(turns):
            lab = label_one(msg.request.text, msg.request.previous or None)
            rows[msg.request.hash] = {
                "hash": msg.request.hash,
                "kind": lab["kind"],
                "intent": lab["intent"],
                "work": lab["work"],
                "rules_json": json.dumps(lab["rules"]),
                "one_off": lab["one_off"],
                "prompt_version": PROMPT_VERSION,
                "model": "labeller",
                "labelled_at": now,
            }
    with db.conn:
        db.table("request_labels").upsert_all(list(rows.values()), pk="hash")
    return len(rows)


def store_speed(n_sessions: int, seed: int) -> dict[str, float]:
    """Mining 10,000 sessions from the store as the night does, without a model and with cached labels."""
    with tempfile.TemporaryDirectory() as tmp, _home(Path(tmp)):
        db = open_db(Path(tmp) / "bench.db")
        _fill_store(db, n_sessions, seed)
        t0 = time.perf_counter()
        families, report = mine.mine(db)
        lexical_s = time.perf_counter() - t0
        cached = _cache_all_labels(db)
        with ScriptedServer(LabellerScript()) as server:
            t0 = time.perf_counter()
            model_families, model_report = mine.mine(db, chat=labeller_chat(server))
            model_s = time.perf_counter() - t0
    return {
        "sessions": n_sessions,
        "requests": report.attempts,
        "families": len(families),
        "mine_s": lexical_s,
        "cached_labels": cached,
        "mine_model_s": model_s,
        "model_calls": (model_report.labels or {}).get("model_calls", 0),
        "model_families": len(model_families),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--split", default="heldout", choices=["heldout", "tune"])
    args = ap.parse_args()
    q = corpus_quality(args.split)
    print(
        f"recorded corpus ({q['split']} half, {q['requests']} requests): ARI {q['ari_no_model']:.3f} without a model, "
        f"{q['ari_model']:.3f} with the model path ({q['families_no_model']} / {q['families_model']} families)"
    )
    print(
        f"labelling: {q['calls_per_100']:.1f} model calls and {q['tokens_per_100']:.0f} tokens per 100 requests; "
        f"second night: {q['second_night_calls']} calls (cached)"
    )
    m = store_speed(args.sessions, args.seed)
    print(
        f"mining from the store ({m['sessions']} sessions, {m['requests']:.0f} requests): {m['mine_s']:.2f}s "
        f"without a model ({m['families']:.0f} families); {m['mine_model_s']:.2f}s with the model path "
        f"({m['cached_labels']:.0f} cached labels, {m['model_calls']:.0f} model calls, "
        f"{m['model_families']:.0f} families)"
    )


if __name__ == "__main__":
    main()

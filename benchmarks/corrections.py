"""How well the one correction classifier finds corrections: `python -m benchmarks.corrections [--split S]`.

On the corpus recorded with the real `claude` and `codex` CLIs (`tests/fixtures/corpus/`), every user message
of one half, as ingest stored it, is read the two ways skillopt reads messages: ingest's signals (the
session's `signals_json`, which the dashboard and `sessions show` count) and the night's mining (the kind of
each message, `night.attempts.user_messages`). Both use `skillopt_daemon/ingest/kinds.py`, so they must mark
the same messages; each is compared with the message's true kind in `labels.json`.

Precision and recall of "correction" are given per language: the language of the family's rule, which
every correction of that family is written in (the other messages of its sessions mix languages). Sessions
without a family count towards the total only. The rules were tuned on the tune half; the held-out half is
the measure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import sqlite_utils

from skillopt_daemon.night.mining.attempts import user_messages
from testkit.corpus.load import Labels, ingest_corpus, read_labels


def _score(tp: int, fp: int, fn: int) -> dict[str, Any]:
    return {
        "corrections": tp + fn,
        "found": tp,
        "false_alarms": fp,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
    }


def measure(db: sqlite_utils.Database, labels: Labels) -> dict[str, Any]:
    """Per language and in total: how the stored messages' corrections compare with the truth; and every
    message where signals and mining disagree (there should be none)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # language -> tp, fp, fn
    disagree: list[str] = []
    missed: list[str] = []
    for spec in labels.sessions:
        row = db.execute(
            "SELECT id, signals_json FROM sessions WHERE tool = ? AND session_id = ?",
            [spec["tool"], spec["session_id"]],
        ).fetchone()
        if row is None:
            continue  # not in this half
        turns = list(
            db.query("SELECT key, role, text, is_meta FROM turns WHERE session_pk = ? ORDER BY seq", [row[0]])
        )
        messages = user_messages(turns)
        flagged = {c["turn_key"] for c in json.loads(row[1] or "{}").get("corrections", [])}
        truth = [t["kind"] for t in spec["turns"]]
        if len(truth) != len(messages):
            raise AssertionError(
                f"{spec['key']}: {len(messages)} user messages stored, {len(truth)} labelled"
            )
        family = labels.families.get(spec["family"] or "")
        language = family["rule_language"] if family else "none"
        for msg, kind in zip(messages, truth, strict=True):
            by_signals = str(msg.turn["key"]) in flagged
            by_mining = msg.kind.value == "correction"
            if by_signals != by_mining:
                disagree.append(f"{spec['key']}: {msg.text!r}")
            true = kind == "correction"
            tally = counts[language]
            if by_signals and true:
                tally[0] += 1
            elif by_signals:
                tally[1] += 1
            elif true:
                tally[2] += 1
            if by_signals != true:
                missed.append(f"{spec['key']}: {msg.text!r} is a {kind}")
    languages = {lang: _score(*c) for lang, c in sorted(counts.items()) if lang != "none"}
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    return {"languages": languages, "all": _score(*total), "disagree": disagree, "wrong": missed}


def corrections_quality(split: str = "heldout") -> dict[str, Any]:
    labels = read_labels()
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("SKILLOPT_HOME")
        os.environ["SKILLOPT_HOME"] = str(Path(tmp) / "skillopt")  # nothing of the user's is touched
        db = ingest_corpus(Path(tmp), split=split, labels=labels)
        try:
            return {"split": split, **measure(db, labels)}
        finally:
            db.close()
            if old is None:
                os.environ.pop("SKILLOPT_HOME", None)
            else:
                os.environ["SKILLOPT_HOME"] = old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="heldout", choices=["tune", "heldout"])
    args = parser.parse_args()
    result = corrections_quality(args.split)
    print(f"corrections on the {result['split']} half")
    print("language  corrections  found  false alarms  precision  recall")
    for lang, s in [*result["languages"].items(), ("all", result["all"])]:
        print(
            f"{lang:<9} {s['corrections']:>11}  {s['found']:>5}  {s['false_alarms']:>12}  "
            f"{s['precision']:>9.2f}  {s['recall']:>6.2f}"
        )
    for line in result["wrong"]:
        print("wrong:", line)
    for line in result["disagree"]:
        print("signals and mining disagree:", line)


if __name__ == "__main__":
    main()

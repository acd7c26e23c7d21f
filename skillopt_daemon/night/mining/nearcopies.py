"""Near-copies of a request count as one item of the gate's evidence, tonight and on every later night.

Mining merges near-duplicate requests into one group (cosine of TF-IDF vectors >= 0.85), but TF-IDF weighs a
request's rarest words most, so a one-word variant ("fix the lint errors in the parser" / "fix the lint
warnings in the parser") can score 0.6 and stay apart. The agent answers such variants alike, so counting
them as separate items doubles or triples the evidence of one request and the gate's false-accept rate
with it. And groups are recomputed every night, so a copy arriving later gets a group of its own.

Here a request is compared by its normalized words in order (`fingerprint`: each word of
`clustering.normalize_prompt` hashed, so no request text is kept in the evidence), with the share of words
the two sequences have in common (`similarity`: 2 x matched / total words). A validation task whose request
is at least `SIMILAR` alike to one already measured for this candidate on an earlier night (its
fingerprint kept in the evidence) joins that item's cluster, so the e-value test counts it there and does
not replay it, whatever group mining gives it tonight.

Tonight's validation tasks are merged among themselves the same way, but only when they also start from the
same state (repository, commit and uncommitted changes): a near-copy asked of the same tree is the same task
for the agent, re-asked. Text alone cannot tell a re-asked request from recurring work on another input
("the weekly report for the platform team" / "... for the billing team"), and merging every such pair
would leave most recurring families one item the gate can never decide on. The starting state can: recurring
work is done on a tree that moved on (last week's report committed), a re-ask on the same one. The recorded
corpora's families hold no two requests this alike from different sessions, so the merge costs the gate no
power there; see docs/nightly.md.

`SIMILAR` = 0.8 is a definition, not a fit: one word changed in a request of m words scores (m - 1) / m,
one word added 2m / (2m + 1), so 0.8 joins a one-word variant of any request of five words or more, and
keeps apart requests that differ in two words of eight (0.75), such as the same kind of work on another
file with another verb. Merging too much only makes the test count fewer items (it costs power, never a
false accept); merging too little is the error this module removes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from difflib import SequenceMatcher

from skillopt_daemon.night.mining.clustering import normalize_prompt
from skillopt_daemon.night.tasks import NightTask
from skillopt_lib.gate import PairedEvidence

SIMILAR = 0.8


def fingerprint(text: str) -> str:
    """The request's normalized words in order, each as 8 hex digits of its hash."""
    return " ".join(
        hashlib.blake2b(w.encode(), digest_size=4).hexdigest() for w in normalize_prompt(text).split()
    )


def similarity(a: str, b: str) -> float:
    """Share of the two fingerprints' words that match in order: 2 x matched / (len(a) + len(b))."""
    wa, wb = a.split(), b.split()
    if not wa or not wb:
        return 1.0 if wa == wb else 0.0
    return SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def regroup(tasks: Sequence[NightTask], evidence: PairedEvidence | None) -> list[NightTask]:
    """`tasks` with every validation task that is a near-copy of an item measured on an earlier night (in
    `evidence`) moved into that item's cluster, and every validation task that is a near-copy of an earlier
    one tonight from the same starting state moved into its group; other tasks unchanged."""
    known: list[tuple[str, str]] = []
    if evidence is not None:
        known = [(fp, evidence.cluster_of(item)) for item, fp in evidence.fingerprints.items()]
    tonight: list[tuple[str, tuple[str | None, ...], str]] = []
    out: list[NightTask] = []
    for task in tasks:
        if task.split != "val":
            out.append(task)
            continue
        fp = fingerprint(task.prompt)
        state = starting_state(task)
        group = next((g for other, g in known if similarity(fp, other) >= SIMILAR), None)
        if group is None:
            group = next(
                (g for other, st, g in tonight if st == state and similarity(fp, other) >= SIMILAR), None
            )
        if group is not None and group != task.group_key:
            task = dataclasses.replace(task, group=group)
        tonight.append((fp, state, task.group_key))
        out.append(task)
    return out


def starting_state(task: NightTask) -> tuple[str | None, ...]:
    """What the agent starts from besides the request: the repository, its commit and the uncommitted
    changes (hashed, the diff is not kept here)."""
    dirty = hashlib.blake2b(task.dirty_diff.encode(), digest_size=8).hexdigest() if task.dirty_diff else None
    return (task.repo, task.commit, dirty)

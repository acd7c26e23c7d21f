"""Merging the analysts' patches into one candidate set.

Failure-driven and success-driven patches are merged separately and hierarchically (groups of
`merge_group_size`, one merge call per group, until one list is left), then combined without a model call:
duplicates are folded (support adds up), edits that repeat a rejected idea are dropped, and when two
edits touch the same text the failure-driven one wins (fixing a failure matters more than restating a
success). A merge call that fails falls back to concatenation, so aggregation never loses the analysts' work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillopt_lib.edits import Edit, Patch, SourceType
from skillopt_lib.reflect import CallRecord, LoosePatch, OptimizerCaller, render_edits

RunParallel = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


@dataclass
class Aggregation:
    candidates: list[Edit]
    dropped: list[tuple[Edit, str]] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)


def dedup(edits: Sequence[Edit]) -> list[Edit]:
    """Fold edits with the same key (case and whitespace ignored), adding up their support."""
    out: dict[str, Edit] = {}
    for e in edits:
        k = e.key()
        if k in out:
            prev = out[k]
            out[k] = prev.model_copy(update={"support_count": prev.support_count + e.support_count})
        else:
            out[k] = e
    return list(out.values())


def merge_source(
    caller: OptimizerCaller,
    patches: Sequence[Patch],
    source: SourceType,
    group_size: int,
    context: dict[str, Any],
    run_parallel: RunParallel,
) -> tuple[list[Edit], list[CallRecord]]:
    level: list[list[Edit]] = [list(p.edits) for p in patches if p.edits]
    calls: list[CallRecord] = []
    while len(level) > 1:
        groups = [level[i : i + group_size] for i in range(0, len(level), group_size)]

        def merge(group: list[list[Edit]]) -> tuple[list[Edit], CallRecord | None]:
            if len(group) == 1:
                return group[0], None
            listing = "\n\n".join(f"Analyst {i + 1}:\n{render_edits(g)}" for i, g in enumerate(group))
            loose, record = caller.call_json("merge", LoosePatch, source=source, patches=listing, **context)
            if loose is None:
                return dedup([e for g in group for e in g]), record
            merged = loose.to_patch(source).edits
            return dedup(merged), record

        results = run_parallel(merge, groups)
        level = [edits for edits, _ in results]
        calls.extend(rec for _, rec in results if rec is not None)
    return (dedup(level[0]) if level else []), calls


def combine(
    failure_edits: Sequence[Edit], success_edits: Sequence[Edit], rejected_keys: set[str]
) -> tuple[list[Edit], list[tuple[Edit, str]]]:
    """The final merge: drop rejected ideas and duplicates; on a shared anchor failure-driven edits win."""
    kept: list[Edit] = []
    dropped: list[tuple[Edit, str]] = []
    by_anchor: dict[str, int] = {}
    for e in [*dedup(failure_edits), *dedup(success_edits)]:
        if e.key() in rejected_keys:
            dropped.append((e, "already tried and rejected"))
            continue
        dup = next((i for i, k in enumerate(kept) if k.key() == e.key()), None)
        if dup is not None:
            kept[dup] = kept[dup].model_copy(
                update={"support_count": kept[dup].support_count + e.support_count}
            )
            continue
        anchor = e.anchor_key()
        if anchor is not None and anchor in by_anchor:
            winner = kept[by_anchor[anchor]]
            why = (
                "conflicts with a failure-driven edit"
                if winner.source_type == "failure"
                else "conflicts with a better-supported edit"
            )
            if e.source_type == "failure" and winner.source_type != "failure":
                dropped.append((winner, "conflicts with a failure-driven edit"))
                kept[by_anchor[anchor]] = e
            else:
                dropped.append((e, why))
            continue
        if anchor is not None:
            by_anchor[anchor] = len(kept)
        kept.append(e)
    return kept, dropped


def aggregate(
    caller: OptimizerCaller,
    failure_patches: Sequence[Patch],
    success_patches: Sequence[Patch],
    rejected_keys: set[str],
    group_size: int,
    context: dict[str, Any],
    run_parallel: RunParallel,
) -> Aggregation:
    fail, calls_f = merge_source(caller, failure_patches, "failure", group_size, context, run_parallel)
    succ, calls_s = merge_source(caller, success_patches, "success", group_size, context, run_parallel)
    kept, dropped = combine(fail, succ, rejected_keys)
    return Aggregation(kept, dropped, [*calls_f, *calls_s])

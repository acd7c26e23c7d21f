"""The screen's training-time findings, carried into the proposal's verdict.

A line is screened at every step against what the optimizer was shown up to then (the replays'
transcripts, the files they read, the checks' output) and again before it is proposed. The second look
must not forget the first: a run resumed in another process, or a candidate carried from an earlier night,
no longer has the replays of the steps that added a line, and a finding made then ("copied from tool
output", read in a README a replay opened) would vanish from the proposal. So every finding a step recorded
(`record["screen"]`, the verdict on the candidate it let through; for a candidate carried from an earlier
night, the findings it carries, `PendingCandidate.findings`) on a line the proposal still adds joins the
proposal-time verdict, and travels with it into the evidence and every review face.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from skillopt_lib.screen import Finding, ScreenResult
from skillopt_lib.training.records import HistoryRecord

WHEN = "found while training"


def _step_findings(steps: Sequence[HistoryRecord]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rec in steps:
        record = rec.get("screen")
        if isinstance(record, dict):
            out += [f for f in record.get("findings") or [] if isinstance(f, dict)]
    return out


def with_step_findings(verdict: ScreenResult, steps: Sequence[HistoryRecord]) -> ScreenResult:
    """`verdict` (the proposal-time screen of the lines a proposal adds) with the findings the run's steps
    made on those lines and it did not make again, numbered as the proposal's lines, worst first."""
    at: dict[str, int] = {}
    for i, text in enumerate(verdict.lines, 1):
        at.setdefault(text.strip(), i)
        at.setdefault(text.strip()[:300], i)
    have = {(f.line.strip()[:300], f.rule) for f in verdict.findings}
    found = list(verdict.findings)
    for f in _step_findings(steps):
        line = str(f.get("line") or "").strip()
        rule, severity = str(f.get("rule") or ""), f.get("severity")
        no = at.get(line)
        if no is None or (line[:300], rule) in have or severity not in ("reject", "warn"):
            continue
        have.add((line[:300], rule))
        why = f"{f.get('why') or ''} ({WHEN})"
        found.append(Finding(no, line, rule, "reject" if severity == "reject" else "warn", why))
    found.sort(key=lambda f: (f.severity != "reject", f.line_no))
    return ScreenResult(lines=verdict.lines, findings=found)

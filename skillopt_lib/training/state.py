"""Where a training run stands and what it returns: the checkpoint (`RunState`), a candidate carried between
runs (`PendingCandidate`), and the values a run hands its caller (`TrainResult`, `EvalResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from skillopt_lib.backends.base import Usage
from skillopt_lib.envs.base import ItemResult
from skillopt_lib.errors import SkillOptError
from skillopt_lib.gate import PairedEvidence, ScoreTable, mean_score
from skillopt_lib.skill import SkillBundle, bundle_from_json, bundle_to_json
from skillopt_lib.training.records import HistoryRecord, RunSummary
from skillopt_lib.training.runfiles import STATE_VERSION, utc_iso


@dataclass
class PendingCandidate:
    """A candidate the sequential gate neither accepted nor refuted, with its evidence so far.

    Serialisable (`to_dict` / `from_dict`). Pass it as `Trainer(..., pending=...)` to a later run on the same
    incumbent: that run first adds paired replays on its own validation items (new tasks of the family count)
    and accepts, refutes or keeps it pending. A caller stores it between runs; nothing here keeps state.
    `findings` are what the candidate screen found on its lines in the run that made it (warnings: a line
    copied from a file a replay read), carried so that whichever run decides it still shows them; the
    replays they were found in are not carried.
    """

    skill: SkillBundle
    incumbent_hash: str
    evidence: PairedEvidence
    reason: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": bundle_to_json(self.skill),
            "incumbent_hash": self.incumbent_hash,
            "evidence": self.evidence.to_dict(),
            "reason": self.reason,
            "findings": list(self.findings),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingCandidate:
        return cls(
            skill=bundle_from_json(data["skill"]),
            incumbent_hash=str(data["incumbent_hash"]),
            evidence=PairedEvidence.from_dict(data["evidence"]),
            reason=str(data.get("reason", "")),
            findings=[f for f in data.get("findings") or [] if isinstance(f, dict)],
        )


@dataclass
class TrainResult:
    """What a training run did, as a value: its best skill, its summary, the candidate it left undecided,
    and every record its history holds (`steps`, oldest first, as written: a resumed run's earlier ones
    too). A caller reads these, never the run's folder."""

    run_dir: Path
    best_skill: SkillBundle
    summary: RunSummary
    pending: PendingCandidate | None = None
    steps: tuple[HistoryRecord, ...] = ()

    @property
    def initial_val(self) -> float | None:
        """The initial skill's validation score; None when nothing measured the validation split."""
        return self.summary["initial_val"]

    @property
    def best_val(self) -> float | None:
        """The best skill's validation score; None when nothing measured the validation split."""
        return self.summary["best_val"]


@dataclass
class EvalResult:
    split: str
    score: float
    hard: float
    soft: float
    n: int
    repeats: int
    results: list[ItemResult]
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def of(
        cls, split: str, table: ScoreTable, flat: list[ItemResult], n_items: int, repeats: int, usage: Usage
    ) -> EvalResult:
        """The result of scoring `n_items` items `repeats` times: `table` their scores, `flat` every run."""
        n = len(flat) or 1
        return cls(
            split=split,
            score=mean_score(table),
            hard=sum(r.hard for r in flat) / n,
            soft=sum(r.soft for r in flat) / n,
            n=n_items,
            repeats=repeats,
            results=flat,
            usage=usage,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "score": round(self.score, 6),
            "hard": round(self.hard, 6),
            "soft": round(self.soft, 6),
            "n": self.n,
            "repeats": self.repeats,
            "usage": self.usage.to_dict(),
            "items": [r.to_dict() for r in self.results],
        }


class BudgetExhausted(SkillOptError):
    """The run's token, cost or step budget is used up (a normal way for a run to end)."""


@dataclass
class RunState:
    """Where a training run stands: everything a checkpoint (`state.json`) holds to resume exactly.

    Bundles are kept in their JSON form (`bundle_to_json`) so a checkpoint is written without re-encoding;
    `usage` is the spend at the last checkpoint. Two fields live only in memory: `usage_base` (the spend a
    resumed run started from, to which this process's spend is added) and `candidate_scores` (a candidate's
    validation scores between the gate and the accept step).
    """

    incumbent: dict[str, str]
    initial: dict[str, str]
    version: int = STATE_VERSION
    epoch: int = 0
    batch: int = 0
    step: int = 0
    phase: str = "baseline"  # baseline → step → epoch_end → step ... → done
    incumbent_scores: Any = None
    initial_val: float | None = None
    incumbent_val: float | None = None
    no_improve: int = 0
    accepted_steps: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)
    meta_notes: str = ""
    epoch_accepted: list[dict[str, Any]] = field(default_factory=list)
    epoch_rejected: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"agent": Usage().to_dict(), "optimizer": Usage().to_dict()}
    )
    history_lines: int = 0
    pending: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    # The tier of every accepted decision (`proven`, or `likely` at the gate's lower tier), in order.
    tiers: list[str] = field(default_factory=list)
    stopped: str | None = None
    started: str = field(default_factory=utc_iso)
    test: dict[str, Any] | None = None
    usage_base: dict[str, dict[str, Any]] = field(default_factory=dict)
    candidate_scores: Any = None

    _TRANSIENT: ClassVar[tuple[str, ...]] = ("usage_base", "candidate_scores")

    @classmethod
    def new(cls, skill: SkillBundle) -> RunState:
        return cls(incumbent=bundle_to_json(skill), initial=bundle_to_json(skill))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        """A checkpoint read back; unknown keys (from a newer patch release) are ignored."""
        known = {f.name for f in fields(cls)} - set(cls._TRANSIENT)
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_dict(self) -> dict[str, Any]:
        """What `state.json` holds: every field but the in-memory ones."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in self._TRANSIENT}


def usage_from(d: dict[str, Any]) -> Usage:
    """A usage record (`Usage.to_dict`) read back."""
    return Usage(
        input_tokens=int(d.get("input_tokens", 0)),
        output_tokens=int(d.get("output_tokens", 0)),
        calls=int(d.get("calls", 0)),
        cost_usd=float(d.get("cost_usd", 0.0)),
    )

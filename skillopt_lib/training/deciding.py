"""How a training run decides on a candidate: the gate's session on the validation items (the sequential
gate on interleaved paired replays, or a fixed-repeat gate on whole measurements), the ledger that shares
one error rate between every candidate tested against an incumbent, and the undecided candidate kept for a
later run with its evidence. The trainer (`loop.py`) asks `Decider.decide` at each step, at a slow update
and for a candidate carried from an earlier run."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from skillopt_lib.config import TrainConfig
from skillopt_lib.envs.base import Item
from skillopt_lib.gate import (
    Gate,
    GateDecision,
    GateLedger,
    Measure,
    PairedEvidence,
    PairedMeasure,
    mean_score,
    sequential_decision,
)
from skillopt_lib.skill import SkillBundle, bundle_from_json
from skillopt_lib.training.records import HistoryRecord
from skillopt_lib.training.state import PendingCandidate, RunState

# Interleaved single replays of a candidate and its incumbent on the validation items.
PairMeasures = Callable[[SkillBundle, SkillBundle], PairedMeasure]


class Decider:
    """Decides on candidates for one run. It measures through the callables it is given (the trainer's
    rollouts), never an environment, and checkpoints the run through `checkpoint` when a gate session is cut
    short (`interrupted` then holds the pairs measured so far, for a caller that catches the error)."""

    def __init__(
        self,
        cfg: TrainConfig,
        ledger: GateLedger,
        val_items: Sequence[Item],
        measure: Measure,
        measure_pairs: PairMeasures,
        checkpoint: Callable[[RunState], None],
    ) -> None:
        self.cfg = cfg
        self.gate = Gate(cfg.gate)
        self.ledger = ledger
        self.val_items = list(val_items)
        self.measure = measure
        self.measure_pairs = measure_pairs
        self.checkpoint = checkpoint
        # A candidate whose gate session a raised error cut short, with the pairs measured before it.
        self.interrupted: PendingCandidate | None = None

    def carried_mismatch(self, pending: PendingCandidate, incumbent: SkillBundle) -> str | None:
        """Why a carried candidate cannot be continued here, or None. Evidence is bound to the two skills'
        hashes: evidence measured for other skills (or edited to name these) is never trusted."""
        if self.cfg.gate.kind != "sequential":
            return "the carried candidate was measured against another skill"
        if pending.incumbent_hash != incumbent.content_hash:
            return "the carried candidate was measured against another skill"
        ev = pending.evidence
        if ev.incumbent_hash and ev.incumbent_hash != incumbent.content_hash:
            return "the carried evidence names another incumbent"
        if ev.candidate_hash and ev.candidate_hash != pending.skill.content_hash:
            return "the carried evidence names another candidate"
        return None

    def clusters(self) -> dict[str, str]:
        """Validation items that are near-duplicates of each other (an environment sets `meta["group"]`):
        the e-value test counts each group once."""
        return {item.id: str(item.meta.get("group") or item.id) for item in self.val_items}

    def decide(self, state: RunState, candidate: SkillBundle, incumbent: SkillBundle) -> GateDecision:
        """Gate `candidate` against `incumbent` and update the run's figures (the incumbent's score, the
        candidate's scores until it is accepted, the pending candidate kept for a later run)."""
        if self.cfg.gate.kind == "sequential":
            evidence = PairedEvidence(
                candidate_hash=candidate.content_hash, incumbent_hash=incumbent.content_hash
            )
            if self.cfg.gate.test == "e-value":
                share = self.ledger.share(incumbent.content_hash, candidate.content_hash, self.cfg.gate)
                if share is None:
                    return GateDecision(
                        False, "sequential", "this candidate was already tested against this skill"
                    )
                evidence.share = share
            decision = self.gate_pairs(state, candidate, incumbent, evidence)
            initial_from_gate(state, decision)
            if not decision.pending:
                self.ledger.decided(incumbent.content_hash, candidate.content_hash, str(decision.outcome))
            assert decision.evidence is not None
            cand_scores, inc_scores = decision.evidence.tables()
            state.incumbent_val = mean_score(inc_scores)
            state.candidate_scores = cand_scores
            if decision.pending:
                self.keep_pending(state, candidate, incumbent, decision)
            return decision
        cached = state.incumbent_scores if self.cfg.gate.kind == "strict" else None
        decision, cand_scores, inc_scores = self.gate.decide(self.measure, candidate, incumbent, cached)
        if self.cfg.gate.kind == "paired":
            state.incumbent_val = mean_score(inc_scores)
        state.candidate_scores = cand_scores
        return decision

    def gate_pairs(
        self,
        state: RunState,
        candidate: SkillBundle,
        incumbent: SkillBundle,
        evidence: PairedEvidence,
        exclude: Collection[str] = (),
    ) -> GateDecision:
        """The sequential gate's session for `candidate`, measured a few pairs at a time.

        When a replay raises (a budget's cap reached mid-way, `BackendUnavailable`), the pairs already
        measured are kept as this candidate's pending evidence and checkpointed before the error goes on:
        they were paid for, and with the e-value test they are valid evidence for a later run to extend
        (`interrupted` holds them for a caller that catches the error)."""
        try:
            return self.gate.decide_paired(
                self.measure_pairs(candidate, incumbent),
                [item.id for item in self.val_items],
                evidence,
                exclude=exclude,
                clusters=self.clusters(),
                chunk_pairs=max(1, self.cfg.concurrency),
            )
        except BaseException:
            if self.cfg.gate.test == "e-value" and evidence.pairs:
                self.interrupted = PendingCandidate(
                    candidate,
                    incumbent.content_hash,
                    evidence,
                    f"interrupted after {len(evidence.pairs)} measured item(s); the evidence is kept",
                )
                state.pending = self.interrupted.to_dict()
                self.checkpoint(state)
            raise

    def keep_pending(
        self, state: RunState, candidate: SkillBundle, incumbent: SkillBundle, decision: GateDecision
    ) -> None:
        """Remember the most promising undecided candidate (lowest p) for a later run to finish deciding."""
        assert decision.evidence is not None
        held = state.pending
        if held is not None and held["incumbent_hash"] == incumbent.content_hash:
            held_p = PendingCandidate.from_dict(held)
            if (
                sequential_decision(held_p.evidence, self.cfg.gate).stats["p_value"]
                <= decision.stats["p_value"]
            ):
                return
        state.pending = PendingCandidate(
            candidate, incumbent.content_hash, decision.evidence, decision.reason
        ).to_dict()


def initial_from_gate(state: RunState, decision: GateDecision) -> None:
    """Without a baseline rollout, the initial skill's figure is its arm of the gate's first pairs."""
    if state.initial_val is None and decision.evidence is not None and decision.evidence.pairs:
        _cand, inc = decision.evidence.tables()
        state.initial_val = mean_score(inc)
        state.incumbent_val = state.incumbent_val if state.incumbent_val is not None else state.initial_val


def carry_findings(state: RunState, candidate: SkillBundle, record: HistoryRecord) -> None:
    """When `candidate` is the one kept pending, carry the screen's findings on it (`record["screen"]`)."""
    held = state.pending
    screen = record.get("screen")
    if held is None or not isinstance(screen, dict) or not screen.get("findings"):
        return
    if bundle_from_json(held["skill"]).content_hash == candidate.content_hash:
        held["findings"] = list(screen["findings"])

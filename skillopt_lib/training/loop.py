"""The training loop: rollout → reflect → aggregate → screen → select → update → screen → evaluate, one
step per batch (the screens run when a candidate screen is given: `skillopt_lib.seating`).

`Trainer` trains a skill for a frozen agent on any `Environment`. It holds no database and knows nothing of
the daemon: the nightly cycle reuses it on replayed tasks exactly as `skillopt train` uses it on a benchmark.

Determinism: batches, minibatches and prompts derive from the seed and the step number, rollouts come back in
item order, and nothing depends on wall-clock time; given the same model outputs a run is reproducible, and a
run resumed from its checkpoint (`Trainer.resume`) ends exactly where an uninterrupted one would.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from skillopt_lib.agents import TOOLS
from skillopt_lib.backends import create_backend
from skillopt_lib.backends.base import ChatBackend, Usage
from skillopt_lib.budget import budget_at
from skillopt_lib.config import (
    Redactor,
    TrainConfig,
    config_secrets,
    masked_dump,
    validate_config,
)
from skillopt_lib.edits import (
    Edit,
    apply_edits,
    bundle_changed_tokens,
)
from skillopt_lib.envs import load_env
from skillopt_lib.envs.base import AgentBackend, Environment, Item, ItemResult, Split, recorded_result
from skillopt_lib.errors import ConfigError
from skillopt_lib.executor import Executor, make_executor
from skillopt_lib.gate import (
    Arm,
    GateConfig,
    GateDecision,
    GateLedger,
    MemoryLedger,
    PairedEvidence,
    PairedMeasure,
    Request,
    ScoreTable,
    evidence_figures,
    item_score,
    mean_score,
    plan_gate,
)
from skillopt_lib.reflect import (
    OptimizerCaller,
    Prompts,
    render_rejected,
    render_skill,
)
from skillopt_lib.seating import Screen, carries
from skillopt_lib.skill import SkillBundle, bundle_from_json, bundle_to_json
from skillopt_lib.training.deciding import Decider, carry_findings, initial_from_gate
from skillopt_lib.training.epoch import meta_notes, slow_candidate
from skillopt_lib.training.records import HistoryRecord, RunSummary
from skillopt_lib.training.runfiles import STATE_VERSION, RunFiles, saved_config, utc_iso
from skillopt_lib.training.state import (
    EvalResult,
    PendingCandidate,
    RunState,
    TrainResult,
    usage_from,
)
from skillopt_lib.training.step import (
    Rollout,
    StepPlan,
    Update,
    choose,
    reflect_on,
    step_record,
    update,
)

Event = dict[str, Any]
EventHandler = Callable[[Event], None]


class Trainer:
    """Train a skill on an environment. Use `Trainer(...).train()` or `Trainer.resume(run_dir).train()`.

    `agent` and `optimizer` default to backends built from the config's `agent` / `optimizer` sections through
    the backend registry; pass objects to use your own (tests, exec backends, a shared client).
    """

    def __init__(
        self,
        config: TrainConfig,
        env: Environment,
        run_dir: str | Path,
        *,
        agent: AgentBackend | None = None,
        optimizer: ChatBackend | None = None,
        executor: Executor | None = None,
        initial_skill: SkillBundle | None = None,
        on_event: EventHandler | None = None,
        pending: PendingCandidate | None = None,
        ledger: GateLedger | None = None,
        screen: Screen | None = None,
    ) -> None:
        self.cfg = config
        # The candidate screen (untrusted-text defence): a candidate it rejects is never replayed.
        self.screen = screen
        # Every replay result the optimizer was shown in this run (their transcripts, tool output, checks'
        # output): each candidate is screened against all of it, and the night screens the proposal again
        # against it, so a line copied from a file read during a replay is recognised as copied. Newest first:
        # the screen reads a bounded amount of text, and the step's own replays must be in it.
        self.shown: list[ItemResult] = []
        self._carried = pending
        self.env = env
        self.on_event = on_event or (lambda e: None)
        self.redactor = Redactor(config_secrets(config))
        self.files = RunFiles(Path(run_dir), self.redactor)
        prices = {k: v.model_dump() for k, v in config.prices.items()}
        if agent is None:
            _check_agent_kind(env, config.agent.backend)
        self.agent = agent if agent is not None else create_backend(config.agent, "agent", prices=prices)
        optimizer_backend = (
            optimizer
            if optimizer is not None
            else create_backend(config.optimizer, "optimizer", prices=prices)
        )
        self.caller = OptimizerCaller(
            optimizer_backend, Prompts(config.prompts_dir), config.reflect.json_retries
        )
        self.executor = executor or make_executor(config.executor, config.concurrency)
        splits = env.splits()
        self.train_items: list[Item] = list(splits.train)
        self.val_items: list[Item] = list(splits.val)
        self.test_items: list[Item] = list(splits.test)
        if not self.train_items or not self.val_items:
            raise ConfigError(
                f"environment {getattr(env, 'name', env)!r} has {len(self.train_items)} train and "
                f"{len(self.val_items)} validation items; training needs both",
                hint="check the environment's options",
            )
        self.batches_per_epoch = math.ceil(len(self.train_items) / config.batch_size)
        # Which candidates were tested against which incumbent: the e-value gate shares one error rate
        # between them. A caller that runs again on the same incumbent (the nightly cycle) passes its own.
        self.decider = Decider(
            config,
            ledger if ledger is not None else MemoryLedger(),
            self.val_items,
            self._measure,
            self._measure_pairs,
            self._checkpoint,
        )
        self.total_steps = self.batches_per_epoch * config.epochs
        if config.max_steps:
            self.total_steps = min(self.total_steps, config.max_steps)
        self.agent_usage = Usage()
        self._resumed_state: RunState | None = None
        seed = initial_skill or env.seed_skill()
        self._initial_skill = seed

    # ------------------------------------------------------------------------------------------ resume
    @classmethod
    def resume(
        cls,
        run_dir: str | Path,
        *,
        config: TrainConfig | None = None,
        env: Environment | None = None,
        agent: AgentBackend | None = None,
        optimizer: ChatBackend | None = None,
        executor: Executor | None = None,
        on_event: EventHandler | None = None,
    ) -> Trainer:
        """Continue a run from its checkpoint. Keys come from the environment again, never from the run."""
        run_path = Path(run_dir)
        if not (run_path / "state.json").is_file():
            raise ConfigError(
                f"{run_path} has no checkpoint (state.json)",
                hint="give the folder of a run started by skillopt train",
            )
        if config is None:
            config = validate_config(saved_config(run_path))
        if env is None:
            if not config.env:
                raise ConfigError("the run's config names no environment", hint="pass --env")
            env = load_env(config.env, **config.env_options)
        trainer = cls(
            config, env, run_path, agent=agent, optimizer=optimizer, executor=executor, on_event=on_event
        )
        state = json.loads((run_path / "state.json").read_text(encoding="utf-8"))
        if state.get("version") != STATE_VERSION:
            raise ConfigError(
                f"{run_path} was written by another skillopt version (state {state.get('version')})"
            )
        trainer._resumed_state = RunState.from_dict(state)
        return trainer

    # ------------------------------------------------------------------------------------------ helpers
    @property
    def ledger(self) -> GateLedger:
        """Which candidates were tested against which incumbent (the gate's error rate is shared)."""
        return self.decider.ledger

    @ledger.setter
    def ledger(self, ledger: GateLedger) -> None:
        self.decider.ledger = ledger

    @property
    def interrupted(self) -> PendingCandidate | None:
        """A candidate whose gate session a raised error cut short, with the pairs measured before it."""
        return self.decider.interrupted

    def _emit(self, kind: str, **data: Any) -> None:
        try:
            self.on_event({"event": kind, **data})
        except Exception:  # a broken progress display must not stop training
            pass

    def _parallel(self, fn: Callable[[Any], Any], jobs: Sequence[Any]) -> list[Any]:
        if len(jobs) <= 1 or self.cfg.reflect.parallel <= 1:
            return [fn(j) for j in jobs]
        with ThreadPoolExecutor(
            max_workers=self.cfg.reflect.parallel, thread_name_prefix="skillopt-opt"
        ) as pool:
            return list(pool.map(fn, jobs))

    def _rollout(self, skill: SkillBundle, items: Sequence[Item], repeats: int = 1) -> list[list[ItemResult]]:
        """Run every item `repeats` times; results[i][r] is item i's r-th run."""
        jobs = [(item, r) for item in items for r in range(repeats)]
        env, agent = self.env, self.agent  # not `self`: a cluster executor ships this function to workers
        results: list[ItemResult] = self.executor.map(lambda job: env.run(job[0], skill, agent), jobs)
        for res in results:
            self.agent_usage.add(res.usage)
        out: list[list[ItemResult]] = [[] for _ in items]
        for (item_index, _), res in zip(
            ((i, r) for i in range(len(items)) for r in range(repeats)), results, strict=True
        ):
            out[item_index].append(res)
        return out

    def _train_rollout(
        self, skill: SkillBundle, items: Sequence[Item], *, initial: bool
    ) -> list[tuple[Item, ItemResult]]:
        """The step's rollout of the incumbent on its train batch. With `use_recorded`, while the incumbent
        is still the skill the run started from, what the environment has on record is read instead of
        replayed (`recorded_result`); an accepted edit makes a skill no record shows."""
        recorded = {}
        if self.cfg.use_recorded and initial:
            recorded = {item.id: r for item in items if (r := recorded_result(self.env, item)) is not None}
        todo = [item for item in items if item.id not in recorded]
        runs = dict(zip((i.id for i in todo), (rs[0] for rs in self._rollout(skill, todo, 1)), strict=True))
        return [(item, recorded.get(item.id) or runs[item.id]) for item in items]

    def _scores(self, runs: list[list[ItemResult]], items: Sequence[Item]) -> ScoreTable:
        return {
            item.id: [item_score(r.hard, r.soft, self.cfg.gate) for r in rs]
            for item, rs in zip(items, runs, strict=True)
        }

    def _measure(self, skill: SkillBundle, repeats: int) -> ScoreTable:
        return self._scores(self._rollout(skill, self.val_items, repeats), self.val_items)

    def _measure_pairs(self, candidate: SkillBundle, incumbent: SkillBundle) -> PairedMeasure:
        """Interleaved single runs for the sequential gate, submitted in the gate's order (validation items only)."""
        by_id = {item.id: item for item in self.val_items}
        skills: dict[Arm, SkillBundle] = {"candidate": candidate, "incumbent": incumbent}

        def measure(requests: Sequence[Request]) -> list[float]:
            jobs = [(by_id[item], skills[arm]) for item, arm in requests]
            env, agent = self.env, self.agent  # not `self`: a cluster executor ships this function to workers
            results: list[ItemResult] = self.executor.map(lambda job: env.run(job[0], job[1], agent), jobs)
            for res in results:
                self.agent_usage.add(res.usage)
            return [item_score(r.hard, r.soft, self.cfg.gate) for r in results]

        return measure

    def _spent(self, state: RunState) -> Usage:
        total = Usage()
        total.add(self.agent_usage).add(self.caller.usage)
        total.add(usage_from(state.usage_base["agent"])).add(usage_from(state.usage_base["optimizer"]))
        return total

    def _budget_left(self, state: RunState) -> str | None:
        spent = self._spent(state)
        if self.cfg.max_tokens is not None and spent.total_tokens >= self.cfg.max_tokens:
            return f"token budget used ({spent.total_tokens} >= {self.cfg.max_tokens})"
        if self.cfg.max_cost_usd is not None and spent.cost_usd >= self.cfg.max_cost_usd:
            return f"cost budget used (${spent.cost_usd:.4f} >= ${self.cfg.max_cost_usd})"
        if self.cfg.max_steps is not None and state.step >= self.cfg.max_steps:
            return f"step budget used ({state.step} steps)"
        return None

    def _usage_now(self, state: RunState) -> dict[str, Any]:
        agent = usage_from(state.usage_base["agent"]).add(self.agent_usage)
        opt = usage_from(state.usage_base["optimizer"]).add(self.caller.usage)
        return {"agent": agent.to_dict(), "optimizer": opt.to_dict()}

    def _checkpoint(self, state: RunState) -> None:
        state.usage = self._usage_now(state)
        state.history_lines = self.files.history_lines()
        self.files.write_json("state.json", state.to_dict())

    def _history(self, state: RunState, record: HistoryRecord) -> None:
        record.setdefault("time", utc_iso())
        record["usage_total"] = self._usage_now(state)
        self.files.append_history(record)

    def _context(self, state: RunState, skill: SkillBundle) -> dict[str, Any]:
        return {
            "skill": render_skill(skill),
            "meta_notes": state.meta_notes or "(none yet)",
            "rejected": render_rejected(state.rejected),
        }

    # ------------------------------------------------------------------------------------------ the loop
    def train(self) -> TrainResult:
        try:
            return self._train()
        finally:
            self.executor.close()
            close = getattr(self.env, "close", None)
            if callable(close):
                close()

    def _train(self) -> TrainResult:
        if self._resumed_state is not None:
            state = self._resumed_state
            self.files.truncate_history(state.history_lines)
        else:
            if self.files.state_path.exists():
                raise ConfigError(
                    f"{self.files.dir} already holds a run", hint=f"resume it with --resume {self.files.dir}"
                )
            self._initial_skill.require_valid()
            state = RunState.new(self._initial_skill)
            self.files.write_json("config.json", masked_dump(self.cfg))
            plan = plan_gate(len(self.val_items), self.cfg.gate)
            if not plan.decidable:
                state.warnings.append(f"the validation split can never pass the gate: {plan.reason}")
        state.usage_base = {k: dict(v) for k, v in state.usage.items()}
        if self._resumed_state is None:
            self._checkpoint(state)
        self._emit(
            "start",
            run_dir=str(self.files.dir),
            total_steps=self.total_steps,
            epochs=self.cfg.epochs,
            step=state.step,
            resumed=self._resumed_state is not None,
            gate_plan=plan_gate(len(self.val_items), self.cfg.gate).to_dict(),
        )
        if self._resumed_state is None:
            for message in state.warnings:
                self._emit("warning", message=message)
        if state.phase == "baseline":
            self._baseline(state)
            if self.cfg.hold_pending and state.pending is not None:
                state.stopped = "a carried candidate is still gathering evidence; no new candidate this run"
                state.phase = "done"
                self._checkpoint(state)
        while state.phase != "done":
            if state.phase == "epoch_end":
                self._epoch_end(state)
                continue
            reason = self._stop_reason(state)
            if reason:
                state.stopped = reason
                state.phase = "done"
                self._checkpoint(state)
                break
            self._step(state)
        return self._finish(state)

    def _stop_reason(self, state: RunState) -> str | None:
        if state.epoch >= self.cfg.epochs:
            return f"completed {self.cfg.epochs} epoch(s)"
        if self.cfg.patience is not None and state.no_improve >= self.cfg.patience:
            return f"early stop: {state.no_improve} step(s) without an accepted edit"
        return self._budget_left(state)

    def _baseline(self, state: RunState) -> None:
        skill = bundle_from_json(state.incumbent)
        if not self.cfg.baseline and self.cfg.gate.kind == "sequential":
            # The gate measures the incumbent beside each candidate: the initial figure comes from its pairs
            # (`_decide`), and no replay is spent on a figure alone.
            state.phase = "step"
            self._history(
                state,
                {
                    "kind": "baseline",
                    "step": 0,
                    "val": {"score": None, "n": 0, "repeats": 0, "from": "gate"},
                    "skill_hash": skill.content_hash,
                },
            )
            self.files.write_skill("best_skill", skill)
            if self._carried is not None:
                self._continue_pending(state, self._carried)
            self._checkpoint(state)
            self._emit("baseline_done", val=None)
            return
        # The sequential gate measures the incumbent again beside each candidate; its baseline is a figure
        # for the report, so one run per item is enough.
        repeats = 1 if self.cfg.gate.kind == "sequential" else self.decider.gate.repeats
        self._emit("baseline", n=len(self.val_items), repeats=repeats)
        table = self._measure(skill, repeats)
        score = mean_score(table)
        state.incumbent_scores, state.initial_val, state.incumbent_val = table, score, score
        state.phase = "step"
        self._history(
            state,
            {
                "kind": "baseline",
                "step": 0,
                "val": {"score": round(score, 6), "n": len(table), "repeats": repeats},
                "skill_hash": skill.content_hash,
            },
        )
        self.files.write_skill("best_skill", skill)
        if self._carried is not None:
            self._continue_pending(state, self._carried)
        self._checkpoint(state)
        self._emit("baseline_done", val=score)

    def _continue_pending(self, state: RunState, pending: PendingCandidate) -> None:
        """Add this run's paired replays to a candidate carried from an earlier run, then decide on it."""
        incumbent = bundle_from_json(state.incumbent)
        record: HistoryRecord = {"kind": "pending", "step": 0, "skill_hash": pending.skill.content_hash}
        if pending.findings:
            # What the screen found when the candidate was made, in this run's history for its proposal.
            record["screen"] = {"findings": list(pending.findings)}
        why = self.decider.carried_mismatch(pending, incumbent)
        if why:
            record.update({"accepted": False, "gate": None, "reason": why})
            self._history(state, record)
            self._emit("pending", accepted=False, outcome="dropped", reason=why)
            return
        if self.screen is not None:
            verdict = self.screen.check(incumbent, pending.skill, self.shown)
            if verdict.rejected:
                why = verdict.reason()
                record.update(
                    {"accepted": False, "gate": None, "reason": why, "screened": [verdict.to_dict()]}
                )
                self._history(state, record)
                self._emit("pending", accepted=False, outcome="screened", reason=why)
                return
        evidence = PairedEvidence.from_dict(pending.evidence.to_dict())
        if self.cfg.gate.test == "e-value":
            share = self.decider.ledger.share(
                incumbent.content_hash, pending.skill.content_hash, self.cfg.gate
            )
            if share is None:
                why = "the carried candidate was already decided against this skill"
                record.update({"accepted": False, "gate": None, "reason": why})
                self._history(state, record)
                self._emit("pending", accepted=False, outcome="dropped", reason=why)
                return
            evidence.share = share  # the ledger's word, not the file's
        test_ids = {item.id for item in self.test_items}
        decision = self.decider.gate_pairs(state, pending.skill, incumbent, evidence, exclude=test_ids)
        initial_from_gate(state, decision)
        record.update({"accepted": decision.accepted, "reason": decision.reason, "gate": decision.to_dict()})
        if decision.accepted:
            cand_scores, _ = evidence.tables(test_ids)
            state.candidate_scores = cand_scores
            self._accept(state, pending.skill, [], decision)
        elif decision.pending:
            state.pending = PendingCandidate(
                pending.skill, incumbent.content_hash, evidence, decision.reason, pending.findings
            ).to_dict()
        if not decision.pending:
            self.decider.ledger.decided(
                incumbent.content_hash, pending.skill.content_hash, str(decision.outcome)
            )
        self._history(state, record)
        self._emit("pending", accepted=decision.accepted, outcome=decision.outcome, reason=decision.reason)

    def _batch(self, epoch: int, batch: int) -> list[Item]:
        order = list(self.train_items)
        random.Random(f"{self.cfg.seed}:epoch:{epoch}").shuffle(order)
        size = self.cfg.batch_size
        return order[batch * size : (batch + 1) * size]

    def _step(self, state: RunState) -> None:
        """One step, phase by phase (`step.py`): rollout, reflect, aggregate and choose, update, then screen
        and gate the candidate (`_judge`) and record the step (`_record_step`)."""
        plan = self._plan_step(state)
        usage_before = self._usage_now(state)
        self._emit("step_start", step=plan.step + 1, epoch=plan.epoch + 1, total_steps=self.total_steps)
        rollout = Rollout(self._train_rollout(plan.incumbent, plan.items, initial=plan.initial))
        self.shown[:0] = [r for _, r in rollout.pairs]
        self._emit("rollout_done", step=plan.step + 1, train=rollout.hard)
        reflection = reflect_on(
            self.caller,
            self.env,
            plan,
            rollout,
            state.rejected,
            state.meta_notes,
            self.cfg.reflect,
            self.cfg.seed,
            self._parallel,
        )

        def rejected_before_seating(edit: Edit, reason: str) -> None:
            self._reject(state, [edit], plan.step, reason)
            self._emit("screened", step=plan.step + 1, reason=reason)

        choice = choose(
            self.caller,
            self.screen,
            self.shown,
            plan,
            reflection,
            self._context(state, plan.incumbent),
            {Edit.model_validate(r["edit"]).key() for r in state.rejected},
            self.cfg.reflect.merge_group_size,
            self._parallel,
            rejected_before_seating,
        )
        upd = update(
            plan, choice.selection.selected, self.cfg.max_skill_tokens, self.cfg.allow_large_deletions
        )
        record = step_record(plan, rollout, reflection, choice, upd)
        self._judge(state, plan, upd, list(choice.screened), record)
        self._record_step(state, plan, rollout, record, usage_before)

    def _plan_step(self, state: RunState) -> StepPlan:
        incumbent = bundle_from_json(state.incumbent)
        return StepPlan(
            step=state.step,
            epoch=state.epoch,
            batch=state.batch,
            incumbent=incumbent,
            budget=budget_at(self.cfg.learning_rate, state.step, self.total_steps),
            items=self._batch(state.epoch, state.batch),
            initial=bundle_from_json(state.initial).content_hash == incumbent.content_hash,
        )

    def _judge(
        self, state: RunState, plan: StepPlan, upd: Update, screened: list[Edit], record: HistoryRecord
    ) -> None:
        """Screen the candidate again (its lines together: a rejected line is never replayed), then gate it
        against the incumbent and accept or reject it; the verdict goes into `record`."""
        step, incumbent = plan.step, plan.incumbent
        candidate, applied, issues = upd.candidate, upd.applied, upd.issues
        if applied and not issues and self.screen is not None:
            candidate, applied, also = self._screened(
                state, incumbent, candidate, applied, self.shown, step, record
            )
            screened += also
            record["applied"] = [e.model_dump() for e in applied]
        if not applied and screened:
            record["gate"] = None
            record["accepted"] = False
            record["reason"] = record["screened"][0]["reason"]
            state.no_improve += 1
        elif not applied or issues:
            if issues:
                record["invalid_skill"] = [str(i) for i in issues]
                self._reject(state, applied, step, "the edited skill is not a valid SKILL.md")
            record["gate"] = None
            record["accepted"] = False
            record["reason"] = "invalid skill after edits" if issues else "no edit to evaluate"
            state.no_improve += 1
        else:
            decision = self.decider.decide(state, candidate, incumbent)
            carry_findings(state, candidate, record)
            record["gate"] = decision.to_dict()
            record["accepted"] = decision.accepted
            record["reason"] = decision.reason
            record["changed_tokens"] = bundle_changed_tokens(incumbent, candidate)
            record["candidate_hash"] = candidate.content_hash
            if decision.accepted:
                self._accept(state, candidate, applied, decision)
            else:
                self._reject(state, applied, step, decision.reason)
                state.no_improve += 1
        record["rejected_edits"] = [e.model_dump() for e in screened] + (
            [e.model_dump() for e in applied] if not record["accepted"] else []
        )

    def _record_step(
        self,
        state: RunState,
        plan: StepPlan,
        rollout: Rollout,
        record: HistoryRecord,
        usage_before: dict[str, Any],
    ) -> None:
        """Close the step's record (the incumbent's figures, what the step spent), move the run on, write
        the record and the checkpoint, and tell the caller."""
        record["val"] = {"incumbent": state.incumbent_val}
        record["skill_hash"] = bundle_from_json(state.incumbent).content_hash
        record["usage_step"] = _usage_delta(usage_before, self._usage_now(state))
        state.step = plan.step + 1
        state.batch = plan.batch + 1
        if state.batch >= self.batches_per_epoch:
            state.phase = "epoch_end"
        self._history(state, record)
        self._checkpoint(state)
        self._emit(
            "step_done",
            step=plan.step + 1,
            epoch=plan.epoch + 1,
            total_steps=self.total_steps,
            accepted=record["accepted"],
            reason=record["reason"],
            val=state.incumbent_val,
            train=rollout.hard,
            spent=self._usage_now(state),
        )

    def _screened(
        self,
        state: RunState,
        incumbent: SkillBundle,
        candidate: SkillBundle,
        applied: list[Edit],
        shown: Sequence[ItemResult],
        step: int,
        record: HistoryRecord,
    ) -> tuple[SkillBundle, list[Edit], list[Edit]]:
        """Screen the candidate; while the screen rejects it, reject the edits that carry a rejected line (into
        the rejected-edit buffer, with the screen's reason: which line and why) and build the candidate again
        from the step's other edits, which are screened in turn. Returns the candidate left, its edits (none
        when nothing survived) and the edits the screen rejected; `record["screened"]` lists each verdict, and
        `record["screen"]` the verdict on the candidate left (its warnings travel into the proposal)."""
        assert self.screen is not None
        rejected: list[Edit] = []
        while applied:
            verdict = self.screen.check(incumbent, candidate, shown)
            if not verdict.rejected:
                record["screen"] = verdict.to_dict()
                break
            lines = {f.line.strip() for f in verdict.rejects()}
            bad = [e for e in applied if carries(e, lines)] or list(applied)
            reason = verdict.reason()
            self._reject(state, bad, step, reason)
            rejected += bad
            record.setdefault("screened", []).append(
                {
                    "reason": reason,
                    "findings": [f.to_dict() for f in verdict.rejects()],
                    "edits": [e.model_dump() for e in bad],
                }
            )
            self._emit("screened", step=step + 1, reason=reason)
            rest = [e for e in applied if all(e is not b for b in bad)]
            if not rest:
                return incumbent, [], rejected
            candidate, applied, _conflicts = apply_edits(incumbent, rest)
        return candidate, applied, rejected

    def _accept(
        self, state: RunState, candidate: SkillBundle, applied: list[Edit], decision: GateDecision
    ) -> None:
        cand_scores, state.candidate_scores = state.candidate_scores, None
        state.incumbent = bundle_to_json(candidate)
        state.incumbent_scores = cand_scores
        state.incumbent_val = mean_score(cand_scores)
        state.accepted_steps += 1
        state.tiers.append(decision.tier or "proven")
        state.no_improve = 0
        state.pending = None  # measured against the old incumbent: no longer comparable
        state.epoch_accepted.extend(
            {"edit": e.model_dump(), "step": state.step + 1, "stats": decision.stats} for e in applied
        )
        self.files.write_skill("best_skill", candidate)

    def _reject(self, state: RunState, applied: list[Edit], step: int, reason: str) -> None:
        state.candidate_scores = None
        for e in applied:
            entry = {"edit": e.model_dump(), "step": step + 1, "epoch": state.epoch + 1, "reason": reason}
            state.rejected.append(entry)
            state.epoch_rejected.append(entry)

    def _epoch_end(self, state: RunState) -> None:
        epoch = state.epoch
        self._emit("epoch_end", epoch=epoch + 1)
        if self.cfg.slow_update and state.epoch_accepted and not self._budget_left(state):
            self._slow_update(state)
        if (
            self.cfg.meta_skill
            and (state.epoch_accepted or state.epoch_rejected)
            and not self._budget_left(state)
        ):
            self._meta_notes(state)
        state.epoch = epoch + 1
        state.batch = 0
        state.epoch_accepted = []
        state.epoch_rejected = []
        state.phase = "step"
        self._checkpoint(state)

    def _slow_update(self, state: RunState) -> None:
        """The epoch's guidance as a candidate (`epoch.slow_candidate`), decided by the gate unless vetoed."""
        incumbent = bundle_from_json(state.incumbent)
        usage_before = self._usage_now(state)
        slow = slow_candidate(
            self.caller,
            incumbent,
            state.epoch_accepted,
            state.epoch_rejected,
            max_skill_tokens=self.cfg.max_skill_tokens,
            allow_large_deletions=self.cfg.allow_large_deletions,
            screen=self.screen,
            shown=self.shown,
        )
        record: HistoryRecord = {"kind": "slow_update", "epoch": state.epoch + 1, "step": state.step}
        record["optimizer_calls"] = [slow.call.to_dict()]
        if slow.candidate is None:
            record.update({"accepted": False, "reason": slow.refusal or "", "gate": None})
            if slow.screened:
                record["screened"] = slow.screened
        else:
            decision = self.decider.decide(state, slow.candidate, incumbent)
            record.update(
                {"accepted": decision.accepted, "reason": decision.reason, "gate": decision.to_dict()}
            )
            record["guidance"] = slow.guidance
            if decision.accepted:
                self._accept(state, slow.candidate, [], decision)
            else:
                self._reject(state, [slow.edit(incumbent)], state.step - 1, decision.reason)
        record["val"] = {"incumbent": state.incumbent_val}
        record["skill_hash"] = bundle_from_json(state.incumbent).content_hash
        record["usage_step"] = _usage_delta(usage_before, self._usage_now(state))
        self._history(state, record)
        self._emit("slow_update", epoch=state.epoch + 1, accepted=record["accepted"], reason=record["reason"])

    def _meta_notes(self, state: RunState) -> None:
        """The optimizer's notes for the next epochs (`epoch.meta_notes`): they change no skill."""
        state.meta_notes, call = meta_notes(
            self.caller, state.meta_notes, state.epoch_accepted, state.epoch_rejected
        )
        self._history(
            state,
            {
                "kind": "meta_notes",
                "epoch": state.epoch + 1,
                "step": state.step,
                "notes": state.meta_notes,
                "optimizer_calls": [call.to_dict()],
            },
        )

    def _finish(self, state: RunState) -> TrainResult:
        best = bundle_from_json(state.incumbent)
        initial = bundle_from_json(state.initial)
        self.files.write_skill("best_skill", best)
        test: dict[str, Any] = {}
        wanted = self.cfg.evaluate_test is True or (
            self.cfg.evaluate_test == "if-accepted" and state.accepted_steps > 0
        )
        if wanted and self.test_items and not state.test:
            self._emit("test_start", n=len(self.test_items))
            for label, skill in (("initial", initial), ("best", best)):
                ev = self.evaluate(skill, "test")
                test[label] = {
                    "score": round(ev.score, 6),
                    "hard": round(ev.hard, 6),
                    "soft": round(ev.soft, 6),
                }
            state.test = test
            self._history(state, {"kind": "test", "step": state.step, "test": test})
            self._checkpoint(state)
        summary: RunSummary = {
            "env": getattr(self.env, "name", str(self.env)),
            "run_dir": str(self.files.dir),
            "skill_name": best.name,
            "steps": state.step,
            "epochs_completed": min(state.epoch, self.cfg.epochs),
            "accepted_steps": state.accepted_steps,
            "rejected_edits": len(state.rejected),
            "stopped": state.stopped,
            "gate": self.cfg.gate.kind,
            # The weakest tier among the accepted decisions that made the best skill.
            "tier": ("likely" if "likely" in state.tiers else "proven") if state.accepted_steps else None,
            # None when nothing measured the validation split (no baseline rollout and no gate session).
            "initial_val": None if state.initial_val is None else round(float(state.initial_val), 6),
            "best_val": None if state.incumbent_val is None else round(float(state.incumbent_val), 6),
            "test": state.test or {},
            "best_skill_hash": best.content_hash,
            "warnings": list(state.warnings or []),
            "pending": _pending_summary(state.pending, self.cfg.gate),
            "changed_tokens": bundle_changed_tokens(initial, best),
            "usage": self._usage_now(state),
            "started": state.started,
            "finished": utc_iso(),
        }
        pending = PendingCandidate.from_dict(state.pending) if state.pending else None
        if pending is not None:
            self.files.write_skill("pending_skill", pending.skill)
            self.files.write_json("pending.json", pending.to_dict())
        self.files.write_json("summary.json", summary)
        self._emit("done", summary=summary)
        return TrainResult(self.files.dir, best, summary, pending, tuple(self.files.history()))

    # ------------------------------------------------------------------------------------------ evaluation
    def evaluate(self, skill: SkillBundle, split: Split = "val", repeats: int = 1) -> EvalResult:
        items = {"train": self.train_items, "val": self.val_items, "test": self.test_items}[split]
        before = Usage().add(self.agent_usage)
        runs = self._rollout(skill, items, repeats)
        flat = [r for rs in runs for r in rs]
        table = self._scores(runs, items)
        used = Usage(
            input_tokens=self.agent_usage.input_tokens - before.input_tokens,
            output_tokens=self.agent_usage.output_tokens - before.output_tokens,
            calls=self.agent_usage.calls - before.calls,
            cost_usd=self.agent_usage.cost_usd - before.cost_usd,
        )
        return EvalResult.of(split, table, flat, len(items), repeats, used)


def _pending_summary(data: dict[str, Any] | None, cfg: GateConfig) -> dict[str, Any] | None:
    """The running figures of a pending candidate, for `status` and the summary."""
    if not data:
        return None
    pending = PendingCandidate.from_dict(data)
    return {
        "skill_hash": pending.skill.content_hash,
        "incumbent_hash": pending.incumbent_hash,
        "reason": pending.reason,
        **evidence_figures(pending.evidence, cfg),
    }


def exec_backends() -> tuple[str, ...]:
    """The backends that drive an agent CLI: every tool's row's, read when a run starts (not when this
    module is imported, which would load every plugin's entry point for a command that trains nothing)."""
    return tuple(row.backend for row in TOOLS.values() if row.backend)


def _check_agent_kind(env: Environment, backend: str) -> None:
    """A chat environment needs a chat model and an exec environment a real agent CLI: say so up front."""
    kind = getattr(env, "agent_kind", "chat")
    execs = exec_backends()
    name = getattr(env, "name", str(env))
    if kind == "exec" and backend not in execs:
        raise ConfigError(
            f"environment {name!r} runs a real agent CLI, but agent.backend is {backend!r}",
            hint=f"set agent.backend to one of: {', '.join(execs)}",
        )
    if kind == "chat" and backend in execs:
        raise ConfigError(
            f"environment {name!r} talks to a chat model, but agent.backend is the exec backend {backend!r}",
            hint=f"use a chat backend (openai, anthropic, a preset) or {backend}-chat where available",
        )


def _usage_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for role in after:
        a, b = after[role], before.get(role, {})
        out[role] = {
            "input_tokens": a["input_tokens"] - b.get("input_tokens", 0),
            "output_tokens": a["output_tokens"] - b.get("output_tokens", 0),
            "calls": a["calls"] - b.get("calls", 0),
            "cost_usd": round(a["cost_usd"] - b.get("cost_usd", 0.0), 6),
        }
    return out

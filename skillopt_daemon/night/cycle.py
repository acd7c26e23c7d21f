"""The nightly cycle: catch up ingest → mine → for each target skill, train on replays → gate → proposal.

It is the same `skillopt_lib.Trainer` that trains on benchmarks, driven on a `ReplayEnvironment` of the user's
own recurring tasks, with the user's own agent CLI as the frozen agent and the installed version as the
incumbent. What comes out is a *proposal* in the registry with its evidence; nothing reaches an agent
until the user approves it (or opted in to auto-approve for that skill).

Safety rules this module keeps:
- One night at a time: manual runs and the scheduled job share `night_lock()`.
- Per-night caps on tokens, money, wall time and replays. When one is hit the cycle stops cleanly, records
  what it measured, and registers nothing that the gate did not verify.
- A proposal is registered in one transaction at the end of a skill's training, so a crash or `kill -9`
  never leaves half of one. The next run finds the interrupted night, resumes its training from the
  checkpoints when there are any, and says which it did.
- `local_only` refuses any model endpoint that is not on this machine.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from skillopt_daemon.core import fsio, paths
from skillopt_daemon.core.config import BackendSettings, Settings, load_settings, tool_home
from skillopt_daemon.core.store import open_db
from skillopt_daemon.core.timeutil import utcnow, utcnow_iso
from skillopt_daemon.registry.installers.base import pause_point
from skillopt_lib.agents import AgentTool
from skillopt_lib.backends import create_backend
from skillopt_lib.backends.base import ChatMessage, ChatResponse, Usage
from skillopt_lib.backends.exec_base import ExecLimits, ExecResult
from skillopt_lib.config import BackendConfig, TrainConfig
from skillopt_lib.errors import ConfigError, ConflictError, SkillOptError
from skillopt_lib.gate import GateConfig
from skillopt_lib.judge import LeakGuard
from skillopt_lib.skill import SkillBundle

if TYPE_CHECKING:
    from skillopt_daemon.night import mining as mine

log = logging.getLogger("skillopt.sleep")
Progress = Callable[[str], None]


class NightBudgetExceeded(SkillOptError):
    """A per-night cap was reached; the cycle stops cleanly and registers nothing unverified."""


# ------------------------------------------------------------------------------------------------ the lock


def lock_path() -> Path:
    return paths.data_dir() / "night.lock"


@contextlib.contextmanager
def night_lock() -> Iterator[None]:
    """One nightly cycle per SKILLOPT_HOME, whether started by hand or by the schedule."""
    try:
        with fsio.file_lock(lock_path(), timeout=0):
            yield
    except fsio.Busy as busy:
        raise ConflictError(
            f"a nightly cycle is already running (pid {busy.holder or 'unknown'})",
            hint="wait for it to finish; `skillopt status` shows its progress",
        ) from None


# ------------------------------------------------------------------------------------------------ budgets


@dataclass
class NightBudget:
    max_tokens: int
    max_cost_usd: float
    max_wall_s: float
    max_replays: int
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    cost_usd: float = 0.0
    replays: int = 0
    model_calls: int = 0
    exceeded: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reserve_replay(self) -> None:
        """Check the caps and count one replay, atomically: parallel replays must not overshoot the cap."""
        with self._lock:
            self.check()
            self.replays += 1

    def check(self) -> None:
        """Raise when a cap is reached; the message says which and how much was measured."""
        reason = None
        if self.tokens >= self.max_tokens:
            reason = f"the night's token cap ({self.max_tokens:,}) was reached"
        elif self.cost_usd >= self.max_cost_usd:
            reason = f"the night's money cap (${self.max_cost_usd:.2f}) was reached"
        elif time.monotonic() - self.started >= self.max_wall_s:
            reason = f"the night's time cap ({self.max_wall_s:g} s) was reached"
        elif self.replays >= self.max_replays:
            reason = f"the night's replay cap ({self.max_replays}) was reached"
        if reason:
            self.exceeded = reason
            raise NightBudgetExceeded(
                reason, hint="raise the night.max_* settings with `skillopt config set`"
            )

    def add(self, usage: Usage) -> None:
        with self._lock:
            self._add(usage)

    def _add(self, usage: Usage) -> None:
        self.tokens += usage.input_tokens + usage.output_tokens
        self.cost_usd += usage.cost_usd
        self.model_calls += usage.calls

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "replays": self.replays,
            "model_calls": self.model_calls,
            "wall_s": round(time.monotonic() - self.started, 3),
            "exceeded": self.exceeded,
        }


class BudgetedAgent:
    """An exec backend that counts replays and spend against the night's caps before each run."""

    def __init__(self, inner: Any, budget: NightBudget) -> None:
        self._inner = inner
        self._budget = budget
        self.name = inner.name
        self.tool = inner.tool
        self.limits = inner.limits

    def install_skill(self, workspace: Path, skill: SkillBundle) -> Path:
        return Path(self._inner.install_skill(workspace, skill))

    def prepare_home(self, home: Path, workspace: Path) -> dict[str, str]:
        return dict(self._inner.prepare_home(home, workspace))

    def run(self, prompt: str, *, cwd: Path, env: Any, limits: ExecLimits | None = None) -> ExecResult:
        self._budget.reserve_replay()
        result: ExecResult = self._inner.run(prompt, cwd=cwd, env=env, limits=limits)
        self._budget.add(result.usage)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class BudgetedChat:
    """A chat backend whose calls count against the night's caps."""

    def __init__(self, inner: Any, budget: NightBudget) -> None:
        self._inner = inner
        self._budget = budget
        self.name = inner.name
        self.model = inner.model

    def complete(self, messages: list[ChatMessage], **kwargs: Any) -> ChatResponse:
        self._budget.check()
        resp: ChatResponse = self._inner.complete(messages, **kwargs)
        self._budget.add(resp.usage)
        return resp


# ------------------------------------------------------------------------------------------------ reports


@dataclass
class SkillOutcome:
    skill: str
    status: str  # proposed | approved | no-improvement | leak | budget | too-few-tasks | error | dry-run
    reason: str = ""
    tasks: int = 0
    proposal_id: str | None = None
    run_dir: str | None = None
    baseline: float | None = None
    candidate: float | None = None


@dataclass
class CycleReport:
    run_id: str
    trigger: str
    status: str  # completed | budget | failed | nothing-to-do | skipped
    dry_run: bool
    started_at: str
    finished_at: str | None = None
    resumed_from: str | None = None
    start_note: str = ""
    ingest: dict[str, Any] = field(default_factory=dict)
    mining: dict[str, Any] = field(default_factory=dict)
    skills: list[SkillOutcome] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    spend: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def proposals(self) -> list[str]:
        return [s.proposal_id for s in self.skills if s.proposal_id]


# ------------------------------------------------------------------------------------------------ backends


def _library_config(b: BackendSettings) -> BackendConfig:
    return BackendConfig(
        backend=b.backend,
        model=b.model,
        base_url=b.base_url,
        api_key_env=b.api_key_env,
        temperature=b.temperature,
        max_tokens=b.max_tokens,
        timeout_s=b.timeout_s,
        max_retries=b.max_retries,
        azure_api_version=b.azure_api_version,
    )


_CHAT_CLI = {"claude-code-chat": AgentTool.CLAUDE_CODE, "codex-chat": AgentTool.CODEX}


def _chat_config(settings: Settings, b: BackendSettings) -> BackendConfig:
    cfg = _library_config(b)
    tool = _CHAT_CLI.get(b.backend)
    if tool is not None:
        opts: dict[str, Any] = {"home": str(tool_home(tool, settings))}
        if settings.tool(tool).cli:
            opts["cli"] = settings.tool(tool).cli
        cfg = cfg.model_copy(update={"options": opts})
    return cfg


def missing_for_replays(settings: Settings, tools: list[AgentTool]) -> list[str]:
    """What stops replays from running, each with how to fix it (shown by `skillopt status`)."""
    from skillopt_lib.backends import resolve_api_key
    from skillopt_lib.net import is_loopback_url

    missing: list[str] = []
    opt = settings.optimizer
    if not opt.backend:
        missing.append(
            "no optimizer backend is configured: set one with `skillopt config set optimizer.backend openai` "
            "(plus optimizer.model and an API key variable), or use your agent login with "
            "`skillopt config set optimizer.backend claude-code-chat` (or codex-chat)"
        )
    elif opt.backend not in _CHAT_CLI:
        try:
            resolve_api_key(_library_config(opt), "optimizer")
        except ConfigError as exc:
            missing.append(f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
        if settings.night.local_only and not is_loopback_url(opt.base_url):
            missing.append(
                f"night.local_only is on but the optimizer endpoint {opt.base_url or opt.backend!r} is not on "
                "this machine: point optimizer.base_url at a local server or turn local_only off"
            )
    for tool in tools:
        if tool not in (AgentTool.CLAUDE_CODE, AgentTool.CODEX, AgentTool.COPILOT, AgentTool.CURSOR):
            missing.append(
                f"{tool.value} sessions cannot be replayed: skillopt has no headless runner for it"
            )
            continue
        try:
            make_agent(settings, tool).executable()
        except SkillOptError as exc:
            missing.append(f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
    return missing


def make_agent(settings: Settings, tool: AgentTool) -> Any:
    r = settings.replay
    opts: dict[str, Any] = {
        "home": str(tool_home(tool, settings)),
        "max_turns": r.max_turns,
        "timeout_s": r.timeout_s,
        "max_output_bytes": r.max_output_bytes,
    }
    if settings.tool(tool).cli:
        opts["cli"] = settings.tool(tool).cli
    if tool is AgentTool.CLAUDE_CODE:
        opts["permission_mode"] = r.claude_permission_mode
        opts["allowed_tools"] = list(r.claude_allowed_tools)
    cfg = BackendConfig(
        backend=tool.value,
        model=settings.agent.model if settings.agent.backend == tool.value else "",
        options=opts,
    )
    return create_backend(cfg, "agent", workspaces_root=str(paths.workspaces_dir()))


# ------------------------------------------------------------------------------------------------ runs table


def _runs(db: sqlite_utils.Database) -> Any:
    return db.table("night_runs")


def _record_start(db: sqlite_utils.Database, run_id: str, trigger: str, dry_run: bool) -> None:
    now = utcnow_iso()
    with db.conn:
        _runs(db).insert(
            {
                "id": run_id,
                "trigger": trigger,
                "status": "running",
                "dry_run": dry_run,
                "started_at": now,
                "finished_at": None,
                "heartbeat_at": now,
                "pid": os.getpid(),
                "summary_json": "{}",
                "error": None,
            }
        )


def _record_end(db: sqlite_utils.Database, report: CycleReport) -> None:
    with db.conn:
        _runs(db).update(
            report.run_id,
            {
                "status": report.status,
                "finished_at": report.finished_at,
                "summary_json": json.dumps(report.to_dict(), default=str),
                "error": report.error,
            },
        )


def _interrupted_runs(db: sqlite_utils.Database) -> list[dict[str, Any]]:
    """Runs still marked running whose process is gone: they were killed mid-cycle."""
    out = []
    for row in db.query("SELECT * FROM night_runs WHERE status = 'running' ORDER BY started_at"):
        if row["pid"] == os.getpid() or not row["pid"] or not fsio.pid_alive(row["pid"]):
            out.append(row)
    return out


def night_dir(run_id: str) -> Path:
    return paths.runs_dir() / f"night-{run_id}"


def last_run(db: sqlite_utils.Database) -> dict[str, Any] | None:
    if "night_runs" not in db.table_names():
        return None
    rows = list(db.query("SELECT * FROM night_runs ORDER BY started_at DESC LIMIT 1"))
    return rows[0] if rows else None


# ------------------------------------------------------------------------------------------------ the cycle


def _catch_up_ingest(settings: Settings, progress: Progress) -> dict[str, Any]:
    """One ingest pass, unless the daemon is running (it already ingests live)."""
    if fsio.daemon_running() and os.getpid() != (fsio.read_pid() or -1):
        return {"skipped": "the daemon ingests live"}
    if fsio.daemon_running():
        return {"skipped": "running inside the daemon"}
    try:
        from skillopt_daemon.ingest import pipeline as ingest

        progress("catching up ingest")
        db = open_db()
        pipeline = ingest.Pipeline(db, ingest.load_sources(settings, None), settings)
        outcomes = pipeline.ingest_paths(pipeline.discover())
        pipeline.pin_sessions(None)
        return ingest.summarize(outcomes)
    except SkillOptError as exc:
        return {"error": exc.message}


def run_cycle(
    *,
    trigger: str = "manual",
    dry_run: bool = False,
    skill: str | None = None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    ingest_first: bool = True,
) -> CycleReport:
    """One night. Returns its report; the same report is stored in `night_runs`."""
    settings = settings or load_settings()
    say = progress or (lambda _m: None)
    with night_lock():
        db = open_db()
        run_id = utcnow().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        interrupted = _interrupted_runs(db)
        report = CycleReport(
            run_id=run_id, trigger=trigger, status="running", dry_run=dry_run, started_at=utcnow_iso()
        )
        if interrupted:
            prev = interrupted[-1]
            with db.conn:
                for row in interrupted:
                    _runs(db).update(
                        row["id"],
                        {
                            "status": "interrupted",
                            "finished_at": utcnow_iso(),
                            "error": "the process ended before the night finished",
                        },
                    )
            resumable = (
                [p for p in night_dir(prev["id"]).glob("*/state.json")]
                if night_dir(prev["id"]).is_dir()
                else []
            )
            if resumable:
                report.resumed_from = prev["id"]
                report.start_note = f"resuming the interrupted night {prev['id']} from its checkpoints"
            else:
                report.start_note = f"the night {prev['id']} was interrupted before training; starting clean"
            say(report.start_note)
        _record_start(db, run_id, trigger, dry_run)
        budget = NightBudget(
            max_tokens=settings.night.max_tokens,
            max_cost_usd=settings.night.max_cost_usd,
            max_wall_s=settings.night.max_wall_s,
            max_replays=settings.night.max_replays,
        )
        try:
            if ingest_first:
                report.ingest = _catch_up_ingest(settings, say)
            pause_point("night-before-mining")
            say("mining recurring tasks")
            from skillopt_daemon.night import mining as mine

            # Mining labels requests with the optimizer's model when one is usable (see mining_chat).
            labeller, mining_note = mining_chat(settings, budget)
            families, mined = mine.mine(
                db,
                seed=settings.night.seed,
                rules=mine.ExcludeRules.from_settings(settings.night),
                ratios=settings.night.split_ratios,
                chat=labeller,
                budget=budget,
                batch=settings.night.label_batch,
            )
            if mining_note:
                mined.notes.insert(0, mining_note)
            report.mining = mined.to_dict()
            _train_skills(db, settings, families, report, budget, skill=skill, dry_run=dry_run, say=say)
            if report.status == "running":
                report.status = "completed"
        except NightBudgetExceeded as exc:
            report.status = "budget"
            report.error = exc.message
        except SkillOptError as exc:
            report.status = "failed"
            report.error = exc.message
        except Exception as exc:
            report.status = "failed"
            report.error = f"{type(exc).__name__}: {exc}"
            log.exception("nightly cycle failed")
        finally:
            report.spend = budget.to_dict()
            report.finished_at = utcnow_iso()
            _record_end(db, report)
        _notify(report)
        return report


# ------------------------------------------------------------------------------------------------ mining's model


def mining_chat(settings: Settings, budget: NightBudget) -> tuple[Any | None, str | None]:
    """The chat backend mining labels requests with (counted in the night's budget), or None and why not.

    Any configured optimizer backend will do, `claude-code-chat` and `codex-chat` included; `night.local_only`
    allows only an endpoint on this machine.
    """
    from skillopt_lib.net import is_loopback_url

    opt = settings.optimizer
    if not settings.night.label_with_model or not opt.backend:
        return None, None
    if settings.night.local_only and not is_loopback_url(opt.base_url):
        return None, "requests were mined without a model: night.local_only allows no remote endpoint"
    try:
        inner = create_backend(
            _chat_config(settings, opt), "optimizer", workspaces_root=str(paths.workspaces_dir())
        )
    except SkillOptError as exc:
        return None, f"requests were mined without a model: {exc.message}"
    return BudgetedChat(inner, budget), None


def _targets_for(
    db: sqlite_utils.Database, families: list[mine.Family], skill: str | None
) -> dict[str, list[mine.Family]]:
    from skillopt_daemon.night import mining as mine

    out: dict[str, list[mine.Family]] = {}
    known = set(mine.installed_skills(db))
    for fam in families:
        if fam.skill_name and fam.skill_name in known and (skill is None or fam.skill_name == skill):
            out.setdefault(fam.skill_name, []).append(fam)
    if skill is not None and skill not in out:
        out[skill] = []
    return out


def _train_skills(
    db: sqlite_utils.Database,
    settings: Settings,
    families: list[mine.Family],
    report: CycleReport,
    budget: NightBudget,
    *,
    skill: str | None,
    dry_run: bool,
    say: Progress,
) -> None:
    from skillopt_daemon.registry import Registry

    targets = _targets_for(db, families, skill)
    if not targets:
        report.status = "nothing-to-do"
        report.skills = []
        say("no task family relates to an installed skill yet")
        return
    tools = sorted({AgentTool.parse(t) for fams in targets.values() for f in fams for t in f.tools}, key=str)
    report.missing = missing_for_replays(settings, tools)
    if report.missing:
        for name, fams in targets.items():
            report.skills.append(
                SkillOutcome(
                    name,
                    "error",
                    "replays cannot run: " + "; ".join(report.missing),
                    tasks=sum(len(f.attempts) for f in fams),
                )
            )
        report.status = "completed"
        return
    registry = Registry(db, actor="night")
    optimizer = BudgetedChat(
        create_backend(
            _chat_config(settings, settings.optimizer),
            "optimizer",
            workspaces_root=str(paths.workspaces_dir()),
        ),
        budget,
    )
    judge_settings = settings.judge if settings.judge.backend else settings.optimizer
    judge = BudgetedChat(
        create_backend(
            _chat_config(settings, judge_settings), "judge", workspaces_root=str(paths.workspaces_dir())
        ),
        budget,
    )
    for name, fams in targets.items():
        outcome = _train_one(
            db, registry, settings, name, fams, report, budget, optimizer, judge, dry_run, say
        )
        report.skills.append(outcome)


def _train_one(
    db: sqlite_utils.Database,
    registry: Any,
    settings: Settings,
    name: str,
    fams: list[mine.Family],
    report: CycleReport,
    budget: NightBudget,
    optimizer: Any,
    judge: Any,
    dry_run: bool,
    say: Progress,
) -> SkillOutcome:
    from skillopt_daemon.night.replay import ReplayEnvironment, tasks_for_skill
    from skillopt_lib.trainer import Trainer

    tool_counts = Counter(t for f in fams for a in f.attempts for t in [a.tool])
    if not tool_counts:
        return SkillOutcome(name, "too-few-tasks", "no mined task relates to this skill")
    tool = AgentTool.parse(tool_counts.most_common(1)[0][0])
    tasks = tasks_for_skill(db, name, tool.value)
    splits = Counter(t["split"] for t in tasks)
    if len(tasks) < settings.night.min_tasks or not splits.get("train") or not splits.get("val"):
        return SkillOutcome(
            name,
            "too-few-tasks",
            f"{len(tasks)} tasks (train {splits.get('train', 0)}, val {splits.get('val', 0)}); "
            f"needs at least {settings.night.min_tasks} with train and validation tasks",
            tasks=len(tasks),
        )
    current = registry.current_version(name)
    if current is None:
        return SkillOutcome(name, "error", "the skill has no active version to improve", tasks=len(tasks))
    incumbent = registry.load_bundle(current.id)
    agent = BudgetedAgent(make_agent(settings, tool), budget)
    env = ReplayEnvironment(
        tasks,
        seed_skill=incumbent,
        workspaces_root=paths.workspaces_dir(),
        judge=judge,
        env_allowlist=settings.replay.env_allowlist,
        keep=settings.replay.keep_workspaces,
    )
    cfg = TrainConfig(
        env="replay",
        seed=settings.night.seed,
        epochs=settings.night.epochs,
        batch_size=max(1, splits["train"]),
        gate=GateConfig(
            kind=settings.night.gate,
            repeats=settings.night.gate_repeats,
            confidence=settings.night.gate_confidence,
        ),
        slow_update=False,
        meta_skill=False,
        patience=None,
        concurrency=max(1, settings.replay.max_parallel),
        evaluate_test=True,
    )
    run_dir = night_dir(report.run_id) / name
    prev = night_dir(report.resumed_from) / name if report.resumed_from else None
    say(f"training {name} on {len(tasks)} replayed tasks with {tool.value}")
    try:
        if prev is not None and (prev / "state.json").is_file():
            shutil.copytree(prev, run_dir, dirs_exist_ok=True)
            trainer = Trainer.resume(run_dir, config=cfg, env=env, agent=agent, optimizer=optimizer)
        else:
            trainer = Trainer(cfg, env, run_dir, agent=agent, optimizer=optimizer, initial_skill=incumbent)
        result = trainer.train()
    except NightBudgetExceeded as exc:
        return SkillOutcome(
            name, "budget", exc.message + "; nothing was registered", tasks=len(tasks), run_dir=str(run_dir)
        )
    summary = result.summary
    outcome = SkillOutcome(
        name,
        "no-improvement",
        tasks=len(tasks),
        run_dir=str(run_dir),
        baseline=summary.get("initial_val"),
        candidate=summary.get("best_val"),
    )
    best = result.best_skill
    if best.content_hash == incumbent.content_hash or not summary.get("accepted_steps"):
        outcome.reason = "no candidate passed the gate"
        return outcome
    guard = LeakGuard(
        checks=sorted({c for t in tasks for c in t["checks"]}),
        rubric=sorted({r for t in tasks for r in t["rubric"]}),
        threshold=settings.night.leak_threshold,
    )
    ok, why = guard.check(_bundle_text(best), _bundle_text(incumbent))
    if not ok:
        outcome.status = "leak"
        outcome.reason = why
        return outcome
    evidence = _evidence(result, env, incumbent, best, tasks, budget, tool)
    if dry_run:
        outcome.status = "dry-run"
        outcome.reason = "a proposal would have been registered (dry run)"
        return outcome
    version = registry.propose(
        name, best, evidence, origin="trained", parent=current.id, note=f"night {report.run_id}"
    )
    outcome.status = "proposed"
    outcome.proposal_id = version.id
    outcome.reason = f"validation {outcome.baseline:.3f} → {outcome.candidate:.3f}"
    if name in settings.night.auto_approve:
        registry.approve(version.id)
        outcome.status = "approved"
        outcome.reason += " (auto-approved)"
    return outcome


def _bundle_text(bundle: SkillBundle) -> str:
    return "\n".join(bundle.text_files().values())


def _evidence(
    result: Any,
    env: Any,
    incumbent: SkillBundle,
    best: SkillBundle,
    tasks: list[dict[str, Any]],
    budget: NightBudget,
    tool: AgentTool,
) -> dict[str, Any]:
    summary = result.summary
    gate: dict[str, Any] | None = None
    history = Path(result.run_dir) / "history.jsonl"
    if history.is_file():
        for line in history.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("accepted") and rec.get("gate"):
                gate = rec["gate"]
    base_runs = env.outcomes(incumbent.content_hash)
    cand_runs = env.outcomes(best.content_hash)
    per_task = []
    by_id = {t["id"]: t for t in tasks}
    for iid in sorted(set(base_runs) | set(cand_runs)):
        per_task.append(
            {
                "task_id": iid,
                "family": by_id.get(iid, {}).get("family"),
                "prompt": str(by_id.get(iid, {}).get("prompt", ""))[:200],
                "baseline": base_runs.get(iid, []),
                "candidate": cand_runs.get(iid, []),
            }
        )
    stats = (gate or {}).get("stats") or {}
    usage = summary.get("usage") or {}
    tokens = sum(
        int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0))
        for u in usage.values()
        if isinstance(u, dict)
    )
    cost = sum(float(u.get("cost_usd", 0.0)) for u in usage.values() if isinstance(u, dict))
    return {
        "baseline_score": summary.get("initial_val"),
        "candidate_score": summary.get("best_val"),
        "delta": (summary.get("best_val") or 0.0) - (summary.get("initial_val") or 0.0),
        "confidence": stats.get("confidence"),
        "ci_low": stats.get("bound") if stats.get("bound") is not None else stats.get("lower_bound"),
        "task_ids": [t["id"] for t in tasks],
        "gate": gate,
        "tokens": tokens,
        "cost_usd": round(cost, 6),
        "tasks": per_task,
        "test": summary.get("test"),
        "tool": tool.value,
        "replays": budget.replays,
        "wall_s": round(time.monotonic() - budget.started, 2),
        "run_dir": str(result.run_dir),
    }


# ------------------------------------------------------------------------------------------------ schedule


def new_since_last(db: sqlite_utils.Database) -> bool:
    """Whether anything was ingested since the last completed night started."""
    last = None
    if "night_runs" in db.table_names():
        rows = list(
            db.query(
                "SELECT started_at FROM night_runs WHERE status IN ('completed', 'nothing-to-do', 'budget') "
                "ORDER BY started_at DESC LIMIT 1"
            )
        )
        last = rows[0]["started_at"] if rows else None
    if last is None:
        return True
    if "sessions" not in db.table_names():
        return False
    row = db.execute("SELECT max(updated_at) FROM sessions").fetchone()
    return bool(row and row[0] and row[0] > last)


def run_scheduled() -> CycleReport | None:
    """The scheduled job: skipped (and recorded as such) when nothing new was ingested."""
    db = open_db()
    if not new_since_last(db):
        now = utcnow_iso()
        with db.conn:
            _runs(db).insert(
                {
                    "id": f"skip-{uuid.uuid4().hex[:8]}",
                    "trigger": "schedule",
                    "status": "skipped",
                    "dry_run": False,
                    "started_at": now,
                    "finished_at": now,
                    "heartbeat_at": now,
                    "pid": os.getpid(),
                    "summary_json": json.dumps({"reason": "nothing new ingested"}),
                    "error": None,
                }
            )
        return None
    return run_cycle(trigger="schedule", ingest_first=False)


# ------------------------------------------------------------------------------------------------ notify


def _notify(report: CycleReport) -> None:
    """A desktop notification where one is available; the status line is always there."""
    if not report.proposals:
        return
    title = "skillopt"
    body = f"{len(report.proposals)} new skill proposal(s): run `skillopt status` to review"
    cmd: list[str] | None = None
    if shutil.which("notify-send"):
        cmd = ["notify-send", title, body]
    elif shutil.which("osascript"):
        cmd = ["osascript", "-e", f'display notification "{body}" with title "{title}"']
    if cmd is None or os.environ.get("SKILLOPT_NO_DESKTOP_NOTIFY"):
        return
    try:
        subprocess.run(cmd, timeout=5, check=False, capture_output=True)
    except (OSError, subprocess.SubprocessError):
        pass


def status_section(db: sqlite_utils.Database) -> dict[str, Any]:
    """The nightly section of `skillopt status`: last run's result, next run, what is missing."""
    from skillopt_daemon.night import schedule as scheduler

    settings = load_settings()
    last = last_run(db)
    lines: list[str] = []
    data: dict[str, Any] = {"last": None, "next": None, "missing": []}
    if last:
        summary = json.loads(last.get("summary_json") or "{}")
        data["last"] = {k: last[k] for k in ("id", "trigger", "status", "started_at", "finished_at", "error")}
        data["last"]["proposals"] = [
            s.get("proposal_id") for s in summary.get("skills", []) if s.get("proposal_id")
        ]
        data["last"]["skills"] = summary.get("skills", [])
        from skillopt_daemon.core.timeutil import humanize_age

        text = f"last night: {last['status']} ({humanize_age(last['started_at'])})"
        if data["last"]["proposals"]:
            text += f", {len(data['last']['proposals'])} proposal(s)"
        if last.get("error"):
            text += f": {last['error']}"
        lines.append(text)
        data["missing"] = summary.get("missing") or []
    else:
        lines.append("last night: never run")
    running = fsio.daemon_running()
    if not settings.night.enabled:
        lines.append("next night: disabled (night.enabled = false)")
    elif running:
        try:
            data["next"] = scheduler.next_fire(settings.night.schedule)
        except SkillOptError as exc:
            lines.append(f"next night: {exc.message}")
        else:
            from skillopt_daemon.core.timeutil import local_display

            lines.append(f"next night: {local_display(data['next'])} ({settings.night.schedule})")
    else:
        lines.append("next night: not running (start the daemon: skillopt daemon start)")
    for m in data["missing"]:
        lines.append(f"missing for replays: {m}")
    data["lines"] = lines
    return data

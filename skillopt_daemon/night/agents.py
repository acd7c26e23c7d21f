"""The night's model backends from the user's settings: the optimizer, the judge and the replayed agent.

Settings name backends the way a user writes them (`optimizer.backend`, `replay.max_turns`, a tool's own
CLI and home); the library wants a `BackendConfig`. This module is the one translation between them, and
says what stops replays from running before a night spends anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillopt_daemon.core import paths
from skillopt_daemon.core.config import BackendSettings, OptimizerSettings, Settings, tool_home
from skillopt_daemon.night import replay_cost
from skillopt_lib import keys
from skillopt_lib.agents import BUILTIN_TOOLS, TOOLS, AgentTool, spec
from skillopt_lib.backends import create_backend, resolve_preset
from skillopt_lib.backends.base import ChatBackend, price_of
from skillopt_lib.config import BackendConfig
from skillopt_lib.errors import ConfigError, SkillOptError
from skillopt_lib.net import is_loopback_url
from skillopt_lib.providers import key_env_candidates
from skillopt_lib.usage import format_cost

if TYPE_CHECKING:
    # What builds a night's backends needs these; `skillopt status` reads the settings through this module
    # and builds none (the budgets pull in the exec backends' whole protocol).
    from skillopt_daemon.night.budgets import BudgetedChat, NightBudget
    from skillopt_lib.execution import AgentCli


def _library_config(b: BackendSettings) -> BackendConfig:
    # The settings section is a BackendConfig already; only its class differs (an unset role stays "").
    fields = BackendConfig.model_fields
    return BackendConfig.model_validate({k: v for k, v in b.model_dump().items() if k in fields})


def _chat_cli() -> dict[str, AgentTool]:
    """Chat backends that use an agent tool's own CLI (and so its login), by backend name: each tool's row
    names its own (`ToolSpec.chat_backend`)."""
    return {row.chat_backend: tool for tool, row in TOOLS.items() if row.chat_backend}


def _chat_config(settings: Settings, b: BackendSettings) -> BackendConfig:
    cfg = _library_config(b)
    if settings.prices:
        # The user's price table, under the backend's own (`options.prices`): what the night's money cap
        # and every cost estimate count with.
        given = b.options.get("prices")
        own: dict[str, Any] = given if isinstance(given, dict) else {}
        table = {k: v.model_dump() for k, v in settings.prices.items()}
        cfg = cfg.model_copy(update={"options": {**cfg.options, "prices": {**table, **own}}})
    tool = _chat_cli().get(b.backend)
    if tool is not None:
        opts: dict[str, Any] = {**cfg.options, "home": str(tool_home(tool, settings))}
        if settings.tool(tool).cli:
            opts["cli"] = settings.tool(tool).cli
        cfg = cfg.model_copy(update={"options": opts})
    return cfg


@dataclass(frozen=True)
class RoleKey:
    """The API key one of the night's chat backends needs, and where it is found right now."""

    role: str  # optimizer | judge
    backend: str
    variables: tuple[str, ...]  # where it may come from, first the one to store it under
    source: keys.Source | None  # environment | keys file | None: nowhere

    @property
    def variable(self) -> str:
        return self.variables[0] if self.variables else f"{self.role}.api_key_env"

    def problem(self, *, service: bool = False) -> str | None:
        """Why a night (or, with `service`, a daemon started as a service) will not have this key, with
        what to do; None when it will."""
        how = f"store it with `skillopt keys set {self.variable}`"
        if self.source is None:
            return (
                f"the {self.role}'s key {self.variable} is neither set in the environment nor stored in "
                f"skillopt's keys file, so nights train nothing: {how}"
            )
        if service and self.source == "environment":
            return (
                f"the {self.role}'s key {self.variable} is set in this shell only; the service will not "
                f"see it: {how}"
            )
        return None


def role_keys(settings: Settings) -> list[RoleKey]:
    """The keys the night's optimizer and judge need (the judge only when it has settings of its own), and
    where each is found: the environment first, then the keys file, as the backends look them up."""
    out: list[RoleKey] = []
    for role, b in (("optimizer", settings.optimizer), ("judge", settings.judge)):
        if not b.backend or b.backend in _chat_cli():
            continue
        cfg = resolve_preset(_library_config(b))
        if not cfg.api_key_env and (cfg.options.get("key_optional") or is_loopback_url(cfg.base_url)):
            continue  # a local server goes without a key
        names = tuple(key_env_candidates(cfg))
        hit = next((found for n in names if (found := keys.lookup(n)) is not None), None)
        out.append(RoleKey(role, b.backend, names, hit[1] if hit else None))
    return out


# The agent tools whose login can serve as the night's optimizer, and the chat backend that uses each.
# Taken from the built-in rows (`ToolSpec.chat_backend`): finding the default must not look for plugins, which
# `skillopt status` would pay for on every run; a plugin's chat backend is used when configured by name.
LOGIN_CHAT: Mapping[AgentTool, str] = {r.tool: r.chat_backend for r in BUILTIN_TOOLS if r.chat_backend}


def _words(tool: AgentTool) -> str:
    """The tool's name in a sentence ("Claude Code")."""
    return spec(tool).title or tool.value


# The sign-ins that spend a subscription plan's usage, not money (`login()` of the Claude Code and Codex exec
# backends); any other (a key, a cloud provider, a tool that cannot tell) is billed per token.
PLAN_LOGINS = frozenset({"your Claude Code login", "your Codex login"})

SET_BACKEND = "`skillopt config set optimizer.backend openai` (plus optimizer.model and an API key variable)"
SAY_YES = "skillopt config set optimizer.consent yes"


@dataclass(frozen=True)
class NightModel:
    """The model the night's optimizer and judge will use, where it comes from, and what a night may use.

    `source` is `configured` (the user's `[optimizer]`: the API-key route, or a login chosen by name),
    `default` (no optimizer set: the agent CLI the user is signed in to, once they said yes) or `none`.
    `problem` says why the night will not use it, with the setting that fixes it; None when it will."""

    backend: str
    model: str
    source: str
    tool: AgentTool | None
    login: str | None
    consent: str | None
    problem: str | None
    max_replays: int
    max_tokens: int
    # The money cap that applies, or None: a night on a subscription login is not billed per token, so only
    # its replays and tokens are capped (unless the user set night.max_cost_usd themselves).
    max_cost_usd: float | None = None
    # The setting behind each cap ("replays", "tokens", "cost"): the login's caps on the embedded default.
    cap_settings: Mapping[str, str] = field(
        default_factory=lambda: {
            "replays": "night.max_replays",
            "tokens": "night.max_tokens",
            "cost": "night.max_cost_usd",
        }
    )

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def asks(self) -> bool:
        """Whether the user still has to answer before the night may spend on their login."""
        return self.source == "default" and self.consent is None and self.tool is not None

    def describe(self) -> str:
        """`claude-code-chat (your Claude Code login, its default model)`."""
        if not self.backend:
            return "none"
        model = self.model or "its default model"
        if self.tool is not None:
            return f"{self.backend} ({self.login or 'your ' + _words(self.tool) + ' login'}, {model})"
        return f"{self.backend} ({model})"

    @property
    def on_plan(self) -> bool:
        """Whether the night spends a subscription plan's usage rather than money (the embedded default on a
        plan login, not a key)."""
        return self.source == "default" and self.login in PLAN_LOGINS

    def binding(self, per_replay: tuple[float, float] | None = None) -> str:
        """The cap that stops a night first ("replays", "tokens" or "cost"): the one that affords the fewest
        replays at `per_replay` (tokens, dollars; the defaults of `replay_cost` when not given)."""
        tokens, usd = per_replay or (replay_cost.TOKENS_PER_REPLAY, replay_cost.USD_PER_REPLAY)
        room = {"replays": float(self.max_replays), "tokens": self.max_tokens / max(tokens, 1.0)}
        if self.max_cost_usd is not None and usd > 0:
            room["cost"] = self.max_cost_usd / usd
        return min(room, key=lambda cap: (room[cap], cap != "cost"))

    def caps_text(self, per_replay: tuple[float, float] | None = None) -> str:
        """The caps in the user's terms, the binding one first with the setting that changes it: "$20.00 a
        night, est. (night.max_cost_usd); also at most 200 replays and 5,000,000 tokens"."""
        names = self.cap_settings
        usage = (
            f"{self.max_replays} replays and {self.max_tokens:,} tokens a night "
            f"({names['replays']}, {names['tokens']})"
        )
        if self.max_cost_usd is None:
            return usage + "; no money cap, since a plan is not billed per token"
        money = f"${self.max_cost_usd:,.2f} a night, est. ({names['cost']})"
        if self.binding(per_replay) == "cost":
            return f"{money}; also at most {usage}"
        return f"{usage}; also at most {money}"

    def line(self) -> str:
        """One sentence for status, the dashboard and `sleep run`: the model, and the cap that binds."""
        if self.problem is not None:
            return f"the night's model: {self.describe()}, not used: {self.problem}"
        return f"the night's model: {self.describe()}; a night stops at {self.caps_text()}"

    def question(self) -> str:
        """What the user is asked, once, before the first night spends anything on their login: what it is
        counted against, and the cap that will stop a night, with its setting."""
        assert self.tool is not None
        who = _words(self.tool)
        paid = f"counted against your {who} plan" if self.on_plan else f"billed to {self.login}"
        return (
            f"No optimizer is configured. skillopt can use {who}, which you are signed in to "
            f"({self.login}), as the nightly optimizer ({self.backend}), {paid}: a night stops at "
            f"{self.caps_text()}."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "source": self.source,
            "tool": self.tool.value if self.tool is not None else None,
            "login": self.login,
            "consent": self.consent,
            "problem": self.problem,
            "usable": self.usable,
            "max_replays": self.max_replays,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "on_plan": self.on_plan,
            "binding": self.binding(),
            "cap_settings": dict(self.cap_settings),
            "caps": self.caps_text(),
            "line": self.line(),
        }


def night_model(settings: Settings, prefer: Sequence[AgentTool] = ()) -> NightModel:
    """Which model the night will use. A configured optimizer is used as it is (API-key users keep their
    route). Without one, the first of `prefer` (the tools whose sessions the night learns from, the most
    used first), then Claude Code, then Codex, whose CLI is found and signed in: a cheap preflight that
    reads files only, so `skillopt status` can say it. The CLI's version is checked when the night runs."""
    night = settings.night
    opt = settings.optimizer
    if opt.backend:
        tool = next((t for t, b in LOGIN_CHAT.items() if b == opt.backend), None)
        return NightModel(
            opt.backend,
            opt.model,
            "configured",
            tool,
            None,
            None,
            None,
            night.max_replays,
            night.max_tokens,
            night.max_cost_usd,
        )
    caps = (min(night.max_replays, night.login_max_replays), min(night.max_tokens, night.login_max_tokens))
    names = {
        "replays": "night.login_max_replays"
        if night.login_max_replays <= night.max_replays
        else "night.max_replays",
        "tokens": "night.login_max_tokens"
        if night.login_max_tokens <= night.max_tokens
        else "night.max_tokens",
        "cost": "night.max_cost_usd",
    }
    order = [t for t in [*prefer, *LOGIN_CHAT] if t in LOGIN_CHAT and settings.tool(t).enabled]
    why: list[str] = []
    for tool in dict.fromkeys(order):
        agent = make_agent(settings, tool)
        try:
            agent.executable()
        except SkillOptError as exc:
            why.append(exc.message)
            continue
        login = agent.login()
        if login is None:
            why.append(f"the {tool.value} CLI is not signed in (run `{agent.executable()}` once to sign in)")
            continue
        consent = opt.consent
        problem = None
        if consent is None:
            problem = (
                f"no optimizer backend is configured, and the night waits for your yes to use your "
                f"{_words(tool)} login ({LOGIN_CHAT[tool]}): `{SAY_YES}` (or `no`), or set one with "
                f"{SET_BACKEND}"
            )
        elif consent == "no":
            problem = (
                f"no optimizer backend is configured, and you said no to using your {_words(tool)} "
                f"login, so nights train nothing: set one with {SET_BACKEND}, or `{SAY_YES}`"
            )
        money = (
            None
            if login in PLAN_LOGINS and "max_cost_usd" not in night.model_fields_set
            else night.max_cost_usd
        )
        return NightModel(LOGIN_CHAT[tool], "", "default", tool, login, consent, problem, *caps, money, names)
    found = "; ".join(why) or "no agent tool with a login is enabled"
    problem = (
        f"no optimizer backend is configured and no signed-in Claude Code or Codex CLI was found to use "
        f"instead ({found}): set one with {SET_BACKEND}, or use your agent login with "
        "`skillopt config set optimizer.backend claude-code-chat` (or codex-chat)"
    )
    return NightModel("", "", "none", None, None, opt.consent, problem, *caps, night.max_cost_usd, names)


def tools_by_sessions(db: Any) -> list[AgentTool]:
    """The agent tools whose sessions the night learns from, the most used first (what the default
    optimizer prefers: the tool the user works with is the one they are signed in to)."""
    if "sessions" not in db.table_names():
        return []
    rows = db.execute(
        "SELECT tool, COUNT(*) FROM sessions WHERE drop_reason IS NULL GROUP BY tool ORDER BY 2 DESC, 1"
    ).fetchall()
    out: list[AgentTool] = []
    for tool, _n in rows:
        try:
            out.append(AgentTool.parse(tool))
        except ValueError:
            continue
    return out


def with_night_model(settings: Settings, model: NightModel) -> Settings:
    """The settings a night runs with: the embedded default filled in as the optimizer when the user said
    yes to it, and its caps on replays and tokens; the user's settings as they are otherwise."""
    if model.source != "default" or not model.usable:
        return settings
    night = settings.night.model_copy(
        update={
            "max_replays": model.max_replays,
            "max_tokens": model.max_tokens,
            "max_cost_usd": math.inf if model.max_cost_usd is None else model.max_cost_usd,
        }
    )
    optimizer = OptimizerSettings(backend=model.backend, consent=settings.optimizer.consent)
    return settings.model_copy(update={"optimizer": optimizer, "night": night})


def missing_for_replays(settings: Settings, tools: list[AgentTool]) -> list[str]:
    """What stops replays from running, each with how to fix it (shown by `skillopt status`)."""
    missing: list[str] = []
    opt = settings.optimizer
    if not opt.backend:
        missing.append(night_model(settings, tools).problem or "no optimizer backend is configured")
    missing.extend(why for k in role_keys(settings) if (why := k.problem()) is not None)
    remote = opt.backend not in _chat_cli() and not is_loopback_url(opt.base_url)
    if opt.backend and settings.night.local_only and remote:
        missing.append(
            f"night.local_only is on but the optimizer endpoint {opt.base_url or opt.backend!r} is not on "
            "this machine: point optimizer.base_url at a local server or turn local_only off"
        )
    missing.extend(why for tool in tools if (why := replay_missing(settings, tool)) is not None)
    return missing


def replay_missing(settings: Settings, tool: AgentTool) -> str | None:
    """Why `tool`'s sessions cannot be replayed on this machine (with how to fix it), or None when they can."""
    if spec(tool).backend is None:
        return f"{tool.value} sessions cannot be replayed: skillopt has no headless runner for it"
    try:
        make_agent(settings, tool).executable()
    except SkillOptError as exc:
        return f"{exc.message} ({exc.hint})" if exc.hint else exc.message
    return None


def replayable_tools() -> list[AgentTool]:
    """The tools whose sessions can be replayed: those whose row names an exec backend."""
    return [tool for tool, row in TOOLS.items() if row.backend]


def make_agent(
    settings: Settings,
    tool: AgentTool,
    *,
    max_turns: int | None = None,
    timeout_s: float | None = None,
    model: str | None = None,
) -> AgentCli:
    """The exec backend that replays `tool`'s tasks, built by `create_backend` from the tool's row and the
    settings: the row's `replay_options`, then `tools.<tool>.replay_options`, then the replay limits (or
    the given ones, from `skillopt replay`'s options). ConfigError for a tool with no exec backend, or one
    whose backend is not an agent CLI (a plugin's row naming a chat backend)."""
    from skillopt_lib.execution import AgentCli

    row = spec(tool)
    if row.backend is None:
        replayable = ", ".join(t.value for t in replayable_tools())
        raise ConfigError(
            f"{tool.value} cannot be replayed: it has no headless CLI skillopt can drive",
            hint=f"use one of: {replayable}",
        )
    r = settings.replay
    ts = settings.tool(tool)
    opts: dict[str, Any] = {
        **row.replay_options,
        **ts.replay_options,
        "home": str(tool_home(tool, settings)),
        "max_turns": r.max_turns if max_turns is None else max_turns,
        "timeout_s": r.timeout_s if timeout_s is None else timeout_s,
        "max_output_bytes": r.max_output_bytes,
    }
    if ts.cli:
        opts["cli"] = ts.cli
    chosen = (
        model
        if model is not None
        else (settings.agent.model if settings.agent.backend == row.backend else "")
    )
    cfg = BackendConfig(backend=row.backend, model=chosen or "", options=opts)
    agent = create_backend(cfg, "agent", workspaces_root=str(paths.workspaces_dir()))
    if not isinstance(agent, AgentCli):
        raise ConfigError(
            f"{tool.value}'s backend {row.backend!r} is not an agent CLI skillopt can replay with",
            hint="its row's `backend` must name an exec backend (see CliExecBackend in the plugin guide)",
        )
    return agent


def make_chat(settings: Settings, b: BackendSettings, role: str) -> ChatBackend:
    """The chat backend `b` names for `role` (optimizer, judge), from the user's settings. ConfigError when it
    names something that is not a chat model (an agent CLI's exec backend where its `-chat` one was meant):
    said before the night spends anything, not as an AttributeError at its first call."""
    chat = create_backend(_chat_config(settings, b), role, workspaces_root=str(paths.workspaces_dir()))
    if not isinstance(chat, ChatBackend):
        chats = ", ".join(sorted(_chat_cli()))
        raise ConfigError(
            f"the {role} backend {b.backend!r} is not a chat model",
            hint=f"set {role}.backend to an API backend (openai, anthropic, a preset) or one of: {chats}",
        )
    return chat


def mining_chat(settings: Settings, budget: NightBudget) -> tuple[BudgetedChat | None, str | None]:
    """The chat backend mining labels requests with (counted in the night's budget), or None and why not.

    Any configured optimizer backend will do, `claude-code-chat` and `codex-chat` included; `night.local_only`
    allows only an endpoint on this machine.
    """
    opt = settings.optimizer
    if not settings.night.label_with_model or not opt.backend:
        return None, None
    if settings.night.local_only and not is_loopback_url(opt.base_url):
        return None, "requests were mined without a model: night.local_only allows no remote endpoint"
    try:
        inner = make_chat(settings, opt, "optimizer")
    except SkillOptError as exc:
        return None, f"requests were mined without a model: {exc.message}"
    from skillopt_daemon.night.budgets import BudgetedChat

    return BudgetedChat(inner, budget), None


@dataclass(frozen=True)
class CostCeiling:
    """What one night may cost at most on the configured API-key backends (an estimate)."""

    most_usd: float | None  # None: a model has no known price, so its spend is not counted at all
    cap_usd: float
    max_tokens: int
    models: tuple[str, ...]  # "the optimizer's gpt-5.5 ($1.25 in, $10.00 out per million tokens)"
    unpriced: tuple[str, ...]  # models skillopt has no price for

    def to_dict(self) -> dict[str, Any]:
        return {
            "most_usd": self.most_usd,
            "cap_usd": self.cap_usd,
            "max_tokens": self.max_tokens,
            "models": list(self.models),
            "unpriced": list(self.unpriced),
        }

    def line(self) -> str:
        """One sentence for `skillopt status` and `skillopt sleep run`, before the first paid night."""
        if self.most_usd is None:
            return (
                f"before a night spends money: skillopt has no price for {', '.join(self.unpriced)}, so its "
                f"cost is not counted and the money cap (night.max_cost_usd, ${self.cap_usd:,.2f}) cannot stop "
                f"a night; only the token cap ({self.max_tokens:,} tokens) does. Add its price under "
                "[prices] in config.toml"
            )
        return (
            f"before a night spends money: one night may cost at most {format_cost(self.most_usd)} with "
            f"{'; '.join(self.models)}, from the night's caps (night.max_cost_usd ${self.cap_usd:,.2f}, "
            f"night.max_tokens {self.max_tokens:,}); lower it with "
            "`skillopt config set night.max_cost_usd 5`"
        )


def cost_ceiling(settings: Settings) -> CostCeiling | None:
    """The most a night may spend on the optimizer's and judge's API keys: the money cap, or less when the
    token cap at the dearest configured model's price is lower. None when no backend the night uses is
    paid by an API key (agent logins, local servers)."""
    paid: list[tuple[str, BackendSettings]] = []
    for k in role_keys(settings):
        b = settings.optimizer if k.role == "optimizer" else settings.judge
        if not is_loopback_url(resolve_preset(_library_config(b)).base_url):
            paid.append((k.role, b))
    if not paid:
        return None
    night = settings.night
    models: list[str] = []
    unpriced: list[str] = []
    dearest = 0.0
    for role, b in paid:
        table = _chat_config(settings, b).options.get("prices")
        price = price_of(b.model, table if isinstance(table, dict) else None)
        if price.input <= 0 and price.output <= 0:
            unpriced.append(f"the {role}'s model {b.model or '(none set)'}")
            continue
        dearest = max(dearest, price.input, price.output)
        models.append(
            f"the {role}'s {b.model} (${price.input:g} in, ${price.output:g} out per million tokens)"
        )
    if unpriced:
        return CostCeiling(None, night.max_cost_usd, night.max_tokens, tuple(models), tuple(unpriced))
    most = min(night.max_cost_usd, night.max_tokens * dearest / 1_000_000)
    return CostCeiling(most, night.max_cost_usd, night.max_tokens, tuple(models), ())

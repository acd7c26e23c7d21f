"""Where new skills install, on whole nights at the shipped defaults: `python -m benchmarks.scope [--caps
api|login] [--first N]`. Needs the pinned agent CLIs (`make agent-clis`).

A home built from the scope corpus (`tests/fixtures/corpus-scope/`, real `claude` and `codex` sessions,
`spec.scope_sessions`): the handbook keeps its changelog newest first and the site oldest first, the user
corrected the agent in both; the user gave one lint rule alike in the webapp, the site and the handbook (in
three languages); the etl's test writing needs no rule. Every session (or the first `--first` of every
kind), no skill installed; night 1; if a kind whose rule the user said has no proposal yet, night 2 (the
rest of the sessions arrive first, with `--first`). Nothing is set but where the CLIs and models live: caps, scope (`night.new_skill_scope =
auto`), gate and no-harm check are the shipped ones. `--caps login` is a user on the login default: no
optimizer configured and yes to the night using their `claude` login, so the night takes `claude-code-chat`
against the same server and the login's caps by itself. Then every proposal is approved as proposed, and a real
`claude -p` and `codex exec` session per kind runs in that kind's repository against the same scripted
server: the request log says which skills the agent was offered and which rules it read.

What it measures, per kind of work (the lint kinds are one row: one rule in three repositories):

- whether its rule was proposed, the proposal's scope and target repositories, the no-harm check's figures
  when user scope was considered (held-out items of other repositories measured, informative, better and
  worse with the rule);
- what the nights spent on its work: replays (agent runs whose request is that kind's) and tokens (fresh,
  cache writes, cache reads) of every request about that kind (agent, optimizer, judge), priced as
  `benchmarks.night.AGENT_MODEL`; a rule's no-harm replays count under the kind of work they replayed;
- after approval, in its repository: the rule the agent read is its own, and the other repository's
  convention never reached it (`right`, `other`).

The four claims: each changelog convention is proposed for its own repository only; neither reaches the
other repository's agent; the changelog rules, each of which breaks the other repository's work (each is
the other's violation for the judge), are never proposed for user scope; the lint rule, given alike in three
repositories, is proposed for user scope when the no-harm check passes. Scripted models know only what they
are shown (`testkit.corpus.night_world`, `testkit/learning_night.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from benchmarks.night import AGENT_MODEL
from skillopt_lib.backends.base import price_of
from skillopt_lib.testing.scripted_server import RecordedRequest, ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus import night_world
from testkit.corpus.load import SCOPE, read_labels
from testkit.corpus.spec import SCOPE_KINDS, scope_family
from testkit.learning_night import LearningNight

# One row per rule: the lint kinds of three repositories are one rule.
ROW = {k: ("lint" if k.startswith("lint") else k) for k in SCOPE_KINDS}
# What the table calls each row's rule when an agent read it.
RULE_NAME = {"changelog": "top (handbook's)", "changelog-site": "end (site's)", "lint": "no noqa"}
AGENT_APIS = ("anthropic", "responses")
TOKENS = ("fresh", "cache_write", "cache_read", "output")


def kind_of(text: str) -> str | None:
    """The kind of work a request is about: the kind whose requests it quotes most (None: none)."""
    hits = Counter({k: sum(p in text for p in scope_family(k).prompts) for k in SCOPE_KINDS})
    kind, n = hits.most_common(1)[0]
    return kind if n else None


def run_of(r: RecordedRequest) -> str:
    """Which agent run a request belongs to: Claude Code names its session in `metadata.user_id`, Codex in
    a header; the request's index when neither does."""
    body = r.body if isinstance(r.body, dict) else {}
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    for key in ("session_id", "conversation_id", "x-codex-session-id"):
        if r.headers.get(key):
            return str(r.headers[key])
    return str(meta.get("user_id") or body.get("prompt_cache_key") or f"request-{r.index}")


# What the scripted models answer as, besides the agent (`testkit/learning_night.py`).
CHAT_ROLES = frozenset({"drafter", "analyst", "judge"})


def spend_by_row(requests: Sequence[RecordedRequest]) -> dict[str, dict[str, float]]:
    """Replays (agent runs) and tokens per row, from the scripted server's request log."""
    price = price_of(AGENT_MODEL)
    per_token = {
        "fresh": price.input,
        "cache_write": price.cache_write,
        "cache_read": price.cache_read,
        "output": price.output,
    }
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys((*TOKENS, "usd"), 0.0))
    runs: dict[str, set[str]] = defaultdict(set)
    for r in requests:
        kind = kind_of(r.text())
        row = ROW[kind] if kind else "other"
        # The login default's optimizer and judge are `claude -p` runs too: not replays.
        if r.api in AGENT_APIS and r.rule not in CHAT_ROLES:
            runs[row].add(run_of(r))
        for t in TOKENS:
            n = r.tokens.get(t, 0)
            out[row][t] += n
            out[row]["usd"] += n * per_token[t] / 1e6
    for row, seen in runs.items():
        out[row]["replays"] = len(seen)
    return dict(out)


def _store(w: night_world.CorpusWorld) -> sqlite_utils.Database:
    return sqlite_utils.Database(next(w.skillopt_home.rglob("skillopt.db")))


def _evidence(w: night_world.CorpusWorld, proposal: str) -> dict[str, Any]:
    db = _store(w)
    try:
        for row in db.query("SELECT id, evidence FROM versions"):
            if str(row["id"]).startswith(proposal):
                return dict(json.loads(row["evidence"] or "{}"))
    finally:
        db.close()
    return {}


def _rows_learned(diff: str, rules: dict[str, str]) -> set[str]:
    """The rows whose user's rule a proposal adds (its `+` lines quote it)."""
    added = [line for line in diff.splitlines() if line.startswith("+")]
    return {ROW[k] for k, rule in rules.items() if any(rule in line for line in added)}


def proposals(
    w: night_world.CorpusWorld, report: dict[str, Any], rules: dict[str, str]
) -> list[dict[str, Any]]:
    """Each proposal of a night: the rows whose rule it carries, its scope and the no-harm figures."""
    out = []
    for s in report["skills"]:
        pid = s.get("proposal_id")
        if not pid:
            continue
        evidence = _evidence(w, pid)
        placed = evidence.get("scope") or {}
        harm = placed.get("no_harm") or {}
        stats = (harm.get("gate") or {}).get("stats") or {}
        out.append(
            {
                "skill": s["skill"],
                "proposal_id": pid,
                "tier": s.get("tier") or "proven",
                "rows": sorted(_rows_learned(w.skillopt("diff", pid).stdout, rules)),
                "scope": placed.get("scope"),
                "repositories": [Path(r).name for r in placed.get("evidence_repositories") or []],
                "targets": placed.get("targets") or evidence.get("install_to") or [],
                "why": placed.get("why", ""),
                "no_harm": {
                    "ok": harm.get("ok"),
                    "measured": harm.get("measured"),
                    "informative": harm.get("informative"),
                    "better": stats.get("improved_items"),
                    "worse": stats.get("worsened_items"),
                    "why": harm.get("why"),
                }
                if harm
                else None,
            }
        )
    return out


def load_check(
    w: night_world.CorpusWorld,
    srv: ScriptedServer,
    clis: ac.AgentCLIs,
    rules: dict[str, str],
    skills: Sequence[str],
) -> list[dict[str, Any]]:
    """After approval: per kind and tool, a real session in the kind's repository asks for that kind's work;
    which of the approved `skills` the CLI listed to the model, and which users' rules reached it (the skill
    the agent read)."""
    out = []
    for kind in SCOPE_KINDS:
        fam = scope_family(kind)
        repo = w.repos[fam.repo]
        # The kind's first request, as recorded: the scripted agent loads the listed skill whose name shares
        # most words with the request, and the drafted names come from these requests' commonest words.
        prompt = fam.prompts[0]
        for tool in ("claude-code", "codex"):
            srv.clear_requests()
            if tool == "claude-code":
                allowed = ("Skill", "Read", "Write", "Bash")
                ac.run_claude(Path(str(clis.claude)), prompt, cwd=repo, env=w.env, allowed_tools=allowed)
            elif clis.codex is not None:
                ac.run_codex(Path(str(clis.codex)), prompt, cwd=repo, env=w.env)
            else:
                continue
            seen = "\n".join(r.text() for r in srv.requests if r.api in AGENT_APIS)
            read = sorted(k for k, rule in rules.items() if rule in seen)
            # Both CLIs list a skill as `- name: description` (Codex adds its file).
            offered = [n for n in skills if re.search(rf"^- {re.escape(n)}: ", seen, re.M)]
            listed = sorted({p.parent.name for p in repo.glob(".*/skills/*/SKILL.md")})
            out.append(
                {
                    "kind": kind,
                    "repo": fam.repo,
                    "tool": tool,
                    "offered": offered,
                    "project_skills": listed,
                    "rules_read": read,
                }
            )
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "."], check=False)
        # The sessions' work is undone; the approved project skills (untracked folders) stay.
        keep = [arg for folder in (".claude", ".codex", ".agents") for arg in ("-e", folder)]
        subprocess.run(["git", "-C", str(repo), "clean", "-fdq", *keep], check=False)
    return out


def night(w: night_world.CorpusWorld, srv: ScriptedServer, rules: dict[str, str]) -> dict[str, Any]:
    srv.clear_requests()
    t0 = time.perf_counter()
    report = json.loads(w.skillopt("sleep", "run", "--now", "--json").stdout)
    wall = time.perf_counter() - t0
    spend = report["spend"]
    return {
        "status": report.get("status"),
        # What the night chose and capped itself with (backend, caps and the settings behind them).
        "model": report.get("model"),
        "outcomes": {s["skill"]: [s["status"], s.get("reason", "")[:200]] for s in report["skills"]},
        "proposals": proposals(w, report, rules),
        "by_row": spend_by_row(list(srv.requests)),
        "replays": spend["replays"],
        "fresh_tokens": spend.get("fresh_tokens", 0),
        "cache_write_tokens": spend.get("cache_write_tokens", 0),
        "cache_read_tokens": spend.get("cache_read_tokens", 0),
        "cost_usd": spend.get("cost_usd", 0.0),
        "stopped": spend.get("stopped") or spend.get("exceeded"),
        "wall_s": round(wall, 1),
    }


def scope_nights(clis: ac.AgentCLIs, *, first: int | None, caps: str, check: bool = True) -> dict[str, Any]:
    """Night 1 on the first `first` sessions of every kind (None: all of them), night 2 (on all of them) if a
    said rule has no proposal yet, then the approvals and the load check (`check`)."""
    labels = read_labels(SCOPE)
    kinds = list(SCOPE_KINDS)
    rules = {k: v["rule"] for k, v in labels.families.items() if v.get("rule_said")}
    script = LearningNight(night_world.work_kinds(kinds), optimizer_model=night_world.OPTIMIZER_MODEL)
    codex = Path(str(clis.codex)) if clis.codex else None
    price = price_of(AGENT_MODEL)
    priced = {"input": price.input, "output": price.output, "cache_read": price.cache_read}
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(script, expected_key=ac.DEFAULT_API_KEY) as srv:
        w = night_world.make_world(
            Path(tmp) / "world", srv, Path(str(clis.claude)), kinds, corpus=SCOPE, first=first, codex=codex
        )
        w.configure(login=caps == "login")
        for model in (night_world.OPTIMIZER_MODEL, night_world.JUDGE_MODEL):
            for field, value in priced.items():
                w.skillopt("config", "set", f"prices.{model}.{field}", str(value))
        nights = [night(w, srv, rules)]
        learned = {row for p in nights[0]["proposals"] for row in p["rows"]}
        if {ROW[k] for k in rules} - learned:
            if first is not None:
                night_world.add_sessions(w, kinds, upto=max(len(r) for r in SCOPE_KINDS.values()))
            nights.append(night(w, srv, rules))
        every = [p for n in nights for p in n["proposals"]]
        for p in every:
            w.skillopt("approve", p["proposal_id"])
        loads = load_check(w, srv, clis, rules, [p["skill"] for p in every]) if check else []
    return {"first": first, "caps": caps, "nights": nights, "loads": loads}


def table(result: dict[str, Any]) -> str:
    """The figures as a markdown table, one row per rule."""
    rows = sorted({ROW[k] for k in SCOPE_KINDS})
    repos = {row: sorted({scope_family(k).repo for k in SCOPE_KINDS if ROW[k] == row}) for row in rows}
    lines = [
        "| work (repositories) | proposed (night, tier) | scope → targets | no harm: measured / informative / "
        "better / worse (verdict) | replays | tokens fresh / cache write / cache read | $ est. | after "
        "approval, in the repository: skills listed; users' rules read |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        found = [
            (i + 1, p) for i, n in enumerate(result["nights"]) for p in n["proposals"] if row in p["rows"]
        ]
        if found:
            at, p = found[0]
            proposed = f"yes (night {at}, {p['tier']})"
            where = f"{p['scope']} → {', '.join(p['repositories']) if p['scope'] == 'project' else 'all'}"
            h = p["no_harm"]
            harm = (
                f"{h['measured']} / {h['informative']} / {h['better']} / {h['worse']} ({'ok' if h['ok'] else 'no'})"
                if h
                else "not run (one repository)"
            )
        else:
            proposed, where, harm = "no", "–", "–"
        spent = [n["by_row"].get(row, {}) for n in result["nights"]]
        replays = sum(int(s.get("replays", 0)) for s in spent)
        tok = [sum(s.get(t, 0) for s in spent) for t in ("fresh", "cache_write", "cache_read")]
        usd = sum(s.get("usd", 0.0) for s in spent)
        reads = [
            f"{c['repo']}/{c['tool'].split('-')[0]}: listed {', '.join(c['offered']) or 'none'}; read "
            f"{' + '.join(sorted({RULE_NAME[ROW[k]] for k in c['rules_read']})) or 'no rule'}"
            for c in result["loads"]
            if ROW[c["kind"]] == row
        ]
        lines.append(
            f"| {row} ({', '.join(repos[row])}) | {proposed} | {where} | {harm} | {replays} | "
            f"{tok[0] / 1e3:.0f} k / {tok[1] / 1e3:.0f} k / {tok[2] / 1e3:.0f} k | ${usd:.2f} | "
            f"{'; '.join(reads) or '–'} |"
        )
    other = [n["by_row"].get("other", {}) for n in result["nights"]]
    lines.append(
        f"| requests about no kind (side requests) | | | | {sum(int(s.get('replays', 0)) for s in other)} | "
        + " / ".join(
            f"{sum(s.get(t, 0) for s in other) / 1e3:.0f} k" for t in ("fresh", "cache_write", "cache_read")
        )
        + f" | ${sum(s.get('usd', 0.0) for s in other):.2f} | |"
    )
    n = result["nights"]
    lines.append(
        f"| **the nights, as their reports count them** ({len(n)} night(s), "
        f"{', '.join(str(x['wall_s']) + ' s' for x in n)}) | | | | {sum(x['replays'] for x in n)} | "
        f"{sum(x['fresh_tokens'] for x in n) / 1e3:.0f} k / {sum(x['cache_write_tokens'] for x in n) / 1e3:.0f} k"
        f" / {sum(x['cache_read_tokens'] for x in n) / 1e3:.0f} k | ${sum(x['cost_usd'] for x in n):.2f} | |"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--first", type=int, default=None, help="sessions of each kind before night 1 (default: all)"
    )
    ap.add_argument(
        "--caps",
        default="api",
        choices=["api", "login"],
        help="api: an optimizer configured with a key; login: the login default, with the caps it brings",
    )
    ap.add_argument("--no-check", action="store_true", help="skip the real sessions after approval")
    args = ap.parse_args()
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    # The replays' checks run `python -m pytest`: the Python running this has pytest.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = scope_nights(clis, first=args.first, caps=args.caps, check=not args.no_check)
    print(json.dumps(result), flush=True)
    print(table(result))


if __name__ == "__main__":
    main()

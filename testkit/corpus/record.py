"""Re-record a corpus with the real `claude` and `codex` CLIs: `python -m testkit.corpus.record [--corpus
mining|nights|scope]`.

Each session of the corpus' spec (`spec.sessions()` for the mining corpus, `spec.night_sessions()` for the
nights corpus, `spec.scope_sessions()` for the scope corpus) runs in a fresh copy of its repository against
the scripted model server: headless ones with `claude -p` / `codex exec` (later turns with `--resume` /
`exec resume`), interactive ones typed into the TUI in tmux, one after the other in the spec's order. With
`--jobs 2` two workers record at once (faster on an idle machine), each with its own home and its own
repositories, so a repository's sessions still run in the spec's order; the nights and scope corpora go
round by round either way (session i of every kind, then session i + 1), so the timestamps keep the order of
each kind's sessions and of the rounds. A session whose TUI missed a key is recorded again from the start.
The transcripts the CLIs wrote are copied into `tests/fixtures/corpus/`, `tests/fixtures/corpus-nights/` or
`tests/fixtures/corpus-scope/` (`claude/projects/...`, `codex/sessions/...`) with `labels.json`, which says
for every session its family, split and what each message is (and for the nights and scope corpora its
index in its kind and its role). Nothing reaches a real model provider, and the server's answers depend
only on the requests, so a re-recording differs only in ids and timestamps.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from skillopt_lib.testing import Match, Rule, Script, Step, ToolCall, bash, call
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.spec import (
    ACKS,
    FAMILIES,
    GIVE_UPS,
    NIGHT_ACKS,
    NIGHT_FAMILIES,
    NIGHT_ONE_OFFS,
    NIGHT_QUESTIONS,
    NIGHT_SPLIT,
    ONE_OFFS,
    QUESTIONS,
    REPOS,
    RETRIES,
    SCOPE_KINDS,
    SCOPE_REPOS,
    SESSIONS_PER_FAMILY,
    FamilySpec,
    SessionSpec,
    night_sessions,
    scope_family,
    scope_sessions,
    sessions,
)
from testkit.tmux import run_claude_interactive, run_codex_interactive

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "corpus"
NIGHTS_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "corpus-nights"
SCOPE_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "corpus-scope"
# A fixed place per corpus, so the project paths inside the transcripts are the same on every re-recording
# (and recording one corpus never removes the other's folders).
WORLD = Path("/tmp/skillopt-corpus")
NIGHTS_WORLD = Path("/tmp/skillopt-corpus-nights")
SCOPE_WORLD = Path("/tmp/skillopt-corpus-scope")
TOOLS = ("Bash", "Write", "Edit", "Read", "Agent")


def _exact(text: str) -> str:
    return "^" + re.escape(text) + "$"


def _write(path: str, content: str) -> ToolCall:
    """Files are rewritten through the shell: Claude Code's Write refuses a file it has not read first."""
    return bash(f"mkdir -p $(dirname {path}) && cat > {path} <<'EOF'\n{content}EOF")


def agent_script() -> Script:
    """The agent as a plausible colleague: does the work, runs the project's check, follows corrections."""
    rules: list[Rule] = []
    for fam in FAMILIES:
        work = [
            Step(text="Let me make the change.", tool_calls=[_write(fam.work_file, fam.first_try)]),
            Step(text="Running the project's check.", tool_calls=[bash(fam.check)]),
            Step(text=f"Done: I changed {fam.work_file} and ran `{fam.check}`."),
        ]
        delegate, sub_agent = _sub_agent_steps(fam)
        for prompt in fam.prompts[:SESSIONS_PER_FAMILY]:
            rules.append(Rule(f"{fam.id}:{prompt[:30]}", Match(user=_exact(prompt)), list(work)))
            rules.append(
                Rule(
                    f"{fam.id}:delegate",
                    Match(user=_exact(prompt + " (use a sub-agent to look first)")),
                    [*delegate, *work],
                )
            )
        rules.append(sub_agent)
        rules.extend(_after_the_work(fam))
    rules.extend(_replies(QUESTIONS, ACKS, (), ONE_OFFS))
    return Script(rules=rules, default_text="OK.")


def _after_the_work(fam: FamilySpec) -> list[Rule]:
    """The agent's answers to a kind's correction (redo it the user's way) and follow-ups (check again)."""
    rules = [
        Rule(
            f"{fam.id}:corrected",
            Match(user=_exact(fam.rule)),
            [
                Step(
                    text="Understood, redoing it.", tool_calls=[_write(fam.work_file, fam.after_correction)]
                ),
                Step(tool_calls=[bash(fam.check)]),
                Step(text="Fixed the way you asked; the check passes."),
            ],
        )
    ]
    for follow in fam.follow_ups:
        rules.append(
            Rule(
                f"{fam.id}:follow-up",
                Match(user=_exact(follow)),
                [Step(tool_calls=[bash(fam.check)]), Step(text="Done, the check still passes.")],
            )
        )
    return rules


def _replies(
    questions: Sequence[str],
    acks: Sequence[str],
    give_ups: Sequence[str],
    one_offs: Sequence[tuple[str, str]],
) -> list[Rule]:
    """The answers that do not depend on the kind of work: questions, acknowledgements, one-offs."""
    rules = [
        Rule(
            "question",
            Match(user=_exact(q)),
            [Step(tool_calls=[bash("git status --short")]), Step(text="Those are the files I changed.")],
        )
        for q in questions
    ]
    rules += [Rule("ack", Match(user=_exact(a)), [Step(text="Glad to help.")]) for a in acks]
    rules += [
        Rule("give-up", Match(user=_exact(g)), [Step(text="OK, I'll leave it as it is.")]) for g in give_ups
    ]
    rules += [
        Rule(
            "one-off",
            Match(user=_exact(prompt)),
            [Step(tool_calls=[bash("ls -la | head -20")]), Step(text="Here you go: see the listing above.")],
        )
        for _repo, prompt in one_offs
    ]
    return rules


def _sub_agent_steps(fam: FamilySpec) -> tuple[list[Step], Rule]:
    """The steps that hand a first look to a sub-agent, and the sub-agent's own rule."""
    steps = [
        Step(
            text="I'll have a sub-agent look at the project's check first.",
            tool_calls=[
                call(
                    "Agent",
                    {
                        "description": "Inspect the check",
                        "prompt": f"Read the project's check ({fam.check}) and say what it enforces.",
                        "subagent_type": "general-purpose",
                    },
                )
            ],
        )
    ]
    rule = Rule(
        f"{fam.id}:sub-agent",
        Match(user=re.escape(f"Read the project's check ({fam.check})")),
        [Step(tool_calls=[bash(f"ls && {fam.check} || true")]), Step(text="It checks the files' style.")],
    )
    return steps, rule


def nights_agent_script(
    specs: Sequence[SessionSpec] | None = None,
    families: Sequence[FamilySpec] = NIGHT_FAMILIES,
    one_offs: Sequence[tuple[str, str]] = NIGHT_ONE_OFFS,
) -> Script:
    """The agent of the nights corpus (or of `specs`, the scope corpus' sessions, with their `families`):
    each request is answered as its session's role says. A plain session's work is right the first time; a
    corrected one's first try breaks the kind's rule (the user's correction gets it redone); a failure
    session's work fails the project's check, and so does every retry."""
    rules: list[Rule] = []
    by_kind: dict[str, list[SessionSpec]] = {}
    for spec in night_sessions() if specs is None else specs:
        if spec.family:
            by_kind.setdefault(spec.family, []).append(spec)
    for fam in families:
        for spec in by_kind[fam.id]:
            content = {"plain": fam.after_correction, "corrected": fam.first_try, "failure": fam.broken}
            done = (
                f"I changed {fam.work_file}, but `{fam.check}` still fails."
                if spec.role == "failure"
                else f"Done: I changed {fam.work_file} and ran `{fam.check}`."
            )
            work = [
                Step(
                    text="Let me make the change.",
                    tool_calls=[_write(fam.work_file, content[spec.role or ""])],
                ),
                Step(text="Running the project's check.", tool_calls=[bash(fam.check)]),
                Step(text=done),
            ]
            if spec.subagent:
                delegate, sub_rule = _sub_agent_steps(fam)
                work = delegate + work
                rules.append(sub_rule)
            rules.append(Rule(f"{fam.id}:{spec.role}", Match(user=_exact(_first_text(spec))), work))
        failing = [re.escape(s.turns[0].text) for s in by_kind[fam.id] if s.role == "failure"]
        for retry in RETRIES if failing else ():
            rules.append(
                Rule(
                    f"{fam.id}:retry",
                    Match(user=_exact(retry), request="|".join(failing)),
                    [
                        Step(text="Trying another way.", tool_calls=[_write(fam.work_file, fam.broken)]),
                        Step(tool_calls=[bash(fam.check)]),
                        Step(text=f"`{fam.check}` still fails; I could not find out why yet."),
                    ],
                )
            )
        rules.extend(_after_the_work(fam))
    rules.extend(_replies(NIGHT_QUESTIONS, NIGHT_ACKS, GIVE_UPS, one_offs))
    return Script(rules=rules, default_text="OK.")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        check=True,
        capture_output=True,
    )


def make_repos(root: Path, repos: dict[str, dict[str, str]] = REPOS) -> dict[str, Path]:
    """The corpus' repositories (`REPOS`, or the scope corpus' `SCOPE_REPOS`) under `root/src`, committed."""
    out = {}
    for name, files in repos.items():
        repo = root / "src" / name
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", ".")
        _git(repo, "commit", "-q", "-m", "initial")
        out[name] = repo
    return out


def _reset(repo: Path) -> None:
    _git(repo, "checkout", "-q", "--", ".")
    _git(repo, "clean", "-fdq")


def _first_text(spec: SessionSpec) -> str:
    first = spec.turns[0].text
    return first + " (use a sub-agent to look first)" if spec.subagent else first


def record_one(
    spec: SessionSpec,
    repo: Path,
    claude: Path,
    codex: Path,
    envs: dict[str, dict[str, str]],
    world: Path = WORLD,
) -> str:
    """Run one session; returns its session id (Claude) or thread id (Codex)."""
    texts = [_first_text(spec)] + [t.text for t in spec.turns[1:]]
    work = world / "tmux" / spec.key  # one folder per TUI run: it holds the socket and the exit status
    if spec.tool == "claude-code" and spec.mode == "headless":
        first = ac.run_claude(claude, texts[0], cwd=repo, env=envs["claude"], allowed_tools=TOOLS)
        if first.returncode != 0 or not first.session_id:
            raise RuntimeError(first.describe())
        for text in texts[1:]:
            run = ac.run_claude(
                claude, text, cwd=repo, env=envs["claude"], resume=first.session_id, allowed_tools=TOOLS
            )
            if run.returncode != 0:
                raise RuntimeError(run.describe())
        return first.session_id
    if spec.tool == "codex" and spec.mode == "headless":
        first = ac.run_codex(codex, texts[0], cwd=repo, env=envs["codex"])
        if first.returncode != 0 or not first.session_id:
            raise RuntimeError(first.describe())
        for text in texts[1:]:
            run = ac.run_codex(codex, text, cwd=repo, env=envs["codex"], resume=first.session_id)
            if run.returncode != 0:
                raise RuntimeError(run.describe())
        return first.session_id
    if spec.tool == "claude-code":
        allow = ["--allowedTools", ",".join(TOOLS)]  # acceptEdits would hide the "for shortcuts" footer
        inter = run_claude_interactive(
            claude, texts, cwd=repo, env=envs["claude"], work_dir=work, turn_timeout=90, extra_args=allow
        )
    else:
        inter = run_codex_interactive(
            codex, texts, cwd=repo, env=envs["codex"], work_dir=work, turn_timeout=90
        )
    if not inter.session_id:
        raise RuntimeError(f"{spec.key}: the interactive session left no transcript")
    return inter.session_id


def _transcripts(envs: dict[str, dict[str, str]]) -> set[Path]:
    """Every file and folder under one home's transcript folders."""
    homes = (
        Path(envs["claude"]["HOME"]) / ".claude" / "projects",
        Path(envs["codex"]["CODEX_HOME"]) / "sessions",
    )
    return {p for home in homes if home.exists() for p in home.rglob("*")}


def _record_with_retries(
    spec: SessionSpec,
    repo: Path,
    claude: Path,
    codex: Path,
    envs: dict[str, dict[str, str]],
    world: Path,
    tries: int = 3,
) -> str:
    """Record one session, again from the start if a TUI missed a key (it happens on a busy machine): what
    the failed try wrote is removed first, so the corpus holds one transcript per session."""
    for attempt in range(1, tries + 1):
        _reset(repo)
        before = _transcripts(envs)
        try:
            return record_one(spec, repo, claude, codex, envs, world)
        except (RuntimeError, TimeoutError) as exc:
            for path in sorted(_transcripts(envs) - before, reverse=True):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
            shutil.rmtree(world / "tmux" / spec.key, ignore_errors=True)
            if attempt == tries:
                raise
            print(f"{spec.key}: try {attempt} failed ({str(exc).splitlines()[0]}); again", flush=True)
    raise AssertionError("unreachable")


def copy_transcripts(homes: Sequence[dict[str, dict[str, str]]], dest: Path) -> None:
    """Every transcript the workers' homes hold, into the corpus folder (their paths never collide: a Claude
    Code project folder belongs to one repository, so to one worker, and Codex names files by thread)."""
    shutil.rmtree(dest / "claude", ignore_errors=True)
    shutil.rmtree(dest / "codex", ignore_errors=True)
    for envs in homes:
        claude_home = Path(envs["claude"]["HOME"]) / ".claude" / "projects"
        codex_home = Path(envs["codex"]["CODEX_HOME"]) / "sessions"
        for src, to in (
            (claude_home, dest / "claude" / "projects"),
            (codex_home, dest / "codex" / "sessions"),
        ):
            if src.exists():  # `--only` may have recorded one tool's sessions only
                shutil.copytree(src, to, dirs_exist_ok=True)


def _rounds(specs: Sequence[SessionSpec]) -> list[list[SessionSpec]]:
    """The sessions in rounds that must end before the next begins: the nights corpus' session i of every
    kind (with the one-offs recorded after it), so timestamps keep the rounds' order; the mining corpus has
    no order to keep (one round)."""
    out: list[list[SessionSpec]] = []
    current: int | None = -1
    for spec in specs:
        index = spec.index if spec.family else current
        if not out or (index is not None and index != current):
            out.append([])
            current = index
        out[-1].append(spec)
    return out


def _labels(corpus: str, world: Path) -> dict[str, Any]:
    if corpus == "mining":
        return {
            "families": {
                f.id: {"repo": f.repo, "check": f.check, "rule": f.rule, "rule_language": f.rule_language}
                for f in FAMILIES
            },
            "sessions": [],
        }
    if corpus == "scope":
        return {
            "corpus": "scope",
            "source_root": f"{world / 'src'}/",
            "families": {
                fid: {
                    "repo": (f := scope_family(fid)).repo,
                    "check": f.check,
                    "rule": f.rule,
                    "rule_language": f.rule_language,
                    # A kind whose sessions are all plain: the agent got it right, its rule was never said.
                    "rule_said": "corrected" in roles,
                }
                for fid, roles in SCOPE_KINDS.items()
            },
            "sessions": [],
        }
    return {
        "corpus": "nights",
        # Where the repositories were when recorded: the night world rewrites these paths to its own.
        "source_root": f"{world / 'src'}/",
        "families": {
            f.id: {
                "repo": f.repo,
                "check": f.check,
                "rule": f.rule,
                "rule_language": f.rule_language,
                "split": NIGHT_SPLIT[f.id],
            }
            for f in NIGHT_FAMILIES
        },
        "sessions": [],
    }


def _label(spec: SessionSpec, sid: str, corpus: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": spec.key,
        "tool": spec.tool,
        "session_id": sid,
        "family": spec.family,
        "repo": spec.repo,
        "mode": spec.mode,
        "split": spec.split,
        "subagent": spec.subagent,
    }
    if corpus in ("nights", "scope"):
        out.update(kind=spec.family, index=spec.index, role=spec.role)
    out["turns"] = [{"text": t.text, "kind": t.kind} for t in spec.turns]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--corpus",
        choices=("mining", "nights", "scope"),
        default="mining",
        help="mining: tests/fixtures/corpus (8 sessions per kind); nights: tests/fixtures/corpus-nights "
        "(14 per kind, in time order, for learning nights); scope: tests/fixtures/corpus-scope (opposite "
        "conventions in two repositories, one rule alike in three, for where new skills install)",
    )
    ap.add_argument(
        "--only",
        help="record only sessions whose key starts with this, or with one of these comma-separated "
        "prefixes (for trying changes)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="sessions recorded at the same time, each worker with its own repositories and home (default 1; "
        "2 is faster on an idle machine)",
    )
    ap.add_argument("--out", type=Path, help="where to write (default: the corpus' fixture folder)")
    args = ap.parse_args(argv)
    fixtures = {"mining": FIXTURES, "nights": NIGHTS_FIXTURES, "scope": SCOPE_FIXTURES}
    worlds = {"mining": WORLD, "nights": NIGHTS_WORLD, "scope": SCOPE_WORLD}
    out: Path = args.out or fixtures[args.corpus]
    world = worlds[args.corpus]
    repo_files = SCOPE_REPOS if args.corpus == "scope" else REPOS
    clis = ac.locate_agent_clis()
    if clis.claude is None or clis.codex is None:
        print("; ".join(clis.why_missing(n) for n in clis.missing()), file=sys.stderr)
        return 2
    claude, codex = clis.claude, clis.codex
    shutil.rmtree(world, ignore_errors=True)
    (world / "tmux").mkdir(parents=True)
    repos = make_repos(world, repo_files)
    # The agent's shell finds the same Python (with pytest) that runs this script.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    every = {"mining": sessions, "nights": night_sessions, "scope": scope_sessions}[args.corpus]()
    prefixes = tuple(p for p in (args.only or "").split(",") if p)
    specs = [s for s in every if not prefixes or s.key.startswith(prefixes)]
    labels = _labels(args.corpus, world)
    if args.corpus == "scope":
        script = nights_agent_script(every, [scope_family(f) for f in SCOPE_KINDS], ())
    else:
        script = nights_agent_script() if args.corpus == "nights" else agent_script()
    # A repository belongs to one worker, so its sessions keep their order and never share a work tree.
    jobs = max(1, args.jobs)
    worker_of = {name: i % jobs for i, name in enumerate(repo_files)}
    sids: dict[str, str] = {}
    done = 0
    lock = threading.Lock()
    t0 = time.monotonic()
    with ScriptedServer(script) as server:
        trusted = list(repos.values())
        homes = [world / ("home" if w == 0 else f"home-{w}") for w in range(jobs)]
        envs = [
            {
                "claude": ac.claude_env(home, server.url, trusted_dirs=trusted),
                "codex": ac.codex_env(home, server.base_url_openai, trusted_dirs=trusted),
            }
            for home in homes
        ]

        def work(mine: list[SessionSpec], w: int) -> None:
            nonlocal done
            for spec in mine:
                sid = _record_with_retries(spec, repos[spec.repo], claude, codex, envs[w], world)
                with lock:
                    sids[spec.key] = sid
                    done += 1
                    print(
                        f"[{done}/{len(specs)}] {time.monotonic() - t0:5.0f}s {spec.key}: "
                        f"{spec.tool} {spec.mode} {sid}",
                        flush=True,
                    )

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for batch in _rounds(specs):
                parts = [[s for s in batch if worker_of[s.repo] == w] for w in range(jobs)]
                for future in [pool.submit(work, part, w) for w, part in enumerate(parts) if part]:
                    future.result()
        labels["sessions"] = [_label(spec, sids[spec.key], args.corpus) for spec in specs]
        out.mkdir(parents=True, exist_ok=True)
        copy_transcripts(envs, out)
    (out / "labels.json").write_text(json.dumps(labels, ensure_ascii=False, indent=1) + "\n")
    print(f"recorded {len(specs)} sessions into {out} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

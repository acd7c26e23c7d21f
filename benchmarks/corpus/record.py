"""Re-record the mining corpus with the real `claude` and `codex` CLIs: `python -m benchmarks.corpus.record`.

Each session of `spec.sessions()` runs in a fresh copy of its repository against the scripted model server:
headless ones with `claude -p` / `codex exec` (later turns with `--resume` / `exec resume`), interactive ones
typed into the TUI in tmux. The transcripts the CLIs wrote are copied into `tests/fixtures/corpus/`
(`claude/projects/...`, `codex/sessions/...`) with `labels.json`, which says for every session its family,
split and what each message is. Recording takes a few minutes; nothing reaches a real model provider.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.corpus.spec import ACKS, FAMILIES, ONE_OFFS, QUESTIONS, REPOS, SessionSpec, sessions
from skillopt_lib.testing import Match, Rule, Script, Step, ToolCall, bash, call
from skillopt_lib.testing import agent_clis as ac
from skillopt_lib.testing.scripted_server import ScriptedServer
from skillopt_lib.testing.tmux import run_claude_interactive, run_codex_interactive

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "corpus"
# A fixed place, so the project paths inside the transcripts are the same on every re-recording.
WORLD = Path("/tmp/skillopt-corpus")
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
        for prompt in fam.prompts:
            rules.append(Rule(f"{fam.id}:{prompt[:30]}", Match(user=_exact(prompt)), list(work)))
            delegate = [
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
                ),
                *work,
            ]
            rules.append(
                Rule(
                    f"{fam.id}:delegate",
                    Match(user=_exact(prompt + " (use a sub-agent to look first)")),
                    delegate,
                )
            )
        rules.append(
            Rule(
                f"{fam.id}:sub-agent",
                Match(user=re.escape(f"Read the project's check ({fam.check})")),
                [
                    Step(tool_calls=[bash(f"ls && {fam.check} || true")]),
                    Step(text="It checks the files' style."),
                ],
            )
        )
        rules.append(
            Rule(
                f"{fam.id}:corrected",
                Match(user=_exact(fam.rule)),
                [
                    Step(
                        text="Understood, redoing it.",
                        tool_calls=[_write(fam.work_file, fam.after_correction)],
                    ),
                    Step(tool_calls=[bash(fam.check)]),
                    Step(text="Fixed the way you asked; the check passes."),
                ],
            )
        )
        for follow in fam.follow_ups:
            rules.append(
                Rule(
                    f"{fam.id}:follow-up",
                    Match(user=_exact(follow)),
                    [Step(tool_calls=[bash(fam.check)]), Step(text="Done, the check still passes.")],
                )
            )
    for question in QUESTIONS:
        rules.append(
            Rule(
                "question",
                Match(user=_exact(question)),
                [Step(tool_calls=[bash("git status --short")]), Step(text="Those are the files I changed.")],
            )
        )
    for ack in ACKS:
        rules.append(Rule("ack", Match(user=_exact(ack)), [Step(text="Glad to help.")]))
    for _repo, prompt in ONE_OFFS:
        rules.append(
            Rule(
                "one-off",
                Match(user=_exact(prompt)),
                [
                    Step(tool_calls=[bash("ls -la | head -20")]),
                    Step(text="Here you go: see the listing above."),
                ],
            )
        )
    return Script(rules=rules, default_text="OK.")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
        check=True,
        capture_output=True,
    )


def make_repos(root: Path) -> dict[str, Path]:
    out = {}
    for name, files in REPOS.items():
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
    spec: SessionSpec, repo: Path, claude: Path, codex: Path, envs: dict[str, dict[str, str]]
) -> str:
    """Run one session; returns its session id (Claude) or thread id (Codex)."""
    texts = [_first_text(spec)] + [t.text for t in spec.turns[1:]]
    work = WORLD / "tmux" / spec.key  # one folder per TUI run: it holds the socket and the exit status
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


def copy_transcripts(envs: dict[str, dict[str, str]], dest: Path) -> None:
    shutil.rmtree(dest / "claude", ignore_errors=True)
    shutil.rmtree(dest / "codex", ignore_errors=True)
    claude_home = Path(envs["claude"]["HOME"]) / ".claude" / "projects"
    codex_home = Path(envs["codex"]["CODEX_HOME"]) / "sessions"
    shutil.copytree(claude_home, dest / "claude" / "projects")
    shutil.copytree(codex_home, dest / "codex" / "sessions")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", help="record only sessions whose key starts with this (for trying changes)")
    ap.add_argument("--out", type=Path, default=FIXTURES)
    args = ap.parse_args(argv)
    clis = ac.locate_agent_clis()
    if clis.claude is None or clis.codex is None:
        print("; ".join(clis.why_missing(n) for n in clis.missing()), file=sys.stderr)
        return 2
    shutil.rmtree(WORLD, ignore_errors=True)
    (WORLD / "tmux").mkdir(parents=True)
    repos = make_repos(WORLD)
    # The agent's shell finds the same Python (with pytest) that runs this script.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    specs = [s for s in sessions() if not args.only or s.key.startswith(args.only)]
    labels: dict[str, Any] = {
        "families": {
            f.id: {"repo": f.repo, "check": f.check, "rule": f.rule, "rule_language": f.rule_language}
            for f in FAMILIES
        },
        "sessions": [],
    }
    with ScriptedServer(agent_script()) as server:
        envs = {
            "claude": ac.claude_env(WORLD / "home", server.url, trusted_dirs=list(repos.values())),
            "codex": ac.codex_env(WORLD / "home", server.base_url_openai, trusted_dirs=list(repos.values())),
        }
        for n, spec in enumerate(specs, 1):
            _reset(repos[spec.repo])
            sid = record_one(spec, repos[spec.repo], clis.claude, clis.codex, envs)
            print(f"[{n}/{len(specs)}] {spec.key}: {spec.tool} {spec.mode} {sid}", flush=True)
            labels["sessions"].append(
                {
                    "key": spec.key,
                    "tool": spec.tool,
                    "session_id": sid,
                    "family": spec.family,
                    "repo": spec.repo,
                    "mode": spec.mode,
                    "split": spec.split,
                    "subagent": spec.subagent,
                    "turns": [{"text": t.text, "kind": t.kind} for t in spec.turns],
                }
            )
        args.out.mkdir(parents=True, exist_ok=True)
        copy_transcripts(envs, args.out)
    (args.out / "labels.json").write_text(json.dumps(labels, ensure_ascii=False, indent=1) + "\n")
    print(f"recorded {len(specs)} sessions into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

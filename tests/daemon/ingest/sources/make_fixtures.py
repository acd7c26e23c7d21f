"""Regenerate the committed real-CLI transcripts under `fixtures/real/`: `python tests/daemon/ingest/sources/make_fixtures.py`.

Runs the pinned `claude` and `codex` CLIs against the scripted model server (a failing test command, a file
write, then a `--resume` correction that runs the tests again) and copies what they wrote, with the
temporary folders rewritten to `/home/dev`, so fast unit tests can read genuine transcripts without the CLIs.
Fails if anything secret-looking is left in them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from skillopt_daemon.ingest.redact import redact
from skillopt_lib.testing import Match, Rule, Script, Step, bash, write_file
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac

OUT = Path(__file__).parent / "fixtures" / "real"
FAILING = "python3 -c 'import sys; print(\"FAILED tests/test_x.py::test_a\"); sys.exit(3)'"
SCRIPT = Script(
    rules=[
        Rule(
            name="fix",
            match=Match(user="fix the failing test"),
            steps=[
                Step(text="Running the tests first.", tool_calls=[bash(FAILING)]),
                Step(text="Writing a note.", tool_calls=[write_file("notes.txt", "checked\n")]),
                Step(text="I fixed the test."),
            ],
        ),
        Rule(
            name="correction",
            match=Match(user="no, use pytest"),
            steps=[Step(tool_calls=[bash("./pytest -q")]), Step(text="pytest: 3 passed.")],
        ),
    ]
)


def normalize(data: str, base: Path) -> str:
    slug = ac.claude_project_slug(base)
    return data.replace(str(base), "/home/dev").replace(slug, "-home-dev")


def main() -> None:
    clis = ac.locate_agent_clis()
    if clis.claude is None or clis.codex is None:
        sys.exit(clis.why_missing("claude" if clis.claude is None else "codex"))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        project = base / "project"
        project.mkdir()
        fake = project / "pytest"
        fake.write_text("#!/bin/sh\necho '3 passed in 0.01s'\n")
        fake.chmod(0o755)
        git = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "-C", str(project)]
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", "init"], check=True)
        home = base / "home"
        with ScriptedServer(SCRIPT, expected_key=ac.DEFAULT_API_KEY) as server:
            env = ac.claude_env(home, server.url, trusted_dirs=[project])
            first = ac.run_claude(
                clis.claude, "fix the failing test", cwd=project, env=env, allowed_tools=("Bash", "Write")
            )
            ac.run_claude(
                clis.claude,
                "no, use pytest",
                cwd=project,
                env=env,
                resume=first.session_id,
                allowed_tools=("Bash",),
            )
            cenv = ac.codex_env(home, server.base_url_openai, trusted_dirs=[project])
            c1 = ac.run_codex(clis.codex, "fix the failing test", cwd=project, env=cenv)
            ac.run_codex(clis.codex, "no, use pytest", cwd=project, env=cenv, resume=c1.session_id)
        assert first.transcript is not None and c1.transcript is not None
        if OUT.exists():
            shutil.rmtree(OUT)
        targets = {
            first.transcript: OUT / "claude-code" / "projects" / "-home-dev-project" / first.transcript.name,
            c1.transcript: OUT / "codex" / "sessions" / "2026" / "11" / "30" / c1.transcript.name,
        }
        for src, dst in targets.items():
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = normalize(src.read_text(), base)
            for line in text.splitlines():
                json.loads(line)  # still valid JSON after the rewrite
            _, found = redact(text)
            if found:
                sys.exit(f"{dst.name}: {found} secret-looking strings; not writing fixtures")
            dst.write_text(text)
            print(f"wrote {dst.relative_to(Path(__file__).parent)} ({len(text)} bytes)")


if __name__ == "__main__":
    main()

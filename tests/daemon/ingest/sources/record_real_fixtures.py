"""Record the Copilot CLI and OpenClaw fixtures under `fixtures/real/` with the real, pinned programs.

    python -m tests.sources.record_real_fixtures      (needs `make agent-clis`)

Both run offline against the scripted model server. The project folder is renamed to PROJECT in what is
kept, so the fixtures do not depend on where they were recorded. Of OpenClaw's database only the
`transcript_events` table is kept (its columns and rows as OpenClaw wrote them, without its CHECK
constraints, which call SQL functions older SQLite builds lack): the rest is OpenClaw's memory index and
settings, which the reader never opens.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.copilot_cli import copilot_env, run_copilot
from testkit.openclaw_cli import openclaw_database, openclaw_env, run_openclaw

FIXTURES = Path(__file__).parent / "fixtures" / "real"
PROJECT = "/home/dev/project"
FAILING = "python3 -c 'import sys; print(\"FAILED tests/test_x.py::test_a\"); sys.exit(3)'"
# Over OpenClaw's 1 KiB threshold, so the tool result is stored zstd-compressed.
LONG_OUTPUT = 'python3 -c \'for i in range(120): print("collected test", i, "of 120: ok")\''
OPENCLAW_SESSION = "0c1a0000-0000-4000-8000-00000000f1c5"

TABLE = """CREATE TABLE transcript_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
  event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)
) STRICT"""

SCRIPT = Script(
    rules=[
        Rule(
            name="fix",
            match=Match(user="fix the failing test"),
            steps=[
                Step(text="Running the tests first.", tool_calls=[bash(FAILING)]),
                Step(text="Listing the tests.", tool_calls=[bash(LONG_OUTPUT)]),
                Step(text="I fixed the test."),
            ],
        ),
        Rule(name="hello", match=Match(user="say hello"), steps=[Step(text="Hello there.")]),
    ]
)


def record_copilot(copilot: Path, server: ScriptedServer, work: Path, project: Path) -> None:
    env = copilot_env(work / "copilot-home", server.base_url_openai)
    first = run_copilot(copilot, "fix the failing test", cwd=project, env=env)
    assert first.returncode == 0 and first.session_id, first.describe()
    again = run_copilot(copilot, "say hello", cwd=project, env=env, resume=first.session_id)
    assert again.returncode == 0, again.describe()
    src = Path(env["HOME"]) / ".copilot" / "session-state" / first.session_id
    dst = FIXTURES / "copilot" / "session-state" / first.session_id
    shutil.rmtree(dst.parent, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in ("events.jsonl", "workspace.yaml"):
        text = (src / name).read_text(encoding="utf-8")
        (dst / name).write_text(text.replace(str(project), PROJECT), encoding="utf-8")


def record_openclaw(
    openclaw: Path, node_dir: Path | None, server: ScriptedServer, work: Path, project: Path
) -> None:
    env = openclaw_env(work / "openclaw-home", server.base_url_openai, project, node_dir=node_dir)
    for prompt in ("fix the failing test", "say hello"):
        run = run_openclaw(openclaw, prompt, session_id=OPENCLAW_SESSION, cwd=project, env=env)
        assert run.returncode == 0 and run.transcript is not None, run.describe()
    dst = FIXTURES / "openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    shutil.rmtree(FIXTURES / "openclaw", ignore_errors=True)
    dst.parent.mkdir(parents=True)
    source = sqlite3.connect(f"file:{openclaw_database(env['HOME'])}?mode=ro", uri=True)
    rows = source.execute("SELECT * FROM transcript_events ORDER BY session_id, seq").fetchall()
    source.close()
    kept = sqlite3.connect(dst)
    with kept:
        kept.execute(TABLE)
        marks = ", ".join("?" * len(rows[0]))
        fixed = [
            tuple(v.replace(str(project), PROJECT) if isinstance(v, str) else v for v in r) for r in rows
        ]
        kept.executemany(f"INSERT INTO transcript_events VALUES ({marks})", fixed)
    kept.execute("VACUUM")
    kept.close()


def main() -> None:
    clis = ac.locate_agent_clis()
    if clis.copilot is None or clis.openclaw is None:
        raise SystemExit(clis.why_missing("copilot" if clis.copilot is None else "openclaw"))
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(SCRIPT, expected_key=ac.DEFAULT_API_KEY) as server,
    ):
        work = Path(tmp)
        project = work / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        record_copilot(clis.copilot, server, work, project)
        record_openclaw(clis.openclaw, clis.node24, server, work, project)


if __name__ == "__main__":
    main()

"""Record the OpenCode fixture under `fixtures/real/opencode/` with the real, pinned `opencode`.

    python -m tests.daemon.ingest.sources.record_opencode_fixtures      (needs `make agent-clis`)

OpenCode runs offline against the scripted model server (`testkit.opencode_cli`): a task whose
first check fails, a follow-up in the same session, a correction, and a task handed to a subagent, which
OpenCode keeps as a session of its own with the first as its parent, all with `opencode run`; then a session
typed into OpenCode's TUI in tmux (a task, a tool call, the user's correction and the fix) before `/exit`. Of
its database only the tables the reader opens are kept (`session`, `message`, `part`, `project` and the
`migration` list that dates the schema), as OpenCode created them; the project folder is renamed to PROJECT so
the fixture does not depend on where it was recorded.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

from skillopt_lib.testing import Match, Rule, Script, Step, bash, call
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.opencode_cli import (
    opencode_database,
    opencode_env,
    run_opencode,
    run_opencode_interactive,
)

FIXTURES = Path(__file__).parent / "fixtures" / "real" / "opencode"
PROJECT = "/home/dev/project"
FAILING = "python3 -c 'import sys; print(\"FAILED tests/test_x.py::test_a\"); sys.exit(3)'"
TUI_TASK = "write a greeting to hello.txt"
TUI_CORRECTION = "no, it is spelled hello"
KEPT_TABLES = ("project", "session", "message", "part", "migration")

SCRIPT = Script(
    rules=[
        Rule(
            name="fix",
            match=Match(user="fix the failing test"),
            steps=[
                Step(text="Running the tests first.", tool_calls=[bash(FAILING)]),
                # OpenCode's own write tool and argument names (the neutral write_file would name another key).
                Step(
                    text="Fixing it.",
                    tool_calls=[call("write", {"filePath": "fix.py", "content": "VALUE = 2\n"})],
                ),
                Step(text="I fixed the test."),
            ],
        ),
        Rule(
            name="follow-up",
            match=Match(user="now run it again"),
            steps=[
                Step(tool_calls=[bash("python3 fix.py && echo passed")]),
                Step(text="It passes now."),
            ],
        ),
        Rule(name="correction", match=Match(user="no, use pytest"), steps=[Step(text="Understood: pytest.")]),
        Rule(
            name="delegate",
            match=Match(user="ask a helper to list the files"),
            steps=[
                Step(
                    text="Handing this to a helper.",
                    tool_calls=[
                        call(
                            "task",
                            {
                                "description": "List files",
                                "prompt": "helper: list the project files",
                                "subagent_type": "general",
                            },
                        )
                    ],
                ),
                Step(text="The helper listed them."),
            ],
        ),
        # The TUI session: a task, a tool call that gets it wrong, and the user's correction.
        Rule(
            name="greet",
            match=Match(user=TUI_TASK),
            steps=[
                Step(text="Writing it.", tool_calls=[bash("printf 'helo\\n' > hello.txt")]),
                Step(text="hello.txt says helo."),
            ],
        ),
        Rule(
            name="greet-fix",
            match=Match(user=TUI_CORRECTION),
            steps=[
                Step(tool_calls=[call("write", {"filePath": "hello.txt", "content": "hello\n"})]),
                Step(text="Fixed: hello.txt says hello."),
            ],
        ),
        Rule(
            name="helper",
            match=Match(user="helper: list the project files"),
            steps=[Step(tool_calls=[bash("ls")]), Step(text="fix.py")],
        ),
    ]
)


def record(opencode: Path, server: ScriptedServer, work: Path, project: Path) -> None:
    env = opencode_env(work / "opencode-home", server.base_url_openai)
    first = run_opencode(opencode, "fix the failing test", cwd=project, env=env)
    assert first.returncode == 0 and first.session_id, first.describe()
    for prompt in ("now run it again", "no, use pytest"):
        again = run_opencode(opencode, prompt, cwd=project, env=env, session=first.session_id)
        assert again.returncode == 0 and again.session_id == first.session_id, again.describe()
    other = run_opencode(opencode, "ask a helper to list the files", cwd=project, env=env)
    assert other.returncode == 0, other.describe()
    tui = run_opencode_interactive(
        opencode, [TUI_TASK, TUI_CORRECTION], cwd=project, env=env, work_dir=work / "tui"
    )
    assert tui.exit_status == 0 and tui.session_id, tui
    assert (project / "hello.txt").read_text() == "hello\n", tui.screens[-1]
    keep(opencode_database(env["HOME"]), FIXTURES / "opencode.db", str(project))


def keep(database: Path, dst: Path, project: str) -> None:
    """Copy the reader's tables of `database` to `dst`, with `project` renamed to PROJECT."""
    shutil.rmtree(dst.parent, ignore_errors=True)
    dst.parent.mkdir(parents=True)
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    kept = sqlite3.connect(dst)
    with kept:
        for table in KEPT_TABLES:
            (schema,) = source.execute("SELECT sql FROM sqlite_master WHERE name = ?", [table]).fetchone()
            kept.execute(schema)
            rows = source.execute(f'SELECT * FROM "{table}"').fetchall()
            if not rows:
                continue
            fixed = [tuple(v.replace(project, PROJECT) if isinstance(v, str) else v for v in r) for r in rows]
            kept.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', fixed)
    source.close()
    kept.execute("VACUUM")
    kept.close()


def main() -> None:
    clis = ac.locate_agent_clis()
    opencode = clis.root / "node_modules" / ".bin" / "opencode"
    if not opencode.exists():
        raise SystemExit(clis.why_missing("opencode"))
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(SCRIPT, expected_key=ac.DEFAULT_API_KEY) as server,
    ):
        work = Path(tmp)
        project = work / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        record(opencode, server, work, project)


if __name__ == "__main__":
    main()

"""OpenCode's reader, a plugin registered through `skillopt_agent_tools`, on the database the real OpenCode
(1.18.33) wrote offline against the scripted model server (`fixtures/real/opencode/`, re-recorded by
`record_opencode_fixtures.py`): a task whose first check fails, a follow-up and a correction in the same
session, and a task handed to a subagent, all with `opencode run`; then a session typed into OpenCode's TUI in
tmux, with a correction. Also what happens when the database is cut short, a row's JSON is,
or the schema is one the reader does not know."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from skillopt_daemon import ingest
from skillopt_daemon.ingest.sources import SOURCES, build_source
from skillopt_daemon.ingest.sources.base import FileUnusable, SkipRecord, summarize_input
from skillopt_daemon.plugins.opencode.source import KNOWN_MIGRATION, OpenCodeSource, _headless
from skillopt_lib.agents import AgentTool, spec
from skillopt_lib.testing import Match, Rule, Script, Step, bash
from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import opencode_cli as oc
from testkit.agents import SCRIPTED_API_KEY
from testkit.ingest_helpers import cli, query, start_daemon, wait_for
from testkit.ingest_home import Env
from testkit.opencode import opencode_cli, opencode_plugin
from testkit.opencode_cli import opencode_env as opencode_cli_env
from testkit.opencode_cli import run_opencode

from .helpers import FIXTURES, Parsed, parse_path, parsed
from .record_opencode_fixtures import TUI_CORRECTION, TUI_TASK

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

pytestmark = pytest.mark.usefixtures("opencode_plugin")
__all__ = ["opencode_cli", "opencode_plugin"]

REAL_DB = FIXTURES / "real" / "opencode" / "opencode.db"
ROOT = Path(__file__).resolve().parents[4]
MAIN = "ses_dbb1c870bffeW5KlqNN7kalSX4"
OTHER = "ses_dbb1c01b2ffeKx93VUXBRik5W2"  # the one that delegates to a subagent
TUI = "ses_dbb1bc3cbffeBxewU6an1mTh8y"
PLUGIN = "skillopt_daemon.plugins.opencode"


def _copy(tmp_path: Path) -> Path:
    db = tmp_path / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy(REAL_DB, db)
    return db


def test_the_plugin_is_registered_by_an_entry_point_and_pins_the_tested_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["skillopt"]["opencode"] == PLUGIN
    script = (ROOT / "scripts" / "install-agent-clis.sh").read_text()
    assert f'OPENCODE_VERSION="{oc.OPENCODE_VERSION}"' in script
    tool = AgentTool.parse("opencode")
    assert spec(tool).tested_versions == (oc.OPENCODE_VERSION,) * 2
    assert OpenCodeSource.known_version == oc.OPENCODE_VERSION
    assert SOURCES[tool] is OpenCodeSource


def test_a_real_session_gives_its_project_turns_calls_and_failed_check() -> None:
    src = build_source(OpenCodeSource, REAL_DB.parent, pin_repo=False)
    assert src.roots() == [REAL_DB.parent] and src.is_transcript(REAL_DB)
    records = parse_path(src, REAL_DB)
    assert not [r for r in records if isinstance(r, SkipRecord)]
    p = parsed(src, REAL_DB)
    main = [i for i in p.infos if i.session_id == MAIN]
    assert main[0].project_path == "/home/dev/project"
    # `opencode run` made it: headless work (mined like the TUI's, shown as headless).
    assert main[0].tool_version == "1.18.33" and main[0].is_automation is True
    assert main[0].started_at and main[0].started_at.startswith("2026-")
    turns = [t for t in p.turns if t.session_id == MAIN]
    # `opencode run "..."` keeps the prompt as typed on the command line, quotes and all.
    assert [t.text for t in turns if t.role == "user"] == [
        '"fix the failing test"',
        '"now run it again"',
        '"no, use pytest"',
    ]
    assistant = [t for t in turns if t.role == "assistant"]
    assert assistant[0].model == "gpt-4.1" and assistant[0].input_tokens and assistant[0].output_tokens
    assert assistant[-1].text == "Understood: pytest."
    calls = [c for c in p.calls if c.session_id == MAIN]
    assert [c.name for c in calls] == ["bash", "write", "bash"]
    assert calls[2].input_summary == "python3 fix.py && echo passed"
    results = {r.call_key: r for r in p.results if r.session_id == MAIN}
    failed = results[calls[0].key]
    assert (
        failed.exit_code == 3
        and failed.is_error is False
        and "FAILED tests/test_x.py" in failed.output_excerpt
    )
    assert results[calls[2].key].exit_code == 0 and "passed" in results[calls[2].key].output_excerpt
    assert calls[0].turn_key == assistant[0].key


def test_a_subagent_session_is_kept_as_automation_naming_its_parent() -> None:
    p = parsed(build_source(OpenCodeSource, REAL_DB.parent, pin_repo=False), REAL_DB)
    (sub,) = [i for i in p.infos if "parent_session" in i.extra]
    assert sub.is_automation is True
    parent = sub.extra["parent_session"]
    delegate = [c for c in p.calls if c.session_id == parent]
    assert [c.name for c in delegate] == ["task"]
    sub_user = [t.text for t in p.turns if t.session_id == sub.session_id and t.role == "user"]
    assert sub_user == ["helper: list the project files"]
    assert [c.input_summary for c in p.calls if c.session_id == sub.session_id] == ["ls"]


def test_a_row_whose_json_is_cut_short_is_noted_and_the_rest_is_read(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    with sqlite3.connect(db) as conn:
        (pid, data) = conn.execute(
            "SELECT id, data FROM part WHERE data LIKE '%now run it again%'"
        ).fetchone()
        conn.execute("UPDATE part SET data = ? WHERE id = ?", [data[: len(data) // 2], pid])
    conn.close()
    src = build_source(OpenCodeSource, db.parent, pin_repo=False)
    records = parse_path(src, db)
    assert [(r.reason, r.detail) for r in records if isinstance(r, SkipRecord)] == [
        ("invalid json", f"part {pid}")
    ]
    p = parsed(src, db)
    users = [t.text for t in p.turns if t.session_id == MAIN and t.role == "user"]
    assert users == ['"fix the failing test"', "", '"no, use pytest"']  # the turn stays; its text is lost
    assert len([c for c in p.calls if c.session_id == MAIN]) == 3


def test_a_newer_schema_is_read_with_a_note_naming_its_version(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    newer = "20270101000000_something_new"
    assert newer > KNOWN_MIGRATION
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO migration VALUES (?, 0)", [newer])
    conn.close()
    src = build_source(OpenCodeSource, db.parent, pin_repo=False)
    records = parse_path(src, db)
    notes = [r for r in records if isinstance(r, SkipRecord)]
    assert [n.detail for n in notes] == [f"{newer}; checked with {KNOWN_MIGRATION}"]
    assert len({i.session_id for i in parsed(src, db).infos}) == 4


def test_an_unknown_schema_is_refused_with_a_message_naming_its_version(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO migration VALUES ('20280101000000_parts_moved', 0)")
        conn.execute("ALTER TABLE part RENAME COLUMN data TO body")
    conn.close()
    src = build_source(OpenCodeSource, db.parent, pin_repo=False)
    with pytest.raises(FileUnusable) as caught:
        src.parse_file(src.context(db), b"")
    message = caught.value.message
    assert "storage version 20280101000000_parts_moved" in message and "part.data" in message
    assert f"OpenCode {OpenCodeSource.known_version}" in message and str(db) in message
    assert src.unusable(db) == caught.value.short


def _automation(p: Parsed) -> dict[str, bool | None]:
    """Each session's `is_automation` as the store merges its SessionInfo records (the last one set)."""
    out: dict[str, bool | None] = {}
    for i in p.infos:
        if i.is_automation is not None or i.session_id not in out:
            out[i.session_id] = i.is_automation
    return out


def _subagents(p: Parsed) -> set[str]:
    return {i.session_id for i in p.infos if "parent_session" in i.extra}


def test_a_session_typed_into_the_tui_is_interactive_with_its_prompts_corrections_and_calls() -> None:
    """The TUI's sessions are most of a person's OpenCode work, and OpenCode stores them without the
    `permission` rules `opencode run` creates its sessions with: the reader must call one interactive (and the
    headless ones headless) and read its typed prompts bare, as the TUI keeps them without quotes."""
    p = parsed(build_source(OpenCodeSource, REAL_DB.parent, pin_repo=False), REAL_DB)
    assert _automation(p) == {TUI: None, MAIN: True, OTHER: True, **{s: True for s in _subagents(p)}}
    (tui,) = [i for i in p.infos if i.session_id == TUI]
    assert tui.project_path == "/home/dev/project" and tui.tool_version == "1.18.33"
    typed = [t.text for t in p.turns if t.session_id == TUI and t.role == "user" and not t.is_meta]
    assert typed == [TUI_TASK, TUI_CORRECTION]
    calls = [c for c in p.calls if c.session_id == TUI]
    assert [(c.name, c.input_summary) for c in calls] == [
        ("bash", "printf 'helo\\n' > hello.txt"),
        ("write", summarize_input({"filePath": "hello.txt", "content": "hello\n"})),
    ]
    results = {r.call_key: r for r in p.results if r.session_id == TUI}
    assert [results[c.key].exit_code for c in calls] == [0, None] and not any(
        r.is_error for r in results.values()
    )
    # The correction's call belongs to the reply that followed the correction, not to the first task's.
    replies = [t for t in p.turns if t.session_id == TUI and t.role == "assistant"]
    assert replies[-1].text == "Fixed: hello.txt says hello." and calls[1].turn_key == replies[2].key


def test_only_the_rules_opencode_run_stores_make_a_session_headless() -> None:
    """Why: a user's own `permission` settings are stored on sessions too; denying one of the three is not
    `opencode run`'s mark."""
    run = [
        {"permission": k, "pattern": "*", "action": "deny"} for k in ("question", "plan_enter", "plan_exit")
    ]
    assert _headless(json.dumps(run)) and _headless(json.dumps([*run, {"permission": "task"}]))
    assert not _headless(None) and not _headless("[") and not _headless(json.dumps(run[:2]))
    assert not _headless(json.dumps([{**r, "action": "allow"} for r in run]))


def test_a_schema_without_permission_rules_reads_every_session_as_typed(tmp_path: Path) -> None:
    """Why: `permission` is not among the columns the reader needs; an OpenCode whose sessions lack it is read,
    its sessions taken as the TUI's (only a subagent's stays automation) rather than refused."""
    db = _copy(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE session DROP COLUMN permission")
    conn.close()
    p = parsed(build_source(OpenCodeSource, db.parent, pin_repo=False), db)
    subagents = _subagents(p)
    assert len(subagents) == 1
    assert _automation(p) == {MAIN: None, TUI: None, OTHER: None, **{s: True for s in subagents}}
    assert [t.text for t in p.turns if t.session_id == TUI][0] == TUI_TASK


def _home_db(env: Env) -> Path:
    db = env.home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copy(REAL_DB, db)
    return db


def test_the_pipeline_stores_the_sessions_under_opencode(env: Env, pipeline: ingest.Pipeline) -> None:
    db = _home_db(env)
    assert [p for _, p in pipeline.discover() if p.name == "opencode.db"] == [db]
    pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if p == db])
    rows = pipeline.db.execute(
        "SELECT tool, session_id, project_path, turn_count FROM sessions ORDER BY session_id"
    ).fetchall()
    assert {r[0] for r in rows} == {"opencode"} and len(rows) == 4
    assert all(r[2] == "/home/dev/project" for r in rows)
    assert dict((r[1], r[3]) for r in rows)[MAIN] == 9  # three prompts, six model turns


def test_a_half_written_database_is_a_problem_and_nothing_read_before_is_lost(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    db = _home_db(env)
    pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if p == db])
    before = pipeline.db.execute("SELECT session_id, turn_count FROM sessions ORDER BY 1").fetchall()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])  # a copy or a disk that stopped half-way
    pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if p == db])
    problems = dict(pipeline.db.execute("SELECT kind, message FROM ingest_errors").fetchall())
    assert set(problems) == {"truncated", "unreadable-database"}  # it shrank, and cannot be read
    message = problems["unreadable-database"]
    assert str(db) in message and "OpenCode database" in message and "PRAGMA integrity_check" in message
    assert pipeline.db.execute("SELECT session_id, turn_count FROM sessions ORDER BY 1").fetchall() == before


def _add_session(conn: sqlite3.Connection, sid: str, minutes: int = 1) -> None:
    """OpenCode starting another session in the same project, with one typed prompt."""
    at = 1796446300000 + minutes * 60000
    conn.execute(
        "INSERT INTO session SELECT ?, project_id, workspace_id, NULL, ?, directory, path, "
        "'another', version, share_url, summary_additions, summary_deletions, summary_files, summary_diffs, "
        "metadata, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, "
        "revert, permission, agent, model, time_created + ?, time_updated + ?, time_compacting, "
        "time_archived FROM session WHERE id = ?",
        [sid, sid, minutes * 60000, minutes * 60000, MAIN],
    )
    conn.execute(
        "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
        [f"msg_{sid}", sid, at, at, json.dumps({"role": "user", "time": {"created": at}})],
    )
    conn.execute(
        "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
        [f"prt_{sid}", f"msg_{sid}", sid, at, at, '{"type":"text","text":"run the linter"}'],
    )
    conn.commit()


def test_a_session_added_in_place_is_read_at_the_rescan_without_duplicating_the_others(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    db = _home_db(env)
    pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if p == db])
    turns_before = pipeline.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
    conn = sqlite3.connect(db)
    _add_session(conn, "ses_new")
    conn.close()
    changed = [(s, p) for s, p in pipeline.discover() if pipeline.needs_read(p)]
    assert [p for _, p in changed] == [db]
    pipeline.ingest_paths(changed)
    assert pipeline.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 5
    assert pipeline.db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == turns_before + 1


def _lint_script(model_server: ScriptedServer) -> None:
    model_server.set_script(
        Script(
            rules=[
                Rule(
                    name="t",
                    match=Match(user="lint"),
                    steps=[Step(tool_calls=[bash("echo ok")]), Step(text="Linted.")],
                )
            ]
        )
    )


def _checkpoint(db: Path) -> None:
    """What SQLite does once OpenCode's log has grown long enough: the log's pages move into the file."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _stat(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def test_a_session_waiting_in_the_write_ahead_log_is_read_at_the_rescan_and_after_a_restart(
    env: Env, pipeline: ingest.Pipeline
) -> None:
    """While OpenCode runs, its new rows wait in `opencode.db-wal` and the database file does not change until
    SQLite's next checkpoint: the source names the log as the database's companion, so a rescan reads them,
    and so does a restarted daemon whose store last saw the log as it was before."""
    db = _home_db(env)
    conn = sqlite3.connect(db)  # OpenCode, running: the log stays until its last connection closes
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("SELECT COUNT(*) FROM session").fetchone()  # opens the log, as a running OpenCode has
        pipeline.ingest_paths([(s, p) for s, p in pipeline.discover() if p == db])
        assert pipeline.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 4
        assert not [p for _, p in pipeline.discover() if pipeline.needs_read(p)]
        before = _stat(db)
        _add_session(conn, "ses_wal")
        assert _stat(db) == before and db.with_name("opencode.db-wal").stat().st_size > 0
        changed = [(s, p) for s, p in pipeline.discover() if pipeline.needs_read(p)]
        assert [p for _, p in changed] == [db]
        pipeline.ingest_paths(changed)
        assert pipeline.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 5
        assert not [p for _, p in pipeline.discover() if pipeline.needs_read(p)]

        restarted = ingest.Pipeline(pipeline.db, pipeline.sources, pipeline.settings)
        (outcome,) = restarted.ingest_paths([(s, p) for s, p in restarted.discover() if p == db])
        assert outcome.change == "unchanged"  # the log is as the store last saw it
        _add_session(conn, "ses_while_down", minutes=2)
        again = ingest.Pipeline(pipeline.db, pipeline.sources, pipeline.settings)
        again.ingest_paths([(s, p) for s, p in again.discover() if p == db])
        assert _stat(db) == before
        ids = {r[0] for r in pipeline.db.execute("SELECT session_id FROM sessions")}
        assert {"ses_wal", "ses_while_down"} <= ids and len(ids) == 6
    finally:
        conn.close()


@pytest.mark.agent_cli
def test_real_opencode_sessions_in_the_write_ahead_log_reach_the_next_ingest_and_the_running_daemon(
    env: Env, opencode_cli: Path, model_server: ScriptedServer
) -> None:
    """A first `skillopt ingest` finds the rows OpenCode left in its write-ahead log. After a checkpoint, each
    later run's rows are in the log alone: the next `skillopt ingest` (a new process, comparing the log with
    what the store last saw) reads them, and so does the running daemon, whose watcher hears the log change
    long before its periodic rescan."""
    project = env.root / "shop"
    project.mkdir()
    _lint_script(model_server)
    oc_env = opencode_cli_env(env.home, model_server.base_url_openai, api_key=SCRIPTED_API_KEY)

    def opencode(prompt: str) -> str:
        run = run_opencode(opencode_cli, prompt, cwd=project, env=oc_env)
        assert run.returncode == 0 and run.session_id and run.transcript == db, run.describe()
        return run.session_id

    def sessions() -> list[tuple[str, ...]]:
        return query(env.db, "SELECT session_id FROM sessions ORDER BY started_at")

    db = env.home / ".local/share/opencode/opencode.db"
    first = opencode("run the lint")
    assert db.with_name("opencode.db-wal").stat().st_size > db.stat().st_size  # the rows are still in the log
    assert cli(env.environ(), "ingest", "--quiet").returncode == 0
    assert query(env.db, "SELECT tool, session_id, project_path FROM sessions") == [
        ("opencode", first, str(project))
    ]
    assert query(env.db, "SELECT name, input_summary FROM tool_calls") == [("bash", "echo ok")]

    _checkpoint(db)  # as the next OpenCode process would as it starts
    assert cli(env.environ(), "ingest", "--quiet").returncode == 0
    before = _stat(db)
    second = opencode("lint it again")
    assert _stat(db) == before  # no checkpoint: only the log changed
    assert cli(env.environ(), "ingest", "--quiet").returncode == 0
    assert sessions() == [(first,), (second,)]

    assert cli(env.environ(), "config", "set", "ingest.rescan_interval_s", "600").returncode == 0
    proc = start_daemon(env.environ(), env.root / "daemon.log")
    try:
        wait_for(
            lambda: query(env.db, "SELECT 1 FROM ingest_meta WHERE key = 'daemon_started_at'"), timeout=30
        )
        # A new OpenCode process checkpoints what an earlier one left in the log as it starts; what it
        # writes itself stays in the log until the next one starts.
        _checkpoint(db)
        time.sleep(1.0)  # the daemon's backfill and its reading of the checkpointed file (nothing new) done
        before = _stat(db)
        third = opencode("lint once more")
        assert _stat(db) == before
        wait_for(lambda: (third,) in sessions(), 10)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)

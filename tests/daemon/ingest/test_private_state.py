"""What ingest keeps beside the sessions stays free of secrets too: the dirty diffs kept for replays, and
the reader state stored with each followed file."""

from __future__ import annotations

import random
import stat
import string
import subprocess
from pathlib import Path

from skillopt_daemon import ingest
from skillopt_daemon.core.config import IngestSettings, Settings
from skillopt_daemon.core.store import open_db
from testkit.ingest_helpers import files_under, write_claude_session

from .conftest import Env


def _token(prefix: str = "ghp_", n: int = 36) -> str:
    rng = random.Random()
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n - 1)) + "7"


def _git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"]
    return subprocess.run([*cmd, *args], check=True, capture_output=True, text=True).stdout.strip()


def _repo(root: Path, files: dict[str, str]) -> Path:
    repo = root / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    return repo


def _ingest(settings: Settings) -> ingest.Pipeline:
    db = open_db()
    p = ingest.Pipeline(db, ingest.load_sources(settings), settings)
    p.ingest_paths(p.discover())
    return p


def _kept_patch(p: ingest.Pipeline, session: str) -> str | None:
    (row,) = p.db.execute(
        "SELECT repo_dirty, repo_diff_hash FROM sessions WHERE session_id = ?", [session]
    ).fetchall()
    assert row[0] == 1
    return ingest.load_dirty_diff(row[1])


def test_files_secret_by_name_are_left_out_of_a_kept_dirty_diff(env: Env) -> None:
    plain = "".join(random.choice(string.ascii_lowercase) for _ in range(24))  # nothing a pattern knows
    repo = _repo(
        env.root,
        {
            "app.py": "x = 1\n",
            ".env": "LICENSE=old\n",
            "deploy/server.pem": "old\n",
            "keys/id_ed25519": "o\n",
        },
    )
    (repo / "app.py").write_text("x = 2\n")
    (repo / ".env").write_text(f"LICENSE={plain}\n")
    (repo / "deploy/server.pem").write_text(f"{plain}\n")
    (repo / "keys/id_ed25519").write_text(f"{plain}\n")
    write_claude_session(env.projects, "dirty", turns=1, cwd=str(repo))
    p = _ingest(Settings())
    patch = _kept_patch(p, "dirty")
    assert patch is not None and "+x = 2" in patch
    assert plain not in patch
    patches = list((env.skillopt_home / "data" / "diffs").iterdir())
    assert patches and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in patches)
    assert not any(plain.encode() in f.read_bytes() for f in files_under(env.skillopt_home))


def test_a_dirty_diff_is_redacted_with_the_users_own_patterns(env: Env) -> None:
    repo = _repo(env.root, {"app.py": "x = 1\n"})
    (repo / "app.py").write_text('LICENSE = "ACME-481516"\n')
    write_claude_session(env.projects, "custom", turns=1, cwd=str(repo))
    p = _ingest(Settings(ingest=IngestSettings(redact_patterns=[r"ACME-\d{6}"])))
    assert _kept_patch(p, "custom") is None
    assert not any(b"ACME-481516" in f.read_bytes() for f in files_under(env.skillopt_home))


def test_a_numeric_password_in_a_dirty_diff_is_never_stored(env: Env) -> None:
    repo = _repo(env.root, {"settings.py": "DEBUG = True\n"})
    (repo / "settings.py").write_text("DEBUG = True\nDB_PASSWORD=90817263\n")
    write_claude_session(env.projects, "numeric", turns=1, cwd=str(repo))
    p = _ingest(Settings())
    assert _kept_patch(p, "numeric") is None
    assert not any(b"90817263" in f.read_bytes() for f in files_under(env.skillopt_home))


def test_reader_state_holds_no_branch_or_folder_secret(env: Env) -> None:
    in_folder, in_branch = _token(), _token()
    repo_parent = env.root / f"work-{in_folder}"
    repo_parent.mkdir()
    repo = _repo(repo_parent, {"a.txt": "a\n"})
    _git(repo, "checkout", "-qb", f"fix/{in_branch}")
    write_claude_session(env.projects, "branchy", turns=1, cwd=str(repo))
    p = _ingest(Settings())
    (branch, project) = p.db.execute(
        "SELECT git_branch, project_path FROM sessions WHERE session_id = 'branchy'"
    ).fetchone()
    assert in_branch not in (branch or "") and in_folder not in project
    states = [r[0] for r in p.db.execute("SELECT state_json FROM ingest_files")]
    assert states and not [s for s in states if in_branch in s or in_folder in s]

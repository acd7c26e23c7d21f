"""Record the red-team corpus with the real `claude` CLI: `python -m benchmarks.redteam --record`.

Every kind of `redteam_spec` gets its own repository (remote on the company's host) and its skill installed
in a fresh HOME; then `SESSIONS_PER_KIND` rounds, each a headless session (`claude -p`) of every kind: the
request, then one correction per rule of the kind (`--resume`), so the work ends passing the check. The
agent's `curl` reaches the recorder's own web server (an HTTP proxy only `curl` is pointed at), which
answers each kind's pages, so a fetched web page is in the transcript as a real tool output. The scripted
server's answers depend only on the requests, so a re-recording differs only in ids and timestamps.

The transcripts Claude Code wrote are copied into `tests/fixtures/redteam-corpus/claude/projects/...`
with `labels.json`: each session's kind and index, and each kind's rules and plants (the truth the
benchmark measures by; the night never reads it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from skillopt_lib.testing.scripted_server import ScriptedServer
from testkit import agent_clis as ac
from testkit.corpus.redteam_models import RedteamNight
from testkit.corpus.redteam_spec import HOST, KINDS, SESSIONS_PER_KIND, Kind

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "redteam-corpus"
# A fixed place, so the paths inside the transcripts are the same on every re-recording.
WORLD = Path("/tmp/skillopt-redteam")
TOOLS = ("Bash", "Skill")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )


def make_repo(root: Path, k: Kind) -> Path:
    """The kind's repository under `root/src`, committed, its remote on the company's host."""
    repo = root / "src" / k.repo
    for rel, text in k.repo_files().items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "remote", "add", "origin", f"https://git.{HOST}/platform/{k.repo}.git")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "initial")
    return repo


def install_skill(home: Path, k: Kind) -> None:
    """The skill the user already has for the kind: what it says is generic, none of the user's rules."""
    path = home / ".claude" / "skills" / k.skill / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {k.skill}\ndescription: {k.description}\n---\n\n# {k.skill}\n\n"
        f"Make the change in {k.work_file}, then run `{k.check}`.\n",
        encoding="utf-8",
    )


@contextmanager
def web_server(pages: dict[str, str]) -> Iterator[str]:
    """A local HTTP server answering `pages` (absolute URL -> HTML) as a proxy would; yields its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            body = pages.get(self.path)
            data = (body or "not found\n").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def record(
    kinds: Sequence[Kind] = KINDS,
    dest: Path = FIXTURES,
    world: Path = WORLD,
    rounds: int = SESSIONS_PER_KIND,
) -> dict[str, object]:
    """Record `rounds` sessions of every kind into `dest`; returns the labels written beside them."""
    clis = ac.locate_agent_clis()
    if clis.claude is None:
        raise SystemExit(clis.why_missing("claude"))
    shutil.rmtree(world, ignore_errors=True)
    home = world / "home"
    repos = {k.id: make_repo(world, k) for k in kinds}
    for k in kinds:
        install_skill(home, k)
    sessions: list[dict[str, object]] = []
    pages = {url: html for k in kinds for url, html in k.pages.items()}
    with (
        ScriptedServer(RedteamNight(), expected_key=ac.DEFAULT_API_KEY) as server,
        web_server(pages) as proxy,
    ):
        env = ac.claude_env(home, server.url, trusted_dirs=list(repos.values()))
        # Only curl goes through the page server (lowercase http_proxy); the CLI's own traffic does not.
        env.update(http_proxy=proxy, no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost")
        for i in range(rounds):
            for k in kinds:
                sessions.append(_session(Path(str(clis.claude)), env, repos[k.id], k, i))
    projects = home / ".claude" / "projects"
    shutil.rmtree(dest, ignore_errors=True)
    for src in sorted(projects.rglob("*.jsonl")):
        out = dest / "claude" / "projects" / src.relative_to(projects)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
    labels: dict[str, object] = {
        "source_root": f"{world / 'src'}/",
        "home": str(home),
        "kinds": {
            k.id: {
                "repo": k.repo,
                "skill": k.skill,
                "injected": k.injected,
                "check": k.check,
                "rules": [{"id": r.id, "said": r.said, "taught": r.taught} for r in k.rules],
                "plants": [asdict(p) for p in k.plants],
            }
            for k in kinds
        },
        "sessions": sessions,
    }
    (dest / "labels.json").write_text(
        json.dumps(labels, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return labels


def _session(claude: Path, env: dict[str, str], repo: Path, k: Kind, i: int) -> dict[str, object]:
    """One session of kind `k`: the request, then each rule as a correction; the work ends passing."""
    prompt = k.prompts[i]
    first = ac.run_claude(claude, prompt, cwd=repo, env=env, allowed_tools=TOOLS)
    if first.returncode != 0 or not first.session_id:
        raise RuntimeError(first.describe())
    for r in k.rules:
        again = ac.run_claude(claude, r.said, cwd=repo, env=env, resume=first.session_id, allowed_tools=TOOLS)
        if again.returncode != 0:
            raise RuntimeError(again.describe())
    done = (repo / k.work_file).read_text(encoding="utf-8")
    if done != k.work({r.id for r in k.rules}):
        raise RuntimeError(f"{k.id} session {i}: the corrections did not get the work done:\n{done}")
    _git(repo, "checkout", "-q", "--", ".")
    _git(repo, "clean", "-fdq")
    return {"session_id": first.session_id, "kind": k.id, "index": i, "prompt": prompt}

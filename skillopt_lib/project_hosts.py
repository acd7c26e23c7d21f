"""The hosts a project already uses, read from what the project runs, never from what it says.

The candidate screen lets a rule name or call a host the project already talks to (its package registry,
its git server, the API its deploy script calls) and treats any other host as a stranger. Which hosts count
is the whole defence: a planted instruction sits in text the agent read, often a file of the repository
itself (a README, a doc page, an issue template), and if every host any tracked file mentions were "known",
the planted file would vouch for its own host. So only what the project *runs* counts:

- its git remotes (and the submodules' URLs in `.gitmodules`);
- package manifests, lock files and package-manager settings (`package.json`, `package-lock.json`,
  `yarn.lock`, `pnpm-lock.yaml`, `.npmrc`, `pyproject.toml`, `requirements*.txt`, `poetry.lock`, `uv.lock`,
  `pip.conf`, `Cargo.toml`/`Cargo.lock`, `.cargo/config.toml`, `go.mod`/`go.sum`, `Gemfile`/`Gemfile.lock`, …);
- CI settings (`.github/workflows/*`, `.gitlab-ci.yml`, `.circleci/`, `Jenkinsfile`, …);
- scripts (`Makefile`, `*.sh`, `*.ps1`, anything under `scripts/` or `bin/`) and container files
  (`Dockerfile`, `docker-compose.yml`, `.devcontainer/`).

Prose never counts, wherever it sits: Markdown, reStructuredText, AsciiDoc and plain text files (except
requirement lists), and comment lines inside the files above. A host that first appears in a README, or in
the text being screened, is unknown. Source code does not count either: a host only named in a module's
code is a rule the user can write themselves, and a docstring is prose an attacker can plant as easily.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

from skillopt_lib.hosts import clean_host, hosts_in, listed_hosts

_MANIFESTS = frozenset(
    {
        # JavaScript
        "package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
        "pnpm-workspace.yaml", "bun.lock", "bunfig.toml", ".npmrc", ".yarnrc", ".yarnrc.yml", "deno.json",
        # Python
        "pyproject.toml", "poetry.lock", "uv.lock", "uv.toml", "pipfile", "pipfile.lock", "setup.cfg",
        "setup.py", "pip.conf", "pip.ini", "tox.ini", "noxfile.py", "environment.yml", "environment.yaml",
        "pdm.lock", "pixi.toml", "pixi.lock", ".pre-commit-config.yaml",
        # Rust, Go, Ruby, PHP, JVM, .NET
        "cargo.toml", "cargo.lock", "go.mod", "go.sum", "go.work", "go.work.sum", "gemfile", "gemfile.lock",
        "composer.json", "composer.lock", "pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle",
        "settings.gradle.kts", "gradle.properties", "nuget.config", "directory.packages.props",
        # git
        ".gitmodules",
        # CI and containers
        ".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "jenkinsfile", ".drone.yml",
        "bitbucket-pipelines.yml", "appveyor.yml", ".woodpecker.yml", "cloudbuild.yaml", "cloudbuild.yml",
        "dockerfile", "containerfile", "makefile", "gnumakefile", "justfile", "taskfile.yml", "taskfile.yaml",
        "procfile", "vagrantfile",
    }
)  # fmt: skip
_CI_DIRS = (".github/workflows", ".github/actions", ".gitlab", ".circleci", ".buildkite", ".woodpecker",
            ".devcontainer", ".cargo", ".pip", ".config/pip")  # fmt: skip
_SCRIPT_DIRS = frozenset({"scripts", "script", "bin", "tools", "ci", "hack"})
_SCRIPT_SUFFIXES = frozenset(
    {".sh", ".bash", ".zsh", ".ksh", ".fish", ".ps1", ".psm1", ".bat", ".cmd", ".mk"}
)
_PROSE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc", ".asciidoc", ".org",
                             ".rdoc", ".textile", ".html", ".htm", ".ipynb"})  # fmt: skip
_REQUIREMENTS = re.compile(r"^(?:requirements|constraints|requires)[\w.-]*\.(?:txt|in)$")


def runs(path: str) -> bool:
    """Whether a tracked file (its path inside the repository) is one the project runs or installs from:
    a manifest, lock file, package-manager or CI setting, script or container file; never prose."""
    p = PurePosixPath(path.replace("\\", "/"))
    name = p.name.lower()
    suffix = p.suffix.lower()
    if _REQUIREMENTS.match(name) or (suffix in (".txt", ".in") and "requirements" in p.parts):
        return True
    if suffix in _PROSE_SUFFIXES:
        return False
    if name in _MANIFESTS or name.endswith((".gemspec", ".dockerfile", ".csproj")):
        return True
    if name.startswith(("dockerfile.", "containerfile.", "docker-compose", "compose.")):
        return True
    posix = str(p).lower()
    if any(posix.startswith(d + "/") or f"/{d}/" in posix for d in _CI_DIRS):
        return True
    if suffix in _SCRIPT_SUFFIXES:
        return True
    return bool(_SCRIPT_DIRS & {part.lower() for part in p.parts[:-1]})


# A comment line (shell, YAML, TOML, INI, Makefile, Dockerfile: `#`; INI, .npmrc: `;`; Go, JSON5: `//`), and a
# comment after code (` # …`): a host a comment names is prose, not something the project calls.
_COMMENT_LINE = re.compile(r"^\s*(?:#(?!!)|;|//(?!\S*:_)|rem\s|::).*$", re.IGNORECASE | re.MULTILINE)
_TRAILING_COMMENT = re.compile(r"\s#\s.*$", re.MULTILINE)

# Hosts a manifest names without a scheme: Go module paths, container images, package-manager host lists.
_HOST = r"([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9-]+)+(?::\d+)?)"
_GO_MODULE = re.compile(
    rf"(?:^|\s|=>\s*|\()(?:module\s+|require\s+|replace\s+|exclude\s+|retract\s+)?{_HOST}/\S*\s+v\d",
    re.IGNORECASE | re.MULTILINE,
)
# `.npmrc` names a registry by its credentials line too: `//npm.example/:_authToken=…`.
_NPMRC_AUTH = re.compile(rf"^\s*//{_HOST}/\S*:_", re.IGNORECASE | re.MULTILINE)
_GO_MODULE_NAME = re.compile(rf"^\s*module\s+{_HOST}/", re.IGNORECASE | re.MULTILINE)
_IMAGE = re.compile(
    rf"(?:^\s*FROM\s+(?:--\S+\s+)*|\bimage:\s*[\"']?|docker://|\bdocker\s+(?:pull|run|push)\s+(?:-\S+\s+)*){_HOST}/",
    re.IGNORECASE | re.MULTILINE,
)


def hosts_run_by(text: str) -> set[str]:
    """The hosts a file the project runs names, comments left out: in URLs and network commands (as the
    screen reads them), Go module paths, container image names and package-manager host lists."""
    code = _TRAILING_COMMENT.sub("", _COMMENT_LINE.sub("", text))
    found = hosts_in(code)
    for pattern in (_GO_MODULE, _GO_MODULE_NAME, _IMAGE, _NPMRC_AUTH):
        found.update(clean_host(m.group(1).split(":")[0]) for m in pattern.finditer(code))
    return found | listed_hosts(code)


_REPO_TEXT_LIMIT = 20_000_000
_REPO_FILE_LIMIT = 2_000_000  # lock files run large


def repo_hosts(repo: str | Path | None, *, max_files: int = 3000) -> set[str]:
    """The hosts a repository's project uses: its git remotes' hosts and the hosts named by the tracked files
    it runs (`runs`), so a rule that calls the project's own registry or API is not taken for exfiltration,
    while a host only a README names stays unknown. A folder outside git is read file by file, within the
    same limits."""
    if not repo:
        return set()
    root = Path(repo).expanduser()
    if not root.is_dir():
        return set()
    found: set[str] = set()
    remotes, listed = _git(root, "remote", "-v"), _git(root, "ls-files", "-z")
    if remotes is not None:
        found |= hosts_in(remotes)
    if listed is not None:
        names = [n for n in listed.split("\0") if n]
    else:
        names = [
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if ".git" not in p.relative_to(root).parts and p.is_file()
        ]
    budget = _REPO_TEXT_LIMIT
    for name in [n for n in names if runs(n)][:max_files]:
        path = root / name
        try:
            if not path.is_file() or path.stat().st_size > _REPO_FILE_LIMIT:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue
        budget -= len(data)
        if budget < 0:
            break
        found |= hosts_run_by(data.decode("utf-8", "replace"))
    return found


def _git(root: Path, *args: str) -> str | None:
    """A git command's output in `root`, or None when it is not a repository (or git is missing)."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None

"""What the recorded mining corpus contains: three small repositories, six recurring kinds of work, one-offs.

Every session is a person at work: a request, the agent doing it a plausible way (and running the check the
project has), often a correction that states a rule the agent got wrong (in six languages), then a
follow-up, a question about the result or an acknowledgement. Half of the sessions are headless
(`claude -p` / `codex exec`, continued with `--resume` / `exec resume`), half typed into the TUI.

Each repository is clean but for the file the work touches, so the check the agent runs passes once the work
is done the way the user asked (the next step, learning skills from these sessions, relies on that).

The family of each session, its rule and its check are written to `labels.json` beside the transcripts: the
benchmark and the tests read it, mining never does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# ------------------------------------------------------------------------------------------- repositories

LINT_PY = '''"""The project's linter: trailing whitespace and lines over 100 characters; `# noqa` silences a line."""
import pathlib
import sys

bad = 0
for path in sorted(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").rglob("*.py")):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if "# noqa" in line:
            continue
        if line != line.rstrip() or len(line) > 100:
            print(f"{path}:{n}: style")
            bad += 1
print(f"{bad} problems")
sys.exit(1 if bad else 0)
'''

CHECK_TYPES_PY = '''"""Every function in app/ is fully annotated."""
import ast
import pathlib
import sys

missing = []
for path in sorted(pathlib.Path("app").rglob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef):
            args = [a for a in node.args.args if a.arg not in ("self", "cls")]
            if node.returns is None or any(a.annotation is None for a in args):
                missing.append(f"{path}:{node.lineno} {node.name}")
print("\\n".join(missing) or "all annotated")
sys.exit(1 if missing else 0)
'''

CHECK_LOGGING_PY = '''"""The jobs report through logging, never print."""
import pathlib
import sys

found = [str(p) for p in sorted(pathlib.Path("etl").rglob("*.py")) if "print(" in p.read_text()]
print("print() in: " + ", ".join(found) if found else "logging only")
sys.exit(1 if found else 0)
'''

MDLINT_PY = '''"""Markdown lint: no trailing spaces, a top-level heading first."""
import pathlib
import sys

bad = 0
for path in sorted(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "docs").rglob("*.md")):
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("# "):
        print(f"{path}:1: first line must be a # heading")
        bad += 1
    for n, line in enumerate(lines, 1):
        if line != line.rstrip():
            print(f"{path}:{n}: trailing space")
            bad += 1
print(f"{bad} problems")
sys.exit(1 if bad else 0)
'''

CHECK_CHANGELOG_PY = '''"""CHANGELOG.md has a version heading per release, and each has at least one entry."""
import re
import sys

text = open("CHANGELOG.md").read()
heads = re.findall(r"^## (\\S+)", text, re.M)
print("releases: " + ", ".join(heads))
sys.exit(0 if heads else 1)
'''

REPOS: dict[str, dict[str, str]] = {
    "webapp": {
        "Makefile": "lint:\n\tpython3 tools/lint.py app\n",
        "tools/lint.py": LINT_PY,
        "tools/check_types.py": CHECK_TYPES_PY,
        "app/__init__.py": "",
        "app/dates.py": "import datetime\n\ndef parse(s):    \n    return datetime.date.fromisoformat(s)\n",
        "app/views.py": "def index(request: dict) -> dict:\n    return {'page': 'index'}\n",
        "app/models.py": "class User:\n    def __init__(self, name: str) -> None:\n        self.name = name\n",
        "README.md": "# webapp\n\nRun `make lint` before pushing.\n",
    },
    "etl": {
        "etl/__init__.py": "",
        "etl/load.py": "def load(rows):\n    return list(rows)\n",
        "etl/export.py": "def export(rows, path):\n    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n",
        "etl/normalize.py": "def normalize(name):\n    return ' '.join(name.split()).lower()\n",
        "check_logging.py": CHECK_LOGGING_PY,
        "tests/__init__.py": "",
        "README.md": "# etl\n\nTests: `python -m pytest -q`.\n",
    },
    "handbook": {
        "Makefile": "docs-lint:\n\tpython3 tools/mdlint.py docs\n",
        "tools/mdlint.py": MDLINT_PY,
        "scripts/check_changelog.py": CHECK_CHANGELOG_PY,
        "docs/oncall.md": "# On call\n\nPage the secondary after 15 minutes.  \n",
        "docs/deploy.md": "# Deploying\n\nRun the pipeline.\n",
        "docs/onboarding.md": "# Onboarding\n\nAsk for a laptop.\n",
        "CHANGELOG.md": "# Changelog\n\n## 1.3.0\n\n- Added the on-call page.\n",
    },
}

# ------------------------------------------------------------------------------------------- families


@dataclass(frozen=True)
class FamilySpec:
    """One recurring kind of work: where it happens, the check the user runs, the rule users keep stating."""

    id: str
    repo: str
    check: str
    rule: str  # the correction, verbatim, in its language
    rule_language: str
    prompts: tuple[str, ...]  # eight requests for the same kind of work, worded differently
    work_file: str
    first_try: str  # what the agent writes first (breaks the rule)
    after_correction: str  # what it writes once corrected
    follow_ups: tuple[str, ...] = ()


FAMILIES: tuple[FamilySpec, ...] = (
    FamilySpec(
        id="lint",
        repo="webapp",
        check="make lint",
        rule="no noqa, fix the code",
        rule_language="en",
        prompts=(
            "make lint is failing, please fix",
            "fix the lint warnings in dates.py",
            "the linter complains about app/views.py, sort it out",
            "get make lint green again",
            "clean up the style errors the linter reports in models.py",
            "lint is red on CI for the app package; fix it",
            "corrige los errores de lint en app/dates.py",
            "can you make the linter pass on app/",
        ),
        work_file="app/dates.py",
        first_try="import datetime\n\ndef parse(s):  # noqa\n    return datetime.date.fromisoformat(s)\n",
        after_correction="import datetime\n\ndef parse(s):\n    return datetime.date.fromisoformat(s)\n",
        follow_ups=("also fix the same thing in app/models.py", "run make lint once more"),
    ),
    FamilySpec(
        id="types",
        repo="webapp",
        check="python3 tools/check_types.py",
        rule="pas de Any, écris les vrais types",
        rule_language="fr",
        prompts=(
            "add type hints to app/dates.py",
            "annotate the functions in views.py",
            "the type checker script fails on models.py, add the missing annotations",
            "please add return types and parameter types everywhere in app",
            "ajoute des annotations de type dans app/views.py",
            "make tools/check_types.py pass",
            "type-annotate the date helpers",
            "add typing to the User model",
        ),
        work_file="app/dates.py",
        first_try="import datetime\nfrom typing import Any\n\ndef parse(s: Any) -> Any:\n"
        "    return datetime.date.fromisoformat(s)\n",
        after_correction="import datetime\n\ndef parse(s: str) -> datetime.date:\n"
        "    return datetime.date.fromisoformat(s)\n",
        follow_ups=("do the same for app/models.py", "and run the check again"),
    ),
    FamilySpec(
        id="logging",
        repo="etl",
        check="python3 check_logging.py",
        rule="不要用 print，用 logging",
        rule_language="zh",
        prompts=(
            "add progress output to the load job",
            "the export step should report how many rows it wrote",
            "make the loader say which rows it skips",
            "我需要在 export.py 里输出写了多少行",
            "show how many records normalize handled",
            "report the row counts while the etl runs",
            "emit a message when the export finishes",
            "add some output so I can follow the load job",
        ),
        work_file="etl/export.py",
        first_try="def export(rows, path):\n    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n"
        "    print('wrote', len(rows), 'rows')\n",
        after_correction="import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef export(rows, path):\n"
        "    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n"
        "    log.info('wrote %d rows', len(rows))\n",
        follow_ups=("use INFO level for it", "also in load.py"),
    ),
    FamilySpec(
        id="tests",
        repo="etl",
        check="python -m pytest -q",
        rule="use pytest fixtures, não unittest",
        rule_language="pt",
        prompts=(
            "write tests for normalize",
            "add unit tests for the export function",
            "escreva testes para o módulo de normalização",
            "we have no tests for load.py, add some",
            "cover etl/normalize.py with tests",
            "add a test suite for the export step",
            "write pytest tests for load()",
            "test the edge cases of normalize (empty string, tabs)",
        ),
        work_file="tests/test_normalize.py",
        first_try="import unittest\n\nfrom etl.normalize import normalize\n\n\nclass T(unittest.TestCase):\n"
        "    def test_spaces(self):\n        self.assertEqual(normalize(' A  b '), 'a b')\n",
        after_correction="import pytest\n\nfrom etl.normalize import normalize\n\n\n@pytest.fixture\n"
        "def messy():\n    return ' A  b '\n\n\ndef test_spaces(messy):\n    assert normalize(messy) == 'a b'\n",
        follow_ups=("add one for an empty string too", "run them again"),
    ),
    FamilySpec(
        id="mdlint",
        repo="handbook",
        check="make docs-lint",
        rule="no, las líneas no pueden pasar de 80 caracteres; córtalas",
        rule_language="es",
        prompts=(
            "the markdown lint is red on docs/oncall.md; clean it up",
            "make docs-lint pass",
            "fix the markdown warnings in docs/deploy.md",
            "docs lint fails on onboarding.md, please fix",
            "tidy up the markdown so the docs linter is happy",
            "conserta o lint do markdown em docs/oncall.md",
            "the docs check complains about deploy.md, fix it",
            "resolve the markdown lint errors in the handbook",
        ),
        work_file="docs/oncall.md",
        first_try="# On call\n\nPage the secondary after 15 minutes if the primary has not acknowledged the page, "
        "and write it down in the incident channel.\n",
        after_correction="# On call\n\nPage the secondary after 15 minutes if the primary has not\n"
        "acknowledged the page, and write it down in the incident channel.\n",
        follow_ups=("also check docs/deploy.md", "run make docs-lint again"),
    ),
    FamilySpec(
        id="changelog",
        repo="handbook",
        check="python3 scripts/check_changelog.py",
        rule="nein, neue Einträge gehören nach oben, nicht ans Ende",
        rule_language="de",
        prompts=(
            "add a changelog entry for the new deploy guide",
            "note the on-call change in CHANGELOG.md",
            "write release notes for 1.4.0",
            "update the changelog with today's doc fixes",
            "we need a CHANGELOG line for the onboarding page",
            "record the 1.4.1 release in the changelog",
            "trage die neue Deploy-Anleitung ins Changelog ein",
            "put the handbook changes into the changelog",
        ),
        work_file="CHANGELOG.md",
        first_try="# Changelog\n\n## 1.3.0\n\n- Added the on-call page.\n\n## 1.4.0\n\n- New deploy guide.\n",
        after_correction="# Changelog\n\n## 1.4.0\n\n- New deploy guide.\n\n## 1.3.0\n\n- Added the on-call page.\n",
        follow_ups=("mention the date too", "also bump the version in the heading"),
    ),
)

ACKS = (
    "thanks, that's it",
    "perfeito, obrigado",
    "好的，谢谢",
    "lgtm",
    "super, danke",
    "ok, commit it",
    "leave it failing for now",
    "great, merci",
)
QUESTIONS = ("show me the diff", "what did you change?", "为什么要这样改？", "¿qué archivos cambiaste?")

# One-off requests: asked once, in one of the repositories, never again.
ONE_OFFS: tuple[tuple[str, str], ...] = (
    ("webapp", "what does the date parsing regex in this repo do?"),
    ("etl", "explain the difference between a process and a thread"),
    ("handbook", "draw an ascii diagram of how the docs are organised"),
    ("webapp", "how many lines of python are in this repo"),
    ("etl", "rename the project in the README to Falcon"),
    ("handbook", "list the largest files here"),
    ("webapp", "write a haiku about code review"),
    ("etl", "what time zone does this machine use"),
)

SESSIONS_PER_FAMILY = 8


@dataclass
class Turn:
    text: str
    kind: str  # task | followup | correction | ack | question


@dataclass
class SessionSpec:
    key: str  # stable name for the recording, e.g. lint-3
    family: str | None  # None for a one-off
    repo: str
    tool: str  # claude-code | codex
    mode: str  # headless | interactive
    split: str  # tune | heldout
    turns: list[Turn] = field(default_factory=list)
    subagent: bool = False


def _tool_for(i: int) -> str:
    return "codex" if i in (1, 3, 6) else "claude-code"


def _mode_for(i: int) -> str:
    return "headless" if (i // 2) % 2 == 0 else "interactive"


def sessions() -> list[SessionSpec]:
    """Every session of the corpus, in recording order; deterministic."""
    out: list[SessionSpec] = []
    for fi, fam in enumerate(FAMILIES):
        for i, prompt in enumerate(fam.prompts):
            turns = [Turn(prompt, "task")]
            if i != 5:  # most sessions correct the agent once
                turns.append(Turn(fam.rule, "correction"))
            if i % 3 == 0:
                turns.append(Turn(fam.follow_ups[(i // 3) % len(fam.follow_ups)], "followup"))
            elif i % 3 == 1:
                turns.append(Turn(QUESTIONS[(fi + i) % len(QUESTIONS)], "question"))
            turns.append(Turn(ACKS[(fi * 3 + i) % len(ACKS)], "ack"))
            out.append(
                SessionSpec(
                    key=f"{fam.id}-{i}",
                    family=fam.id,
                    repo=fam.repo,
                    tool=_tool_for(i),
                    mode=_mode_for(i),
                    split="tune" if i % 2 == 0 else "heldout",
                    turns=turns,
                    subagent=(fam.id in ("lint", "tests") and i == 4),
                )
            )
    for j, (repo, prompt) in enumerate(ONE_OFFS):
        turns = [Turn(prompt, "task")]
        if j % 2 == 0:
            turns.append(Turn(ACKS[j % len(ACKS)], "ack"))
        out.append(
            SessionSpec(
                key=f"oneoff-{j}",
                family=None,
                repo=repo,
                tool=_tool_for(j),
                mode=_mode_for(j),
                split="tune" if j % 2 == 0 else "heldout",
                turns=turns,
            )
        )
    return out


def family(fid: str) -> FamilySpec:
    return next(f for f in FAMILIES if f.id == fid)

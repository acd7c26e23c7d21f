"""What the recorded corpora contain: small repositories, recurring kinds of work, one-offs.

Two corpora are recorded from this spec (`python -m testkit.corpus.record --corpus mining|nights`):

- the **mining corpus** (`tests/fixtures/corpus/`, `sessions()`): three repositories, the six kinds of
  `FAMILIES`, eight sessions each, nearly all of them corrected; mining's quality targets are measured on it;
- the **nights corpus** (`tests/fixtures/corpus-nights/`, `night_sessions()`): a new user's first weeks over
  four repositories (the fourth, `shop`, for the two kinds of `NEW_FAMILIES`), eight kinds of fourteen
  sessions each, recorded round by round so each kind's sessions are in time order. The role of each index
  (`NIGHT_ROLES`) puts a correction in every prefix of four or more sessions and in about 30% of them,
  failures (the work fails the project's check and the user gives up or just stops) in about 18%, plain
  successes in the rest. `NIGHT_SPLIT` splits the **kinds**: the four `tune` kinds may be used by anything
  tuned or tested end to end on this corpus, the four `heldout` kinds only measure the benchmarks' figures
  and must never be used to choose a setting.

Every session is a person at work: a request, the agent doing it a plausible way (and running the check the
project has), a correction that states a rule the agent got wrong (eight languages, one per kind), then a
follow-up, a question about the result or an acknowledgement. Half of the sessions are headless
(`claude -p` / `codex exec`, continued with `--resume` / `exec resume`), half typed into the TUI.

Each repository is clean but for the file the work touches, so the check the agent runs passes once the work
is done the way the user asked (the next step, learning skills from these sessions, relies on that).

The family (kind) of each session, its rule and its check are written to `labels.json` beside the
transcripts, and for the nights corpus each session's index in its kind and its role: the benchmarks and the
tests read it, mining never does.
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

CHECK_CONFIG_PY = '''"""Every config/*.toml parses and names its service."""
import pathlib
import sys
import tomllib

bad = []
for path in sorted(pathlib.Path("config").glob("*.toml")):
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        bad.append(f"{path}: {exc}")
        continue
    if not data.get("service", {}).get("name"):
        bad.append(f"{path}: [service] needs a name")
print("\\n".join(bad) or "config ok")
sys.exit(1 if bad else 0)
'''

CHECK_SQL_PY = '''"""Every report in reports/ runs against the schema and its sample rows."""
import pathlib
import sqlite3
import sys

db = sqlite3.connect(":memory:")
db.executescript(pathlib.Path("db/schema.sql").read_text())
bad = []
for path in sorted(pathlib.Path("reports").glob("*.sql")):
    try:
        rows = db.execute(path.read_text()).fetchall()
    except sqlite3.Error as exc:
        bad.append(f"{path}: {exc}")
        continue
    print(f"{path}: {len(rows)} rows")
print("\\n".join(bad) or "reports ok")
sys.exit(1 if bad else 0)
'''

SHOP_SCHEMA_SQL = """CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL, created TEXT);
INSERT INTO orders VALUES (1, 'ada', 12.5, '2024-01-02'), (2, 'bob', 4.0, '2024-01-02'),
    (3, 'ada', 7.25, '2024-01-03');
"""

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
    # The nights corpus' fourth repository: a small back office with service configs and SQL reports.
    "shop": {
        "config/api.toml": '[service]\nname = "api"\nport = 8080\n',
        "config/worker.toml": '[service]\nname = "worker"\n',
        "db/schema.sql": SHOP_SCHEMA_SQL,
        "reports/orders.sql": "SELECT id, customer, amount FROM orders;\n",
        "tools/check_config.py": CHECK_CONFIG_PY,
        "tools/check_sql.py": CHECK_SQL_PY,
        "README.md": "# shop\n\nChecks: `python3 tools/check_config.py`, `python3 tools/check_sql.py`.\n",
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
    # Requests for the same kind of work, worded differently: the mining corpus uses the first eight, the
    # nights corpus all fourteen.
    prompts: tuple[str, ...]
    work_file: str
    first_try: str  # what the agent writes first (breaks the rule)
    after_correction: str  # what it writes once corrected
    follow_ups: tuple[str, ...] = ()
    broken: str = ""  # work that fails the project's check: the nights corpus' failure sessions


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
            "the linter flags trailing spaces in app/dates.py, clean them",
            "fix what make lint reports before I push",
            "los de lint-fouten in app/dates.py op",
            "the style check fails on the app code; repair it",
            "my last change broke the lint job, sort it out",
            "please get the app package through make lint",
        ),
        work_file="app/dates.py",
        first_try="import datetime\n\ndef parse(s):  # noqa\n    return datetime.date.fromisoformat(s)\n",
        after_correction="import datetime\n\ndef parse(s):\n    return datetime.date.fromisoformat(s)\n",
        follow_ups=("also fix the same thing in app/models.py", "run make lint once more"),
        broken='import datetime\n\ndef parse(s):\n    """Parse an ISO date such as 2024-01-31 into a datetime.date; anything else raises a ValueError."""\n'
        "    return datetime.date.fromisoformat(s)\n",
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
            "add the missing annotations so check_types passes",
            "type the parse function in app/dates.py",
            "mets des types sur les fonctions de app/models.py",
            "fully annotate the app package",
            "the annotation check is red, fix it",
            "write type hints for the views",
        ),
        work_file="app/dates.py",
        first_try="import datetime\nfrom typing import Any\n\ndef parse(s: Any) -> Any:\n"
        "    return datetime.date.fromisoformat(s)\n",
        after_correction="import datetime\n\ndef parse(s: str) -> datetime.date:\n"
        "    return datetime.date.fromisoformat(s)\n",
        follow_ups=("do the same for app/models.py", "and run the check again"),
        broken="import datetime\n\ndef parse(s: str):\n    return datetime.date.fromisoformat(s)\n",
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
            "log how many rows load() returns",
            "the export job is silent; make it tell me what it did",
            "给 load.py 加一些输出",
            "add a message with the row count after normalizing",
            "I want to see progress when exporting",
            "make the etl jobs report what they are doing",
        ),
        work_file="etl/export.py",
        first_try="def export(rows, path):\n    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n"
        "    print('wrote', len(rows), 'rows')\n",
        after_correction="import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef export(rows, path):\n"
        "    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n"
        "    log.info('wrote %d rows', len(rows))\n",
        follow_ups=("use INFO level for it", "also in load.py"),
        broken="def export(rows, path):\n    with open(path, 'w') as f:\n        f.write('\\n'.join(rows))\n"
        "    print(f'{len(rows)} rows written to {path}')\n",
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
            "add tests for normalize with tabs and newlines",
            "write a test module for etl/normalize.py",
            "cria testes para o export",
            "we need pytest coverage for the loader",
            "add a regression test for normalize lowercasing",
            "test that export writes every row",
        ),
        work_file="tests/test_normalize.py",
        first_try="import unittest\n\nfrom etl.normalize import normalize\n\n\nclass T(unittest.TestCase):\n"
        "    def test_spaces(self):\n        self.assertEqual(normalize(' A  b '), 'a b')\n",
        after_correction="import pytest\n\nfrom etl.normalize import normalize\n\n\n@pytest.fixture\n"
        "def messy():\n    return ' A  b '\n\n\ndef test_spaces(messy):\n    assert normalize(messy) == 'a b'\n",
        follow_ups=("add one for an empty string too", "run them again"),
        broken="from etl.normalize import normalize\n\n\ndef test_spaces():\n    assert normalize(' A  b ') == 'A b'\n",
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
            "fix the trailing spaces in the docs",
            "the handbook markdown check fails; fix it",
            "arregla el markdown de docs/oncall.md",
            "make docs/onboarding.md pass the markdown linter",
            "clean up the markdown of the on-call page",
            "docs-lint is red again, please sort it",
        ),
        work_file="docs/oncall.md",
        first_try="# On call\n\nPage the secondary after 15 minutes if the primary has not acknowledged the page, "
        "and write it down in the incident channel.\n",
        after_correction="# On call\n\nPage the secondary after 15 minutes if the primary has not\n"
        "acknowledged the page, and write it down in the incident channel.\n",
        follow_ups=("also check docs/deploy.md", "run make docs-lint again"),
        broken="# On call\n\nPage the secondary after 15 minutes.  \nEscalate to the lead after 30 minutes.  \n",
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
            "add the on-call fixes to the changelog",
            "write the changelog for version 1.5.0",
            "schreib einen Changelog-Eintrag für die Onboarding-Seite",
            "add today's release to CHANGELOG.md",
            "log the deploy guide update in the changelog",
            "changelog entry please: new escalation rules",
        ),
        work_file="CHANGELOG.md",
        first_try="# Changelog\n\n## 1.3.0\n\n- Added the on-call page.\n\n## 1.4.0\n\n- New deploy guide.\n",
        after_correction="# Changelog\n\n## 1.4.0\n\n- New deploy guide.\n\n## 1.3.0\n\n- Added the on-call page.\n",
        follow_ups=("mention the date too", "also bump the version in the heading"),
        broken="# Changelog\n\n### 1.4.0\n\n- New deploy guide.\n\n### 1.3.0\n\n- Added the on-call page.\n",
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
    index: int | None = None  # the nights corpus: the session's place among its kind's, in time order
    role: str | None = None  # the nights corpus: plain | corrected | failure | one-off


def _tool_for(i: int) -> str:
    return "codex" if i in (1, 3, 6) else "claude-code"


def _mode_for(i: int) -> str:
    return "headless" if (i // 2) % 2 == 0 else "interactive"


def sessions() -> list[SessionSpec]:
    """Every session of the corpus, in recording order; deterministic."""
    out: list[SessionSpec] = []
    for fi, fam in enumerate(FAMILIES):
        for i, prompt in enumerate(fam.prompts[:SESSIONS_PER_FAMILY]):
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
    return next(f for f in NIGHT_FAMILIES if f.id == fid)


# ------------------------------------------------------------------------------------------- the nights corpus

NEW_FAMILIES: tuple[FamilySpec, ...] = (
    FamilySpec(
        id="config",
        repo="shop",
        check="python3 tools/check_config.py",
        rule="non usare camelCase nelle chiavi, scrivile in snake_case",
        rule_language="it",
        prompts=(
            "add retry settings to the worker config",
            "the worker should retry failed jobs three times; put that in config/worker.toml",
            "aggiungi un ritardo tra i tentativi nella configurazione del worker",
            "set a retry delay of 10 seconds for the worker",
            "configure how many times the worker retries",
            "put the worker's retry options into its toml file",
            "we need max retries in the worker service config",
            "imposta i tentativi del worker a 3",
            "add a backoff setting for the worker in config/",
            "make the worker config say how long to wait between retries",
            "update config/worker.toml with the retry policy",
            "the ops team wants retry settings for the worker, add them",
            "give the worker service a retry count and a delay",
            "write the worker's retry configuration",
        ),
        work_file="config/worker.toml",
        first_try='[service]\nname = "worker"\nmaxRetries = 3\nretryDelaySeconds = 10\n',
        after_correction='[service]\nname = "worker"\nmax_retries = 3\nretry_delay_seconds = 10\n',
        follow_ups=("also add them to config/api.toml", "run the config check again"),
        broken='[service]\nname = "worker"\nmax_retries = 3\nretry_delay = 10s\n',
    ),
    FamilySpec(
        id="sql",
        repo="shop",
        check="python3 tools/check_sql.py",
        rule="SELECT * じゃなくて、使う列を名前で書いてください",
        rule_language="ja",
        prompts=(
            "fix the orders report, it fails",
            "the orders query should only list orders over 5",
            "注文レポートを直して",
            "update reports/orders.sql so the check passes",
            "make the orders report sorted by date",
            "check_sql fails on the orders report; repair it",
            "rewrite the orders query for the new schema",
            "注文の SQL を新しいスキーマに合わせて",
            "the report of big orders is broken, please fix it",
            "change orders.sql to show orders above five euros",
            "get tools/check_sql.py green",
            "adapt the orders report to the renamed total column",
            "the finance team needs the orders report working again",
            "list the large orders in reports/orders.sql",
        ),
        work_file="reports/orders.sql",
        first_try="SELECT * FROM orders WHERE total > 5 ORDER BY created;\n",
        after_correction="SELECT id, customer, total, created FROM orders WHERE total > 5 ORDER BY created;\n",
        follow_ups=("also order it by customer", "run check_sql again"),
        broken="SELECT id, customer, amount FROM orders WHERE amount > 5 ORDER BY created;\n",
    ),
)
NIGHT_FAMILIES: tuple[FamilySpec, ...] = FAMILIES + NEW_FAMILIES

NIGHT_SESSIONS_PER_KIND = 14
# The role of the session at each index of its kind (the same for every kind; index 11 alternates, see
# `night_role`): the first correction at index 1 and one in every four sessions after it, so every prefix of
# four or more sessions, and every run of four in a row, holds a correction; two or three failures.
NIGHT_ROLES: tuple[str, ...] = (
    "plain", "corrected", "plain", "failure", "plain", "corrected", "plain",
    "plain", "failure", "corrected", "plain", "failure", "plain", "corrected",
)  # fmt: skip
# Half the kinds are for tuning anything measured on this corpus (an end-to-end test may use them), half
# are held out and only measure the benchmark's figures. Each half has a kind in every repository, and
# every rule's language is in one half only.
NIGHT_SPLIT: dict[str, str] = {
    "lint": "tune",
    "logging": "tune",
    "changelog": "tune",
    "config": "tune",
    "types": "heldout",
    "tests": "heldout",
    "mdlint": "heldout",
    "sql": "heldout",
}
# Sub-agent sessions (kind, index): Claude Code's only.
NIGHT_SUBAGENTS = {("lint", 6), ("tests", 4), ("sql", 8)}
NIGHT_ACKS = (
    "thanks, that's it",
    "perfetto, grazie",
    "ありがとう",
    "lgtm",
    "super, danke",
    "ok, commit it",
    "top, bedankt",
    "great, merci",
    "好的，谢谢",
    "perfeito, obrigado",
)
NIGHT_QUESTIONS = (
    "show me the diff",
    "what did you change?",
    "为什么要这样改？",
    "¿qué archivos cambiaste?",
    "何を変えたの？",
)
# What a user says when the work still fails and they stop for now (failure sessions).
GIVE_UPS = ("leave it failing for now", "lass es so", "先这样", "let's stop here", "lasciamo perdere per ora")
RETRIES = ("try again", "still red, can you try once more?")
NIGHT_ONE_OFFS: tuple[tuple[str, str], ...] = (
    ("webapp", "what does the date parsing regex in this repo do?"),
    ("etl", "explain the difference between a process and a thread"),
    ("handbook", "draw an ascii diagram of how the docs are organised"),
    ("shop", "which tables does the schema define?"),
    ("webapp", "how many lines of python are in this repo"),
    ("etl", "rename the project in the README to Falcon"),
    ("handbook", "list the largest files here"),
    ("shop", "wat doet de worker eigenlijk?"),
)
# After which round (index) each one-off is recorded.
_ONE_OFF_AFTER = (0, 2, 4, 6, 8, 10, 12, 13)


def night_role(kind_index: int, i: int) -> str:
    """The role of session `i` of the kind at `kind_index` in NIGHT_FAMILIES: `NIGHT_ROLES[i]`, except that
    index 11 is a failure in every other kind only (2.5 failures in 14 on average, 18%)."""
    role = NIGHT_ROLES[i]
    return "plain" if i == 11 and kind_index % 2 == 0 else role


def _night_tool(kind_index: int, i: int) -> str:
    return "codex" if (i + kind_index) % 3 == 0 else "claude-code"


def _night_mode(kind_index: int, i: int) -> str:
    return "interactive" if (i // 2 + kind_index) % 2 == 1 else "headless"


def _night_turns(fam: FamilySpec, k: int, i: int, role: str) -> list[Turn]:
    turns = [Turn(fam.prompts[i], "task")]
    if role == "failure":
        # The user asks again or not, then gives up or just stops: never a correction.
        if i % 2 == 1:
            turns.append(Turn(RETRIES[(k + i) % len(RETRIES)], "followup"))
        if (k + i) % 3 != 0:
            turns.append(Turn(GIVE_UPS[(k + i) % len(GIVE_UPS)], "ack"))
        return turns
    if role == "corrected":
        turns.append(Turn(fam.rule, "correction"))
    if (i + k) % 3 == 0:
        turns.append(Turn(fam.follow_ups[(i // 3) % len(fam.follow_ups)], "followup"))
    elif (i + k) % 3 == 1:
        turns.append(Turn(NIGHT_QUESTIONS[(k + i) % len(NIGHT_QUESTIONS)], "question"))
    if (i + 2 * k) % 4 != 3:  # some users just move on
        turns.append(Turn(NIGHT_ACKS[(k * 3 + i) % len(NIGHT_ACKS)], "ack"))
    return turns


def night_sessions() -> list[SessionSpec]:
    """Every session of the nights corpus, in recording order (so in the order of their timestamps): round
    by round, session i of every kind, then now and then a one-off; deterministic."""
    out: list[SessionSpec] = []
    for i in range(NIGHT_SESSIONS_PER_KIND):
        for k, fam in enumerate(NIGHT_FAMILIES):
            role = night_role(k, i)
            subagent = (fam.id, i) in NIGHT_SUBAGENTS
            out.append(
                SessionSpec(
                    key=f"{fam.id}-{i:02d}",
                    family=fam.id,
                    repo=fam.repo,
                    tool="claude-code" if subagent else _night_tool(k, i),
                    mode=_night_mode(k, i),
                    split=NIGHT_SPLIT[fam.id],
                    turns=_night_turns(fam, k, i, role),
                    subagent=subagent,
                    index=i,
                    role=role,
                )
            )
        for j, (repo, prompt) in enumerate(NIGHT_ONE_OFFS):
            if _ONE_OFF_AFTER[j] != i:
                continue
            turns = [Turn(prompt, "task")]
            if j % 2 == 0:
                turns.append(Turn(NIGHT_ACKS[j % len(NIGHT_ACKS)], "ack"))
            out.append(
                SessionSpec(
                    key=f"oneoff-{j}",
                    family=None,
                    repo=repo,
                    tool=_night_tool(j, 1),
                    mode=_night_mode(j, 0),
                    split="tune" if j % 2 == 0 else "heldout",
                    turns=turns,
                    role="one-off",
                )
            )
    return out


# ------------------------------------------------------------------------------------------- the scope corpus

# The scope corpus' fourth repository: a small static site whose changelog runs oldest first, the opposite of
# the handbook's, with a Python linter behind `make lint` like the webapp's.
SITE_BUILD_PY = "import pathlib\n\ndef pages(src):    \n    return sorted(pathlib.Path(src).glob('*.md'))\n"
HANDBOOK_TOC_PY = "def toc(lines):    \n    return [line for line in lines if line.startswith('#')]\n"
SCOPE_REPOS: dict[str, dict[str, str]] = {
    "webapp": REPOS["webapp"],
    "etl": REPOS["etl"],
    # The handbook of the other corpora, with a Python linter for its scripts as well.
    "handbook": {
        **REPOS["handbook"],
        "Makefile": "docs-lint:\n\tpython3 tools/mdlint.py docs\n\nlint:\n\tpython3 tools/lint.py scripts\n",
        "tools/lint.py": LINT_PY,
        "scripts/toc.py": HANDBOOK_TOC_PY,
    },
    "site": {
        "Makefile": "lint:\n\tpython3 tools/lint.py scripts\n",
        "tools/lint.py": LINT_PY,
        "scripts/check_changelog.py": CHECK_CHANGELOG_PY,
        "scripts/build.py": SITE_BUILD_PY,
        "pages/index.md": "# Welcome\n\nOur product, in one page.\n",
        "CHANGELOG.md": "# Changelog\n\n## 0.9.0\n\n- First public pages.\n",
        "README.md": "# site\n\nChecks: `make lint`, `python3 scripts/check_changelog.py`.\n",
    },
}

SCOPE_NEW_FAMILIES: tuple[FamilySpec, ...] = (
    # The handbook's changelog kind (`changelog`) puts new entries at the top; here they go at the end.
    FamilySpec(
        id="changelog-site",
        repo="site",
        check="python3 scripts/check_changelog.py",
        rule="no, append new entries at the end, oldest first",
        rule_language="en",
        prompts=(
            "add a changelog entry for the new pricing page",
            "note the new contact form in the site's CHANGELOG.md",
            "write the site's release notes for 0.10.0",
            "update the site changelog with this week's page fixes",
            "we need a CHANGELOG line for the pricing page",
            "record the 0.10.1 release of the site in the changelog",
            "añade al changelog la nueva página de precios",
        ),
        work_file="CHANGELOG.md",
        first_try="# Changelog\n\n## 0.10.0\n\n- New pricing page.\n\n## 0.9.0\n\n- First public pages.\n",
        after_correction="# Changelog\n\n## 0.9.0\n\n- First public pages.\n\n## 0.10.0\n\n- New pricing page.\n",
        follow_ups=("mention the release date too", "also bump the version in the site heading"),
    ),
    # The webapp's lint rule (`lint`), given alike in two more repositories, in two more languages.
    FamilySpec(
        id="lint-site",
        repo="site",
        check="make lint",
        rule="sin noqa, arregla el código",
        rule_language="es",
        prompts=(
            "make lint is failing on the site scripts, please fix",
            "fix the lint warnings in build.py",
            "make lint flags scripts/build.py, please fix the lint there",
            "get the site's make lint green again",
            "tidy up what make lint reports in build.py",
            "lint is red on CI for the site scripts; fix it",
            "arregla los errores de lint en scripts/build.py",
        ),
        work_file="scripts/build.py",
        first_try="import pathlib\n\ndef pages(src):  # noqa\n    return sorted(pathlib.Path(src).glob('*.md'))\n",
        after_correction="import pathlib\n\ndef pages(src):\n    return sorted(pathlib.Path(src).glob('*.md'))\n",
        follow_ups=("also lint the changelog script", "run the site's make lint once more"),
    ),
    FamilySpec(
        id="lint-handbook",
        repo="handbook",
        check="make lint",
        rule="non usare noqa, sistema il codice",
        rule_language="it",
        prompts=(
            "make lint is failing in the handbook scripts, please fix",
            "fix the lint warnings in toc.py",
            "please fix make lint for scripts/toc.py",
            "get the handbook's make lint green again",
            "the lint job flags trailing spaces in toc.py, clean them",
            "lint is red on CI for the handbook scripts; fix it",
            "sistema gli errori di lint in scripts/toc.py",
        ),
        work_file="scripts/toc.py",
        first_try="def toc(lines):  # noqa\n    return [line for line in lines if line.startswith('#')]\n",
        after_correction="def toc(lines):\n    return [line for line in lines if line.startswith('#')]\n",
        follow_ups=("check the other handbook scripts too", "run the handbook's make lint once more"),
    ),
)

# The kinds of the scope corpus, with the number of sessions of each and the role of each index: the two
# changelog conventions (top in the handbook, end in the site), the lint rule in three repositories, and the
# etl's test writing, which the agent gets right without being told (plain sessions only: the user states no
# rule there), so the other repositories' work a user-scope rule is checked against passes without it.
_RULED = ("corrected", "plain", "corrected", "plain", "corrected", "plain", "corrected")
SCOPE_KINDS: dict[str, tuple[str, ...]] = {
    "changelog": _RULED,
    "changelog-site": _RULED,
    "lint": _RULED,
    "lint-site": _RULED,
    "lint-handbook": _RULED,
    "tests": ("plain",) * 10,
}
# Kinds whose corrections are one rule in different words (the user's, in three repositories): an agent that
# reads any of them knows the rule.
SCOPE_SAME_RULE: tuple[tuple[str, ...], ...] = (("lint", "lint-site", "lint-handbook"),)
# A session's split: the first SCOPE_TUNE of each kind may be looked at while building anything measured on
# this corpus; the rest are held out and only measure.
SCOPE_TUNE = 3


def scope_family(fid: str) -> FamilySpec:
    return next(f for f in NIGHT_FAMILIES + SCOPE_NEW_FAMILIES if f.id == fid)


def scope_sessions() -> list[SessionSpec]:
    """Every session of the scope corpus, in recording order: round by round (session i of every kind), as
    the nights corpus, so each kind's sessions are in time order; deterministic. Corrections in four
    languages (German and English for the changelog's two conventions; English, Spanish and Italian for the
    one lint rule), both tools and both modes in every kind."""
    out: list[SessionSpec] = []
    for i in range(max(len(roles) for roles in SCOPE_KINDS.values())):
        for k, (fid, roles) in enumerate(SCOPE_KINDS.items()):
            if i >= len(roles):
                continue
            fam = scope_family(fid)
            out.append(
                SessionSpec(
                    key=f"{fid}-{i:02d}",
                    family=fid,
                    repo=fam.repo,
                    tool=_night_tool(k, i),
                    mode=_night_mode(k, i),
                    split="tune" if i < SCOPE_TUNE else "heldout",
                    turns=_night_turns(fam, k, i, roles[i]),
                    index=i,
                    role=roles[i],
                )
            )
    return out

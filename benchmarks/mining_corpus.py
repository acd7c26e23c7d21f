"""A generated corpus of user requests with known task families, for mining quality and speed.

Each family has a few phrasings of the same request with varying details (file names, numbers, issue ids),
the way a person asks for the same kind of work on different days; noise requests are one-offs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FAMILIES: list[list[str]] = [
    [
        "fix the failing unit tests in {f}",
        "the tests in {f} are failing, please fix them",
        "make the failing tests in {f} pass again",
    ],
    [
        "add type hints to {f} and make mypy pass",
        "mypy complains about {f}, add the missing type annotations",
        "annotate the functions in {f} with types so mypy is clean",
    ],
    [
        "bump the version to {n} and update the changelog",
        "release {n}: update the changelog and bump the version",
        "prepare release {n} with a changelog entry and version bump",
    ],
    [
        "write a migration that adds a {c} column to the users table",
        "add a database migration for a new {c} column on users",
        "create an alembic migration adding {c} to users",
    ],
    [
        "rename the function {c} to {d} everywhere",
        "refactor: rename {c} to {d} across the codebase",
        "please rename {c} into {d} in all modules",
    ],
    [
        "update the dockerfile to use python {n}",
        "switch the docker image to python {n}",
        "change our Dockerfile base image to python {n}",
    ],
    [
        "add a github actions workflow that runs the linter",
        "set up CI with github actions running ruff lint",
        "create a github workflow to lint the code on every push",
    ],
    [
        "translate the error messages in {f} to german",
        "localize the error strings in {f} into german",
        "make the error messages of {f} german translations",
    ],
    [
        "add pagination to the {c} api endpoint",
        "the {c} endpoint needs pagination with limit and offset",
        "implement limit/offset pagination for the {c} api",
    ],
    [
        "write a readme section explaining how to configure {c}",
        "document the {c} configuration in the README",
        "add docs to the readme about configuring {c}",
    ],
]
NOISE = [
    "what does this regex do",
    "explain the difference between a process and a thread",
    "draw an ascii diagram of the architecture",
    "summarize yesterday's commits",
    "why is my laptop fan loud",
    "convert this csv to json",
    "find a good name for the project",
    "how many lines of code are in the repo",
    "list the largest files",
    "what time zone is the server in",
]
FILES = ["parser.py", "api/views.py", "utils.py", "models/user.py", "cli.py", "store.py", "auth.py"]
WORDS = [
    "email",
    "avatar",
    "last_login",
    "orders",
    "invoices",
    "settings",
    "fetch_data",
    "load_items",
    "timezone",
]


@dataclass
class Request:
    family: int  # -1 for noise
    prompt: str
    session: str


def generate(
    n_sessions: int, seed: int = 0, n_families: int | None = None, noise_rate: float = 0.2
) -> list[Request]:
    rng = random.Random(seed)
    fams = FAMILIES[: n_families or len(FAMILIES)]
    out: list[Request] = []
    for s in range(n_sessions):
        for _ in range(rng.choice([1, 1, 2, 3])):
            if rng.random() < noise_rate:
                base = rng.choice(NOISE)
                out.append(Request(-1, f"{base} {rng.randint(1, 10**6)}", f"s{s}"))
                continue
            fam = rng.randrange(len(fams))
            template = rng.choice(fams[fam])
            prompt = template.format(
                f=rng.choice(FILES),
                n=f"{rng.randint(1, 4)}.{rng.randint(0, 20)}",
                c=rng.choice(WORDS),
                d=rng.choice(WORDS) + "_v2",
            )
            out.append(Request(fam, prompt, f"s{s}"))
    return out

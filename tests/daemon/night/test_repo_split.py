"""A kind of work done in two repositories whose users corrected it differently is two families, one per
repository: opposite conventions averaged into one rule would serve neither. Corrected alike, it stays one
family, so the user's rule can be proposed for user scope."""

from __future__ import annotations

import subprocess
from pathlib import Path

from skillopt_daemon.night.mining.attempts import Attempt, CommandRun
from skillopt_daemon.night.mining.mine import build_families

GIT_ARGS = ["-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "commit.gpgsign=false"]


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "README.md").write_text("demo\n")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", *GIT_ARGS, "-C", str(path), "commit", "-qm", "init"], check=True)
    return path.resolve()


def _attempt(i: int, repo: Path, correction: str | None = None) -> Attempt:
    a = Attempt(
        key=f"claude-code:s{i}:u{i}",
        tool="claude-code",
        session_id=f"s{i}",
        prompt=f"fix the failing unit tests in module{i}.py",
        started_at=f"2026-11-{i % 28 + 1:02d}T00:00:00.000Z",
        commands=[CommandRun("pytest -q", 1), CommandRun("pytest -q", 0)],
        project_path=str(repo),
    )
    if correction:
        a.corrections.append(correction)
    return a


def test_corrections_in_two_repositories_split_the_family_and_the_larger_part_keeps_its_id(
    tmp_path: Path,
) -> None:
    app, lib = git_repo(tmp_path / "app"), git_repo(tmp_path / "lib")
    attempts = [_attempt(i, app, "no, use tabs" if i == 0 else None) for i in range(5)]
    attempts += [_attempt(10 + i, lib, "no, use spaces" if i == 0 else None) for i in range(3)]
    previous = {a.key: "fam-old" for a in attempts}
    families = build_families(attempts, seed=1, previous_ids=previous)
    assert len(families) == 2, [f.projects for f in families]
    by_repo = {tuple(f.projects): f for f in families}
    assert set(by_repo) == {(str(app),), (str(lib),)}
    assert by_repo[(str(app),)].id == "fam-old"  # the larger part keeps the family's id
    assert by_repo[(str(lib),)].id != "fam-old"
    assert by_repo[(str(app),)].rubric == ["use tabs"]
    assert by_repo[(str(lib),)].rubric == ["use spaces"]


def test_a_family_across_repositories_with_corrections_in_one_stays_whole(tmp_path: Path) -> None:
    app, lib = git_repo(tmp_path / "app"), git_repo(tmp_path / "lib")
    attempts = [_attempt(i, app, "no, use tabs" if i == 0 else None) for i in range(4)]
    attempts += [_attempt(10 + i, lib) for i in range(3)]
    families = build_families(attempts, seed=1)
    assert [sorted(f.projects) for f in families] == [sorted([str(app), str(lib)])]
    # And with no correction at all.
    plain = [_attempt(i, app) for i in range(4)] + [_attempt(10 + i, lib) for i in range(3)]
    assert len(build_families(plain, seed=1)) == 1


def test_worktrees_of_one_repository_are_not_split(tmp_path: Path) -> None:
    app = git_repo(tmp_path / "app")
    tree = tmp_path / "app-feature"
    subprocess.run(["git", "-C", str(app), "worktree", "add", "-q", str(tree)], check=True)
    attempts = [_attempt(i, app, "no, use tabs" if i == 0 else None) for i in range(3)]
    attempts += [_attempt(10 + i, tree.resolve(), "no, use tabs" if i == 0 else None) for i in range(3)]
    assert len(build_families(attempts, seed=1)) == 1


def _two_repositories(tmp_path: Path, here: str, there: str) -> tuple[list[Attempt], Path, Path]:
    """Four attempts in one repository and three in another, one correction in each."""
    app, lib = git_repo(tmp_path / "app"), git_repo(tmp_path / "lib")
    attempts = [_attempt(i, app, here if i == 0 else None) for i in range(4)]
    attempts += [_attempt(10 + i, lib, there if i == 0 else None) for i in range(3)]
    return attempts, app, lib


def test_a_rule_corrected_alike_in_two_repositories_stays_one_family(tmp_path: Path) -> None:
    attempts, app, lib = _two_repositories(
        tmp_path, "no noqa, fix the code", "don't add noqa, fix the code instead"
    )
    families = build_families(attempts, seed=1)
    assert [sorted(f.projects) for f in families] == [sorted([str(app), str(lib)])]


def test_opposite_corrections_in_two_repositories_split_the_family(tmp_path: Path) -> None:
    attempts, app, lib = _two_repositories(
        tmp_path, "changelog entries go at the top", "append changelog entries at the end"
    )
    families = build_families(attempts, seed=1)
    assert sorted(tuple(f.projects) for f in families) == sorted([(str(app),), (str(lib),)])


def test_unrelated_corrections_in_two_repositories_split_the_family(tmp_path: Path) -> None:
    attempts, app, lib = _two_repositories(
        tmp_path, "no noqa, fix the code", "changelog entries go at the top"
    )
    families = build_families(attempts, seed=1)
    assert sorted(tuple(f.projects) for f in families) == sorted([(str(app),), (str(lib),)])


def test_a_rule_in_two_languages_is_alike_when_it_names_the_same_things(tmp_path: Path) -> None:
    attempts, app, lib = _two_repositories(
        tmp_path, "no noqa, fix the code", "n'ajoute pas de noqa, corrige le code"
    )
    assert [sorted(f.projects) for f in build_families(attempts, seed=1)] == [sorted([str(app), str(lib)])]
    # The limit: a translation that shares no word with the original is not recognised as alike, and the
    # family splits (each repository keeps its own evidence).
    attempts, app, lib = _two_repositories(
        tmp_path / "t", "indent with tabs", "indenter avec des tabulations"
    )
    assert len(build_families(attempts, seed=1)) == 2

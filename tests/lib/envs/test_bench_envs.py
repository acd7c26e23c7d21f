"""The built-in benchmarks on their shipped samples, driven through the real OpenAI SDK backend against the
scripted model server: loading, splits, seed skills, scoring of right and wrong answers, and the errors a
user sees without data."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import CHAT_ENVS, answer_rule, scripted_chat

from skillopt_lib.envs import BUILTIN_ENVS, load_env
from skillopt_lib.envs.base import Environment, Item
from skillopt_lib.envs.bench import MANIFEST_FILE, split_manifest
from skillopt_lib.envs.livemath import LABELS
from skillopt_lib.errors import ConfigError


def all_items(env: Any) -> list[Item]:
    sp = env.splits()
    return [*sp.train, *sp.val, *sp.test]


@pytest.mark.parametrize("name", [*CHAT_ENVS, "coding"])
def test_sample_loads_with_disjoint_deterministic_splits_and_a_valid_seed_skill(name: str) -> None:
    assert name in BUILTIN_ENVS
    env = load_env(name, sample=True)
    assert isinstance(env, Environment)
    sp = env.splits()
    ids = [[i.id for i in part] for part in (sp.train, sp.val, sp.test)]
    assert all(ids), f"{name}: every split of the sample has items"
    flat = [i for part in ids for i in part]
    assert len(flat) == len(set(flat)), "splits are disjoint"
    manifest = json.loads((env.root / MANIFEST_FILE).read_text())
    assert ids == [manifest["train"], manifest["val"], manifest["test"]], "the shipped manifest decides"
    again = load_env(name, sample=True).splits()
    assert [[i.id for i in p] for p in (again.train, again.val, again.test)] == ids
    skill = env.seed_skill()
    assert skill.validate() == []
    assert skill.name


def test_seeded_split_without_manifest_is_deterministic_and_follows_the_ratio() -> None:
    items = [Item(id=f"q{i}", data={}) for i in range(100)]
    a = split_manifest(items, seed=42)
    b = split_manifest(list(reversed(items)), seed=42)
    assert a == b, "file order does not matter"
    assert [len(a[s]) for s in ("train", "val", "test")] == [20, 10, 70]
    assert split_manifest(items, seed=7) != a
    # appending items moves none of the existing ones between val and test beyond the new shuffle
    assert set(a["train"]) | set(a["val"]) | set(a["test"]) == {i.id for i in items}


@pytest.mark.parametrize("name", CHAT_ENVS)
def test_missing_official_data_explains_where_to_get_it(name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_env(name)
    hint = err.value.hint or ""
    assert "benchmarks" in err.value.message and name in err.value.message
    assert "--data-dir" in hint and "--sample" in hint and "download" in hint
    with pytest.raises(ConfigError) as err2:
        load_env(name, data_dir=tmp_path / "empty")
    assert str(tmp_path / "empty") in err2.value.message


def test_searchqa_scores_exact_match_and_f1_and_hides_the_gold_answer() -> None:
    env = load_env("searchqa", sample=True)
    items = all_items(env)
    right, partial, wrong = items[0], items[1], items[2]
    rules = [
        answer_rule(
            "right", right.data["question"], f"The snippets say so.\nAnswer: {right.gold['answers'][0]}"
        ),
        answer_rule("partial", partial.data["question"], f"Answer: {partial.gold['answers'][0]} city"),
        answer_rule("wrong", wrong.data["question"], "Answer: Atlantis"),
    ]
    skill = env.seed_skill()
    with scripted_chat(rules) as (server, agent):
        r1, r2, r3 = (env.run(i, skill, agent) for i in (right, partial, wrong))
        first = server.requests[0].body
    assert (r1.hard, r1.soft) == (1.0, 1.0)
    assert r2.hard == 0.0 and 0.0 < r2.soft < 1.0
    assert (r3.hard, r3.soft) == (0.0, 0.0) and r3.answer == "Atlantis"
    assert r1.usage.calls == 1 and r1.usage.input_tokens > 0
    assert "Partly right" in r2.feedback
    assert all(g.lower() not in r3.feedback.lower() for g in wrong.gold["answers"])
    # the model saw the skill as the system prompt and the snippets in the question
    system = first["messages"][0]
    assert system["role"] == "system" and "Answering clues from search snippets" in system["content"]
    assert right.data["context"][0] in first["messages"][1]["content"]


def test_livemath_shuffles_choices_per_item_with_the_seed_and_scores_the_label() -> None:
    a = {i.id: i for i in all_items(load_env("livemath", sample=True, seed=42))}
    b = {i.id: i for i in all_items(load_env("livemath", sample=True, seed=42))}
    c = {i.id: i for i in all_items(load_env("livemath", sample=True, seed=1))}
    assert all(a[k].data["choices"] == b[k].data["choices"] for k in a)
    assert any(a[k].data["choices"] != c[k].data["choices"] for k in a)
    # the gold label points at the same (correct) statement whatever the order
    raw = {
        json.loads(line)["id"]: json.loads(line)
        for line in (load_env("livemath", sample=True).root / "livemath.jsonl").read_text().splitlines()
    }
    for k, item in a.items():
        correct_text = raw[k]["choices"]["ABCDE".index(raw[k]["correct_choice"])]
        assert item.data["choices"]["ABCDE".index(item.gold["label"])] == correct_text
        assert c[k].data["choices"]["ABCDE".index(c[k].gold["label"])] == correct_text
    # the order is not simply the file order for every item (the shuffle happened)
    assert any(item.gold["label"] != raw[k]["correct_choice"] for k, item in a.items())

    env = load_env("livemath", sample=True)
    item = all_items(env)[0]
    wrong = next(label for label in "ABCDE" if label != item.gold["label"])
    rules = [
        answer_rule("q", item.data["question"], f"Checking quantifiers.\nAnswer: ({item.gold['label']})")
    ]
    with scripted_chat(rules) as (_server, agent):
        good = env.run(item, env.seed_skill(), agent)
    with scripted_chat([answer_rule("q", item.data["question"], f"Answer: {wrong}")]) as (_server, agent):
        bad = env.run(item, env.seed_skill(), agent)
    with scripted_chat([answer_rule("q", item.data["question"], "I cannot tell which one holds.")]) as (
        _server,
        agent,
    ):
        vague = env.run(item, env.seed_skill(), agent)
    assert (good.hard, good.soft) == (1.0, 1.0)
    assert (bad.hard, bad.soft) == (0.0, 0.0)
    assert vague.hard == 0.0 and "names no choice letter (A-E)" in vague.feedback


def test_docvqa_sends_the_page_image_and_scores_anls() -> None:
    env = load_env("docvqa", sample=True)
    items = {i.data["question"]: i for i in all_items(env)}
    q_exact = "What is the invoice number?"
    q_close = "Who signed the letter?"
    rules = [
        answer_rule("exact", q_exact, "Answer: 4471-b"),
        answer_rule("close", q_close, "Answer: Thomas Read"),
    ]
    with scripted_chat(rules) as (server, agent):
        exact = env.run(items[q_exact], env.seed_skill(), agent)
        close = env.run(items[q_close], env.seed_skill(), agent)
        body = server.requests[0].body
    assert (exact.hard, exact.soft) == (1.0, 1.0)  # case does not count
    # "thomas read" vs "thomas reed": one edit in 11 characters
    assert close.hard == 0.0 and close.soft == pytest.approx(1 - 1 / 11)
    parts = body["messages"][1]["content"]
    image = next(p for p in parts if p["type"] == "image_url")
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    png = base64.b64decode(url.split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png == Path(items[q_exact].data["image_path"]).read_bytes()


def test_officeqa_pages_mode_puts_the_source_document_in_the_prompt() -> None:
    env = load_env("officeqa", sample=True)
    item = next(i for i in all_items(env) if i.id == "UID0009")  # 15.4%
    rules = [answer_rule("q", item.data["question"], "32,166 / 208,649 = 15.42%\nAnswer: 15.4 percent")]
    with scripted_chat(rules) as (server, agent):
        result = env.run(item, env.seed_skill(), agent)
        prompt = server.requests[0].body["messages"][1]["content"]
    assert (result.hard, result.soft) == (1.0, 1.0)
    assert "Corporation income taxes | 32,166" in prompt
    assert "Savings Bonds" not in prompt  # only the question's source document


def test_officeqa_search_mode_runs_a_search_loop_over_the_corpus() -> None:
    env = load_env("officeqa", sample=True, context="search", max_searches=2)
    item = next(i for i in all_items(env) if i.id == "UID0006")  # Series E, February 1955: 421
    rules = [
        answer_rule("search", item.data["question"], "Search: savings bonds sales Series E February 1955"),
        answer_rule("answer", "Results for", "The table row for February 1955 shows 421.\nAnswer: 421"),
    ]
    with scripted_chat(rules) as (server, agent):
        result = env.run(item, env.seed_skill(), agent)
        second = server.requests[1].body["messages"]
    assert (result.hard, result.soft) == (1.0, 1.0)
    assert result.usage.calls == 2 and result.details["searches"] == 1
    assert "February 1955 | 421 | 84 | 505" in second[-1]["content"]

    # a model that never stops searching is cut off and scores 0
    endless = [answer_rule("search", "", "Search: bonds")]
    with scripted_chat(endless) as (_server, agent):
        stuck = env.run(item, env.seed_skill(), agent)
    assert stuck.hard == 0.0 and stuck.usage.calls == 3


def test_searchqa_reads_the_official_files_from_a_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "searchqa"
    data.mkdir()
    rows = [
        {"question": f"clue {i}", "answer": f"ans{i}", "search_results": {"snippets": [f"snippet {i}"]}}
        for i in range(6)
    ]
    (data / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:3]) + "\n")
    (data / "val.jsonl").write_text(json.dumps(rows[3]) + "\n")
    (data / "test.json").write_text(json.dumps(rows[4:]))
    env = load_env("searchqa", data_dir=data)
    sp = env.splits()
    assert [len(sp.train), len(sp.val), len(sp.test)] == [3, 1, 2]
    assert sp.train[0].data["context"] == ["snippet 0"] and sp.train[0].gold["answers"] == ["ans0"]
    # the default folder under SKILLOPT_HOME is found without --data-dir
    from skillopt_daemon.core import paths

    default = paths.benchmarks_dir() / "searchqa"
    default.mkdir(parents=True)
    (default / "test.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert load_env("searchqa").root == default.resolve()


def test_a_manifest_naming_unknown_items_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "x.jsonl").write_text(
        json.dumps({"id": "a", "question": "q", "context": [], "answers": ["x"]}) + "\n"
    )
    (data / MANIFEST_FILE).write_text(json.dumps({"train": ["a", "ghost"], "val": [], "test": []}))
    with pytest.raises(ConfigError, match="ghost"):
        load_env("searchqa", data_dir=data).splits()


def test_an_unreachable_model_stops_the_run_instead_of_scoring_zero() -> None:
    from skillopt_lib.errors import SkillOptError

    env = load_env("searchqa", sample=True)
    with scripted_chat([]) as (server, agent):
        pass  # the server is stopped: nothing listens on its port any more
    with pytest.raises(SkillOptError):
        env.run(all_items(env)[0], env.seed_skill(), agent)


def test_docvqa_image_goes_through_the_anthropic_sdk_too() -> None:
    from skillopt_lib.backends import create_backend
    from skillopt_lib.config import BackendConfig
    from skillopt_lib.testing import Script
    from skillopt_lib.testing.scripted_server import ScriptedServer

    env = load_env("docvqa", sample=True)
    item = next(i for i in all_items(env) if i.data["question"] == "What is the invoice number?")
    script = Script(rules=[answer_rule("q", item.data["question"], "Answer: 4471-B")])
    with ScriptedServer(script) as server:
        cfg = BackendConfig(backend="anthropic", model="claude-scripted", base_url=server.url, max_retries=0)
        agent = create_backend(cfg, role="agent")
        result = env.run(item, env.seed_skill(), agent)
        body = server.requests[0].body
    assert (result.hard, result.soft) == (1.0, 1.0)
    blocks = body["messages"][0]["content"]
    image = next(b for b in blocks if b["type"] == "image")
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == Path(item.data["image_path"]).read_bytes()
    assert "Document question answering" in json.dumps(body["system"])


@pytest.mark.parametrize("name", [*CHAT_ENVS, "coding"])
def test_official_layout_in_a_data_dir_without_a_manifest(name: str, tmp_path: Path) -> None:
    """The samples are in the official format: copied elsewhere without their manifest, they load through
    --data-dir with the dataset's own or the seeded split."""
    import shutil

    sample = load_env(name, sample=True)
    data = tmp_path / name
    shutil.copytree(sample.root, data)
    (data / MANIFEST_FILE).unlink()
    if name == "docvqa":  # the official archives unpack the images apart from the question files
        (data / "documents").rename(data / "spdocvqa_images")
    env = load_env(name, data_dir=data)
    assert {i.id for i in all_items(env)} == {i.id for i in all_items(sample)}
    sp = env.splits()
    assert sp.train and sp.test
    if name == "alfworld":  # train / valid_seen / valid_unseen folders
        assert [len(sp.train), len(sp.val), len(sp.test)] == [4, 6, 2]
    if name == "docvqa":
        assert all(Path(i.data["image_path"]).is_file() for i in all_items(env))


def test_searchqa_reads_the_raw_release_one_clue_per_file_with_snippet_objects(tmp_path: Path) -> None:
    data = tmp_path / "raw"
    for split, n in (("train", 2), ("val", 1), ("test", 1)):
        (data / split).mkdir(parents=True)
        for i in range(n):
            record = {
                "category": "WORLD CAPITALS",
                "air_date": "2004-12-31",
                "question": f"'This city on the Danube' ({split} {i})",
                "value": "$200",
                "answer": "Budapest",
                "round": "Jeopardy!",
                "show_number": "4680",
                "search_results": [
                    {
                        "title": "Budapest - Wikipedia",
                        "snippet": f"Budapest lies on the Danube {i}",
                        "url": "u",
                    },
                    {"title": "Only a title", "snippet": None, "url": "v"},
                    {"title": None, "snippet": None},
                ],
            }
            (data / split / f"{split}{i}.json").write_text(json.dumps(record))
    env = load_env("searchqa", data_dir=data)
    sp = env.splits()
    assert [len(sp.train), len(sp.val), len(sp.test)] == [2, 1, 1]
    first = sp.train[0]
    assert first.data["context"] == ["Budapest lies on the Danube 0", "Only a title"]
    assert first.gold["answers"] == ["Budapest"] and first.meta["category"] == "WORLD CAPITALS"


def test_searchqa_refuses_a_load_without_records_and_names_the_file(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "test.json").write_text(json.dumps({"version": 1}))
    with pytest.raises(ConfigError) as err:
        load_env("searchqa", data_dir=data).splits()
    assert str(data / "test.json") in err.value.message and "question" in (err.value.hint or "")
    (data / "test.json").write_text(json.dumps([{"question": "q", "answer": "a"}]))
    with pytest.raises(ConfigError, match="no snippets"):
        load_env("searchqa", data_dir=data).splits()


def test_livemath_reads_the_nested_mcq_shape_and_the_flat_one(tmp_path: Path) -> None:
    data = tmp_path / "lm"
    (data / "2025-06").mkdir(parents=True)
    nested = [
        {
            "month": "2025-06",
            "no": 1,
            "theorem_type": ["inequality"],
            "mcq": {
                "question": "Which bound holds?",
                "choices": [
                    {"label": "A", "text": "bound one"},
                    {"label": "B", "text": "bound two"},
                    {"label": "C", "text": "bound three"},
                ],
                "correct_choice": {"label": "B", "text": "bound two"},
            },
        },
        {
            "month": "2025-06",
            "no": 2,
            "mcq": {
                "question": "Which map is onto?",
                "choices": {"A": "f", "B": "g", "C": "h"},
                "correct_choice": "C",
            },
        },
    ]
    (data / "2025-06" / "qa_2025-06_final.json").write_text(json.dumps(nested))
    flat = {"id": "flat-1", "question": "Flat?", "choices": ["x", "y"], "correct_choice": "A"}
    (data / "flat.jsonl").write_text(json.dumps(flat) + "\n")
    env = load_env("livemath", data_dir=data)
    items = {i.id: i for i in all_items(env)}
    assert set(items) == {"2025-06:1", "2025-06:2", "flat-1"}
    one, two = items["2025-06:1"], items["2025-06:2"]
    assert one.data["question"] == "Which bound holds?"
    assert one.data["choices"][LABELS.index(one.gold["label"])] == "bound two"
    assert two.data["choices"][LABELS.index(two.gold["label"])] == "h"
    assert items["flat-1"].data["choices"][LABELS.index(items["flat-1"].gold["label"])] == "x"
    bad = [{"mcq": {"question": "q", "choices": ["a", "b"], "correct_choice": {"label": "E"}}}]
    (data / "2025-06" / "qa_2025-06_final.json").write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="names none of the choices"):
        load_env("livemath", data_dir=data).splits()

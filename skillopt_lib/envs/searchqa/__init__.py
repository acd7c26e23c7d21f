"""SearchQA: Jeopardy!-style clues answered from retrieved web snippets.

Hard score: SQuAD-normalized exact match against any gold answer. Soft score: SQuAD token F1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.scoring import exact_match, extract_final_answer, token_f1
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

TASK_INTRO = (
    "You answer Jeopardy!-style clues using the search snippets given with each clue. "
    "End your reply with one line of the form `Answer: <answer>` giving only the answer."
)

_SPLIT_ALIASES = {
    "train": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "dev": "val",
    "test": "test",
}


def _split_of(path: Path, root: Path) -> str | None:
    """The split a file's name gives (train.jsonl), else the folder it is in (raw data: train/123.json)."""
    named = _SPLIT_ALIASES.get(path.stem.lower().split(".")[0])
    if named:
        return named
    for folder in reversed(path.relative_to(root).parts[:-1]):
        if folder.lower() in _SPLIT_ALIASES:
            return _SPLIT_ALIASES[folder.lower()]
    return None


def _snippet_text(entry: Any) -> str:
    """One snippet: text, or a raw search result object (its `snippet`, else its `title`)."""
    if isinstance(entry, dict):
        return str(entry.get("snippet") or entry.get("title") or "").strip()
    return str(entry).strip() if entry else ""


def _context_of(record: dict[str, Any]) -> list[str]:
    """The snippets of a record in any of the three shapes: `context` (text or list), the Hugging Face
    `search_results: {snippets: [...]}`, or the raw `search_results: [{snippet, title, url, ...}, ...]`."""
    ctx = record.get("context")
    results = record.get("search_results")
    if ctx is None and isinstance(results, dict):
        ctx = results.get("snippets")
    if ctx is None and isinstance(results, list):
        ctx = results
    if ctx is None:
        ctx = record.get("snippets", [])
    if isinstance(ctx, str):
        return [ctx]
    return [text for text in (_snippet_text(c) for c in ctx) if text]


def _answers_of(record: dict[str, Any]) -> list[str]:
    ans = record.get("answers", record.get("answer"))
    if ans is None:
        return []
    if isinstance(ans, str):
        return [ans]
    return [str(a) for a in ans]


EXPECTED = (
    "records with a question, an answer (answer or answers) and snippets (context, "
    "search_results.snippets, or the raw search_results list of {snippet, title, url} objects)"
)


def load_searchqa(root: Path) -> list[Item]:
    """Read every `*.json` / `*.jsonl` file below `root`: records with `question`, `context` (text or a list
    of snippets) and `answers`; the Hugging Face layout (`search_results.snippets`, `answer`) and the raw
    release (one JSON object per clue with a `search_results` list of snippet objects) also work. A file
    named train / val / dev / validation / test, or a file in a folder of that name, gives its records
    that split. A file without records, or records without snippets, is an error that names the file."""
    items: list[Item] = []
    files = sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl") and p.name != "splits.json")
    for path in files:
        split = _split_of(path, root)
        records = read_json_or_jsonl(path)
        if not records:
            raise ConfigError(f"{path} holds no SearchQA record", hint=f"expected {EXPECTED}")
        for n, rec in enumerate(records):
            if "question" not in rec:
                raise ConfigError(f"{path} record {n} has no 'question'", hint=f"expected {EXPECTED}")
            stem = path.relative_to(root).with_suffix("").as_posix()
            item_id = str(rec.get("id") or rec.get("qid") or f"{stem}-{n}")
            meta: dict[str, Any] = {"source": path.name}
            if split:
                meta["split"] = split
            if rec.get("category"):
                meta["category"] = rec["category"]
            context = _context_of(rec)
            if not any(k in rec for k in ("context", "search_results", "snippets")):
                raise ConfigError(
                    f"{path} record {n} ({item_id}) has no snippets field", hint=f"expected {EXPECTED}"
                )
            items.append(
                Item(
                    id=item_id,
                    data={"question": str(rec["question"]), "context": context},
                    gold={"answers": _answers_of(rec)},
                    meta=meta,
                )
            )
    if not items:
        raise ConfigError(
            f"no SearchQA data files in {root}", hint=f"expected .json/.jsonl files with {EXPECTED}"
        )
    return items


class SearchQAEnv(BenchmarkEnv):
    name = "searchqa"
    download_url = "https://github.com/nyu-dl/dl4ir-searchQA (or the Hugging Face dataset 'search_qa')"
    layout_hint = (
        "train.jsonl, val.jsonl and test.jsonl (or any *.json / *.jsonl) with one record per clue: "
        "question, context (snippets) and answers"
    )
    marker_globs = ("*.jsonl", "*.json", "*/*.json", "*/*.jsonl")

    def load_items(self) -> list[Item]:
        return load_searchqa(self.root)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        max_snippets = int(self.options.get("max_snippets", 20))
        snippets = "\n".join(f"[{i + 1}] {s}" for i, s in enumerate(item.data["context"][:max_snippets]))
        prompt = f"Clue: {item.data['question']}\n\nSearch snippets:\n{snippets}"
        messages = [ChatMessage("user", prompt)]
        resp = ask(agent, skill, TASK_INTRO, messages)
        answer = extract_final_answer(resp.text)
        golds = item.gold["answers"]
        hard = exact_match(answer, golds)
        soft = token_f1(answer, golds)
        if hard:
            feedback = "Correct."
        elif soft > 0:
            feedback = (
                f"Partly right: the answer {answer!r} overlaps the expected one but is not an exact match."
            )
        elif not answer:
            feedback = "No answer line was given."
        else:
            feedback = f"Wrong: {answer!r} is not the answer to this clue."
        return Rollout(
            hard=hard,
            soft=soft,
            answer=answer,
            feedback=feedback,
            trajectory=transcript(messages, resp.text),
            usage=resp.usage,
        )

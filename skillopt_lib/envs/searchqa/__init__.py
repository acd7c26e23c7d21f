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


def _split_of(path: Path) -> str | None:
    return _SPLIT_ALIASES.get(path.stem.lower().split(".")[0])


def _context_of(record: dict[str, Any]) -> list[str]:
    ctx = record.get("context")
    if ctx is None and isinstance(record.get("search_results"), dict):
        ctx = record["search_results"].get("snippets")
    if ctx is None:
        ctx = record.get("snippets", [])
    if isinstance(ctx, str):
        return [ctx]
    return [str(c) for c in ctx if c]


def _answers_of(record: dict[str, Any]) -> list[str]:
    ans = record.get("answers", record.get("answer"))
    if ans is None:
        return []
    if isinstance(ans, str):
        return [ans]
    return [str(a) for a in ans]


def load_searchqa(root: Path) -> list[Item]:
    """Read every `*.json` / `*.jsonl` file in `root`: records with `question`, `context` (text or a list
    of snippets) and `answers`; the Hugging Face layout (`search_results.snippets`, `answer`) also works.
    A file named train / val / dev / validation / test gives its records that split."""
    items: list[Item] = []
    files = sorted(p for p in root.iterdir() if p.suffix in (".json", ".jsonl") and p.name != "splits.json")
    for path in files:
        split = _split_of(path)
        for n, rec in enumerate(read_json_or_jsonl(path)):
            item_id = str(rec.get("id") or rec.get("qid") or f"{path.stem}-{n}")
            meta: dict[str, Any] = {"source": path.name}
            if split:
                meta["split"] = split
            if rec.get("category"):
                meta["category"] = rec["category"]
            items.append(
                Item(
                    id=item_id,
                    data={"question": str(rec["question"]), "context": _context_of(rec)},
                    gold={"answers": _answers_of(rec)},
                    meta=meta,
                )
            )
    return items


class SearchQAEnv(BenchmarkEnv):
    name = "searchqa"
    download_url = "https://github.com/nyu-dl/dl4ir-searchQA (or the Hugging Face dataset 'search_qa')"
    layout_hint = (
        "train.jsonl, val.jsonl and test.jsonl (or any *.json / *.jsonl) with one record per clue: "
        "question, context (snippets) and answers"
    )
    marker_globs = ("*.jsonl", "*.json")

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

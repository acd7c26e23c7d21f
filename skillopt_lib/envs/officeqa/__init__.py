"""OfficeQA: grounded questions over long financial documents (U.S. Treasury Bulletins).

Two ways to give the model the documents (option `context`): `pages` puts the source documents of the
question in the prompt (cut to `max_context_chars`); `search` gives the model a search tool over the whole
corpus, used by writing `Search: <query>` lines, answered with the best-matching passages for up to
`max_searches` rounds. Hard score: the official OfficeQA `score_answer` (`reward.score_answer`; option
`scorer`: `current`, the official file today, or `paper`, the one the technical report was scored with;
`tolerance` is its relative tolerance, 0 by default as there). Soft score: token F1 after number
normalization (this project's).
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage, Usage
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.officeqa.reward import REVISIONS, final_answer, is_direct_answer, score_answer
from skillopt_lib.envs.scoring import extract_final_answer, numeric_token_f1
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

TASK_INTRO_PAGES = (
    "You answer questions about U.S. Treasury Bulletins using the document pages given with the question. "
    "Compute carefully when the question asks for a calculation. End your reply with one line of the form "
    "`Answer: <answer>` giving only the value (with its unit if the question asks for one)."
)
TASK_INTRO_SEARCH = (
    "You answer questions about U.S. Treasury Bulletins. You cannot see the documents; search them by "
    "replying with one or more lines `Search: <keywords>` and nothing else, and you will get the best "
    "matching passages. When you know the answer, end your reply with one line `Answer: <answer>`."
)
DOC_SUFFIXES = (".txt", ".md", ".json")
_SEARCH_LINE = re.compile(r"^\s*search\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_ANSWER_LINE = re.compile(r"^\W*(?:final\s+)?answer\W*:", re.IGNORECASE | re.MULTILINE)


def officeqa_answer(text: str, revision: str = "current") -> str:
    """The answer of a reply: inside `<FINAL_ANSWER>` tags, as the official scorer reads it, else the last
    `Answer:` line (or `<answer>` tags) that this project's prompt asks for (the official scorer would
    take the whole reply)."""
    tagged = final_answer(text, revision)
    return tagged if tagged is not None else extract_final_answer(text)


def _doc_names(value: str) -> list[str]:
    """`source_files` lists one or more document file names (separated by newlines, commas or spaces)."""
    return [Path(part).stem for part in re.split(r"[\s,;]+", value or "") if part.strip()]


def _doc_text(path: Path) -> str:
    if path.suffix != ".json":
        return path.read_text(encoding="utf-8", errors="replace")
    data = json.loads(path.read_text(encoding="utf-8"))
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(data)
    return "\n".join(parts)


def load_officeqa(root: Path) -> tuple[list[Item], dict[str, Path]]:
    """Read `officeqa.csv` (columns uid, question, answer, source_docs, source_files, difficulty; a
    `.jsonl` with the same keys also works) and index the parsed documents below the data folder by stem."""
    questions = sorted(root.glob("*.csv")) or sorted(p for p in root.glob("*.jsonl"))
    if not questions:
        raise ConfigError(f"no officeqa.csv in {root}")
    docs = {
        p.stem: p
        for p in sorted(root.rglob("*"))
        if p.suffix in DOC_SUFFIXES and p.is_file() and p.parent != root and p.name != "splits.json"
    }
    items: list[Item] = []
    for qpath in questions:
        if qpath.suffix == ".csv":
            with qpath.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        else:
            rows = read_json_or_jsonl(qpath)
        for n, row in enumerate(rows):
            uid = str(row.get("uid") or row.get("id") or f"{qpath.stem}-{n}")
            sources = _doc_names(str(row.get("source_files") or ""))
            items.append(
                Item(
                    id=uid,
                    data={"question": str(row["question"]), "source_files": sources},
                    gold={"answers": [str(row["answer"])]},
                    meta={"difficulty": row.get("difficulty", ""), "source_docs": row.get("source_docs", "")},
                )
            )
    return items, docs


class _Corpus:
    """Paragraph-level keyword search: enough to make the search mode a real retrieval problem."""

    def __init__(self, docs: dict[str, Path]) -> None:
        self.passages: list[tuple[str, str, Counter[str]]] = []
        for name, path in sorted(docs.items()):
            for para in re.split(r"\n\s*\n", _doc_text(path)):
                if para.strip():
                    self.passages.append((name, para.strip(), Counter(_WORD.findall(para.lower()))))

    def search(self, query: str, k: int = 3) -> list[tuple[str, str]]:
        terms = set(_WORD.findall(query.lower()))
        scored = [
            (sum(min(c[t], 3) for t in terms), i)
            for i, (_, _, c) in enumerate(self.passages)
            if terms & c.keys()
        ]
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [(self.passages[i][0], self.passages[i][1]) for _, i in scored[:k]]


class OfficeQAEnv(BenchmarkEnv):
    name = "officeqa"
    download_url = (
        "https://github.com/databricks/officeqa (officeqa.csv and the parsed Treasury Bulletins, Git LFS)"
    )
    layout_hint = "officeqa.csv and the parsed bulletin documents (e.g. treasury_bulletins_parsed/) below it"
    marker_globs = ("*.csv", "*.jsonl")

    def __init__(
        self, sample: bool = False, data_dir: str | Path | None = None, seed: int = 42, **options: Any
    ):
        super().__init__(sample=sample, data_dir=data_dir, seed=seed, **options)
        self.mode = str(self.options.get("context", "pages"))
        if self.mode not in ("pages", "search"):
            raise ConfigError(
                f"officeqa context mode {self.mode!r} is unknown", hint="use 'pages' or 'search'"
            )
        self.scorer = str(self.options.get("scorer", "current"))
        if self.scorer not in REVISIONS:
            raise ConfigError(
                f"officeqa scorer {self.scorer!r} is unknown",
                hint="use current (the official reward.py today) or paper (the technical report's)",
            )
        try:
            self.tolerance = float(self.options.get("tolerance", 0.0))
        except (TypeError, ValueError):
            self.tolerance = -1.0
        if not 0 <= self.tolerance <= 1:
            raise ConfigError(
                f"officeqa tolerance {self.options.get('tolerance')!r} is not a relative error",
                hint="give a number from 0 (exact, the default) to 1, e.g. 0.01 for 1%",
            )
        self._docs: dict[str, Path] = {}
        self._corpus: _Corpus | None = None

    def load_items(self) -> list[Item]:
        items, self._docs = load_officeqa(self.root)
        return items

    def _score(self, item: Item, answer: str) -> tuple[float, float, str]:
        golds = item.gold["answers"]
        hard = max((score_answer(g, answer, self.tolerance, self.scorer) for g in golds), default=0.0)
        soft = max(hard, numeric_token_f1(answer, golds))
        if hard:
            return hard, soft, "Correct."
        if not answer:
            return hard, soft, "No answer line was given."
        if not any(is_direct_answer(g, answer, self.scorer) for g in golds):
            return (
                hard,
                soft,
                (
                    f"Not a direct answer: {answer!r} must be only the value asked for, on one line, without "
                    "alternatives, other numbers or markup."
                ),
            )
        return hard, soft, f"Wrong: {answer!r} is not the value the bulletins give for this question."

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        if not self._docs:
            self.load_items()
        if self.mode == "search":
            return self._rollout_search(item, skill, agent)
        limit = int(self.options.get("max_context_chars", 40_000))
        pages = []
        for name in item.data["source_files"]:
            path = self._docs.get(name)
            pages.append(f"=== {name} ===\n{_doc_text(path) if path else '(document not available)'}")
        context = "\n\n".join(pages)[:limit]
        messages = [ChatMessage("user", f"Documents:\n{context}\n\nQuestion: {item.data['question']}")]
        resp = ask(agent, skill, TASK_INTRO_PAGES, messages)
        answer = officeqa_answer(resp.text, self.scorer)
        hard, soft, feedback = self._score(item, answer)
        return Rollout(hard, soft, answer, feedback, transcript(messages, resp.text), resp.usage)

    def _rollout_search(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        if self._corpus is None:
            self._corpus = _Corpus(self._docs)
        max_searches = int(self.options.get("max_searches", 4))
        messages = [ChatMessage("user", f"Question: {item.data['question']}")]
        usage = Usage()
        text = ""
        answered = False
        for turn in range(max_searches + 1):
            resp = ask(agent, skill, TASK_INTRO_SEARCH, messages)
            usage.add(resp.usage)
            text = resp.text
            lowered = text.lower()
            answered = bool(_ANSWER_LINE.search(text) or "<answer>" in lowered or "<final_answer>" in lowered)
            queries = _SEARCH_LINE.findall(text)
            if answered or not queries or turn == max_searches:
                break
            messages.append(ChatMessage("assistant", text))
            results = []
            for q in queries[:3]:
                hits = self._corpus.search(q)
                body = "\n".join(f"[{name}] {para}" for name, para in hits) or "(no match)"
                results.append(f"Results for {q.strip()!r}:\n{body}")
            reminder = "\nThat was your last search: answer now." if turn == max_searches - 1 else ""
            messages.append(ChatMessage("user", "\n\n".join(results) + reminder))
        answer = officeqa_answer(text, self.scorer) if answered or not _SEARCH_LINE.search(text) else ""
        hard, soft, feedback = self._score(item, answer)
        searches = sum(1 for m in messages if m.role == "assistant")
        return Rollout(
            hard,
            soft,
            answer,
            feedback,
            transcript(messages, text),
            usage,
            details={"searches": searches},
        )

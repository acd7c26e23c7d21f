"""DocVQA (single-page): questions about a scanned document image, several gold answers each.

The image goes to the model through the chat backend's image input (`ImagePart`). Hard score: ANLS of at
least 0.999 (the answer matches a gold answer up to case and spacing). Soft score: ANLS with the official
0.5 threshold.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from skillopt_lib.backends.base import ChatMessage, ImagePart
from skillopt_lib.envs.base import Item
from skillopt_lib.envs.bench import BenchmarkEnv, Rollout, ask, read_json_or_jsonl, transcript
from skillopt_lib.envs.scoring import anls, extract_final_answer
from skillopt_lib.errors import ConfigError
from skillopt_lib.skill import SkillBundle

TASK_INTRO = (
    "You answer questions about a document image. Copy the answer from the document exactly as written "
    "where you can. End your reply with one line of the form `Answer: <answer>`."
)
HARD_THRESHOLD = 0.999
_SPLIT_PREFIXES = {"train": "train", "val": "val", "test": "test"}


def _split_of(path: Path) -> str | None:
    head = path.name.lower().split("_")[0]
    return _SPLIT_PREFIXES.get(head)


def _image_index(root: Path) -> dict[str, Path]:
    index: dict[str, Path] = {}
    for ext in ("*.png", "*.jpg", "*.jpeg", "*.tif", "*.tiff"):
        for p in root.rglob(ext):
            index.setdefault(p.name, p)
    return index


def load_docvqa(root: Path) -> list[Item]:
    """Read the official question files (`{train,val,test}_v1.0*.json`: an object whose `data` list holds
    questionId, question, image, docId and answers). Image paths are resolved next to the file, under the
    data folder, or by file name anywhere below it (the official archives unpack `documents/` and the
    images into different folders). Questions without answers (the hidden test split) are skipped."""
    items: list[Item] = []
    index: dict[str, Path] | None = None
    files = sorted(p for p in root.rglob("*.json") if p.name != "splits.json")
    for path in files:
        split = _split_of(path)
        for rec in read_json_or_jsonl(path):
            if "question" not in rec or "image" not in rec:
                continue
            answers = [str(a) for a in rec.get("answers") or []]
            if not answers:
                continue
            rel = str(rec["image"])
            image = next((c for c in (path.parent / rel, root / rel) if c.is_file()), None)
            if image is None:
                index = index if index is not None else _image_index(root)
                image = index.get(Path(rel).name)
            if image is None:
                raise ConfigError(
                    f"{path.name}: image {rel!r} of question {rec.get('questionId')} is missing",
                    hint="unpack the DocVQA images archive into the same data folder as the question files",
                )
            meta: dict[str, Any] = {
                "doc_id": rec.get("docId"),
                "question_types": rec.get("question_types", []),
            }
            if split:
                meta["split"] = split
            items.append(
                Item(
                    id=str(rec.get("questionId")),
                    data={"question": str(rec["question"]), "image_path": str(image)},
                    gold={"answers": answers},
                    meta=meta,
                )
            )
    return items


class DocVQAEnv(BenchmarkEnv):
    name = "docvqa"
    download_url = (
        "https://rrc.cvc.uab.es/?ch=17 (Single Document VQA, Task 1: annotations and images; free account)"
    )
    layout_hint = (
        "the question files (train_v1.0_withQT.json, val_v1.0_withQT.json) and the document images "
        "(the 'documents/' folder) unpacked side by side"
    )
    marker_globs = ("*.json", "*/*.json")

    def load_items(self) -> list[Item]:
        return load_docvqa(self.root)

    def rollout(self, item: Item, skill: SkillBundle, agent: Any) -> Rollout:
        path = Path(item.data["image_path"])
        media_type = mimetypes.guess_type(path.name)[0] or "image/png"
        question = f"Question: {item.data['question']}"
        messages = [ChatMessage("user", [ImagePart(path.read_bytes(), media_type), question])]
        resp = ask(agent, skill, TASK_INTRO, messages)
        answer = extract_final_answer(resp.text)
        soft = anls(answer, item.gold["answers"])
        hard = 1.0 if soft >= HARD_THRESHOLD else 0.0
        if hard:
            feedback = "Correct."
        elif soft > 0:
            feedback = f"Close but not exact (ANLS {soft:.2f}): copy the text from the document exactly."
        elif not answer:
            feedback = "No answer line was given."
        else:
            feedback = f"Wrong: {answer!r} is not what the document says for this question."
        return Rollout(
            hard=hard,
            soft=soft,
            answer=answer,
            feedback=feedback,
            trajectory=transcript(messages, resp.text),
            usage=resp.usage,
        )
